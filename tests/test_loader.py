"""The batch loader on the CPU (device="cpu"): batches equal direct reads, sampling is deterministic
and sharded correctly, resume works, bad settings give clear errors. The GPU loader is checked
against this one in test_loader_gpu.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow.loader import LoaderError
from zarrflow.loader.spec import valid_times

zarr = pytest.importorskip("zarr")

NT, NLAT, NLON = 20, 8, 12
LEVELS = [500, 850]
LABELS = ["u500", "v500", "z500"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A small ERA5-like group: t2m (time, lat, lon), u (time, level, lat, lon) in Zarr v3, a
    stacked (time, channel, lat, lon) array, coordinates; one chunk of u missing."""
    path = tmp_path_factory.mktemp("loader") / "era5.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    rng = np.random.default_rng(0)
    t2m = rng.standard_normal((NT, NLAT, NLON)).astype("float32") + 280
    u = rng.standard_normal((NT, 2, NLAT, NLON)).astype("float32")
    data = rng.standard_normal((NT, 3, NLAT, NLON)).astype("float32")
    a = root.create_array("t2m", shape=t2m.shape, chunks=(1, NLAT, NLON), dtype="float32",
                          dimension_names=["time", "latitude", "longitude"], fill_value=np.nan)
    a[...] = t2m
    b = root.create_array("u", shape=u.shape, chunks=(1, 1, 4, NLON), dtype="float32",
                          dimension_names=["time", "level", "latitude", "longitude"],
                          fill_value=np.nan)
    b[...] = u
    c = root.create_array("data", shape=data.shape, chunks=(1, 3, NLAT, NLON), dtype="float32",
                          dimension_names=["time", "channel", "latitude", "longitude"],
                          fill_value=0)
    c[...] = data
    c.attrs["channels"] = LABELS
    lev = root.create_array("level", shape=(2,), dtype="int64", dimension_names=["level"],
                            chunks=(2,), fill_value=0)
    lev[...] = np.array(LEVELS)
    tm = root.create_array("time", shape=(NT,), dtype="int64", dimension_names=["time"],
                           chunks=(NT,), fill_value=0)
    tm[...] = np.arange(NT) * 6
    small = root.create_array("small", shape=(NT, 4, 4), chunks=(1, 4, 4), dtype="float32",
                              dimension_names=["time", "latitude", "longitude"], fill_value=0)
    small[...] = 1
    (path / "u" / "c" / "3" / "1" / "0" / "0").unlink()  # u@850, time 3, first lat half: missing
    return path


def expected(store: Path, names: list[str], t: int) -> np.ndarray:
    g = zarr.open_group(str(store), mode="r")
    out = []
    for n in names:
        if n == "t2m":
            out.append(g["t2m"][t])
        elif n.startswith("u@"):
            out.append(g["u"][t, LEVELS.index(int(n[2:]))])
        else:
            out.append(g["data"][t, LABELS.index(n.split("@")[1])])
    return np.stack(out)


VARS = ["t2m", "u@850", "data@v500"]


