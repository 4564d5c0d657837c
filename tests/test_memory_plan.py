"""The loader's GPU memory plan and zarrflow's GPU memory limit (pure logic: no GPU needed)."""

import pytest

from zarrflow._gpu import MAX_READ_STREAMS, _parse_limit, read_streams_from_env
from zarrflow.loader._memory_plan import PER_WORKER, SPARE_WORKER_READ_BYTES, fit, refusal

GB = 10**9


def test_no_limit_keeps_what_was_asked():
    plan = fit(10 * GB, 2, 3, 0, 0)
    assert (plan.prefetch, plan.workers) == (2, 3) and plan.fits and not plan.reduced


def test_a_plan_that_fits_is_kept():
    plan = fit(1 * GB, 2, 2, 5 * GB, 48 * GB)
    assert (plan.prefetch, plan.workers) == (2, 2) and plan.fits
    assert plan.need == 5 * GB + 2 * PER_WORKER + 5 * GB


def test_prefetch_goes_first_then_workers():
    # 71 channels, float32, batch 16, t -> t+1: 9.44 GB batches against 60% of an 80 GB GPU.
    batch = 16 * 2 * 71 * 721 * 1440 * 4
    plan = fit(batch, 2, 2, 0, 48 * GB)
    assert (plan.prefetch, plan.workers) == (1, 2) and plan.reduced and plan.fits
    assert plan.need <= 48 * GB < fit(batch, 2, 2, 0, 0).need
    # With a 30 GB chunk cache beside it, one worker is left.
    plan = fit(batch, 2, 2, 30 * GB, 60 * GB)
    assert (plan.prefetch, plan.workers) == (1, 1) and plan.fits
    assert plan.asked == (2, 2)


def test_each_worker_reads_within_what_the_batches_leave_of_the_limit():
    batch = 16 * 2 * 71 * 721 * 1440 * 2  # 71 channels, bf16: 4.72 GB
    plan = fit(batch, 2, 2, 0, 34 * GB)
    assert (plan.prefetch, plan.workers) == (2, 2)
    assert plan.read_budget == (34 * GB - 5 * batch) // 2
    # Another loader's plan and a chunk cache come off it too; no limit leaves it to the reads.
    plan = fit(batch, 1, 1, 2 * GB, 34 * GB, others=3 * GB)
    assert plan.read_budget == 34 * GB - 3 * batch - 2 * GB - 3 * GB
    assert fit(batch, 2, 2, 0, 0).read_budget == 0


def test_a_spare_worker_goes_before_prefetch_and_is_not_a_reduction():
    batch = 16 * 2 * 71 * 721 * 1440 * 2  # 71 channels, bf16: 4.72 GB
    three = fit(batch, 2, 3, 0, 0)
    room_for_three = three.held + 3 * SPARE_WORKER_READ_BYTES
    # No limit, or one that leaves each of three workers SPARE_WORKER_READ_BYTES beside the
    # batches: the spare is kept, and nothing counts as reduced.
    for limit in (0, room_for_three):
        plan = fit(batch, 2, 3, 0, limit, spare_workers=1)
        assert (plan.prefetch, plan.workers) == (2, 3) and not plan.reduced
        assert plan.asked == (2, 2)
    # A byte less: the spare goes, silently, though three would fit.
    plan = fit(batch, 2, 3, 0, room_for_three - 1, spare_workers=1)
    assert (plan.prefetch, plan.workers) == (2, 2) and plan.fits and not plan.reduced
    assert fit(batch, 2, 3, 0, room_for_three - 1).fits
    # Other loaders' plans and the chunk cache take from the room too.
    assert fit(batch, 2, 3, 0, room_for_three, others=1, spare_workers=1).workers == 2
    assert fit(batch, 2, 3, 1, room_for_three, spare_workers=1).workers == 2
    # Three workers asked for explicitly are kept as long as they fit...
    plan = fit(batch, 2, 3, 0, three.need)
    assert (plan.prefetch, plan.workers) == (2, 3) and not plan.reduced
    # ... and lose prefetch first, as ever, when they do not: (1, 3) needs one more GB of read
    # buffers than (2, 2), so one worker goes too, and that is a reduction.
    tight = fit(batch, 2, 2, 0, 0).need
    plan = fit(batch, 2, 3, 0, tight)
    assert (plan.prefetch, plan.workers) == (1, 2) and plan.fits and plan.reduced
    # Less room: after the spare, the same order as ever (prefetch, then workers).
    plan = fit(batch, 2, 3, 0, tight - batch, spare_workers=1)
    assert (plan.prefetch, plan.workers) == (1, 2) and plan.reduced


