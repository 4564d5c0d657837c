"""The loader on any numeric source (device="cpu"): packed ERA5-like stores written by xarray (Zarr
v2 and v3) and the real earthkit store give xarray's decoded values, cast to float32, normalised
in float32 and cast to the batch dtype — bit for bit; every numeric data type (little- and
big-endian) through the loader; CF attributes read as xarray reads them; non-numeric arrays
refused by name. The GPU loader is checked against this one in test_loader_gpu.py."""

from __future__ import annotations

import base64
import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow.loader import LoaderError

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")
ml_dtypes = pytest.importorskip("ml_dtypes")

NT, NLAT, NLON = 6, 5, 7
LEVELS = [500, 850]
EARTHKIT = Path(__file__).parent / "data" / "earthkit_test_zarr"
PACKED_VARS = ["t2m", "z@500", "z@850", "sp"]
OUT_DTYPES = ["float32", "bfloat16", "float16"]


def _era5_like() -> "xr.Dataset":
    rng = np.random.default_rng(7)
    t2m = (rng.standard_normal((NT, NLAT, NLON)) * 12 + 280).astype("float32")
    t2m[1, 2, 3] = t2m[4, 0, 0] = np.nan
    z = (rng.standard_normal((NT, 2, NLAT, NLON)) * 500 + 50000).astype("float32")
    z[2, 1, :, 4] = np.nan
    sp = (rng.standard_normal((NT, NLAT, NLON)) * 900 + 101000).astype("float32")
    sp[3, 1, 1] = np.nan
    return xr.Dataset(
        {"t2m": (("time", "latitude", "longitude"), t2m),
         "z": (("time", "level", "latitude", "longitude"), z),
         "sp": (("time", "latitude", "longitude"), sp)},
        coords={"time": np.arange(NT, dtype="int64") * 6, "level": LEVELS,
                "latitude": np.linspace(80, -80, NLAT), "longitude": np.linspace(0, 300, NLON)})


@pytest.fixture(scope="module", params=[2, 3], ids=["v2", "v3"])
def packed_store(request, tmp_path_factory) -> Path:
    """An ERA5-like dataset as CDS netCDF packs it, written by xarray's to_zarr: t2m int16 with
    scale_factor, add_offset and _FillValue, z int16 with missing_value, sp float32; one chunk of
    t2m missing (xarray reads the fill value there: masked in v2, 0 → add_offset in v3)."""
    fmt = request.param
    path = tmp_path_factory.mktemp(f"packed{fmt}") / "era5.zarr"
    encoding = {
        "t2m": dict(dtype="int16", scale_factor=np.float32(0.0012), add_offset=np.float32(270.0),
                    _FillValue=-32767, chunks=(1, NLAT, NLON)),
        "z": dict(dtype="int16", scale_factor=0.05, add_offset=50000.0, missing_value=-32767,
                  chunks=(1, 1, NLAT, NLON)),
        "sp": dict(chunks=(2, NLAT, 4)),
    }
    _era5_like().to_zarr(path, zarr_format=fmt, encoding=encoding, consolidated=False)
    (path / "t2m" / ("3.0.0" if fmt == 2 else "c/3/0/0")).unlink()
    return path


def xarray_planes(path: Path, names: list[str], t: int, **open_kw) -> np.ndarray:
    """(channels, lat, lon) of xarray's decoded values at time index t."""
    ds = xr.open_dataset(path, engine="zarr", consolidated=False, **open_kw)
    out = []
    for n in names:
        name, _, level = n.partition("@")
        v = ds[name]
        if level:
            v = v.sel(level=int(level))
        out.append(v.isel(time=t).values)
    return np.stack(out)