def test_batches_equal_direct_reads(store):
    ld = zarrflow.Loader(store, VARS, batch_size=4, device="cpu", output="numpy", shuffle=False)
    assert ld.channels == VARS
    batches = list(ld)
    assert len(batches) == len(ld) == -(-(NT - 1) // 4)  # the last batch holds the rest
    for i, batch in enumerate(batches):
        times = batch["time"]
        assert list(times) == list(range(4 * i, min(4 * i + 4, NT - 1)))
        assert batch["x"].shape == (len(times), 3, NLAT, NLON) and batch["x"].dtype == np.float32
        for b, t in enumerate(times):
            np.testing.assert_array_equal(batch["x"][b], expected(store, VARS, t))
            np.testing.assert_array_equal(batch["y"][b], expected(store, VARS, t + 1))
    st = ld.stats()
    assert st["batches"] == len(batches) and st["samples"] == NT - 1
    assert st["missing"] == 2  # u@850's missing chunk, read as x of one sample and y of another


def test_timeline_says_who_made_each_batch_and_how_long_the_consumer_waited(store):
    ld = zarrflow.Loader(store, VARS, batch_size=2, device="cpu", output="numpy", workers=2,
                         prime_next_epoch=False)
    n = len(ld)
    for epoch in range(2):
        ld.set_epoch(epoch)
        for _ in ld:
            time.sleep(0.01)  # a consumer that works: batches get ready ahead of it
    tl = ld.timeline()
    assert [(r["epoch"], r["batch"]) for r in tl] == [(e, b) for e in range(2) for b in range(n)]
    for r in tl:
        assert r["worker"] in (0, 1)
        assert 0 <= r["start"] <= r["read_end"] <= r["end"]
        assert r["asked"] <= r["taken"] and r["wait"] == pytest.approx(r["taken"] - r["asked"])
        assert r["end"] <= r["taken"]  # handed out only once made
        assert 0 <= r["ready"] <= ld.prefetch + ld.workers - 1
        assert r["host_share"] == 0.0  # a CPU loader has no GPU to share decoding with
        assert r["pools_grew"] is False  # only watched for a decode balance
    assert sum(r["wait"] for r in tl) <= ld.stats()["wait_s"] + 1e-9
    assert 0 < ld.stats()["mean_queue_depth"] <= ld.prefetch + ld.workers - 1


def test_time_windows_and_crop(store):
    ld = zarrflow.Loader(store, VARS, batch_size=2, input_steps=3, lead=2, target_steps=2,
                         layout="BTCHW", crop={"latitude": (2, 6), "longitude": (1, 11)},
                         device="cpu", output="numpy", shuffle=False)
    batch = next(iter(ld))
    assert batch["x"].shape == (2, 3, 3, 4, 10) and batch["y"].shape == (2, 2, 3, 4, 10)
    t = int(batch["time"][0])
    assert t == 2  # first valid: t - 2 >= 0
    for j, tt in enumerate([t - 2, t - 1, t]):
        np.testing.assert_array_equal(batch["x"][0, j], expected(store, VARS, tt)[:, 2:6, 1:11])
    for j, tt in enumerate([t + 2, t + 3]):
        np.testing.assert_array_equal(batch["y"][0, j], expected(store, VARS, tt)[:, 2:6, 1:11])
    assert len(valid_times(NT, 3, 2, 2)) == NT - 2 - 3


def test_normalisation_and_bfloat16(store, tmp_path):
    stats_path = tmp_path / "stats.json"
    stats = zarrflow.compute_stats(store, VARS, path=str(stats_path))
    direct = np.stack([expected(store, VARS, t) for t in range(NT)]).astype(np.float64)
    np.testing.assert_allclose(stats["mean"], np.nanmean(direct, axis=(0, 2, 3)), rtol=1e-9)
    np.testing.assert_allclose(stats["std"], np.nanstd(direct, axis=(0, 2, 3)), rtol=1e-6)
    ld = zarrflow.Loader(store, VARS, batch_size=4, device="cpu", output="numpy", shuffle=False,
                         normalize=str(stats_path), dtype="bfloat16")
    batch = next(iter(ld))
    assert batch["x"].dtype.name == "bfloat16"
    x = batch["x"].astype(np.float32)
    want = (expected(store, VARS, 0) - np.float32(stats["mean"])[:, None, None]) * (
        np.float32(1) / np.float32(stats["std"]))[:, None, None]
    assert np.isnan(want).sum() == 0
    np.testing.assert_allclose(x[0], want, atol=0.02, rtol=0.01)
    assert abs(float(np.nanmean(x))) < 0.5


def test_nans_are_counted(store):
    ld = zarrflow.Loader(store, ["u@850"], batch_size=4, device="cpu", output="numpy",
                         shuffle=False)
    list(ld)
    # time 3 of u@850 is missing in its first half → NaN fill: counted in x (t=3) and y (t=2).
    assert ld.stats()["nans"] == 2 * 4 * NLON


def test_missing_error_policy_on_the_host(store):
    ld = zarrflow.Loader(store, ["u@850"], batch_size=4, device="cpu", output="numpy",
                         shuffle=False, missing="error")
    with pytest.raises(zarrflow.MissingChunkError, match="not stored"):
        list(ld)


def test_host_batches_count_chunks_as_gpu_batches_do(store):
    ld = zarrflow.Loader(store, ["u@850"], batch_size=4, device="cpu", output="numpy",
                         shuffle=False)
    list(ld)
    st = ld.stats()
    # Two chunks per field (u's chunks hold 4 of 8 rows), two fields per sample (x, y); time 3's
    # first chunk is missing, read as x of one sample and y of another (test_nans_are_counted).
    assert st["chunks"] == 2 * 2 * st["samples"]
    assert st["missing"] == 2
    # Consecutive samples share a step (y of one is x of the next): a batch of 4 reads it once.
    shared = sum(2 * (len(batch) - 1) for batch in ld.batches())
    assert st["deduplicated"] == shared - 1  # one of the shared chunks is the missing one
    assert st["cpu_decoded"] == st["chunks"] - st["missing"] - st["deduplicated"]
    assert st["gpu_decoded"] == 0
    stored = 0
    for t in (t for batch in ld.batches() for s in batch for t in (s, s + 1)):
        for half in (0, 1):
            chunk = store / "u" / "c" / str(t) / "1" / str(half) / "0"
            stored += chunk.stat().st_size if chunk.exists() else 0
    assert st["stored_bytes"] == stored


def test_time_range_splits_without_leakage(store):
    split = NT - 4
    train = zarrflow.Loader(store, ["t2m"], batch_size=1, device="cpu", output="numpy",
                            shuffle=False, time_range=(0, split), input_steps=2, lead=1,
                            target_steps=1, layout="BTCHW")
    val = zarrflow.Loader(store, ["t2m"], batch_size=1, device="cpu", output="numpy",
                          shuffle=False, time_range=(split, NT), input_steps=2, lead=1,
                          target_steps=1, layout="BTCHW")
    tt = [int(b["time"][0]) for b in train]
    vt = [int(b["time"][0]) for b in val]
    # inputs t-1, t and target t+1 all inside the range
    assert tt == list(range(1, split - 1)) and vt == list(range(split + 1, NT - 1))
    g = zarrflow.open_group(store)
    b = next(iter(val))
    np.testing.assert_array_equal(b["x"][0, :, 0], g["t2m"][split:split + 2])
    np.testing.assert_array_equal(b["y"][0, 0, 0], g["t2m"][split + 2])


def test_resume_mid_epoch(store):
    kw = dict(batch_size=2, device="cpu", output="numpy", shuffle=True, seed=7)
    ld = zarrflow.Loader(store, VARS, **kw)
    ld.set_epoch(3)
    full = [b["time"].tolist() for b in ld]
    ld.set_epoch(3)
    it = iter(ld)
    next(it)
    next(it)
    state = ld.state_dict()
    it.close()
    assert state == {"epoch": 3, "position": 2, "seed": 7}
    fresh = zarrflow.Loader(store, VARS, **kw)
    fresh.load_state_dict(json.loads(json.dumps(state)))
    rest = [b["time"].tolist() for b in fresh]
    assert rest == full[2:]


def test_rank_split_covers_epoch(store):
    """drop_last=True: disjoint shares of equal length; the default (drop_last=False, as
    PyTorch's DistributedSampler): every sample is read, the shares padded to equal length."""
    seen, padded = [], []
    for rank in range(2):
        ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy", seed=3,
                             rank=rank, world_size=2, drop_last=True)
        seen.append([t for b in ld for t in b["time"].tolist()])
        ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy", seed=3,
                             rank=rank, world_size=2)
        padded.append([t for b in ld for t in b["time"].tolist()])
        assert len(ld) == -(-len(padded[-1]) // 3)
    assert not set(seen[0]) & set(seen[1])
    assert len(seen[0]) == len(seen[1]) == (NT - 1) // 2 // 3 * 3
    assert len(padded[0]) == len(padded[1]) == -(-(NT - 1) // 2)
    assert sorted(set(padded[0]) | set(padded[1])) == list(range(NT - 1))
    assert len(set(padded[0]) & set(padded[1])) == 2 * len(padded[0]) - (NT - 1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(variables=["nope"]), "unknown variable"),
    (dict(variables=["u@700"]), "unknown level"),
    (dict(variables=["u"]), "say which one"),
    (dict(variables=["data@w"]), "unknown channel"),
    (dict(variables=["t2m", "small"]), "do not share a grid"),
    (dict(variables=[]), "no variables"),
    (dict(variables=["t2m"], input_steps=15, lead=5, target_steps=2, layout="BTCHW"),
     "does not fit"),
    (dict(variables=["t2m"], crop={"latitude": (0, 99)}), "outside"),
    (dict(variables=["t2m"], crop={"height": (0, 1)}), "unknown crop dims"),
    (dict(variables=["t2m"], layout="BCHW", input_steps=2), "one time step"),
    (dict(variables=["t2m"], batch_size=50, drop_last=True), "no batches"),
    (dict(variables=["t2m"], dtype="int8"), "dtype"),
    (dict(variables=["t2m"], stream_priority="urgent"), "stream_priority"),
    (dict(variables=["t2m"], normalize={"mean": [0], "std": [0]}), "positive"),
    (dict(variables=["t2m"], time_range=(5, 5)), "not inside"),
    (dict(variables=["t2m"], time_range=(0, 99)), "not inside"),
    (dict(variables=["t2m"], time_range=(3, 4)), "no sample fits"),
])
def test_bad_settings_are_clear_errors(store, kwargs, match):
    variables = kwargs.pop("variables")
    with pytest.raises(LoaderError, match=match):
        zarrflow.Loader(store, variables, device="cpu", output="numpy", **kwargs)


