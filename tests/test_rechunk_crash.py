"""`zarrflow rechunk` killed at every step boundary (ZARRFLOW_RECHUNK_CRASH_AT, os._exit, no
cleanup): no reader ever opens `<dest>.partial` or a store that is not complete, an existing
destination is never lost (and never missing where the file system exchanges paths), and
rerunning the same request finishes the job with the expected store. Plus finalisation claims:
a dead claimant is taken over, a live one (here or on another host) is not."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow.tools import _rechunk_commit as commit
from zarrflow.tools._rechunk_commit import CRASH_EXIT_STATUS, CRASH_STEPS, Staging
from zarrflow.tools.rechunk import Options, rechunk

zarr = pytest.importorskip("zarr")
pytest.importorskip("tensorstore")

OPTS = Options(chunks={"time": 1}, verify=True, threads=2)
OLD_OPTS = Options(chunks={"time": 4}, codec="none")
ARRAYS = ("t2m", "time", "lat", "sub/x")

# Run by the killed process: the request of OPTS (in the Zarr format asked), with the exchange
# of paths turned off on ask.
SCRIPT = """
import sys
import zarrflow.tools._rechunk_commit as commit
from zarrflow.tools.rechunk import Options, rechunk
if sys.argv[3] == "aside":
    commit.rename_exchange = lambda a, b: False
rechunk(sys.argv[1], sys.argv[2], Options(chunks={"time": 1}, verify=True, threads=2,
                                          zarr_format=int(sys.argv[4])),
        overwrite=sys.argv[3] != "fresh", progress=False)