def normalised(x: np.ndarray, mean, std, dtype: str) -> np.ndarray:
    """xarray's values cast to float32, then the loader's arithmetic: (x - mean) * (1 / std) in
    float32, and the cast (round to nearest even)."""
    m = np.asarray(mean, np.float32).reshape(-1, *([1] * (x.ndim - 1)))
    inv = np.float32(1) / np.asarray(std, np.float32).reshape(m.shape)
    y = (x.astype(np.float32) - m) * inv
    return y.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """The same values bit for bit; NaNs in the same places (their payloads are not compared)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    view = np.uint16 if got.dtype.itemsize == 2 else np.uint32
    np.testing.assert_array_equal(np.ascontiguousarray(got).view(view)[~nan],
                                  np.ascontiguousarray(want).view(view)[~nan])


STATS = {"mean": [280.0, 49990.0, 50010.0, 101000.0], "std": [12.0, 480.0, 520.0, 900.0]}


@pytest.mark.parametrize("dtype", OUT_DTYPES)
def test_packed_batches_equal_xarray_decoded(packed_store, dtype):
    ld = zarrflow.Loader(packed_store, PACKED_VARS, batch_size=2, device="cpu", output="numpy",
                         shuffle=False, dtype=dtype, normalize=STATS)
    nans = 0
    for batch in ld:
        for b, t in enumerate(batch["time"]):
            for key, tt in (("x", t), ("y", t + 1)):
                want = normalised(xarray_planes(packed_store, PACKED_VARS, int(tt)),
                                  STATS["mean"], STATS["std"], dtype)
                assert_same_bits(batch[key][b], want)
                nans += int(np.isnan(want.astype(np.float32)).sum())
    assert ld.stats()["nans"] == nans > 0


def test_packed_batches_without_normalisation_are_xarray_values_in_float32(packed_store):
    ld = zarrflow.Loader(packed_store, PACKED_VARS, batch_size=3, device="cpu", output="numpy",
                         shuffle=False)
    batch = next(iter(ld))
    for b, t in enumerate(batch["time"]):
        want = xarray_planes(packed_store, PACKED_VARS, int(t)).astype(np.float32)
        assert_same_bits(batch["x"][b], want)


def test_missing_chunk_of_a_packed_array(packed_store):
    # Time 3 of t2m is not stored: v2 reads its fill_value (-32767, the _FillValue: NaN), v3 its
    # storage fill value 0, which decodes to add_offset — as xarray gives it.
    ld = zarrflow.Loader(packed_store, ["t2m"], batch_size=1, device="cpu", output="numpy",
                         shuffle=False, target_steps=0)
    x = [b["x"] for b in ld][3][0, 0]
    if zarrflow.open(packed_store).zarr_format == 2:
        assert np.isnan(x).all()
    else:
        assert (x == np.float32(270.0)).all()
    assert_same_bits(x, xarray_planes(packed_store, ["t2m"], 3)[0].astype(np.float32))


@pytest.mark.parametrize("dtype", OUT_DTYPES)
def test_earthkit_store_equals_xarray(dtype):
    # The real ERA5 store (Zarr v2, int16 packed, missing_value and fill_value -32767).
    names = ["t@500", "t@850"]
    stats = zarrflow.compute_stats(EARTHKIT, names)
    ld = zarrflow.Loader(EARTHKIT, names, batch_size=1, target_steps=0, device="cpu",
                         output="numpy", dtype=dtype, normalize=stats)
    (batch,) = list(ld)
    ds = xr.open_dataset(EARTHKIT, engine="zarr")
    planes = np.stack([ds["t"].sel(level=lev).isel(time=0).values for lev in (500, 850)])
    assert planes.dtype == np.float64  # xarray decodes packed Zarr variables in float64
    assert_same_bits(batch["x"][0], normalised(planes, stats["mean"], stats["std"], dtype))
    np.testing.assert_allclose(stats["mean"], np.nanmean(planes.reshape(2, -1), axis=1),
                               rtol=1e-12)
    np.testing.assert_allclose(stats["std"], np.nanstd(planes.reshape(2, -1), axis=1), rtol=1e-9)


def test_compute_stats_are_of_the_decoded_values(packed_store):
    stats = zarrflow.compute_stats(packed_store, PACKED_VARS)
    planes = np.stack([xarray_planes(packed_store, PACKED_VARS, t) for t in range(NT)], axis=1)
    flat = planes.reshape(len(PACKED_VARS), -1)
    np.testing.assert_allclose(stats["mean"], np.nanmean(flat, axis=1), rtol=1e-12)
    np.testing.assert_allclose(stats["std"], np.nanstd(flat, axis=1), rtol=1e-8)


def test_mask_and_scale_false_reads_stored_values(packed_store):
    ld = zarrflow.Loader(packed_store, ["t2m", "z@850"], batch_size=1, device="cpu",
                         output="numpy", shuffle=False, mask_and_scale=False, target_steps=0)
    x = next(iter(ld))["x"][0]
    raw = xarray_planes(packed_store, ["t2m", "z@850"], 0, mask_and_scale=False)
    assert raw.dtype == np.int16
    assert_same_bits(x, raw.astype(np.float32))


# --- Every numeric data type, hand-written Zarr v3 arrays (bfloat16 and big-endian too) --------

TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
         "float32", "float64", "bfloat16"]


def numpy_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sample_values(name: str, shape: tuple, rng) -> np.ndarray:
    dt = numpy_dtype(name)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        a.flat[:3] = [info.min, info.max, 0]  # the extremes round through float64 like xarray
        return a
    a = (rng.standard_normal(shape) * 300).astype(np.float32)
    a.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return a.astype(dt)


def write_v3_array(root: Path, name: str, data: np.ndarray, data_type: str, *,
                   chunks: tuple, dims: list[str], endian: str = "little", fill_value=0,
                   attributes: dict | None = None) -> None:
    """A Zarr v3 array with the `bytes` codec only, chunk files written from `data`."""
    path = root / name
    path.mkdir(parents=True)
    meta = {"zarr_format": 3, "node_type": "array", "shape": list(data.shape),
            "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill_value, "codecs": [{"name": "bytes", "configuration":
                                                  {"endian": endian}}] if data.itemsize > 1 else
            [{"name": "bytes"}],
            "attributes": attributes or {}, "dimension_names": dims}
    (path / "zarr.json").write_text(json.dumps(meta))
    grid = [-(-s // c) for s, c in zip(data.shape, chunks)]
    for idx in np.ndindex(*grid):
        block = np.zeros(chunks, data.dtype)
        sel = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, data.shape))
        block[tuple(slice(0, s.stop - s.start) for s in sel)] = data[sel]
        raw = block.view(f"u{data.itemsize}")
        if endian == "big":
            raw = raw.byteswap()
        chunk = path.joinpath("c", *map(str, idx))
        chunk.parent.mkdir(parents=True, exist_ok=True)
        chunk.write_bytes(raw.tobytes())


@pytest.fixture(scope="module")
def typed_store(tmp_path_factory) -> tuple[Path, Path, dict]:
    """One (time, lat, lon) array per numeric type and byte order: "<type>_le" / "<type>_be"
    (chunks (2, 3, 3): edge chunks on both spatial axes). Two stores: all of them, and all but
    bfloat16, which zarr-python (and so xarray) cannot open."""
    stores = [tmp_path_factory.mktemp("typed") / n for n in ("typed.zarr", "typed_xr.zarr")]
    for root in stores:
        root.mkdir()
        (root / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group",
                                                    "attributes": {}}))
        write_v3_array(root, "time", np.arange(NT, dtype="int64"), "int64", chunks=(NT,),
                       dims=["time"])
    rng = np.random.default_rng(3)
    values = {}
    for name in TYPES:
        data = sample_values(name, (NT, NLAT, NLON), rng)
        for endian in ("little", "big") if data.itemsize > 1 else ("little",):
            var = f"{name}_{endian[0]}e"
            for root in stores[: 1 if name == "bfloat16" else 2]:
                write_v3_array(root, var, data, name, chunks=(2, 3, 3), endian=endian,
                               dims=["time", "latitude", "longitude"])
            values[var] = data
    return stores[0], stores[1], values


def definition(raw: np.ndarray) -> np.ndarray:
    """float32 of a raw value, one rounding (64-bit integers through float64, as xarray)."""
    return raw.astype(np.float64).astype(np.float32)


@pytest.mark.parametrize("lon0", [0, 1], ids=["whole", "cropped"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_every_numeric_type_through_the_loader(typed_store, dtype, lon0):
    # The floating-point arrays' one NaN is at (0, 0, 0): read whole, then cropped out.
    root, _, values = typed_store
    names = sorted(values)
    mean = [float(i) * 0.5 for i in range(len(names))]
    std = [1.0 + i for i in range(len(names))]
    ld = zarrflow.Loader(root, names, batch_size=2, device="cpu", output="numpy", shuffle=False,
                         dtype=dtype, normalize={"mean": mean, "std": std},
                         crop={"longitude": (lon0, NLON)})
    nans = 0
    for batch in ld:
        for b, t in enumerate(batch["time"]):
            for key, tt in (("x", int(t)), ("y", int(t) + 1)):
                want = np.stack([definition(values[n][tt][:, lon0:]) for n in names])
                assert_same_bits(batch[key][b], normalised(want, mean, std, dtype))
                nans += int(np.isnan(want).sum())
    assert ld.stats()["nans"] == nans
    assert (nans > 0) == (lon0 == 0)


def test_every_numeric_type_matches_xarray(typed_store):
    # xarray reads every type but bfloat16 (zarr-python has no such data type)
    _, root, values = typed_store
    names = sorted(n for n in values if not n.startswith("bfloat16"))
    ld = zarrflow.Loader(root, names, batch_size=1, device="cpu", output="numpy", shuffle=False,
                         target_steps=0)
    ds = xr.open_dataset(root, engine="zarr", consolidated=False)
    for batch in ld:
        t = int(batch["time"][0])
        assert_same_bits(batch["x"][0],
                         np.stack([definition(ds[n].isel(time=t).values) for n in names]))


# --- CF attributes as xarray reads them -----------------------------------------------------


def b64(value: float) -> str:
    return base64.standard_b64encode(struct.pack("<d", value)).decode()


@pytest.fixture(scope="module")
def masked_store(tmp_path_factory) -> Path:
    """Zarr v3 arrays with masks in attributes (int16 _FillValue as a number, float32 _FillValue
    as xarray's base64, a missing_value list), and a Zarr v2 float32 array whose fill_value 0
    xarray takes as its _FillValue."""
    root = tmp_path_factory.mktemp("masked") / "masked.zarr"
    g = zarr.open_group(str(root), mode="w", zarr_format=3)
    rng = np.random.default_rng(11)
    dims = ["time", "latitude", "longitude"]
    t = g.create_array("time", shape=(NT,), dtype="int64", dimension_names=["time"])
    t[...] = np.arange(NT)
    ints = rng.integers(-5, 5, (NT, NLAT, NLON)).astype("int16")
    a = g.create_array("ints", shape=ints.shape, dtype="int16", chunks=(1, NLAT, NLON),
                       dimension_names=dims, fill_value=0)
    a[...] = ints
    a.attrs.update({"_FillValue": -5, "missing_value": [4, 3], "scale_factor": 0.5})
    floats = rng.integers(-3, 3, (NT, NLAT, NLON)).astype("float32")
    f = g.create_array("floats", shape=floats.shape, dtype="float32", chunks=(2, NLAT, NLON),
                       dimension_names=dims, fill_value=0.0)
    f[...] = floats
    f.attrs["_FillValue"] = b64(-3.0)
    zero = g.create_array("zero_fill", shape=floats.shape, dtype="float32",
                          chunks=(1, NLAT, NLON), dimension_names=dims, fill_value=0.0)
    zero[...] = floats  # v3: the fill value 0 is storage only, zeros stay
    g2 = zarr.open_group(str(root.parent / "v2.zarr"), mode="w", zarr_format=2)
    t2 = g2.create_array("time", shape=(NT,), dtype="int64", fill_value=None)
    t2[...] = np.arange(NT)
    t2.attrs["_ARRAY_DIMENSIONS"] = ["time"]
    v2 = g2.create_array("zero_fill", shape=floats.shape, dtype="float32", chunks=(1, NLAT, NLON),
                         fill_value=0.0)
    v2[...] = floats
    v2.attrs["_ARRAY_DIMENSIONS"] = dims
    return root


@pytest.mark.filterwarnings("ignore:variable 'ints' has multiple fill values")
@pytest.mark.parametrize("store,names,kw", [
    ("masked.zarr", ["ints", "floats", "zero_fill"], {}),
    ("v2.zarr", ["zero_fill"], {}),
    ("v2.zarr", ["zero_fill"], {"use_zarr_fill_value_as_mask": False}),
])
def test_masks_read_as_xarray_reads_them(masked_store, store, names, kw):
    path = masked_store.parent / store
    ld = zarrflow.Loader(path, names, batch_size=2, device="cpu", output="numpy", shuffle=False,
                         target_steps=0, **kw)
    nans = 0
    # (xarray's open_dataset(engine="zarr") ignores use_zarr_fill_value_as_mask: the values are
    # then compared with the stored ones, which is what the option means)
    xr_kw = {"mask_and_scale": False} if kw else {}
    for batch in ld:
        for b, t in enumerate(batch["time"]):
            want = xarray_planes(path, names, int(t), **xr_kw).astype(np.float32)
            assert_same_bits(batch["x"][b], want)
            nans += int(np.isnan(want).sum())
    if kw:  # the fill value is not a mask: zeros stay
        assert ld.stats()["nans"] == nans == 0
    else:
        assert ld.stats()["nans"] == nans > 0


def test_unusable_cf_attributes_name_the_variable(masked_store, tmp_path):
    path = tmp_path / "bad.zarr"
    shutil.copytree(masked_store, path)
    meta_path = path / "floats" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    for attrs, match in [({"_FillValue": "not base64!"}, "_FillValue"),
                         ({"scale_factor": [0.5, 2.0]}, "scale_factor"),
                         ({"missing_value": [1, 2, 0, -1, -2]}, "at most 4")]:
        meta["attributes"] = attrs
        meta_path.write_text(json.dumps(meta))
        with pytest.raises(LoaderError, match=f"floats.*{match}"):
            zarrflow.Loader(path, ["floats"], device="cpu", output="numpy", batch_size=1)


def test_non_numeric_arrays_are_refused_by_name(tmp_path):
    g = zarr.open_group(str(tmp_path / "odd.zarr"), mode="w", zarr_format=2)
    t = g.create_array("time", shape=(3,), dtype="int64", fill_value=None)
    t[...] = [0, 1, 2]
    t.attrs["_ARRAY_DIMENSIONS"] = ["time"]
    for name, dt in [("wind", "complex64"), ("flag", "bool"), ("valid", "datetime64[ns]"),
                     ("label", "<U4")]:
        a = g.create_array(name, shape=(3, 4), dtype=dt, chunks=(1, 4))
        a.attrs["_ARRAY_DIMENSIONS"] = ["time", "x"]
    for name, shown in [("wind", "complex64"), ("flag", "bool"), ("valid", "(datetime64|M8)"),
                        ("label", "U4")]:
        with pytest.raises(LoaderError, match=f"{name}.*{shown}"):
            zarrflow.Loader(tmp_path / "odd.zarr", [name], device="cpu", output="numpy",
                            batch_size=1)


def test_read_batch_rejects_bad_element_transforms(packed_store):
    from zarrflow import _core

    ld = zarrflow.Loader(packed_store, PACKED_VARS, batch_size=1, device="cpu", output="numpy",
                         shuffle=False, normalize=STATS)
    arrays, table = ld._requests(*ld.spec.locate(ld.batches()[0]))
    target = _core.empty_tensor([1, 2, len(PACKED_VARS), NLAT, NLON], "float32", "cpu", 0)
    norms = np.tile(ld._norm_pairs, (len(table) // len(PACKED_VARS), 1))  # rows: channels fastest
    report = _core.read_batch(arrays, table, target, normalize=norms, decode=ld._decoding)
    assert report["nans"] >= 0  # as the loader calls it
    with pytest.raises(zarrflow.ZarrflowError, match="one entry per array"):
        _core.read_batch(arrays, table, target, normalize=norms, decode=ld._decoding[:-1])
    with pytest.raises(zarrflow.ZarrflowError, match="more than 4 values to mask"):
        _core.read_batch(arrays, table, target, normalize=norms,
                         decode=[(False, 1.0, -0.0, [1, 2, 3, 4, 5])] * len(arrays))
    with pytest.raises(zarrflow.ZarrflowError, match="decode needs normalize"):
        _core.read_batch(arrays, table, target, decode=ld._decoding)
    bad = norms.copy()
    bad[3, 1] = 0.0
    with pytest.raises(zarrflow.ZarrflowError, match="std must be positive"):
        _core.read_batch(arrays, table, target, normalize=bad, decode=ld._decoding)
    int_target = _core.empty_tensor([1, 2, len(PACKED_VARS), NLAT, NLON], "int16", "cpu", 0)
    with pytest.raises(zarrflow.ZarrflowError, match="float32, bfloat16 or float16"):
        _core.read_batch(arrays, table, int_target, normalize=norms, decode=ld._decoding)