def test_loader_without_gpu_says_why(store):
    if zarrflow.cuda_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(LoaderError, match="no GPU"):
        zarrflow.Loader(store, VARS, device="cuda")


def test_interpreter_exits_cleanly_mid_epoch(store):
    """Leaving the interpreter with a loader mid-epoch (producer thread, queued batches) must
    neither hang nor crash."""
    import subprocess
    import sys

    code = (f"import zarrflow\n"
            f"ld = zarrflow.Loader({str(store)!r}, {VARS!r}, batch_size=2, device='cpu', "
            f"output='numpy', prefetch=2)\n"
            f"it = iter(ld)\nnext(it)\nprint('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_a_cpu_loader_reads_in_a_forked_child(store):
    """The engine's threads do not survive fork: a child (a DataLoader worker) whose parent
    already iterated makes its own and gets the same batches."""
    import multiprocessing as mp

    ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy", seed=4)
    first = [b["time"].tolist() for b in ld]  # the parent's engine runs and reads ahead

    def child(q):
        q.put([b["time"].tolist() for b in ld])

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    got = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0 and got == first
    assert [b["time"].tolist() for b in ld] == first  # the parent's engine is unaffected


def test_spatial_windows_with_overlap(store):
    ld = zarrflow.Loader(store, VARS, batch_size=6, device="cpu", output="numpy", shuffle=False,
                         input_dims={"latitude": 4, "longitude": 6},
                         input_overlap={"latitude": 2, "longitude": 2})
    assert ld.spatial_shape == (4, 6)
    assert len(ld.patch_origins) == 3 * 2  # lat starts 0, 2, 4; lon starts 0, 4
    batch = next(iter(ld))
    assert batch["x"].shape == (6, 3, 4, 6)
    for b in range(6):
        t = int(batch["time"][b])
        la, lo = batch["origin"][b]
        full = expected(store, VARS, t)
        np.testing.assert_array_equal(batch["x"][b], full[:, la:la + 4, lo:lo + 6])
        np.testing.assert_array_equal(batch["y"][b], expected(store, VARS, t + 1)[:, la:la + 4, lo:lo + 6])
    assert sorted(map(tuple, batch["origin"])) == sorted(ld.patch_origins)
    # windows inside a crop are placed relative to the crop
    cropped = zarrflow.Loader(store, VARS, batch_size=2, device="cpu", output="numpy",
                              shuffle=False, crop={"longitude": (2, 12)},
                              input_dims={"longitude": 5})
    assert [tuple(o) for o in next(iter(cropped))["origin"]] == [(0, 2), (0, 7)]


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_dims={"latitude": 9}), "larger than the dimension"),
    (dict(input_dims={"latitude": 4}, input_overlap={"latitude": 4}), "overlap"),
    (dict(input_dims={"level": 1}), "unknown window dims"),
])
def test_bad_windows(store, kwargs, match):
    with pytest.raises(LoaderError, match=match):
        zarrflow.Loader(store, VARS, device="cpu", output="numpy", **kwargs)


