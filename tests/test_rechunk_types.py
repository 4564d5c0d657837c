"""`zarrflow rechunk` and data types: every numeric type through tensorstore in both formats,
CF-packed data kept or unpacked (--decode-cf) exactly as xarray decodes it, packed sources
stacked, datetime and string arrays copied through zarr-python, and an array no reader can read
left out with a warning that names it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from test_cli import run_cli
from zarrflow import errors
from zarrflow.tools.rechunk import Options, RechunkWarning, rechunk

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")
xr = pytest.importorskip("xarray")

EARTHKIT = Path(__file__).parent / "data" / "earthkit_test_zarr"  # int16 packed, Zarr v2


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "f" else a


@pytest.fixture()
def earthkit(tmp_path) -> Path:
    p = tmp_path / "earthkit.zarr"
    shutil.copytree(EARTHKIT, p)
    return p


@pytest.fixture(scope="module")
def xarray_decoded() -> xr.Dataset:
    return xr.open_zarr(EARTHKIT).load()


# --------------------------------------------------------------------------------------------
# Every numeric data type, both output formats, through tensorstore
# --------------------------------------------------------------------------------------------

NUMERIC = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
           "float32", "float64", "bool", "complex64", "complex128"]
CODECS = ["zstd:1", "blosc-lz4", "gzip:2", "none", "blosc-zstd:3"]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype", NUMERIC)
def test_every_numeric_type_in_both_formats(tmp_path, dtype, fmt):
    src = tmp_path / "src.zarr"
    g = zarr.open_group(str(src), mode="w", zarr_format=3)
    a = g.create_array("a", shape=(5, 3), chunks=(2, 3), dtype=dtype, dimension_names=["t", "x"])
    want = (np.arange(15).reshape(5, 3) % 7).astype(dtype)
    a[...] = want
    codec = CODECS[NUMERIC.index(dtype) % len(CODECS)]
    dst = tmp_path / "out.zarr"
    rechunk(src, dst, Options(chunks={"t": 1}, zarr_format=fmt, codec=codec, verify=True),
            progress=False)
    out = zarrflow.open_group(dst)["a"]
    assert out.chunks == (1, 3) and out.dtype == np.dtype(dtype)
    assert np.array_equal(bits(out[...]), bits(want))
    assert np.array_equal(bits(zarr.open_group(str(dst), mode="r")["a"][...]), bits(want))
    driver = "zarr3" if fmt == 3 else "zarr"
    t = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(dst / "a")}}).result()
    assert np.array_equal(bits(t.read().result()), bits(want))


def test_bfloat16_in_v3_and_a_clear_refusal_for_v2(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    src = tmp_path / "bf.zarr"
    want = np.linspace(-3, 3, 12, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(4, 3)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(src)}},
                create=True, dtype=ts.bfloat16, shape=[4, 3],
                chunk_layout=ts.ChunkLayout(chunk_shape=[2, 3])).result()
    t.write(want).result()
    rechunk(src, tmp_path / "v3.zarr", Options(verify=True), progress=False)
    assert np.array_equal(bits(zarrflow.open_array(tmp_path / "v3.zarr")[...].view(np.uint16)),
                          want.view(np.uint16))
    with pytest.raises(errors.ZarrflowError, match="bfloat16.*no data type.*write Zarr v3"):
        rechunk(src, tmp_path / "v2.zarr", Options(zarr_format=2), progress=False)
    assert not (tmp_path / "v2.zarr.partial").exists()


# --------------------------------------------------------------------------------------------
# CF packing: kept by default, unpacked with --decode-cf, exactly as xarray decodes it
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [2, 3])
def test_packed_data_is_kept_by_default(earthkit, tmp_path, xarray_decoded, fmt):
    dst = tmp_path / "kept.zarr"
    rechunk(earthkit, dst, Options(zarr_format=fmt), progress=False)
    src, out = zarrflow.open_group(earthkit), zarrflow.open_group(dst)
    for v in ("t", "z"):
        assert out[v].dtype == np.int16
        assert np.array_equal(out[v][...], src[v][...])
        assert out[v].attrs["scale_factor"] == src[v].attrs["scale_factor"]
        assert out[v].attrs["missing_value"] == -32767
    again = xr.open_zarr(dst, consolidated=fmt == 2)
    for v in ("t", "z"):
        assert np.array_equal(again[v].values, xarray_decoded[v].values, equal_nan=True)


@pytest.mark.parametrize("dtype", [None, "float64"])
def test_decode_cf_unpacks_like_xarray(earthkit, tmp_path, xarray_decoded, dtype):
    dst = tmp_path / "unpacked.zarr"
    rechunk(earthkit, dst, Options(decode_cf=True, dtype=dtype, verify=True), progress=False)
    out = zarrflow.open_group(dst)
    want_type = np.dtype(dtype or "float32")
    for v in ("t", "z"):
        assert out[v].dtype == want_type
        want = xarray_decoded[v].values.astype(want_type)
        assert np.array_equal(bits(out[v][...]), bits(want)), v
        attrs = out[v].attrs
        assert not {"scale_factor", "add_offset", "missing_value", "_FillValue"} & set(attrs)
        assert attrs["units"] == xarray_decoded[v].attrs["units"]
    assert out["level"].dtype == np.int32 and out["latitude"].dtype == np.float32
    assert out["time"].attrs["units"] == "hours since 1900-01-01"  # a CF time is not unpacked


def _xarray_store(path: Path, fmt: int) -> None:
    """Packed int16 with missing values, a float with an explicit _FillValue, float and datetime
    coordinates, as xarray writes them."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3, 5)) * 10 + 280
    a[0, 0, 0] = a[1, 2, 3] = np.nan
    b = rng.standard_normal((4, 3, 5)).astype("float32")
    b[2, 1, 1], b[0, 0, 0] = np.nan, 0.0
    ds = xr.Dataset({"a": (("time", "lat", "lon"), a), "b": (("time", "lat", "lon"), b)},
                    coords={"lat": [0.1, 0.0, 0.3],
                            "time": np.arange(4).astype("datetime64[D]").astype("datetime64[ns]")})
    ds.to_zarr(path, zarr_format=fmt, mode="w", consolidated=False, encoding={
        "a": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0, "_FillValue": -32768},
        "b": {"_FillValue": -9999.0}})


