"""engine="zarrflow" against engine="zarr" on real netCDF files (ERA5, ERA-Interim, NCEP, CMIP5/6:
packed int16, fill values, noleap/365_day times, 'months since' units, bytes variables)
converted with ``to_zarr`` to Zarr v2 and v3.

The files live in the project's shared data folder (``$ZARRFLOW_REAL_DATA``, else
``<repo>/../shared/data/real``; its README lists their sources); without it these tests skip.
Each file is converted once per test session; grids larger than 96 points along a dimension are
subsampled with a stride so that every file converts and compares in well under a second.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
pytest.importorskip("netCDF4")
pytest.importorskip("cftime")

REPO = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("ZARRFLOW_REAL_DATA", REPO.parent / "shared" / "data" / "real"))

FILES = [
    "NCAR_geocat-datafiles/NCEP_06_climo.nc",
    "NCAR_geocat-datafiles/era5_1995-07-14T12.nc",
    "NCAR_geocat-datafiles/hgt.nc",
    "Ouranosinc_xclim-testdata/sic_SImon_CCCma-CanESM5_ssp245_r13i1p2f1_2020.nc",
    "Ouranosinc_xclim-testdata/tas_Amon_CanESM2_rcp85_r1i1p1_200701-200712.nc",
    "ecmwf_earthkit-data/test4.nc",
    "ecmwf_metview-python/wgust_era5.nc",
    "neuralgcm_neuralgcm/era5_tl31_19590102T00.nc",
    "pydata_xarray-data/eraint_uvz.nc",
    "spcl_scaling-laws-weather-model/land_mask.nc",
    "spcl_scaling-laws-weather-model/orography.nc",
]
# hgt.nc counts time in 'months since', which neither xarray nor cftime decode in its calendar.
OPEN_KWARGS = {"NCAR_geocat-datafiles/hgt.nc": {"decode_times": False}}
MAX_POINTS = 96


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(file, zarr_format) -> the store, converted on first use."""
    if not REAL.is_dir():
        pytest.skip(f"no real data folder at {REAL} (set ZARRFLOW_REAL_DATA)")
    root = tmp_path_factory.mktemp("real")
    done: dict[tuple[str, int], Path] = {}

    def get(name: str, fmt: int) -> Path:
        if (name, fmt) not in done:
            src = REAL / name
            if not src.exists():
                pytest.skip(f"{src} is missing")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the files' own CF quirks, as netCDF4 reads them
                ds = xr.open_dataset(src, **OPEN_KWARGS.get(name, {}))
            ds = ds.isel({d: slice(None, None, -(-n // MAX_POINTS))
                          for d, n in ds.sizes.items() if n > MAX_POINTS})
            for var in ds.variables.values():
                # NCEP_06_climo's variables carry both a _FillValue and a different
                # missing_value, which xarray refuses to write; keep the _FillValue.
                enc = var.encoding
                if "_FillValue" in enc and "missing_value" in enc and not np.array_equal(
                        enc["_FillValue"], enc["missing_value"], equal_nan=True):
                    del enc["missing_value"]
                enc.pop("chunksizes", None)  # netCDF chunking of the full grid
            path = root / f"{Path(name).stem}_v{fmt}.zarr"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ds.to_zarr(path, mode="w", zarr_format=fmt)
            done[(name, fmt)] = path
        return done[(name, fmt)]

    return get


@pytest.mark.parametrize("fmt", [2, 3], ids=lambda f: f"v{f}")
@pytest.mark.parametrize("name", FILES, ids=[Path(f).stem[:24] for f in FILES])
def test_real_file_identical_to_zarr_engine(converted, name, fmt):
    path = converted(name, fmt)
    kwargs = OPEN_KWARGS.get(name, {})
    want = xr.open_dataset(path, engine="zarr", **kwargs).load()
    got = xr.open_dataset(path, engine="zarrflow", **kwargs).load()
    xr.testing.assert_identical(want, got)
    assert list(got.dims) == list(want.dims)
    for var in want.variables:
        assert got[var].dtype == want[var].dtype, var


def test_unreadable_variable_of_a_real_file_can_be_dropped(converted):
    """CMIP6 sic has a bytes variable 'type'; dropping it opens the rest, without reading it."""
    for fmt in (2, 3):
        path = converted("Ouranosinc_xclim-testdata/sic_SImon_CCCma-CanESM5_ssp245_r13i1p2f1_2020.nc",
                         fmt)
        want = xr.open_dataset(path, engine="zarr", drop_variables=["type"]).load()
        got = xr.open_dataset(path, engine="zarrflow", drop_variables=["type"]).load()
        xr.testing.assert_identical(want, got)


def test_packed_zeros_of_eraint_are_values_not_fill(converted):
    """ERA-Interim's packed v has genuine stored zeros; v3's fill_value 0 must not mask them."""
    path = converted("pydata_xarray-data/eraint_uvz.nc", 3)
    raw = xr.open_dataset(path, engine="zarrflow", mask_and_scale=False)["v"].values
    assert (raw == 0).sum() > 0
    got = xr.open_dataset(path, engine="zarrflow")["v"]
    assert "_FillValue" not in got.encoding  # the file declares none
    assert int(got.isnull().sum()) == 0
    np.testing.assert_allclose(got.values[raw == 0], got.encoding["add_offset"])