"""


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """A tiny source (float data, a datetime coordinate zarr-python copies, a sub-group), the
    store OPTS makes of it, and an older store of the same name that --overwrite replaces."""
    base = tmp_path_factory.mktemp("crash")
    src = base / "src.zarr"
    g = zarr.open_group(str(src), mode="w", zarr_format=3)
    t2m = g.create_array("t2m", shape=(4, 3, 5), chunks=(2, 3, 5), dtype="float32",
                         dimension_names=["time", "lat", "lon"])
    t2m[...] = np.arange(60, dtype="float32").reshape(4, 3, 5)
    time = g.create_array("time", shape=(4,), chunks=(4,), dtype="datetime64[s]",
                          dimension_names=["time"])
    time[...] = np.arange(4).astype("datetime64[D]").astype("datetime64[s]")
    lat = g.create_array("lat", shape=(3,), chunks=(3,), dtype="float64", dimension_names=["lat"])
    lat[...] = [10.0, 0.0, -10.0]
    x = g.create_group("sub").create_array("x", shape=(4, 2), chunks=(4, 2), dtype="int16",
                                           dimension_names=["time", "y"])
    x[...] = np.arange(8, dtype="int16").reshape(4, 2)
    expected, expected2, old = base / "expected.zarr", base / "expected2.zarr", base / "old.zarr"
    rechunk(src, expected, OPTS, progress=False)
    rechunk(src, expected2, replace(OPTS, zarr_format=2), progress=False)
    rechunk(src, old, OLD_OPTS, progress=False)
    return {"src": src, "expected": expected, "expected2": expected2, "old": old}


def _contents(path: Path) -> dict[str, np.ndarray] | None:
    """Every array of the store at `path` as zarr-python reads it; None when it does not open."""
    try:
        g = zarr.open_group(str(path), mode="r")
        return {name: g[name][...] for name in ARRAYS}
    except Exception:  # noqa: BLE001  (not a store, or not a whole one)
        return None


def _same(a: dict | None, b: dict | None) -> bool:
    return a is not None and b is not None and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in ARRAYS)


def _opened_by(path: Path) -> list[str]:
    """The readers that open `path` as a Zarr node."""
    xr = pytest.importorskip("xarray")
    opened = []
    for reader, fn in (("zarr-python", lambda: zarr.open(str(path), mode="r")),
                       ("xarray", lambda: xr.open_zarr(path)),
                       ("zarrflow", lambda: zarrflow.open(path))):
        try:
            fn()
            opened.append(reader)
        except Exception:  # noqa: BLE001  (each reader has its own error types)
            pass
    return opened


def _cases():
    swap = ("marked-complete", "exchanged", "old-aside", "renamed", "old-deleted")
    for step in CRASH_STEPS:
        if step not in ("exchanged", "old-aside"):
            yield step, "fresh", 3
        if step != "old-aside":
            yield step, "exchange", 3
        if step in swap and step != "exchanged":
            yield step, "aside", 3
    for step in ("unit-recorded", "arrays-metadata-written", "root-metadata-written"):
        yield step, "fresh", 2  # v2: .zattrs, .zgroup and .zmetadata at the root


@pytest.mark.parametrize("step, mode, fmt", list(_cases()))
def test_killed_at_every_step_then_rerun(stores, tmp_path, step, mode, fmt):
    dest = tmp_path / "out.zarr"
    stage = Staging(dest)
    new = _contents(stores["expected" if fmt == 3 else "expected2"])
    old = _contents(stores["old"])
    if mode != "fresh":
        shutil.copytree(stores["old"], dest)
    env = dict(os.environ, ZARRFLOW_RECHUNK_CRASH_AT=step)
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(stores["src"]), str(dest), mode,
                        str(fmt)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == CRASH_EXIT_STATUS, r.stderr

    # What readers can see now.
    assert _opened_by(stage.root) == [], "the staging folder opens as a Zarr node"
    store_now = _contents(stage.store)
    if CRASH_STEPS.index(step) < CRASH_STEPS.index("root-metadata-written"):
        assert _opened_by(stage.store) == [], f"{step}: an unfinished store opens"
        for name in ARRAYS:  # an array below opens only once its data is complete
            arr = stage.store / name
            if arr.exists() and _opened_by(arr):
                assert np.array_equal(zarr.open_array(str(arr), mode="r")[...], new[name])
    elif stage.store.exists():
        assert _same(store_now, new) or _same(store_now, old)
    dest_now = _contents(dest)
    if mode == "fresh":
        assert not dest.exists() or _same(dest_now, new)
    elif step == "old-aside":  # the one instant without dest, where paths cannot be exchanged
        assert not dest.exists() and _same(_contents(stage.old), old)
    else:
        assert _same(dest_now, old) or _same(dest_now, new), f"{step}: {dest} lost"

    # The same request again finishes the job.
    rep = rechunk(stores["src"], dest, replace(OPTS, zarr_format=fmt), overwrite=mode != "fresh",
                  progress=False)
    assert rep.finalized or (step in ("renamed", "old-deleted") and not stage.root.exists())
    assert _same(_contents(dest), new)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr"]
    assert not (dest / "journal").exists()


def test_every_step_is_reached_by_some_case():
    assert {s for s, _, _ in _cases()} == set(CRASH_STEPS)


# --------------------------------------------------------------------------------------------
# Finalisation claims
# --------------------------------------------------------------------------------------------


def _first_of_two_parts_done(stores, tmp_path: Path, lease: float) -> tuple[Path, Options]:
    """The first of two parts of a rechunk into tmp_path/o.zarr whose finalisation claims hold
    for `lease` seconds, done: returns the destination and the options the second part runs
    with."""
    dest = tmp_path / "o.zarr"
    opts = Options(chunks={"time": 1}, lease=lease)
    rep = rechunk(stores["src"], dest, opts, part=(0, 2), progress=False)
    assert not rep.finalized and rep.state == "waiting for the other parts"
    return dest, opts


def _second_part(stores, dest: Path, opts: Options):
    """The second part of the rechunk _first_of_two_parts_done began: its report."""
    return rechunk(stores["src"], dest, opts, part=(1, 2), progress=False)


def _claim_as(stage: Staging, owner: dict, gen: int = 0) -> Path:
    path = stage.journal / f"finalizing.{gen}"
    path.write_text(json.dumps(owner))
    return path


def test_claim_of_a_process_gone_on_this_machine_is_taken_over_at_once(stores, tmp_path):
    # (a long lease: a lease wait would hang the test)
    dest, opts = _first_of_two_parts_done(stores, tmp_path, lease=3600)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    owner = dict(commit._me(), pid=int(dead))
    owner["start"] = -1  # a pid of the past (and, if reused, another process)
    _claim_as(Staging(dest), owner)
    rep = _second_part(stores, dest, opts)
    assert rep.finalized and _same(_contents(dest), _contents(stores["expected"]))


def test_claim_of_a_live_process_here_is_respected(stores, tmp_path):
    dest, opts = _first_of_two_parts_done(stores, tmp_path, lease=3600)
    _claim_as(Staging(dest), commit._me())  # this very process: alive
    rep = _second_part(stores, dest, opts)
    assert not rep.finalized and "finalising in another process" in rep.state
    assert f"pid {os.getpid()}" in rep.state and not dest.exists()


def _other_host() -> dict:
    return {"host": socket.gethostname() + "-other-node", "boot": "x", "pidns": "x", "pid": 1,
            "start": 1, "token": "t"}


def test_claim_from_another_host_that_stops_beating_is_taken_over_after_the_lease(stores,
                                                                               tmp_path):
    dest, opts = _first_of_two_parts_done(stores, tmp_path, lease=0.4)
    stage = Staging(dest)
    _claim_as(stage, _other_host())
    (stage.journal / "finalizing.0.beat").write_text("7")
    rep = _second_part(stores, dest, opts)
    assert rep.finalized and _same(_contents(dest), _contents(stores["expected"]))


def test_claim_from_another_host_that_beats_is_respected(stores, tmp_path):
    dest, opts = _first_of_two_parts_done(stores, tmp_path, lease=0.4)
    stage = Staging(dest)
    _claim_as(stage, _other_host())
    stop = threading.Event()

    def beat():
        n = 0
        while not stop.wait(0.03):
            n += 1
            commit.write_atomic(stage.journal / "finalizing.0.beat", str(n))

    t = threading.Thread(target=beat)
    t.start()
    try:
        rep = _second_part(stores, dest, opts)
    finally:
        stop.set()
        t.join()
    assert not rep.finalized and "-other-node" in rep.state and not dest.exists()
    rep = _second_part(stores, dest, opts)  # it stopped beating
    assert rep.finalized and _same(_contents(dest), _contents(stores["expected"]))


def test_a_finaliser_that_was_taken_over_stops(tmp_path):
    journal = tmp_path / "journal"
    journal.mkdir()
    claim, why = commit.claim_finalisation(journal, lease=60)
    assert claim is not None and why == ""
    try:
        claim.check()
        (journal / "finalizing.1").write_text(json.dumps(_other_host()))  # a takeover
        with pytest.raises(commit.RechunkError, match="taken over"):
            claim.check()
    finally:
        claim.release()


def test_leftovers_of_a_kill_before_or_after_the_plan_do_not_block_a_rerun(stores, tmp_path):
    dest = tmp_path / "o.zarr"
    stage = Staging(dest)
    (stage.journal / "view").mkdir(parents=True)  # emptied folders and the last claim
    (stage.journal / "finalizing.0").write_text(json.dumps(_other_host()))
    (stage.journal / ".plan.123.456.tmp").write_text("digest")  # killed before its link
    rep = rechunk(stores["src"], dest, OPTS, progress=False)
    assert rep.finalized and not stage.root.exists()


def test_a_claim_won_after_another_finaliser_began_its_cleanup_writes_nothing(tmp_path):
    stage = Staging(tmp_path / "o.zarr")
    stage.journal.mkdir(parents=True)
    stage.plan_file.write_text("digest")  # no part markers any more, no completion record

    def write_metadata(still_mine):
        raise AssertionError("metadata written after the store was swapped in")

    done, why = commit.finalise(stage, "digest", 2, False, 60, write_metadata)
    assert not done and why == "finalised by another process"
    assert sorted(p.name for p in stage.journal.iterdir()) == ["plan"]


def test_rename_exchange_swaps_two_folders(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "in_a").touch()
    if not commit.rename_exchange(a, b):
        pytest.skip("this file system cannot exchange paths")
    assert (b / "in_a").exists() and not (a / "in_a").exists()
