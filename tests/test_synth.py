"""`zarrflow synth`: ERA5-like stores in both layouts, readable by zarrflow, zarr-python and
tensorstore alike, realistic compression, and no output that looks complete when it is not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import zarrflow
from test_cli import run_cli
from zarrflow import errors
from zarrflow.tools.synth import PRESETS, SynthSpec, synth

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

NT, NLAT, NLON = 3, 19, 36


def small(**kw) -> SynthSpec:
    return SynthSpec(**({"ntime": NT, "nlat": NLAT, "nlon": NLON} | kw))


def ts_read(path: Path, driver: str) -> np.ndarray:
    return ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(path)}}).result().read().result()


@pytest.mark.parametrize("shard", [False, True])
@pytest.mark.parametrize("codec", [None, "none", "blosc-zstd:2", "gzip"])
def test_stacked_reads_the_same_everywhere(tmp_path, codec, shard):
    spec = small(codec=codec, shard=shard)
    rep = synth(tmp_path / "s.zarr", spec, progress=False)
    g = zarrflow.open_group(tmp_path / "s.zarr")
    data = g["data"]
    assert data.shape == (NT, 6, NLAT, NLON) and data.dtype == np.float32
    assert data.dims == ("time", "channel", "latitude", "longitude")
    assert data.attrs["channels"] == ["2m_temperature", "u_component_of_wind@500",
                                      "v_component_of_wind@500", "temperature@500",
                                      "geopotential@500", "specific_humidity@500"]
    ours = data[...]
    assert np.isfinite(ours).all()
    np.testing.assert_array_equal(ours, zarr.open_array(str(tmp_path / "s.zarr" / "data"))[...])
    np.testing.assert_array_equal(ours, ts_read(tmp_path / "s.zarr" / "data", "zarr3"))
    np.testing.assert_array_equal(g["time"][...], [0, 6, 12])
    assert g["latitude"][0] == 90.0 and g["latitude"][-1] == -90.0
    assert rep.arrays["data"][0] == ours.nbytes
    assert (rep.arrays["data"][1] < ours.nbytes) == (codec != "none")


def test_wb2_layout(tmp_path):
    spec = small(layout="wb2", levels=(500, 850))
    synth(tmp_path / "w.zarr", spec, progress=False)
    g = zarrflow.open_group(tmp_path / "w.zarr")
    assert (tmp_path / "w.zarr" / ".zmetadata").exists()
    t2m, u = g["2m_temperature"], g["u_component_of_wind"]
    assert t2m.shape == (NT, NLAT, NLON) and u.shape == (NT, 2, NLAT, NLON)
    assert u.dims == ("time", "level", "latitude", "longitude")
    assert "blosc(lz4, shuffle" in u.codecs_description
    np.testing.assert_array_equal(g["level"][...], [500, 850])
    for name in ("2m_temperature", "u_component_of_wind", "specific_humidity"):
        ours = g[name][...]
        np.testing.assert_array_equal(ours, zarr.open_array(str(tmp_path / "w.zarr" / name))[...])
        np.testing.assert_array_equal(ours, ts_read(tmp_path / "w.zarr" / name, "zarr"))
    xr = pytest.importorskip("xarray")
    ds = xr.open_zarr(tmp_path / "w.zarr")  # coordinates are not masked by a fill value
    assert not ds.time.isnull().any() and ds.longitude[0] == 0 and (ds.level == [500, 850]).all()
    # Pressure levels differ (the generator scales by level), time steps differ (weather moves).
    assert not np.array_equal(u[0, 0], u[0, 1]) and not np.array_equal(u[0, 0], u[1, 0])


def test_layouts_and_channel_sets_hold_the_same_values(tmp_path):
    synth(tmp_path / "s6", small(), progress=False)
    synth(tmp_path / "w71", small(layout="wb2", surface=PRESETS["71"][0], levels=PRESETS["71"][2]),
          progress=False)
    s6 = zarrflow.open_group(tmp_path / "s6")["data"][...]
    w71 = zarrflow.open_group(tmp_path / "w71")
    np.testing.assert_array_equal(s6[:, 0], w71["2m_temperature"][...])
    np.testing.assert_array_equal(s6[:, 4], w71["geopotential"][:, PRESETS["71"][2].index(500)])


def test_values_are_each_makers_steps_in_order(tmp_path):
    """Fields are made on a thread pool, yet equal a plain serial run of each maker."""
    from zarrflow.tools.synth import _makers

    spec = small(ntime=4)
    synth(tmp_path / "s", spec, progress=False)
    got = zarrflow.open_group(tmp_path / "s")["data"][...]
    for c, maker in enumerate(_makers(spec)):
        for t in range(spec.ntime):
            np.testing.assert_array_equal(got[t, c], maker.at(t))


def test_loader_reads_stacked_channels_by_label(tmp_path):
    synth(tmp_path / "s", small(), progress=False)
    ld = zarrflow.Loader(tmp_path / "s", ["data@2m_temperature", "data@geopotential@500"],
                         batch_size=1, device="cpu", output="numpy", shuffle=False)
    b = next(iter(ld))
    data = zarrflow.open_group(tmp_path / "s")["data"]
    np.testing.assert_array_equal(b["x"][0], np.stack([data[0, 0], data[0, 4]]))
    np.testing.assert_array_equal(b["y"][0], np.stack([data[1, 0], data[1, 4]]))


def test_compression_ratio_is_like_era5(tmp_path):
    # ERA5 float32 fields (16-bit GRIB packed) compress ~1.2-2x with blosc-lz4/zstd; white noise
    # would give ~1.0x and constant fields >10x. The generator must land in the realistic band.
    rep = synth(tmp_path / "w", SynthSpec(layout="wb2", ntime=2, nlat=181, nlon=360), progress=False)
    ratio = rep.decoded / rep.stored
    assert 1.1 < ratio < 2.5, rep.table()
    rep = synth(tmp_path / "s", SynthSpec(ntime=2, nlat=181, nlon=360, codec="zstd:3"), progress=False)
    assert 1.1 < rep.decoded / rep.stored < 2.5, rep.table()


def test_existing_output_is_refused_then_replaced_with_overwrite(tmp_path):
    p = tmp_path / "s.zarr"
    synth(p, small(), progress=False)
    with pytest.raises(errors.InvalidArgumentError, match="already exists"):
        synth(p, small(), progress=False)
    synth(p, small(ntime=4), overwrite=True, progress=False)
    assert zarrflow.open_group(p)["data"].shape[0] == 4
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.zarr"]


def test_interrupted_run_leaves_nothing_and_keeps_the_old_store(tmp_path, monkeypatch):
    from zarrflow.tools import synthetic

    p = tmp_path / "s.zarr"
    synth(p, small(), progress=False)
    before = zarrflow.open_group(p)["data"][...]
    calls = {"n": 0}
    real_at = synthetic.FieldMaker.at

    def at(self, t):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real_at(self, t)

    monkeypatch.setattr(synthetic.FieldMaker, "at", at)
    with pytest.raises(KeyboardInterrupt):
        synth(p, small(ntime=5), overwrite=True, progress=False)
    calls["n"] = 0
    with pytest.raises(KeyboardInterrupt):
        synth(tmp_path / "new.zarr", small(), progress=False)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.zarr"]
    np.testing.assert_array_equal(zarrflow.open_group(p)["data"][...], before)


def test_unwritable_output_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(errors.StoreIOError, match="cannot create"):
        synth(blocker / "s.zarr", small(), progress=False)


@pytest.mark.parametrize("kw, match", [
    ({"layout": "v4"}, "layout"),
    ({"ntime": 0}, "ntime"),
    ({"codec": "lzma"}, "unknown codec"),
    ({"codec": "zstd:x"}, "integer"),
    ({"codec": "blosc-foo"}, "blosc compressor"),
    ({"codec": "none:3"}, "no level"),
    ({"layout": "wb2", "shard": True}, "shard"),
    ({"surface": (), "upper": ()}, "no variables"),
    ({"levels": ()}, "at least one level"),
])
def test_bad_specs(tmp_path, kw, match):
    with pytest.raises(errors.InvalidArgumentError, match=match):
        synth(tmp_path / "s", small(**kw), progress=False)
    assert not list(tmp_path.iterdir())


def test_cli_writes_reports_and_refuses(tmp_path):
    p = tmp_path / "w.zarr"
    r = run_cli("synth", str(p), "--layout", "wb2", "--grid", "19x36", "--ntime", "2",
                "--levels", "500,850", "--codec", "zstd:1")
    assert r.returncode == 0, r.stderr
    assert "ratio" in r.stdout and "all data" in r.stdout and "zstd:1" in r.stdout
    assert "synth w.zarr [" in r.stderr  # the progress bar
    assert zarrflow.open_group(p)["temperature"].shape == (2, 2, 19, 36)
    r = run_cli("synth", str(p), "--grid", "19x36")
    assert r.returncode == 1 and "already exists" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("synth", str(tmp_path / "x"), "--grid", "19by36", "--quiet")
    assert r.returncode == 1 and "--grid" in r.stderr and "Traceback" not in r.stderr
