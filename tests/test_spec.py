"""DatasetSpec: names, windows and statistics checked when the spec is made, typos answered with
the closest name, samples located in the array (time index and window origin)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow.loader import DatasetSpec, LoaderError
from zarrflow.loader.spec import valid_times

from t2m_arrays import create_t2m

zarr = pytest.importorskip("zarr")

NT, NLAT, NLON = 10, 6, 8
LABELS = ["u500", "v500", "z500"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """t2m (time, lat, lon) and a stacked (time, channel, lat, lon) array with labels."""
    path = tmp_path_factory.mktemp("spec") / "small.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    create_t2m(root, np.ones((NT, NLAT, NLON), "float32"))
    b = root.create_array("data", shape=(NT, 3, NLAT, NLON), chunks=(1, 1, NLAT, NLON),
                          dtype="float32", fill_value=0,
                          dimension_names=["time", "channel", "latitude", "longitude"])
    b[...] = 2
    b.attrs["channels"] = LABELS
    return path


def test_a_spec_resolves_channels_and_counts_samples(store):
    spec = DatasetSpec(store, ["t2m", "data@z500"])
    assert spec.variables == ["t2m", "data@z500"]
    assert spec.spatial_dims == ("latitude", "longitude")
    assert spec.spatial_shape == (NLAT, NLON) and spec.window == (NLAT, NLON)
    assert spec.ntime == NT and len(spec) == NT - 1
    assert list(spec.times) == list(valid_times(NT, 1, 1, 1)) == list(range(NT - 1))
    assert spec.channels[1].fixed == {1: LABELS.index("z500")}
    assert repr(spec) == (f"DatasetSpec({str(store)!r}, ['t2m', 'data@z500'], input_steps=1, "
                          f"lead=1, target_steps=1; {NT - 1} samples on a "
                          f"{{'latitude': {NLAT}, 'longitude': {NLON}}} grid)")


def test_a_single_name_is_one_channel(store):
    assert DatasetSpec(store, "data@v500").variables == ["data@v500"]


def test_typos_get_the_closest_name(store):
    with pytest.raises(LoaderError, match=r"unknown variable 't2' \(did you mean 't2m'\?; "
                                          r"known: data, t2m\)"):
        DatasetSpec(store, ["t2"])
    with pytest.raises(LoaderError, match=r"'data': unknown channel 'z50' \(did you mean "
                                          r"'z500'\?; known: u500, v500, z500\)"):
        DatasetSpec(store, ["data@z50"])


def test_samples_are_located_in_the_array(store):
    """Sample ids run over windows fastest; origins are absolute (crop start added)."""
    spec = DatasetSpec(store, ["t2m"], input_steps=2, lead=1, target_steps=1,
                       crop={"longitude": (2, 8)}, input_dims={"latitude": 3, "longitude": 3},
                       time_range=(2, NT))
    assert list(spec.times) == list(range(3, NT - 1))  # inputs t-1, t and target t+1 in [2, NT)
    assert spec.window == (3, 3)
    assert spec.window_origins == [(0, 0), (0, 3), (3, 0), (3, 3)]
    assert len(spec) == len(spec.times) * 4
    times, origins = spec.locate([0, 1, 2, 3, 5])
    assert times.tolist() == [3, 3, 3, 3, 4]
    assert origins.tolist() == [[0, 2], [0, 5], [3, 2], [3, 5], [0, 5]]
    assert "crop={'latitude': (0, 6), 'longitude': (2, 8)}" in repr(spec)
    assert "time_range=(2, 10)" in repr(spec)


def test_normalisation_statistics_are_matched_by_channel_name(store, tmp_path):
    names = ["t2m", "data@u500"]
    stats = {"channels": ["data@u500", "other", "t2m"], "mean": [1.0, 5.0, 2.0],
             "std": [3.0, 5.0, 4.0]}
    assert DatasetSpec(store, names, normalize=stats).normalize == ([2.0, 1.0], [4.0, 3.0])
    path = tmp_path / "stats.json"
    zarrflow.compute_stats(store, names, path=str(path))
    spec = DatasetSpec(store, names, normalize=path)
    assert spec.normalize == ([1.0, 2.0], [1.0, 1.0])  # constant fields: std 1
    with pytest.raises(LoaderError, match=r"stats lack channels \['data@u500'\]"):
        DatasetSpec(store, names, normalize={"channels": ["t2m"], "mean": [0], "std": [1]})
    with pytest.raises(LoaderError, match="normalize needs 2 means and stds"):
        DatasetSpec(store, names, normalize={"mean": [0], "std": [1]})


def test_compute_stats_of_a_spec_uses_its_time_range(tmp_path):
    """Statistics of a training split: only the time steps inside the spec's time_range."""
    path = tmp_path / "ramp.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    create_t2m(root, np.arange(NT, dtype="float32")[:, None, None] * np.ones((1, 2, 2), "float32"))
    spec = DatasetSpec(path, ["t2m"], time_range=(0, 4))
    stats = zarrflow.compute_stats(spec)
    assert stats["channels"] == ["t2m"]
    assert stats["mean"] == [pytest.approx(1.5)]  # times 0..3
    assert stats["std"] == [pytest.approx(np.std([0, 1, 2, 3]))]
    assert zarrflow.compute_stats(path, ["t2m"])["mean"] == [pytest.approx((NT - 1) / 2)]
    with pytest.raises(LoaderError, match="takes its variables and settings from the spec"):
        zarrflow.compute_stats(spec, ["t2m"])
