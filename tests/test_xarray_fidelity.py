"""engine="zarrflow" gives what engine="zarr" gives on stores xarray writes (Zarr v2 and v3,
default and explicit encodings): identical datasets, the same dtypes and encodings, dimensions
in stored order, and the keyword arguments of engine="zarr"."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")
pytest.importorskip("zarr")
pytest.importorskip("cftime")

import zarrflow  # noqa: E402
from zarrflow import errors  # noqa: E402

FORMATS = [2, 3]
# Encoding keys that must agree; compressors/filters/serializer are zarr-python objects.
ENCODING_KEYS = ("chunks", "preferred_chunks", "shards", "fill_value", "dtype", "scale_factor",
                 "add_offset", "_FillValue", "missing_value", "units", "calendar")


def numeric_dataset() -> "xr.Dataset":
    """Every numeric CF case: float, packed int16 with a fill value, NaN-filled floats with an
    explicit _FillValue, an integer coordinate starting at 0, times from 0 in the standard,
    noleap and 360_day calendars, a timedelta, a 2-d auxiliary coordinate (the 'coordinates'
    attribute) and attributes."""
    rng = np.random.default_rng(0)
    time = pd.date_range("2020-01-01", periods=6, freq="6h")
    packed = rng.random((6, 3, 5)) * 100
    packed[0, 0, :2] = np.nan
    with_nan = np.where(rng.random((3, 5)) > 0.5, np.nan, rng.random((3, 5)))
    zeros = np.zeros((6, 3, 5), "float32")
    zeros[1] = 1.0
    ds = xr.Dataset(
        {
            "tas": (("time", "lat", "lon"), rng.random((6, 3, 5)).astype("float32"),
                    {"units": "K", "long_name": "air temperature"}),
            "packed": (("time", "lat", "lon"), packed),
            "tf": (("lat", "lon"), with_nan),
            "zeros": (("time", "lat", "lon"), zeros),
            "counts": (("lat", "lon"), np.arange(15, dtype="int32").reshape(3, 5)),
            "noleap": ("t365", xr.date_range("2001-02-27", periods=4, freq="D",
                                             calendar="noleap", use_cftime=True)),
            "d360": ("t360", xr.date_range("2001-02-29", periods=3, freq="D",
                                           calendar="360_day", use_cftime=True)),
            "lead": ("step", pd.to_timedelta([0, 6, 12], unit="h")),
        },
        coords={"time": time, "lat": [10.0, 20.0, 30.0], "lon": np.arange(5),
                "lat2d": (("lat", "lon"), rng.random((3, 5)))},
        attrs={"title": "fidelity", "history": "written by xarray"},
    )
    ds["packed"].encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 10.0,
                             "_FillValue": -999}
    ds["tf"].encoding = {"_FillValue": 1e20}
    ds["tas"].encoding = {"chunks": (2, 3, 5)}
    return ds


def _write(ds: "xr.Dataset", path, fmt: int, **kwargs) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xarray's notes on v3 string/time encodings
        ds.to_zarr(path, mode="w", zarr_format=fmt, **kwargs)


def _open_both(path, **kwargs) -> tuple["xr.Dataset", "xr.Dataset"]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # engine="zarr": not consolidated
        warnings.simplefilter("ignore", FutureWarning)  # use_cftime= is deprecated, still used
        want = xr.open_dataset(path, engine="zarr", **kwargs)
        got = xr.open_dataset(path, engine="zarrflow", **kwargs)
    return want, got


def _same_value(a, b) -> bool:
    if isinstance(a, np.dtype) and isinstance(b, np.dtype):
        return a == b  # '<i4' and 'int32' alike
    if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)):
        return type(a) is type(b) and (a == b or (np.isnan(a) and np.isnan(b)))
    return repr(a) == repr(b)


def assert_same(want: "xr.Dataset", got: "xr.Dataset", ordered: bool = True) -> None:
    """Identical data, attrs and coordinates; same dtypes and encodings; each variable's dims in
    stored order. ``ordered``: the dataset's variables and dims in the same order too (not
    without consolidated metadata, where zarr-python lists members in directory order)."""
    xr.testing.assert_identical(want.load(), got.load())
    if ordered:
        assert list(got.dims) == list(want.dims)
        assert list(got.variables) == list(want.variables)
    for name, var in want.variables.items():
        assert got[name].dims == var.dims, name
        assert got[name].dtype == var.dtype, name
        for key in ENCODING_KEYS:
            assert _same_value(got[name].encoding.get(key), var.encoding.get(key)), (name, key)


@pytest.fixture(scope="module", params=FORMATS, ids=lambda f: f"v{f}")
def numeric_store(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("numeric") / f"n{request.param}.zarr"
    _write(numeric_dataset(), path, request.param)
    return path


def test_numeric_store_identical_to_zarr_engine(numeric_store):
    assert_same(*_open_both(numeric_store))


def test_v3_fill_value_is_storage_only(tmp_path):
    """zarr fill_value (0 by default) must not mask: zeros stay zeros, times from 0 stay."""
    path = tmp_path / "v3.zarr"
    ds = numeric_dataset()
    _write(ds, path, 3)
    got = xr.open_dataset(path, engine="zarrflow")
    assert got["time"].values[0] == np.datetime64("2020-01-01T00:00")
    assert got["lon"].dtype == ds["lon"].dtype and got["lon"].values[0] == 0
    assert (got["zeros"].values == 0).sum() == (ds["zeros"].values == 0).sum()
    assert int(got["counts"].values[0, 0]) == 0
    # explicit _FillValues (stored base64 for floats in v3) mask exactly what xarray masks
    assert int(got["tf"].isnull().sum()) == int(ds["tf"].isnull().sum()) > 0
    assert got["tf"].encoding["_FillValue"] == 1e20
    assert int(got["packed"].isnull().sum()) == 2


@pytest.mark.parametrize("out_fmt", FORMATS, ids=lambda f: f"to_v{f}")
def test_round_trip_through_to_zarr(numeric_store, tmp_path, out_fmt):
    got = xr.open_dataset(numeric_store, engine="zarrflow")
    _write(got, tmp_path / "again.zarr", out_fmt)
    xr.testing.assert_identical(got.load(), xr.open_dataset(tmp_path / "again.zarr",
                                                            engine="zarr").load())


KWARGS = {
    "consolidated_true": dict(consolidated=True),
    "consolidated_false": dict(consolidated=False),
    "group_root": dict(group="/"),
    "decode_times_false": dict(decode_times=False),
    "decode_timedelta_false": dict(decode_timedelta=False),
    "use_cftime": dict(use_cftime=True),
    "mask_and_scale_false": dict(mask_and_scale=False),
    "decode_coords_all": dict(decode_coords="all"),
    "decode_coords_false": dict(decode_coords=False),
    "concat_characters_false": dict(concat_characters=False),
    "drop_variables_str": dict(drop_variables="packed"),
    "drop_variables_list": dict(drop_variables=["packed", "lat2d", "time"]),
}


@pytest.mark.parametrize("kwargs", list(KWARGS.values()), ids=list(KWARGS))
def test_keyword_arguments_like_zarr_engine(numeric_store, kwargs):
    assert_same(*_open_both(numeric_store, **kwargs), ordered=kwargs.get("consolidated") is not False)


def test_cf_datetime_coder_and_zarr_format(numeric_store):
    coder = xr.coders.CFDatetimeCoder(use_cftime=True)
    want, got = _open_both(numeric_store, decode_times=coder)
    assert_same(want, got)
    fmt = 3 if (numeric_store / "zarr.json").exists() else 2
    assert_same(*_open_both(numeric_store, zarr_format=fmt))
    with pytest.raises(errors.NodeNotFoundError):
        xr.open_dataset(numeric_store, engine="zarrflow", zarr_format=5 - fmt)


def test_chunks_give_dask_arrays_with_the_stored_chunks(numeric_store):
    pytest.importorskip("dask")
    want, got = _open_both(numeric_store, chunks={})
    assert got["tas"].chunks == want["tas"].chunks == ((2, 2, 2), (3,), (5,))
    assert_same(want, got)


def test_use_zarr_fill_value_as_mask(tmp_path):
    from xarray.backends.zarr import ZarrStore

    path = tmp_path / "v3.zarr"
    _write(numeric_dataset()[["zeros", "counts", "tas"]], path, 3)
    for flag in (True, False):
        # engine="zarr" passes the flag on only through a ZarrStore
        want = xr.open_dataset(ZarrStore.open_group(str(path), use_zarr_fill_value_as_mask=flag))
        got = xr.open_dataset(path, engine="zarrflow", use_zarr_fill_value_as_mask=flag)
        xr.testing.assert_identical(want.load(), got.load())
    masked = xr.open_dataset(path, engine="zarrflow", use_zarr_fill_value_as_mask=True)
    # v3's integer fill_value 0 as a mask: the zeros of integer arrays go
    assert int(masked["counts"].isnull().sum()) == 1 and np.isnan(masked["lon"].values[0])


def test_dimensions_in_stored_order(tmp_path):
    ds = xr.Dataset({"v": (("zt", "yb", "xa"), np.zeros((2, 3, 4), "float32"))},
                    coords={"zt": [5, 6], "yb": [1.0, 2.0, 3.0], "xa": np.arange(4)})
    for fmt in FORMATS:
        path = tmp_path / f"o{fmt}.zarr"
        _write(ds, path, fmt)
        want, got = _open_both(path)
        assert got["v"].dims == ("zt", "yb", "xa")
        assert_same(want, got)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f"v{f}")
def test_groups(tmp_path, fmt):
    path = tmp_path / "g.zarr"
    ds = numeric_dataset()
    _write(ds[["tas"]], path, fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds[["packed", "tf"]].to_zarr(path, group="a/b", mode="a", zarr_format=fmt)
        ds[["counts"]].to_zarr(path, group="a", mode="a", zarr_format=fmt)
    for group in ("a/b", "/a/b", "a", "/a/", "/"):
        for consolidated in (None, False):
            assert_same(*_open_both(path, group=group, consolidated=consolidated),
                        ordered=consolidated is None)
    with pytest.raises(KeyError, match="did you mean 'b'"):
        xr.open_dataset(path, engine="zarrflow", group="a/B")


def test_consolidated_false_reads_what_the_consolidated_copy_misses(tmp_path):
    path = tmp_path / "c.zarr"
    ds = numeric_dataset()
    _write(ds[["tas"]], path, 2)  # consolidated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds[["counts"]].to_zarr(path, mode="a", consolidated=False)  # .zmetadata now stale
    for consolidated in (True, False):
        want, got = _open_both(path, consolidated=consolidated)
        assert ("counts" in got) == (consolidated is False)
        assert_same(want, got, ordered=consolidated)
    shutil.rmtree(path)
    _write(ds[["tas"]], path, 3, consolidated=False)
    with pytest.raises(errors.MetadataError, match="no consolidated metadata"):
        xr.open_dataset(path, engine="zarrflow", consolidated=True)


def test_drop_variables_skips_an_array_without_opening_it(tmp_path):
    path = tmp_path / "d.zarr"
    ds = numeric_dataset()
    _write(ds, path, 3)
    want = xr.open_dataset(path, engine="zarr", drop_variables=["tf"])
    (path / "tf" / "zarr.json").write_text("{ this is not json")
    meta = json.loads((path / "zarr.json").read_text())
    meta.pop("consolidated_metadata", None)  # members come from the store listing
    (path / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(errors.ZarrflowError, match=r"drop_variables=\['tf'\]"):
        xr.open_dataset(path, engine="zarrflow", consolidated=False)
    got = xr.open_dataset(path, engine="zarrflow", drop_variables=["tf"], consolidated=False)
    xr.testing.assert_identical(want.load(), got.load())


def test_device_cuda_without_a_gpu_fails_at_open(numeric_store):
    if zarrflow.cuda_available():
        try:
            import cupy  # noqa: F401
            pytest.skip("a GPU and CuPy are usable here")
        except ImportError:
            pass
    with pytest.raises(errors.UnsupportedError, match="device='cuda'"):
        xr.open_dataset(numeric_store, engine="zarrflow", device="cuda")
    cpu = xr.open_dataset(numeric_store, engine="zarrflow", device="cpu")
    assert_same(xr.open_dataset(numeric_store, engine="zarr"), cpu)


def test_vectorized_and_outer_indexing_through_xarray(numeric_store):
    want, got = _open_both(numeric_store)
    sel = dict(time=xr.DataArray([5, 0, 3], dims="p"), lon=xr.DataArray([4, 4, 1], dims="p"))
    xr.testing.assert_identical(want["tas"].isel(sel).load(), got["tas"].isel(sel).load())
    xr.testing.assert_identical(want["packed"].isel(time=[4, 1, 1], lat=[2, 0]).load(),
                                got["packed"].isel(time=[4, 1, 1], lat=[2, 0]).load())


# --- strings and bytes (need the reader's string data types) --------------------------------

def text_dataset() -> "xr.Dataset":
    """A stacked (time, channel, lat) variable with its channel labels as a string coordinate,
    a bytes coordinate, and a string data variable."""
    return xr.Dataset(
        {"data": (("time", "channel", "lat"), np.arange(24, dtype="float32").reshape(2, 4, 3)),
         "note": ("channel", np.array(["a", "bb", "", "dddd"], dtype=object))},
        coords={"channel": ["t2m", "u10", "v10", "msl"], "lat": [0.0, 1.0, 2.0],
                "code": ("channel", np.array([b"T2", b"U", b"V", b"MSLP"])),
                "time": pd.date_range("2000-01-01", periods=2)},
    )


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f"v{f}")
def test_string_and_bytes_coordinates(tmp_path, fmt):
    path = tmp_path / "s.zarr"
    _write(text_dataset(), path, fmt)
    want, got = _open_both(path)
    assert_same(want, got)
    assert list(got["channel"].values) == ["t2m", "u10", "v10", "msl"]


@pytest.mark.parametrize("layout", ["stacked", "wb2"])
def test_synth_store_identical_to_zarr_engine(tmp_path, layout):
    """zarrflow synth's own v3 stores: latitude/longitude 0 and the first time step are data."""
    from zarrflow.tools.synth import SynthSpec, synth

    synth(tmp_path / "s.zarr", SynthSpec(layout=layout, ntime=2, nlat=19, nlon=36), progress=False)
    want, got = _open_both(tmp_path / "s.zarr")
    assert_same(want, got, ordered=zarrflow.open(tmp_path / "s.zarr").consolidated)
    assert got["longitude"].values[0] == 0 and not got["time"].isnull().any()


def test_storage_options_reach_an_s3_store(tmp_path):
    """s3:// through the engine with storage_options, the group and consolidated keywords
    included, equals the local store through engine="zarr"."""
    pytest.importorskip("moto")
    pytest.importorskip("boto3")
    sys.path.insert(0, str(Path(__file__).parent))
    from servers.s3_server import MotoS3Server

    ds = numeric_dataset()
    local = tmp_path / "n.zarr"
    _write(ds, local, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds[["packed"]].to_zarr(local, group="sub", mode="a", zarr_format=3)
    with MotoS3Server() as srv:
        srv.create_bucket("bucket")
        srv.upload_dir(local, "bucket", "n.zarr")
        options = dict(endpoint_url=srv.endpoint, key=srv.access_key, secret=srv.secret_key)
        for kwargs in (dict(), dict(group="sub"), dict(group="/sub", consolidated=False)):
            want = xr.open_dataset(local, engine="zarr", **kwargs)
            got = xr.open_dataset("s3://bucket/n.zarr", engine="zarrflow",
                                  storage_options=options, **kwargs)
            assert_same(want, got, ordered=kwargs.get("consolidated") is not False)