@pytest.mark.parametrize("decode", [False, True])
@pytest.mark.parametrize("src_fmt, out_fmt", [(2, 2), (2, 3), (3, 2), (3, 3)])
def test_xarray_reads_the_output_as_it_reads_the_source(tmp_path, src_fmt, out_fmt, decode):
    src, dst = tmp_path / "src.zarr", tmp_path / "out.zarr"
    _xarray_store(src, src_fmt)
    rechunk(src, dst, Options(chunks={"time": 1}, zarr_format=out_fmt, decode_cf=decode),
            progress=False)
    want, got = xr.open_zarr(src, consolidated=False), xr.open_zarr(dst, consolidated=False)
    for v in ("a", "b", "lat", "time"):
        assert np.array_equal(got[v].values, want[v].values.astype(got[v].dtype),
                              equal_nan=True), v
    assert got["a"].dtype == (np.float32 if decode else np.float64)
    assert got["lat"].dtype == np.float64  # a NaN-only mask is nothing to decode
    if decode:
        assert np.array_equal(bits(zarrflow.open_group(dst)["a"][...]),
                              bits(want["a"].values.astype(np.float32)))


def test_dtype_needs_decode_or_stack(earthkit, tmp_path):
    with pytest.raises(errors.ZarrflowError, match="--dtype sets the type of decoded"):
        rechunk(earthkit, tmp_path / "o", Options(dtype="float64"), progress=False)
    with pytest.raises(errors.ZarrflowError, match="not one of float32, float64, float16"):
        rechunk(earthkit, tmp_path / "o", Options(dtype="int8", decode_cf=True), progress=False)
    assert list(tmp_path.iterdir()) == [earthkit]


# --------------------------------------------------------------------------------------------
# Stacking packed sources
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [None, "float64"])
def test_packed_sources_stack_unpacked(earthkit, tmp_path, xarray_decoded, dtype):
    dst = tmp_path / "stack.zarr"
    rechunk(earthkit, dst, Options(stack=("all",), dtype=dtype, chunks={"channel": 1},
                                   verify=True), progress=False)
    data = zarrflow.open_group(dst)["data"]
    assert data.attrs["channels"] == ["t@500", "t@850", "z@500", "z@850"]
    want_type = np.dtype(dtype or "float32")
    x = xarray_decoded
    want = np.stack([x.t.values[:, 0], x.t.values[:, 1], x.z.values[:, 0], x.z.values[:, 1]],
                    1).astype(want_type)
    assert data.dtype == want_type and np.array_equal(bits(data[...]), bits(want))
    if dtype is None:  # the loader reads the stack by label
        batch = next(iter(zarrflow.Loader(dst, ["data@z@850"], batch_size=1, device="cpu",
                                          output="numpy", shuffle=False, target_steps=0)))
        assert np.array_equal(bits(batch["x"][0, 0]), bits(want[0, 3]))


def test_stack_of_named_packed_channels(earthkit, tmp_path, xarray_decoded):
    dst = tmp_path / "two.zarr"
    rechunk(earthkit, dst, Options(stack=("z@500", "t@850")), progress=False)
    data = zarrflow.open_group(dst)["data"][...]
    want = np.stack([xarray_decoded.z.values[:, 0], xarray_decoded.t.values[:, 1]], 1)
    assert np.array_equal(bits(data), bits(want.astype(np.float32)))