def test_progress_lines(store, capsys):
    ld = zarrflow.Loader(store, VARS, batch_size=2, device="cpu", output="numpy", progress=3)
    list(ld)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("zarrflow loader:")]
    assert len(lines) == len(ld) // 3
    assert f"3/{len(ld)} batches" in lines[0] and "samples/s" in lines[0]


def _epochs(ld, order):
    out = []
    for e in order:
        if e is not None:
            ld.set_epoch(e)
        out.append([(b["time"].copy(), b["x"].copy()) for b in ld])
    return out


@pytest.mark.parametrize("order", [[0, 1, 2], [None, None], [0, 5, 1, 1]],
                         ids=["set_epoch", "same-epoch", "guess-wrong"])
def test_next_epoch_read_ahead_changes_nothing(store, order):
    kw = dict(batch_size=3, device="cpu", output="numpy", shuffle="global", seed=7, prefetch=2)
    with_prime = _epochs(zarrflow.Loader(store, VARS, **kw), order)
    without = _epochs(zarrflow.Loader(store, VARS, prime_next_epoch=False, **kw), order)
    for a, b in zip(with_prime, without):
        assert len(a) == len(b)
        for (ta, xa), (tb, xb) in zip(a, b):
            np.testing.assert_array_equal(ta, tb)
            np.testing.assert_array_equal(xa, xb)


def _wait_ready(ld, run, n, timeout=30.0):
    """Batches of the pass `run` made and waiting, once `n` are (or the timeout passed)."""
    def ready():
        return ld._engine.counts(run.id)["ready"]

    deadline = time.monotonic() + timeout
    while ready() < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return ready()


def test_next_epoch_read_ahead_is_used_and_counted_once(store):
    ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy", seed=1)
    n = len(list(ld))
    assert ld._primed is not None and ld._primed[0] == 0  # no set_epoch yet: same epoch
    depth = ld.prefetch + ld.workers - 1
    assert _wait_ready(ld, ld._primed[1], depth) == depth  # read ahead, stopped at the depth
    assert ld.stats()["batches"] == n  # ... and not counted until used
    ld.set_epoch(1)  # a different epoch than guessed: dropped, read normally
    assert len(list(ld)) == n and ld.stats()["batches"] == 2 * n
    assert ld._primed[0] == 2  # set_epoch was used: the next epoch is guessed
    ld.set_epoch(2)
    it = iter(ld)
    next(it)
    assert ld.stats()["batches"] == 2 * n + 1  # batches count when taken
    state = ld.state_dict()
    rest = [b["time"].copy() for b in it]
    ld.load_state_dict(state)  # resume mid-epoch: no read-ahead involved
    assert [list(b["time"]) for b in ld] == [list(t) for t in rest]


def test_next_pass_starts_with_the_last_batches_within_the_depth(store):
    ld = zarrflow.Loader(store, VARS, batch_size=2, device="cpu", output="numpy", seed=1,
                         prefetch=2, workers=2)
    depth = ld.prefetch + ld.workers - 1
    ld.set_epoch(0)
    it = iter(ld)
    for _ in range(len(ld)):
        next(it)
        assert ld._engine.in_flight <= depth
    # every batch of this pass taken, the pass not yet ended: the next one is already under way
    assert ld._primed is not None and ld._primed[0] == 1
    assert _wait_ready(ld, ld._primed[1], depth) == depth
    assert ld._engine.in_flight == depth
    with pytest.raises(StopIteration):
        next(it)
    ld.set_epoch(1)
    primed = ld._primed[1]
    assert len(list(ld)) == len(ld) and primed.taken == len(ld)


