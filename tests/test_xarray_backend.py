"""xr.open_dataset(..., engine="zarrflow"): lazy variables read by zarrflow, CF-decoded by xarray,
equal to xarray's own zarr engine."""

import warnings
from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

import zarrflow  # noqa: E402

REAL = Path(__file__).parent / "data" / "earthkit_test_zarr"


def test_real_era5_store_matches_the_zarr_engine():
    ours = xr.open_dataset(REAL, engine="zarrflow")
    theirs = xr.open_dataset(REAL, engine="zarr", consolidated=True)
    assert set(ours.data_vars) == set(theirs.data_vars) == {"t", "z"}
    assert ours["t"].dims == ("time", "level", "latitude", "longitude")
    # scale_factor / add_offset / missing_value applied by xarray's CF decoding in both
    xr.testing.assert_identical(ours["t"].load(), theirs["t"].load())
    xr.testing.assert_identical(ours["z"].isel(level=1, latitude=slice(10, 50)).load(),
                                theirs["z"].isel(level=1, latitude=slice(10, 50)).load())
    np.testing.assert_array_equal(ours["latitude"].values, theirs["latitude"].values)


def test_variables_stay_lazy_and_read_only_what_is_asked(tmp_path):
    zarr = pytest.importorskip("zarr")
    path = tmp_path / "lazy.zarr"
    g = zarr.open_group(str(path), mode="w")
    a = g.create_array("v", shape=(50, 20), chunks=(1, 20), dtype="float32",
                       dimension_names=["time", "x"], fill_value=0)
    a[...] = np.arange(1, 1001, dtype="float32").reshape(50, 20)
    ds = xr.open_dataset(path, engine="zarrflow")
    for i in range(1, 50):  # only chunk 0 stays; reading [0] must not touch the others
        (path / "v" / "c" / str(i) / "0").unlink()
    np.testing.assert_array_equal(ds["v"][0].values, np.arange(1, 21, dtype="float32"))


def test_guess_can_open_and_drop_variables():
    ds = xr.open_dataset(REAL, engine="zarrflow", drop_variables=["z"])
    assert "z" not in ds and "t" in ds
    from zarrflow.xarray_backend import ZarrflowBackendEntrypoint

    assert ZarrflowBackendEntrypoint().guess_can_open("era5.zarr")
    assert not ZarrflowBackendEntrypoint().guess_can_open("era5.nc")


@pytest.mark.gpu
def test_cuda_variables_are_cupy_arrays():
    if not zarrflow.cuda_available():
        pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}")
    cupy = pytest.importorskip("cupy")
    ds = xr.open_dataset(REAL, engine="zarrflow", device="cuda", mask_and_scale=False)
    t = ds["t"].isel(level=0, latitude=slice(5, 25))
    data = t.data if isinstance(t.data, cupy.ndarray) else t.variable._data.get_duck_array()
    assert isinstance(data, cupy.ndarray)
    ref = xr.open_dataset(REAL, engine="zarrflow", mask_and_scale=False)["t"].isel(
        level=0, latitude=slice(5, 25)).values
    np.testing.assert_array_equal(cupy.asnumpy(data), ref)


def _packed_store(path, fmt):
    rng = np.random.default_rng(0)
    packed = rng.random((4, 3, 5)) * 100
    packed[0, 0, 0] = np.nan
    ds = xr.Dataset({"packed": (("time", "lat", "lon"), packed),
                     "scaled": (("time", "lat", "lon"), rng.random((4, 3, 5)) * 10),
                     "tas": (("time", "lat", "lon"), rng.random((4, 3, 5)).astype("float32"))},
                    coords={"time": np.array(["2000-01-01", "2000-01-02", "2000-01-03",
                                              "2000-01-04"], "datetime64[ns]"),
                            "valid": (("time",), np.arange(4, dtype="int64"),
                                      {"units": "hours since 2000-01-01"}),
                            "lat": [0.0, 1.0, 2.0], "lon": np.arange(5)})
    ds["packed"].encoding = {"dtype": "int16", "scale_factor": 0.01, "_FillValue": -999}
    ds["scaled"].encoding = {"dtype": "int16", "scale_factor": 0.01, "add_offset": 1.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python: v3 consolidated metadata is an extension
        ds.to_zarr(path, zarr_format=fmt)
    return path


@pytest.mark.parametrize("fmt", [2, 3])
def test_device_variables_and_masked_ones_are_told_at_open(tmp_path, fmt):
    """Without touching a GPU: which variables a device="cuda" dataset reads on the device, and
    the open-time error for fill values xarray would mask with NumPy."""
    from zarrflow.xarray_backend import ZarrflowStore

    group = zarrflow.open(_packed_store(tmp_path / "p.zarr", fmt))
    with pytest.raises(zarrflow.UnsupportedError, match="'packed'.*mask_and_scale=False"):
        ZarrflowStore(group, device="cuda").get_variables()
    variables = ZarrflowStore(group, device="cuda", mask_and_scale=False).get_variables()
    on_device = {k for k, v in variables.items() if v._data.array.device is not None}
    assert on_device == {"packed", "scaled", "tas"}  # not time/lat/lon (indexes), nor 'valid'
    ok = ZarrflowStore(group, device="cuda", mask_and_scale={"packed": False}).get_variables()
    assert set(ok) == set(variables)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", [2, 3])
def test_cuda_dataset_decodes_like_the_host_one(tmp_path, fmt):
    """device="cuda": data variables are CuPy arrays decoded on the GPU, scale/offset applied
    there by xarray; coordinates and times come from the host."""
    if not zarrflow.cuda_available():
        pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}")
    cupy = pytest.importorskip("cupy")
    path = _packed_store(tmp_path / "g.zarr", fmt)
    for kwargs in (dict(mask_and_scale=False), dict(drop_variables=["packed"])):
        host = xr.open_dataset(path, engine="zarrflow", **kwargs).load()
        gpu = xr.open_dataset(path, engine="zarrflow", device="cuda", **kwargs).load()
        assert isinstance(gpu["tas"].data, cupy.ndarray)
        assert isinstance(gpu["scaled"].data, cupy.ndarray)
        xr.testing.assert_identical(host, gpu.as_numpy())