@pytest.mark.parametrize("gpu_gb, channels, itemsize, workers", [
    # The measured cases behind SPARE_WORKER_READ_BYTES (90% limit, batch 16, t -> t+1, 721x1440).
    (85.0, 6, 4, 3),     # H100, 6 channels float32: the third worker helped (39.1 -> 43.6 GB/s)
    (85.0, 71, 4, 2),    # H100, 71 channels float32: it cost 14-47%
    (85.0, 71, 2, 2),    # H100, 71 channels bfloat16: it cost 3-15%
    (150.1, 71, 4, 3),   # H200, 71 channels float32: it helped (windows 35-37 -> 38-42 GB/s)
])
def test_the_spare_worker_where_it_was_measured(gpu_gb, channels, itemsize, workers):
    batch = 16 * 2 * channels * 721 * 1440 * itemsize
    plan = fit(batch, 2, 3, 0, int(0.9 * gpu_gb * GB), spare_workers=1)
    assert plan.workers == workers and plan.prefetch == 2 and not plan.reduced
    # Beside a model (the default 40% limit) the spare never stays at these sizes.
    assert fit(batch, 2, 3, 0, int(0.4 * gpu_gb * GB), spare_workers=1).workers <= 2


def test_too_little_is_refused_with_the_plan():
    plan = fit(9 * GB, 2, 2, 30 * GB, 40 * GB)
    assert not plan.fits and (plan.prefetch, plan.workers) == (1, 1)
    text = refusal(plan)
    assert "40.0 GB" in text and "3 batches of 9.00 GB" in text and "30.0 GB chunk cache" in text
    assert "set_gpu_memory_limit" in text


@pytest.mark.parametrize("limit, want", [
    (None, 0), ("none", 0), ("", 0), (0, 0), (0.6, 48 * GB), ("0.5", 40 * GB), (1, 80 * GB),
    (40e9, 40 * GB), ("40GB", 40 * GB), ("40 G", 40 * GB), ("512MB", 512 * 10**6),
    ("2e10", 20 * GB),
])
def test_limits_are_fractions_bytes_or_sizes(limit, want):
    assert _parse_limit(limit, 80 * GB) == want


@pytest.mark.parametrize("bad", ["lots", "-1", -0.5, True, [1]])
def test_a_bad_limit_is_refused(bad):
    with pytest.raises(ValueError):
        _parse_limit(bad, 80 * GB)


def test_a_later_loader_plans_within_what_earlier_ones_left():
    # Training loader first (71 ch bf16 batches of 4.72 GB) under 45% of an 85 GB GPU, then a
    # validation loader of 7 samples: it fits beside it as asked.
    limit = int(0.45 * 85 * GB)
    train = fit(16 * 2 * 71 * 721 * 1440 * 2, 2, 2, 0, limit)
    assert (train.prefetch, train.workers) == (2, 2)
    val_batch = 7 * 2 * 71 * 721 * 1440 * 2
    val = fit(val_batch, 2, 2, 0, limit, others=train.held)
    assert (val.prefetch, val.workers) == (2, 2) and val.fits
    assert train.held + val.need <= limit
    # With 5 GB more planned elsewhere (a chunk cache), it keeps one batch ahead and one worker.
    val = fit(val_batch, 2, 2, 0, limit, others=train.held + 5 * GB)
    assert (val.prefetch, val.workers) == (1, 1) and val.fits
    assert "other loaders of this process" in val.describe()
    # Nothing left: refused.
    assert not fit(GB, 1, 1, 0, limit, others=limit).fits


def test_without_a_gpu_there_is_no_limit_to_set():
    import zarrflow

    if zarrflow.cuda_available():
        pytest.skip("a GPU is usable here (tests/test_loader_gpu.py covers the limit)")
    assert zarrflow.gpu_memory_limit() == 0
    with pytest.raises(zarrflow.errors.UnsupportedError, match="no GPU memory to limit"):
        zarrflow.set_gpu_memory_limit(0.5)


@pytest.mark.parametrize("env, want", [(None, None), ("", None), ("1", 1), ("3", 3),
                                       (str(MAX_READ_STREAMS), MAX_READ_STREAMS)])
def test_read_streams_from_the_environment(monkeypatch, env, want):
    if env is None:
        monkeypatch.delenv("ZARRFLOW_GPU_READ_STREAMS", raising=False)
    else:
        monkeypatch.setenv("ZARRFLOW_GPU_READ_STREAMS", env)
    assert read_streams_from_env() == want


@pytest.mark.parametrize("bad", ["0", "-2", "17", "two", "1.5"])
def test_a_bad_read_streams_setting_is_refused(monkeypatch, bad):
    monkeypatch.setenv("ZARRFLOW_GPU_READ_STREAMS", bad)
    with pytest.raises(ValueError, match="ZARRFLOW_GPU_READ_STREAMS"):
        read_streams_from_env()