# --------------------------------------------------------------------------------------------
# Arrays zarrflow does not read: datetimes and strings copied, unreadable ones left out
# --------------------------------------------------------------------------------------------


def _store_with_labels(path: Path, fmt: int) -> dict[str, np.ndarray]:
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    data = np.arange(24, dtype="float32").reshape(4, 2, 3)
    values = {"data": data,
              "time": np.array(["2020-01-01T00", "2020-01-01T06", "NaT", "2020-01-01T18"],
                               dtype="datetime64[ns]"),
              "channel": np.array(["2m_temperature", "u@500"])}
    dims = {"data": ["time", "channel", "x"], "time": ["time"], "channel": ["channel"]}
    for name, v in values.items():
        kw = ({"dimension_names": dims[name]} if fmt == 3
              else {"attributes": {"_ARRAY_DIMENSIONS": dims[name]}})
        dtype = str if v.dtype.kind == "U" else v.dtype
        g.create_array(name, shape=v.shape, chunks=v.shape, dtype=dtype, **kw)[...] = v
    return values


@pytest.mark.parametrize("src_fmt, out_fmt", [(2, 2), (2, 3), (3, 3), (3, 2)])
def test_datetime_and_string_arrays_are_copied(tmp_path, src_fmt, out_fmt):
    src, dst = tmp_path / "src.zarr", tmp_path / "out.zarr"
    values = _store_with_labels(src, src_fmt)
    rep = rechunk(src, dst, Options(chunks={"time": 1}, zarr_format=out_fmt, verify=True),
                  progress=False)
    assert rep.finalized
    g = zarr.open_group(str(dst), mode="r")
    assert g["time"].dtype == np.dtype("datetime64[ns]")
    assert np.array_equal(g["time"][...], values["time"], equal_nan=True)
    assert list(g["channel"][...]) == list(values["channel"])
    assert g["time"].chunks == (1,)
    assert np.array_equal(zarrflow.open_group(dst)["data"][...], values["data"])
    ds = xr.open_zarr(dst, consolidated=out_fmt == 2)
    assert ds["data"].dims == ("time", "channel", "x")
    assert list(ds["channel"].values) == list(values["channel"])


def test_a_stack_keeps_a_datetime_coordinate(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "out.zarr"
    g = zarr.open_group(str(src), mode="w", zarr_format=3)
    for name in ("u", "v"):
        g.create_array(name, shape=(3, 2, 4), chunks=(1, 2, 4), dtype="float32",
                       dimension_names=["time", "lat", "lon"])[...] = 1.0
    times = np.array(["2000-01-01", "2000-01-02", "2000-01-03"], dtype="datetime64[s]")
    g.create_array("time", shape=(3,), chunks=(3,), dtype=times.dtype,
                   dimension_names=["time"])[...] = times
    rechunk(src, dst, Options(stack=("all",)), progress=False)
    out = zarr.open_group(str(dst), mode="r")
    assert sorted(out.keys()) == ["data", "time"]
    assert np.array_equal(out["time"][...], times)


def test_an_array_no_reader_can_read_is_left_out_with_a_warning(tmp_path):
    src, dst = tmp_path / "src.zarr", tmp_path / "out.zarr"
    g = zarr.open_group(str(src), mode="w", zarr_format=3)
    for name in ("ok", "odd"):
        g.create_array(name, shape=(3,), chunks=(3,), dtype="float32",
                       dimension_names=["t"])[...] = 1.0
    meta = json.loads((src / "odd" / "zarr.json").read_text())
    meta["codecs"].append({"name": "made_up_codec"})
    (src / "odd" / "zarr.json").write_text(json.dumps(meta))
    with pytest.warns(RechunkWarning, match=r"array 'odd' is left out: .*made_up_codec"):
        rechunk(src, dst, Options(), progress=False)
    assert zarrflow.open_group(dst).keys() == ["ok"]
    r = run_cli("rechunk", str(src), str(tmp_path / "cli.zarr"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "zarrflow: warning: rechunk: array 'odd' is left out" in r.stderr
    with pytest.raises(errors.ZarrflowError, match=r"cannot read 'odd'.*made_up_codec"):
        rechunk(src, tmp_path / "asked.zarr", Options(arrays=("odd",)), progress=False)


@pytest.mark.parametrize("fmt", [2, 3])
def test_a_single_datetime_array(tmp_path, fmt):
    src = tmp_path / "t.zarr"
    times = np.arange(5).astype("datetime64[h]").astype("datetime64[s]")
    zarr.create_array(str(src), shape=(5,), chunks=(5,), dtype=times.dtype, zarr_format=3,
                      dimension_names=["time"])[...] = times
    dst = tmp_path / "out.zarr"
    rechunk(src, dst, Options(chunks={"time": 2}, zarr_format=fmt, verify=True), progress=False)
    out = zarr.open_array(str(dst), mode="r")
    assert out.chunks == (2,) and np.array_equal(out[...], times)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr", "t.zarr"]