def test_read_ahead_guesses_next_epoch_after_set_epoch_and_reuses_unshuffled(store):
    ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy", seed=1)
    ld.set_epoch(0)  # as a training loop does before every pass
    list(ld)
    assert ld._primed[0] == 1
    primed = ld._primed[1]
    ld.set_epoch(1)
    next(iter(ld))
    assert primed.taken == 1  # the read-ahead batches were the ones used
    fixed = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy",
                            shuffle=False)
    fixed.set_epoch(0)
    list(fixed)
    primed = fixed._primed[1]  # guessed epoch 1: without shuffling the same batches
    fixed.set_epoch(0)
    next(iter(fixed))
    assert primed.taken == 1


@pytest.mark.parametrize("workers,prefetch", [(1, 1), (2, 2), (4, 3)])
def test_workers_give_the_same_batches_in_order(store, workers, prefetch):
    kw = dict(batch_size=3, device="cpu", output="numpy", shuffle="block", seed=3, block=4)
    ref = zarrflow.Loader(store, VARS, workers=1, prefetch=1, **kw)
    ld = zarrflow.Loader(store, VARS, workers=workers, prefetch=prefetch, **kw)
    for e in range(2):
        ref.set_epoch(e)
        ld.set_epoch(e)
        a, b = list(ref), list(ld)
        assert [list(x["time"]) for x in a] == [list(x["time"]) for x in b]
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x["x"], y["x"])
            np.testing.assert_array_equal(x["y"], y["y"])
    assert ld.stats()["batches"] == ref.stats()["batches"] == 2 * len(ld)


def test_bad_workers_and_host_share(store):
    with pytest.raises(LoaderError, match="workers"):
        zarrflow.Loader(store, VARS, device="cpu", workers=0)
    for bad in (1.5, "2", True):
        with pytest.raises(LoaderError, match="workers must be an integer"):
            zarrflow.Loader(store, VARS, device="cpu", workers=bad)
    # Without a GPU the default is two workers (the third is a GPU loader's spare).
    assert zarrflow.Loader(store, VARS, device="cpu", output="numpy").workers == 2
    for bad in (1.5, -0.1, "sometimes"):
        with pytest.raises(LoaderError, match="host_decode_share"):
            zarrflow.Loader(store, VARS, device="cpu", host_decode_share=bad)
    ld = zarrflow.Loader(store, VARS, device="cpu", output="numpy")
    assert ld.decode_share == 0.0 and ld.stats()["host_decode_share"] == 0.0
    assert "decode_moves_to_gpu" not in ld.stats()  # no balance without a GPU


def test_error_in_a_batch_reaches_the_consumer_in_order(store, tmp_path):
    import shutil

    bad = tmp_path / "bad.zarr"
    shutil.copytree(store, bad)
    ld = zarrflow.Loader(str(bad), VARS, batch_size=2, device="cpu", output="numpy",
                         shuffle=False, workers=3, prefetch=3)
    order = ld.batches()
    # x of its second sample and y of its first: a time step only the third batch reads
    victim = int(ld.times[order[2][0]]) + 1
    assert ld.spec.channels[0].name == "t2m"  # chunks (1, lat, lon): key c/<t>/0/0
    (bad / "t2m" / "c" / str(victim) / "0" / "0").write_bytes(b"not a chunk")
    got = []
    with pytest.raises(zarrflow.ZarrflowError, match="chunk"):
        for b in ld:
            got.append(list(b["time"]))
    assert got == [list(ld.times[i]) for i in order[:2]]  # the batches before it, in order


def test_a_dropped_loader_is_collected_and_its_read_ahead_stops(store):
    import gc
    import weakref

    ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy")
    list(ld)  # the next epoch is now being read ahead
    engine = ld._engine
    _wait_ready(ld, ld._primed[1], ld.prefetch + ld.workers - 1)  # the workers are idle, waiting
    assert engine.live_workers == ld.workers
    ref = weakref.ref(ld)
    del ld
    gc.collect()
    assert ref() is None
    assert engine.live_workers == 0  # joined when the loader went


def test_close_joins_the_workers_and_the_loader_still_works(store):
    """close() returns once the workers are joined and nothing they made is left in flight (the
    next epoch's batches, read ahead: on a GPU, pool memory that would come back after a
    release_memory()); iterating again starts new workers."""
    ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy")
    first = [b["time"].copy() for b in ld]  # the next epoch is now being read ahead
    engine = ld._engine
    assert ld._primed is not None and engine.live_workers == ld.workers
    ld.close()
    assert ld._primed is None and ld._engine is None
    assert engine.live_workers == 0 and engine.in_flight == 0 and engine.producing == 0
    assert [list(t) for t in first] == [list(b["time"]) for b in ld]
    assert ld._engine is not engine and ld._engine.live_workers == ld.workers
    ld.close()


def test_a_pass_iterated_across_close_raises_at_its_next_batch(store):
    ld = zarrflow.Loader(store, VARS, batch_size=3, device="cpu", output="numpy", shuffle=False)
    it = iter(ld)
    next(it)
    ld.close()
    with pytest.raises(RuntimeError, match="Loader was closed while this pass was being iterated"):
        next(it)
    assert len(list(ld)) == len(ld)
    ld.close()


