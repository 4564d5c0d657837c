"""Reads a real ERA5 Zarr v2 store (written by ECMWF's tooling, not by our test peers)."""

from pathlib import Path

import numpy as np
import pytest

import zarrflow

STORE = Path(__file__).parent / "data" / "earthkit_test_zarr"


def test_real_era5_store_matches_zarr_python():
    zarr = pytest.importorskip("zarr")
    group = zarrflow.open(STORE)
    assert isinstance(group, zarrflow.Group)
    assert group.consolidated
    assert set(group.keys()) == {"latitude", "level", "longitude", "t", "time", "z"}
    assert group.attrs["Conventions"] == "CF-1.6"
    peer = zarr.open_group(str(STORE), mode="r")
    for name in ("t", "z", "latitude", "longitude", "level", "time"):
        ours, theirs = group[name][...], peer[name][...]
        assert ours.dtype == theirs.dtype.newbyteorder("=")
        assert ours.shape == theirs.shape
        assert np.array_equal(ours.view(np.uint8), np.ascontiguousarray(theirs).view(np.uint8)), name
    t = group["t"]
    assert t.dims == ("time", "level", "latitude", "longitude")
    assert t.chunks == (1, 1, 181, 360)
    assert t.attrs["standard_name"] == "air_temperature"
    # Physical values after CF unpacking look like 500/850 hPa temperatures.
    kelvin = t[0, 1].astype(np.float64) * t.attrs["scale_factor"] + t.attrs["add_offset"]
    assert 200 < kelvin.min() < kelvin.max() < 320


def test_real_store_partial_reads():
    z = zarrflow.open(STORE)["z"]
    full = z[...]
    assert np.array_equal(z[0, :, 10:20, ::7], full[0, :, 10:20, ::7])
    assert np.array_equal(z[..., -1], full[..., -1])
    assert z[0, 0, 0, 0] == full[0, 0, 0, 0]
