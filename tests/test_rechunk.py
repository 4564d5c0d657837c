"""`zarrflow rechunk`: new chunks, codecs, sharding, v2 → v3 and v3 → v2, stacking, parts,
resume, verification, and refusal of bad requests — every result read back by zarrflow,
zarr-python and tensorstore and compared with the source value by value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from test_cli import run_cli
from zarrflow import errors
from zarrflow.tools.rechunk import Options, RechunkError, plan, rechunk, unit_shape, units
from zarrflow.tools.synth import SynthSpec, synth

zarr = pytest.importorskip("zarr")
ts = pytest.importorskip("tensorstore")

NT, NLAT, NLON = 5, 19, 36
LEVELS = (500, 850)


@pytest.fixture(scope="module")
def wb2(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("src") / "wb2.zarr"
    synth(p, SynthSpec(layout="wb2", ntime=NT, nlat=NLAT, nlon=NLON, levels=LEVELS), progress=False)
    return p


def same_bytes(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def check_everywhere(src: Path, dst: Path, names, fmt: int) -> None:
    s, d = zarrflow.open_group(src), zarrflow.open_group(dst)
    zg = zarr.open_group(str(dst), mode="r")
    for n in names:
        want = s[n][...]
        assert same_bytes(d[n][...], want), n
        assert same_bytes(zg[n][...], want), n
        t = ts.open({"driver": "zarr3" if fmt == 3 else "zarr",
                     "kvstore": {"driver": "file", "path": str(dst / n)}}).result()
        assert same_bytes(t.read().result(), want), n
        assert d[n].dims == s[n].dims


@pytest.mark.parametrize("codec", ["zstd:1", "none", "blosc-lz4", "gzip:2"])
def test_v2_to_v3_with_new_chunks(wb2, tmp_path, codec):
    dst = tmp_path / "out.zarr"
    rep = rechunk(wb2, dst, Options(chunks={"time": 2, "latitude": 10}, codec=codec), progress=False)
    assert rep.finalized and rep.units > 0
    d = zarrflow.open_group(dst)
    assert d.zarr_format == 3
    assert d["temperature"].chunks == (2, 1, 10, NLON)
    assert d["2m_temperature"].chunks == (2, 10, NLON)
    check_everywhere(wb2, dst, ["2m_temperature", "temperature", "time", "latitude", "level"], 3)
    assert d["time"].attrs["units"] == "hours since 2020-01-01"
    assert "_ARRAY_DIMENSIONS" not in d["temperature"].attrs
    assert not list(tmp_path.glob("*.partial"))


def test_sharded_with_crc32c_and_verify(wb2, tmp_path):
    dst = tmp_path / "s.zarr"
    opts = Options(chunks={"time": 1, "level": 1, "latitude": 10, "longitude": 18},
                   shards={"time": 2, "level": 2, "latitude": 20, "longitude": 36}, crc32c=True,
                   verify=True, memory=1 << 20)
    rep = rechunk(wb2, dst, opts, progress=False)
    assert rep.verified
    u = zarrflow.open_group(dst)["u_component_of_wind"]
    assert u.chunks == (1, 1, 10, 18) and u.shards == (2, 2, 20, 36)
    assert "crc32c" in u.codecs_description
    check_everywhere(wb2, dst, ["u_component_of_wind", "2m_temperature"], 3)


def test_v3_to_v2_consolidated(wb2, tmp_path):
    mid, dst = tmp_path / "v3.zarr", tmp_path / "v2.zarr"
    rechunk(wb2, mid, Options(chunks={"time": 3}), progress=False)
    rechunk(mid, dst, Options(chunks={"time": 1}, zarr_format=2, codec="blosc-zstd:2"),
            progress=False)
    g = zarrflow.open_group(dst)
    assert g.zarr_format == 2 and g.consolidated
    check_everywhere(wb2, dst, ["geopotential", "2m_temperature", "longitude"], 2)
    xr = pytest.importorskip("xarray")
    ds = xr.open_zarr(dst)
    assert ds["geopotential"].dims == ("time", "level", "latitude", "longitude")
    assert not ds.time.isnull().any()


def test_stack_variables_and_levels(wb2, tmp_path):
    dst = tmp_path / "stack.zarr"
    chans = ["2m_temperature", "geopotential@500", "u_component_of_wind@850"]
    rechunk(wb2, dst, Options(stack=tuple(chans), chunks={"channel": 1, "time": 1},
                              shards={"channel": 3}), progress=False)
    g = zarrflow.open_group(dst)
    data = g["data"]
    assert data.shape == (NT, 3, NLAT, NLON) and data.dims == ("time", "channel", "latitude", "longitude")
    assert data.attrs["channels"] == chans
    s = zarrflow.open_group(wb2)
    want = np.stack([s["2m_temperature"][...], s["geopotential"][:, 0], s["u_component_of_wind"][:, 1]], 1)
    assert same_bytes(data[...], want)
    assert sorted(g.keys()) == ["data", "latitude", "level", "longitude", "time"]
    # The loader reads the stacked store by label, and gives what it gives on the source.
    a = next(iter(zarrflow.Loader(dst, ["data@geopotential@500"], batch_size=2, device="cpu",
                                  output="numpy", shuffle=False)))
    b = next(iter(zarrflow.Loader(wb2, ["geopotential@500"], batch_size=2, device="cpu",
                                  output="numpy", shuffle=False)))
    assert same_bytes(a["x"], b["x"])


def test_stack_all(wb2, tmp_path):
    dst = tmp_path / "all.zarr"
    rechunk(wb2, dst, Options(stack=("all",)), progress=False)
    labels = zarrflow.open_group(dst)["data"].attrs["channels"]
    assert len(labels) == 1 + 5 * len(LEVELS) and "temperature@850" in labels


def test_stacking_different_grids_is_refused(tmp_path):
    src = tmp_path / "mixed.zarr"
    g = zarr.open_group(str(src), mode="w", zarr_format=3)
    for name, shape in (("a", (4, 8, 10)), ("b", (4, 9, 10))):
        arr = g.create_array(name, shape=shape, chunks=shape, dtype="float32",
                             dimension_names=["time", "latitude", "longitude"])
        arr[...] = 1
    with pytest.raises(RechunkError, match="do not share a grid"):
        rechunk(src, tmp_path / "o", Options(stack=("a", "b")), progress=False)
    assert not (tmp_path / "o").exists() and not (tmp_path / "o.partial").exists()


def test_parts_split_the_work_and_the_last_part_finalises(wb2, tmp_path):
    dst = tmp_path / "p.zarr"
    opts = Options(chunks={"time": 1})
    reps = [rechunk(wb2, dst, opts, part=(i, 3), progress=False) for i in (2, 0)]
    assert not any(r.finalized for r in reps) and not dst.exists()
    last = rechunk(wb2, dst, opts, part=(1, 3), progress=False)
    assert last.finalized
    total = sum(r.units for r in reps) + last.units
    plans, _ = plan(wb2, opts)
    assert total == sum(len(units(p, unit_shape(p, 1 << 30))) for p in plans)
    check_everywhere(wb2, dst, ["temperature", "specific_humidity", "time"], 3)


def test_interrupted_run_resumes_and_never_looks_complete(wb2, tmp_path, monkeypatch):
    import zarrflow.tools.rechunk as R

    dst = tmp_path / "r.zarr"
    opts = Options(chunks={"time": 1}, threads=1)
    calls = {"n": 0}
    real_plan = R.plan

    def flaky_plan(source, o):
        plans, groups = real_plan(source, o)
        for p in plans:
            inner = p.read

            def read(region, inner=inner):
                calls["n"] += 1
                if calls["n"] == 7:
                    raise KeyboardInterrupt
                return inner(region)

            p.read = read
        return plans, groups

    monkeypatch.setattr(R, "plan", flaky_plan)
    with pytest.raises(KeyboardInterrupt):
        rechunk(wb2, dst, opts, progress=False)
    assert not dst.exists() and (tmp_path / "r.zarr.partial").exists()
    monkeypatch.setattr(R, "plan", real_plan)
    rep = rechunk(wb2, dst, opts, progress=False)
    assert rep.finalized and rep.skipped >= 5
    check_everywhere(wb2, dst, ["temperature", "2m_temperature", "geopotential"], 3)
    # A different request does not reuse another request's partial output.
    monkeypatch.setattr(R, "plan", flaky_plan)
    calls["n"] = 0
    with pytest.raises(KeyboardInterrupt):
        rechunk(wb2, tmp_path / "x.zarr", opts, progress=False)
    monkeypatch.setattr(R, "plan", real_plan)
    with pytest.raises(RechunkError, match="different request"):
        rechunk(wb2, tmp_path / "x.zarr", Options(chunks={"time": 2}), progress=False)


def test_existing_output_and_overwrite(wb2, tmp_path):
    dst = tmp_path / "o.zarr"
    rechunk(wb2, dst, Options(), progress=False)
    with pytest.raises(RechunkError, match="already exists"):
        rechunk(wb2, dst, Options(), progress=False)
    rechunk(wb2, dst, Options(chunks={"time": 1}, codec="none"), overwrite=True, progress=False)
    assert zarrflow.open_group(dst)["temperature"].chunks[0] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.zarr"]


def test_single_array_and_subset(wb2, tmp_path):
    rechunk(wb2 / "temperature", tmp_path / "t.zarr", Options(chunks={"time": 5}, verify=True),
            progress=False)
    t = zarrflow.open_array(tmp_path / "t.zarr")
    assert t.chunks == (5, 1, NLAT, NLON)
    assert same_bytes(t[...], zarrflow.open_array(wb2 / "temperature")[...])
    rechunk(wb2, tmp_path / "sub.zarr", Options(arrays=("time", "temperature")), progress=False)
    assert sorted(zarrflow.open_group(tmp_path / "sub.zarr").keys()) == ["temperature", "time"]


def test_units_cover_source_chunks_and_write_blocks():
    from zarrflow.tools.rechunk import ArrayPlan

    p = ArrayPlan("a", (10, 7, 100), np.dtype("f4"), None, chunks=(4, 7, 50), shards=None,
                  fill_value=None, attrs={}, read=lambda r: None, source_chunks=(3, 7, 100))
    u = unit_shape(p, 1 << 30)
    assert u == (12, 7, 100)  # lcm(3, 4) = 12 → whole source and target chunks
    small = unit_shape(p, 4 * 4 * 7 * 100)
    assert small == (4, 7, 100)  # over budget: fall back to the write block along time
    cover = np.zeros(p.shape, int)
    for region in units(p, small):
        cover[region] += 1
        assert all(s.start % b == 0 for s, b in zip(region, p.chunks))
    assert (cover == 1).all()


@pytest.mark.parametrize("opts, match", [
    (Options(shards={"time": 3}, chunks={"time": 2}), "does not divide"),
    (Options(zarr_format=2, shards={"time": 2}), "need Zarr v3"),
    (Options(zarr_format=2, crc32c=True), "need Zarr v3"),
    (Options(codec="lzma"), "unknown codec"),
    (Options(codec="zstd:99"), "out of range"),
    (Options(chunks={"time": 0}), ">= 1"),
    (Options(arrays=("nope",)), r"unknown array .nope. \(known: 2m_temperature"),
    (Options(stack=("nope",)), "unknown variable"),
    (Options(stack=("geopotentail@500",)),
     r"--stack: unknown variable 'geopotentail' \(did you mean 'geopotential'\?; known: "),
    (Options(chunks={"tim": 1}),
     r"--chunks: unknown dimension 'tim' \(did you mean 'time'\?; known: time, latitude, longitude, level\)"),
    (Options(shards={"lattitude": 2}),
     r"--shards: unknown dimension 'lattitude' \(did you mean 'latitude'\?"),
    (Options(stack=("2m_temperature",), chunks={"chanel": 1}), r"did you mean 'channel'\?"),
    (Options(stack=("2m_temperature",), stack_name="time"), "also the name of an array"),
    (Options(stack=("geopotential",)), "say which one"),
    (Options(memory=1000), "does not fit in --memory"),
])
def test_bad_requests(wb2, tmp_path, opts, match):
    with pytest.raises(errors.ZarrflowError, match=match):
        rechunk(wb2, tmp_path / "o", opts, progress=False)
    assert list(tmp_path.iterdir()) == []  # nothing written, not even <dest>.partial


def test_unwritable_destination(wb2, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(errors.StoreIOError, match="cannot create"):
        rechunk(wb2, blocker / "o.zarr", Options(), progress=False)


def test_corrupt_source_chunk_names_array_and_key(wb2, tmp_path):
    import shutil

    src = tmp_path / "src.zarr"
    shutil.copytree(wb2, src)
    (src / "temperature" / "2.1.0.0").write_bytes(b"garbage, not blosc")
    with pytest.raises(errors.CorruptChunkError, match=r"temperature.*2\.1\.0\.0"):
        rechunk(src, tmp_path / "o.zarr", Options(), progress=False)
    assert not (tmp_path / "o.zarr").exists()


def test_cli(wb2, tmp_path):
    dst = tmp_path / "c.zarr"
    r = run_cli("rechunk", str(wb2), str(dst), "--chunks", "time=2,latitude=19",
                "--shards", "time=4", "--codec", "blosc-lz4:3", "--verify", "--memory", "64MB")
    assert r.returncode == 0, r.stderr
    assert "verified; complete" in r.stdout and "rechunk c.zarr [" in r.stderr
    assert zarrflow.open_group(dst)["temperature"].shards == (4, 1, 19, NLON)
    r = run_cli("rechunk", str(wb2), str(dst))
    assert r.returncode == 1 and "already exists" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("rechunk", str(wb2), str(tmp_path / "x"), "--chunks", "time:2")
    assert r.returncode == 1 and "dim=size" in r.stderr
    r = run_cli("rechunk", str(wb2), str(tmp_path / "x"), "--part", "3/2")
    assert r.returncode == 1 and "part" in r.stderr


def test_cli_names_an_unknown_dimension_and_writes_nothing(wb2, tmp_path):
    r = run_cli("rechunk", str(wb2), str(tmp_path / "t.zarr"), "--chunks", "tim=1")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "unknown dimension 'tim' (did you mean 'time'?; known: time, latitude, longitude, level)" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_write_failure_like_a_full_disk_is_clear_and_resumable(wb2, tmp_path, monkeypatch):
    import zarrflow.tools.rechunk as R

    real_open = R._open_output
    state = {"writes": 0}

    class FullDisk:
        def __init__(self, h):
            self.h = h

        def __getitem__(self, region):
            target = self.h[region]

            class W:
                def write(self, block):
                    state["writes"] += 1
                    if state["writes"] >= 4:
                        raise ValueError("Error writing local file: [OS error 28: No space left on device]")
                    return target.write(block)
            return W()

    monkeypatch.setattr(R, "_open_output", lambda spec: FullDisk(real_open(spec)))
    dst = tmp_path / "f.zarr"
    with pytest.raises(errors.StoreIOError, match=r"No space left.*rerun the same command"):
        rechunk(wb2, dst, Options(chunks={"time": 1}, threads=1), progress=False)
    assert not dst.exists()
    monkeypatch.setattr(R, "_open_output", real_open)
    rep = rechunk(wb2, dst, Options(chunks={"time": 1}, threads=1), progress=False)
    assert rep.finalized and rep.skipped == 3
    check_everywhere(wb2, dst, ["temperature", "2m_temperature"], 3)


def test_parts_started_at_once_in_separate_processes(wb2, tmp_path):
    dst = tmp_path / "cc.zarr"
    procs = [subprocess.Popen([sys.executable, "-m", "zarrflow", "rechunk", str(wb2), str(dst),
                               "--chunks", "time=1", "--part", f"{i}/3", "--quiet", "--threads", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert sum("complete" in o[0] and "waiting" not in o[0] for o in outs) == 1
    check_everywhere(wb2, dst, ["temperature", "geopotential", "time"], 3)
    assert not (tmp_path / "cc.zarr.partial").exists()


def test_foreign_partial_folder_is_left_alone(wb2, tmp_path):
    (tmp_path / "o.zarr.partial").mkdir()
    (tmp_path / "o.zarr.partial" / "mine.txt").write_text("keep")
    with pytest.raises(RechunkError, match="not a rechunk in progress"):
        rechunk(wb2, tmp_path / "o.zarr", Options(), progress=False)
    assert (tmp_path / "o.zarr.partial" / "mine.txt").read_text() == "keep"


@pytest.mark.parametrize("fmt", [2, 3])
def test_nested_groups_keep_their_attributes(tmp_path, fmt):
    src = tmp_path / "nested.zarr"
    root = zarr.open_group(str(src), mode="w", zarr_format=3)
    root.attrs["title"] = "root"
    inner = root.create_group("a").create_group("b")
    root["a"].attrs["level"] = "a"
    inner.attrs["level"] = "b"
    arr = inner.create_array("x", shape=(6, 4), chunks=(6, 4), dtype="int16",
                             dimension_names=["time", "y"])
    arr[...] = np.arange(24, dtype="int16").reshape(6, 4)
    dst = tmp_path / "out.zarr"
    rechunk(src, dst, Options(chunks={"time": 2}, zarr_format=fmt), progress=False)
    g = zarr.open_group(str(dst), mode="r")
    assert g.attrs["title"] == "root" and g["a"].attrs["level"] == "a"
    assert g["a/b"].attrs["level"] == "b"
    assert same_bytes(zarrflow.open_group(dst)["a/b/x"][...], arr[...])
    assert zarrflow.open_group(dst)["a/b/x"].chunks == (2, 4)