def test_thread_nice_from_the_environment(monkeypatch, store):
    from zarrflow import _threads

    monkeypatch.setenv("ZARRFLOW_THREAD_NICE", "3")
    ex = _threads.make_executor(2)
    assert ex.threads == 2 and ex.nice == 3
    ld = zarrflow.Loader(store, VARS, batch_size=4, device="cpu", output="numpy", threads=2,
                         shuffle=False)
    assert ld._executor.nice == 3 and len(list(ld)) == len(ld)  # reads work the same
    monkeypatch.setenv("ZARRFLOW_THREAD_NICE", "25")
    with pytest.raises(ValueError, match="ZARRFLOW_THREAD_NICE"):
        _threads.make_executor(2)
    monkeypatch.setenv("ZARRFLOW_THREAD_NICE", "0")
    assert _threads.make_executor(1).nice == 0
    monkeypatch.delenv("ZARRFLOW_THREAD_NICE")
    assert _threads.make_executor(1).nice == _threads.DEFAULT_NICE == 5


def test_read_batch_rejects_bad_request_tables(store):
    from zarrflow import _core

    ld = zarrflow.Loader(store, VARS, batch_size=2, device="cpu", output="numpy", shuffle=False)
    arrays, table = ld._requests(*ld.spec.locate(ld.batches()[0]))
    target = _core.empty_tensor([2, 2, len(VARS), NLAT, NLON], "float32", "cpu", 0)
    report = _core.read_batch(arrays, table, target)  # as the loader calls it
    assert report["chunks"] > 0
    assert report["cpu_decoded"] == report["chunks"] - report["missing"] - report["deduplicated"]
    with pytest.raises(zarrflow.ZarrflowError, match="3 \\+ 4 x D columns"):
        _core.read_batch(arrays, np.ascontiguousarray(table[:, :-1]), target)
    bad = table.copy()
    bad[0, 0] = len(arrays)
    with pytest.raises(zarrflow.ZarrflowError, match="request 0 names array"):
        _core.read_batch(arrays, bad, target)
    bad = table.copy()
    bad[-1, 2] += NLAT * NLON  # one plane past the end of the batch
    with pytest.raises(zarrflow.ZarrflowError, match="writes outside"):
        _core.read_batch(arrays, bad, target)
    bad = table.copy()
    bad[1, 2] = -1
    with pytest.raises(zarrflow.ZarrflowError, match="writes outside"):
        _core.read_batch(arrays, bad, target)


def sharded_store(path: Path) -> tuple[Path, np.ndarray]:
    """A stacked (time, channel, lat, lon) array with one shard per field of 2-row inner chunks
    (zarr-python writes it)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    data = np.random.default_rng(1).standard_normal((NT, 3, NLAT, NLON)).astype("float32")
    a = root.create_array("data", shape=data.shape, chunks=(1, 1, 2, NLON),
                          shards=(1, 1, NLAT, NLON), dtype="float32",
                          dimension_names=["time", "channel", "latitude", "longitude"],
                          fill_value=0)
    a[...] = data
    a.attrs["channels"] = LABELS
    return path, data


SHARDED_VARS = ["data@u500", "data@z500"]


def reread_counts(ld, check) -> list[tuple[int, int]]:
    """(shard indexes read, reused) after each of two passes over the same samples (the loader
    made with prime_next_epoch=False: no reads of epoch 1 between them)."""
    counts = []
    for _ in range(2):
        ld.set_epoch(0)
        for batch in ld:
            check(batch)
        s = ld.stats()
        counts.append((s["shard_indexes_read"], s["shard_indexes_reused"]))
    return counts


def test_sharded_store_reads_each_shard_index_once(tmp_path):
    """A crop makes the reads partial (a whole shard is read in one request, index included).
    The loader keeps each index it reads, so the second pass reads none again, and the batches
    equal zarr-python's reads."""
    path, data = sharded_store(tmp_path / "sharded.zarr")
    ld = zarrflow.Loader(path, SHARDED_VARS, batch_size=4, device="cpu", output="numpy",
                         shuffle=True, seed=3, crop={"latitude": (2, 7)},
                         prime_next_epoch=False)

    def check(batch):
        for i, t in enumerate(batch["time"]):
            np.testing.assert_array_equal(batch["x"][i], data[t, [0, 2], 2:7])
            np.testing.assert_array_equal(batch["y"][i], data[t + 1, [0, 2], 2:7])

    (read1, reused1), (read2, reused2) = reread_counts(ld, check)
    assert 0 < read1 <= NT * 2  # one shard per (time, channel)
    assert read2 == read1
    assert reused2 - reused1 >= read1


ANEMOI_VARS = ["10u", "10v", "2t", "msl", "z_500"]


@pytest.fixture(scope="module")
def anemoi_store(tmp_path_factory) -> Path:
    """An anemoi-datasets layout, written as anemoi writes it (Zarr v2, zarr-python's default
    Blosc-LZ4 of zarr 2): `data` (time, variable, ensemble, cell) in one chunk per date, NaN fill
    and NaNs in one variable, the variables' names in the root group's attributes, dates,
    latitudes and longitudes beside it."""
    numcodecs = pytest.importorskip("numcodecs")
    path = tmp_path_factory.mktemp("anemoi") / "o16-6h.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    rng = np.random.default_rng(5)
    ncell = 600
    data = rng.standard_normal((NT, len(ANEMOI_VARS), 1, ncell)).astype("float32")
    data[:, 3, 0, ::7] = np.nan  # e.g. a field undefined over land
    a = root.create_array("data", shape=data.shape, chunks=(1, len(ANEMOI_VARS), 1, ncell),
                          dtype="float32", fill_value=np.nan, compressors=numcodecs.Blosc(
                              cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    a[...] = data
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "variable", "ensemble", "cell"]
    for name, values, dim in (("dates", np.arange(NT).astype("datetime64[s]"), "time"),
                              ("latitudes", rng.uniform(-90, 90, ncell), "cell"),
                              ("longitudes", rng.uniform(0, 360, ncell), "cell")):
        c = root.create_array(name, shape=values.shape, dtype=values.dtype)
        c[...] = values
        c.attrs["_ARRAY_DIMENSIONS"] = [dim]
    for name, fn in (("mean", np.nanmean), ("stdev", np.nanstd)):  # anemoi's statistics
        st = root.create_array(name, shape=(len(ANEMOI_VARS),), dtype="float64")
        st[...] = fn(data.astype(np.float64), axis=(0, 2, 3))
        st.attrs["_ARRAY_DIMENSIONS"] = ["variable"]
    root.attrs.update({"variables": ANEMOI_VARS, "frequency": "6h", "ensemble_dimension": 2,
                       "flatten_grid": True})
    return path


def test_anemoi_dataset_channels_by_name(anemoi_store):
    """anemoi's variable names (the root group's "variables") pick channels of `data` along its
    "variable" dimension; batches equal zarr-python's reads bit for bit, NaNs included."""
    picks = ["2t", "msl", "10u"]
    ld = zarrflow.Loader(anemoi_store, [f"data@{v}" for v in picks], channel_dim="variable",
                         batch_size=3, device="cpu", output="numpy", shuffle=False)
    assert ld.spec.spatial_dims == ("ensemble", "cell")
    ref = zarr.open_group(str(anemoi_store), mode="r")["data"]
    idx = [ANEMOI_VARS.index(v) for v in picks]
    batches = list(ld)
    assert len(batches) == -(-(NT - 1) // 3)
    for batch in batches:
        assert batch["x"].shape == (len(batch["time"]), len(picks), 1, 600)
        for b, t in enumerate(batch["time"].tolist()):
            for arr, step in ((batch["x"], t), (batch["y"], t + 1)):
                want = ref[step][idx]
                assert np.array_equal(arr[b].view(np.uint32), want.view(np.uint32))
    assert np.isnan(batches[0]["x"][:, 1]).any()  # msl carries the NaNs
    stats = zarrflow.compute_stats(anemoi_store, ["data@msl"], channel_dim="variable")
    values = ref[:, 3].astype(np.float64)
    assert stats["mean"][0] == pytest.approx(np.nanmean(values), rel=1e-9)


def test_anemoi_dataset_without_channel_dim_says_what_to_pass(anemoi_store):
    with pytest.raises(LoaderError, match=r"dims \('time', 'variable', 'ensemble', 'cell'\).*"
                                          r"channel_dim='variable'"):
        zarrflow.Loader(anemoi_store, ["data@2t"], device="cpu", output="numpy")
    with pytest.raises(LoaderError,
                       match=r"'data': unknown variable '2m_temperature' \(known: 10u, 10v, "):
        zarrflow.Loader(anemoi_store, ["data@2m_temperature"], channel_dim="variable",
                        device="cpu", output="numpy")


def test_anemoi_dataset_normalised_with_its_stored_statistics(anemoi_store, tmp_path):
    """stored_stats reads anemoi's own `mean` / `stdev` for the picked variables (no pass over the
    data); the loader normalises with them like with computed ones."""
    picks = ["data@msl", "data@2t"]
    stats = zarrflow.stored_stats(anemoi_store, picks, path=str(tmp_path / "s.json"))
    g = zarr.open_group(str(anemoi_store), mode="r")
    idx = [ANEMOI_VARS.index("msl"), ANEMOI_VARS.index("2t")]
    assert stats["channels"] == picks
    assert stats["mean"] == [float(g["mean"][i]) for i in idx]
    assert stats["std"] == [float(g["stdev"][i]) for i in idx]
    assert json.loads((tmp_path / "s.json").read_text()) == stats
    ld = zarrflow.Loader(anemoi_store, picks, channel_dim="variable", normalize=stats,
                         batch_size=2, device="cpu", output="numpy", shuffle=False)
    b = next(iter(ld))
    raw = g["data"][int(b["time"][0])][idx].astype(np.float32)
    m = np.float32(stats["mean"][1])
    want = (raw[1] - m) * (np.float32(1) / np.float32(stats["std"][1]))
    assert np.allclose(b["x"][0, 1], want, equal_nan=True, rtol=0, atol=1e-6)


def test_stored_statistics_missing_or_not_per_variable_are_clear_errors(anemoi_store, store):
    with pytest.raises(LoaderError, match=r"no 'spread' array of statistics.*compute_stats"):
        zarrflow.stored_stats(anemoi_store, ["data@2t"], std="spread")
    with pytest.raises(LoaderError, match=r"'t2m' is not picked along 'variable'"):
        zarrflow.stored_stats(store, ["t2m"], mean="t2m", std="t2m")


# --- the Loader's parts and its keyword form -------------------------------------------------


def test_keyword_form_and_parts_give_the_same_batches(store):
    kw = dict(input_steps=2, target_steps=1, crop={"latitude": (1, 7)})
    keyword = zarrflow.Loader(store, VARS, batch_size=3, shuffle="block", seed=5, block=4,
                              device="cpu", output="numpy", **kw)
    spec = zarrflow.DatasetSpec(store, VARS, **kw)
    parts = zarrflow.Loader(spec, batch_size=3,
                            sampler=zarrflow.Sampler(spec, shuffle="block", seed=5, block=4),
                            options=zarrflow.LoaderOptions(device="cpu", output="numpy"))
    for epoch in (0, 1):
        keyword.set_epoch(epoch)
        parts.set_epoch(epoch)
        a, b = list(keyword), list(parts)
        assert len(a) == len(b) == len(keyword) == len(parts)
        for x, y in zip(a, b):
            assert x["time"].tolist() == y["time"].tolist()
            np.testing.assert_array_equal(x["x"], y["x"])
            np.testing.assert_array_equal(x["y"], y["y"])
    assert len(zarrflow.Loader(spec, 4, device="cpu", output="numpy")) == -(-len(spec) // 4)


def test_keywords_go_to_their_part_and_mixing_them_is_a_clear_error(store):
    spec = zarrflow.DatasetSpec(store, VARS)
    with pytest.raises(TypeError, match=r"unknown keyword 'shufle' \(did you mean 'shuffle'\?"):
        zarrflow.Loader(store, VARS, shufle=False)
    with pytest.raises(TypeError, match=r"\['crop'\] belong to the DatasetSpec"):
        zarrflow.Loader(spec, crop={"latitude": (0, 2)})
    with pytest.raises(TypeError, match=r"\['seed'\] belong to the Sampler passed as sampler"):
        zarrflow.Loader(spec, sampler=zarrflow.Sampler(spec), seed=3)
    with pytest.raises(TypeError, match=r"\['device'\] belong to the LoaderOptions passed as "
                                        r"options"):
        zarrflow.Loader(spec, options=zarrflow.LoaderOptions(), device="cpu")
    with pytest.raises(TypeError, match="the DatasetSpec names the variables"):
        zarrflow.Loader(spec, VARS)
    with pytest.raises(TypeError, match="needs the variables"):
        zarrflow.Loader(store)
    with pytest.raises(LoaderError, match="the sampler was made for 5 samples"):
        zarrflow.Loader(spec, sampler=zarrflow.Sampler(5), device="cpu", output="numpy")
    with pytest.raises(LoaderError, match="batch_size must be an integer >= 1"):
        zarrflow.Loader(spec, batch_size=0, device="cpu", output="numpy")


def test_repr_and_context_manager(store):
    with zarrflow.Loader(store, VARS, batch_size=4, device="cpu", output="numpy", seed=2,
                         cache_gb=0.5) as ld:
        text = repr(ld)
        list(ld)  # the next epoch is now being read ahead
        assert ld._primed is not None
    assert ld._primed is None  # closed on leaving the block
    assert text.splitlines() == [
        f"Loader(batch_size=4, {len(ld)} batches per epoch",
        f"  dataset={ld.spec!r}",
        f"  sampler={ld.sampler!r}",
        "  options: device='cpu', output='numpy', dtype='float32', layout='BCHW', prefetch=2, "
        "workers=2, cache_gb=0.5)"]
    assert "seed=2" in text and str(store) in text


def test_resume_point_holds_until_the_epoch_changes(store):
    ld = zarrflow.Loader(store, VARS, batch_size=2, device="cpu", output="numpy", seed=7)
    ld.load_state_dict({"epoch": 1, "position": 3, "seed": 7})
    ld.sampler.set_epoch(2)  # a new epoch set on the sampler itself: the resume point is gone
    assert len(list(ld)) == len(ld)
    ld.load_state_dict({"epoch": 1, "position": 3, "seed": 7})
    assert len(list(ld)) == len(ld) - 3


def test_every_public_name_is_documented():
    import inspect

    from zarrflow.loader import loader as loader_mod

    doc = zarrflow.Loader.__doc__
    for section in ("Parameters", "Yields", "Raises", "Examples"):
        assert f"\n    {section}\n    ---" in doc
    keywords = (loader_mod._SPEC_KEYWORDS + loader_mod._SAMPLER_KEYWORDS
                + loader_mod._OPTION_KEYWORDS)
    for key in keywords:
        assert f"``{key}" in doc, key  # the keyword form lists every keyword
    for cls in (zarrflow.Loader, zarrflow.DatasetSpec, zarrflow.Sampler, zarrflow.LoaderOptions):
        assert "Parameters\n    ----------" in cls.__doc__ and "Examples" in cls.__doc__, cls
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") and name not in ("__len__", "__iter__"):
                continue
            if callable(member) or isinstance(member, property):
                assert (member.__doc__ or "").strip(), f"{cls.__name__}.{name}"
    for fn in (zarrflow.compute_stats, zarrflow.stored_stats):
        assert "Returns\n    -------" in fn.__doc__
