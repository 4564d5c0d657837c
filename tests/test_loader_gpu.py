"""The batch loader on the GPU (marked `gpu`; skips without one): batches equal the CPU loader's,
shared chunks are fetched and decoded once, normalisation/casting on the GPU, PyTorch adapter."""

from __future__ import annotations

import time

import numpy as np
import pytest

import zarrflow
from zarrflow._core import DecodeBalance

from test_loader import (  # noqa: F401 (store, anemoi_store: fixtures)
    LEVELS, NLAT, NLON, NT, SHARDED_VARS, VARS, anemoi_store, expected, reread_counts,
    sharded_store, store)

pytestmark = pytest.mark.gpu
if not zarrflow.cuda_available():
    pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}", allow_module_level=True)
torch = pytest.importorskip("torch")


def assert_same_bits(cpu, gpu, dtype, view):
    """The GPU loader's batches carry the CPU loader's bits (NaNs: the same positions)."""
    for a, b in zip(cpu, gpu, strict=True):
        for k in ("x", "y"):
            got = b[k].cpu().view(torch.int16 if view is np.uint16 else torch.int32).numpy()
            want = np.ascontiguousarray(a[k]).view(view)
            nan = np.isnan(b[k].float().cpu().numpy())
            assert np.array_equal(nan, np.isnan(a[k].astype(np.float32))), (dtype, k)
            assert np.array_equal(got.view(view)[~nan], want[~nan]), (dtype, k)


def cpu_and_gpu(store, **kw):
    cpu = zarrflow.Loader(store, VARS, device="cpu", output="numpy", **kw)
    # host_decode_share=0: the GPU decodes every chunk it can (the default balance would start
    # with the host threads decoding)
    gpu = zarrflow.Loader(store, VARS, device="cuda", output="torch", decode_threads=2,
                          host_decode_share=0.0, **kw)
    return cpu, gpu


@pytest.mark.parametrize("kw", [
    dict(batch_size=4, shuffle=False),
    dict(batch_size=3, shuffle="block", seed=5, input_steps=2, target_steps=2, layout="BTCHW",
         crop={"latitude": (1, 7), "longitude": (2, 12)}),
])
def test_gpu_batches_equal_cpu_batches(store, kw):
    cpu, gpu = cpu_and_gpu(store, **kw)
    for a, b in zip(cpu, gpu, strict=True):
        assert b["x"].is_cuda and b["x"].dtype == torch.float32
        assert np.array_equal(a["time"], b["time"])
        for k in ("x", "y"):
            assert np.array_equal(a[k].view(np.uint32), b[k].cpu().numpy().view(np.uint32)), k
    st = gpu.stats()
    assert st["gpu_decoded"] > 0 and st["cpu_decoded"] == 0
    assert st["missing"] > 0  # the missing u@850 chunk, filled with NaN
    # the pipeline's telemetry: at least one internal batch per loader batch, timed
    assert st["internal_batches"] >= st["batches"] > 0
    assert st["enqueue_ms"] > 0 and st["decode_ms"] > 0 and st["gpu_idle_ms"] >= 0


def test_shared_chunks_are_read_once(store):
    gpu = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False)
    list(gpu)
    st = gpu.stats()
    # consecutive samples: x at t+1 is y at t, so 3 of every 4 samples' targets are shared
    assert st["deduplicated"] >= 3 * len(VARS) * st["batches"]


def test_missing_error_policy(store):
    gpu = zarrflow.Loader(store, ["u@850"], device="cuda", batch_size=4, shuffle=False,
                          missing="error")
    with pytest.raises(zarrflow.MissingChunkError, match="not stored"):
        list(gpu)


def test_gpu_normalise_and_cast_match_cpu(store):
    stats = zarrflow.compute_stats(store, VARS)
    for dtype, tdtype in (("bfloat16", torch.bfloat16), ("float16", torch.float16),
                          ("float32", torch.float32)):
        cpu, gpu = cpu_and_gpu(store, batch_size=4, shuffle=False, normalize=stats, dtype=dtype)
        for a, b in zip(cpu, gpu, strict=True):
            assert b["x"].dtype == tdtype
            x = b["x"].float().cpu().numpy()
            want = a["x"].astype(np.float32)
            np.testing.assert_allclose(x, want, rtol=2 ** -7, atol=1e-6, equal_nan=True)
        assert gpu.stats()["nans"] == cpu.stats()["nans"] > 0


@pytest.mark.parametrize("path", ["gpu-decode", "host-decode", "gpu-cache", "normal-priority"])
@pytest.mark.parametrize("crop", [None, {"latitude": (1, 6), "longitude": (2, 9)}],
                         ids=["planes-of-96", "planes-of-35"])
def test_gpu_normalise_and_cast_are_bit_exact(store, crop, path):
    # Normalisation and cast happen as chunks are copied into the batch: on the GPU for chunks
    # decoded there or taken from the GPU cache (second pass), on the host for chunks the host
    # threads decoded. On the GPU, whole planes (96 contiguous elements) go four at a time, the
    # cropped rows of 7 one at a time. Same bits as the
    # CPU loader, which normalises in NumPy after reading float32.
    stats = zarrflow.compute_stats(store, VARS)
    extra = {"host-decode": dict(gpu_decode="off"), "gpu-cache": dict(cache_gb=1),
             "normal-priority": dict(stream_priority="normal")}.get(path, {})
    for dtype, view in (("bfloat16", np.uint16), ("float16", np.uint16), ("float32", np.uint32)):
        cpu, gpu = cpu_and_gpu(store, batch_size=4, shuffle=False, normalize=stats, dtype=dtype,
                               crop=crop, **extra)
        if path == "gpu-cache":
            list(gpu)  # fills the cache
        assert_same_bits(cpu, gpu, dtype, view)
        st = gpu.stats()
        if path == "gpu-cache":
            assert st["cache_hits"] > 0 and st["nans"] == 2 * cpu.stats()["nans"] > 0
        else:
            assert st["nans"] == cpu.stats()["nans"] > 0
        if path == "host-decode":  # each plane decoded, normalised and cast by a host thread
            assert st["cpu_decoded"] > 0 and st["gpu_decoded"] == 0
            assert st["host_transformed"] == st["cpu_decoded"]


def test_torch_dataset_adapter(store):
    import zarrflow.torch as zt

    ds = zt.Dataset(store, VARS, device="cuda", batch_size=4, seed=1)
    ds.set_epoch(2)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    batches = list(dl)
    assert len(batches) == len(ds)
    assert batches[0]["x"].shape == (4, len(VARS), NLAT, NLON)
    assert ds.state_dict()["epoch"] == 2


@pytest.mark.parametrize("cache_gb", [0.0, 0.5])
def test_gpu_loader_reads_each_shard_index_once(tmp_path, cache_gb):
    """The GPU path reads shards by their index (whole fields too): the loader keeps each index,
    with or without the chunk cache, and its batches equal zarr-python's reads."""
    path, data = sharded_store(tmp_path / "sharded.zarr")
    ld = zarrflow.Loader(path, SHARDED_VARS, batch_size=4, device="cuda", output="torch",
                         shuffle=True, seed=3, cache_gb=cache_gb, host_decode_share=0.0,
                         prime_next_epoch=False)

    def check(batch):
        for i, t in enumerate(batch["time"].tolist()):
            assert np.array_equal(batch["x"][i].cpu().numpy(), data[t, [0, 2]])
            assert np.array_equal(batch["y"][i].cpu().numpy(), data[t + 1, [0, 2]])

    (read1, reused1), (read2, reused2) = reread_counts(ld, check)
    assert 0 < read1 <= NT * 2
    assert read2 == read1
    assert reused2 - reused1 >= read1
    st = ld.stats()
    assert st["gpu_decoded"] > 0 and st["cpu_decoded"] == 0
    if cache_gb:
        assert st["cache_hits"] > 0


def test_gpu_chunk_cache_serves_later_epochs(store):
    plain = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False)
    cached = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False, cache_gb=1)
    first = [b["x"].cpu().numpy() for b in cached]
    hits = cached.stats()["cache_hits"]
    second = [b["x"].cpu().numpy() for b in cached]
    assert cached.stats()["cache_hits"] > hits
    ref = [b["x"].cpu().numpy() for b in plain]
    for a, b, c in zip(first, second, ref, strict=True):
        assert np.array_equal(a.view(np.uint32), c.view(np.uint32))
        assert np.array_equal(b.view(np.uint32), c.view(np.uint32))
    st = cached.cache.stats()
    assert st["entries"] > 0 and 0 < st["bytes"] <= st["budget"]
    tiny = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False,
                           cache_gb=2e-6)  # 2 KB: evicts constantly, results unchanged
    for b, c in zip(tiny, ref, strict=True):
        assert np.array_equal(b["x"].cpu().numpy().view(np.uint32), c.view(np.uint32))


def test_cuda_loader_refuses_to_run_after_fork(store):
    import multiprocessing as mp

    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4)
    next(iter(ld))  # CUDA is initialised in this process

    def child(q):
        try:
            next(iter(ld))
            q.put("no error")
        except RuntimeError as e:
            q.put(str(e))

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(60)
    assert "CUDA does not survive fork" in q.get(timeout=5)


def test_interpreter_exits_cleanly_with_gpu_batches_alive(store):
    import subprocess
    import sys

    code = (f"import zarrflow, torch\n"
            f"ld = zarrflow.Loader({str(store)!r}, {VARS!r}, batch_size=2, device='cuda', prefetch=2)\n"
            f"it = iter(ld)\nb = next(it)\nx = b['x'] * 2\nprint('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("ok")


@pytest.mark.parametrize("output", ["cupy", "jax"])
def test_loader_hands_batches_to_cupy_and_jax(store, output):
    pytest.importorskip(output)
    ref = [b["x"].cpu().numpy() for b in zarrflow.Loader(store, VARS, device="cuda", batch_size=4,
                                                         shuffle=False)]
    got = list(zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False,
                               output=output))
    for b, r in zip(got, ref, strict=True):
        x = b["x"].get() if output == "cupy" else np.asarray(b["x"])
        assert np.array_equal(np.ascontiguousarray(x).view(np.uint32), r.view(np.uint32))  # NaN fills too


def test_pinned_host_chunk_cache(store):
    ref = [b["x"].cpu().numpy() for b in zarrflow.Loader(store, VARS, device="cuda", batch_size=4,
                                                         shuffle=False)]
    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False,
                         host_cache_gb=1)
    for _ in range(2):
        for b, r in zip(ld, ref, strict=True):
            assert np.array_equal(b["x"].cpu().numpy().view(np.uint32), r.view(np.uint32))
    assert ld.stats()["host_cache_hits"] > 0 and ld.stats()["cache_hits"] == 0
    both = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False,
                           host_cache_gb=1, cache_gb=1)
    list(both)
    list(both)
    assert both.stats()["cache_hits"] > 0  # the GPU tier answers first


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cpu_loader_gives_torch_tensors(store, dtype):
    kw = dict(batch_size=2, shuffle=False, dtype=dtype, normalize={"mean": [1, 2, 3], "std": [2, 2, 2]})
    a = next(iter(zarrflow.Loader(store, VARS, device="cpu", output="torch", **kw)))
    b = next(iter(zarrflow.Loader(store, VARS, device="cpu", output="numpy", **kw)))
    assert isinstance(a["x"], torch.Tensor) and a["x"].device.type == "cpu"
    assert a["x"].dtype == (torch.bfloat16 if dtype == "bfloat16" else torch.float32)
    assert np.array_equal(a["x"].float().numpy(), b["x"].astype(np.float32))
    g = next(iter(zarrflow.Loader(store, VARS, device="cuda", output="torch", **kw)))
    assert torch.equal(g["x"].cpu(), a["x"])  # the GPU path equals the CPU path, bit for bit


def _bits(t):
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


@pytest.mark.parametrize("kw", [dict(shuffle="block", seed=2, dtype="bfloat16"),
                                dict(shuffle=False, gpu_decode="off")])
def test_gpu_workers_give_the_same_batches(store, kw):
    """Two or three workers, each on its own CUDA stream, produce exactly one worker's batches."""
    stats = zarrflow.compute_stats(store, VARS)
    one = zarrflow.Loader(store, VARS, device="cuda", batch_size=3, workers=1, prefetch=1,
                          normalize=stats, **kw)
    for workers in (2, 3):
        many = zarrflow.Loader(store, VARS, device="cuda", batch_size=3, workers=workers,
                               prefetch=2, normalize=stats, **kw)
        for e in range(2):
            one.set_epoch(e)
            many.set_epoch(e)
            for a, b in zip(one, many, strict=True):
                assert np.array_equal(a["time"], b["time"])
                for k in ("x", "y"):  # bit for bit (the missing chunk's NaNs included)
                    assert torch.equal(_bits(a[k]), _bits(b[k])), k


def test_batch_memory_is_not_reused_before_the_consumer_stream_is_done(store):
    """A batch dropped while kernels reading it are still queued on the consumer's stream goes
    back to the pool only after them: later reads cannot overwrite it under those kernels."""
    from zarrflow import _core

    shape = [8, 1 << 20]  # 32 MB float32
    t = _core.empty_tensor(shape, "float32", "cuda", 0, reader=zarrflow._gpu.reader())
    x = torch.from_dlpack(t)
    x.fill_(1.5)
    ptr = x.data_ptr()
    # Load the kernels below first: with CUDA's lazy module loading, the first launch of one
    # waits for the GPU, here for the whole sleep (the test failed when it ran first in a process).
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.empty(4, device="cuda").fill_(-7.0)
    _ = x * 2
    torch.cuda.synchronize()
    # ~1 s of GPU time queued ahead on the current stream (0.1 s was not always enough: on a
    # busy host the sleep could end before the batch was dropped)
    torch.cuda._sleep(2_000_000_000)
    y = x * 2  # reads x after the sleep
    del x, t
    reader = zarrflow._gpu.reader()
    assert reader.pool_stats()["device_pending_releases"] >= 1
    others = [_core.empty_tensor(shape, "float32", "cuda", 0, reader=reader) for _ in range(3)]
    assert all(o.data_ptr != ptr for o in others)  # not handed out while y's kernel is queued
    with torch.cuda.stream(side):  # runs beside the sleep: would corrupt x if it were x's memory
        for o in others:
            torch.from_dlpack(o).fill_(-7.0)
    torch.cuda.synchronize()
    assert torch.all(y == 3.0)
    del others
    assert reader.pool_stats()["device_pending_releases"] == 0  # released once the streams passed


def test_pool_keeps_the_working_set_and_trims_on_request(store):
    """After an epoch the pools keep (up to) their peak working set for the next one; nothing is
    freed while it recurs; release_memory() gives the idle part back."""
    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, dtype="bfloat16",
                         normalize=zarrflow.compute_stats(store, VARS))
    list(ld)  # the next epoch is read ahead meanwhile
    ld.close()  # its batches, made or being made, are back in the pool when this returns
    torch.cuda.synchronize()  # batches dropped by list() return once their streams are done
    st = zarrflow.memory_stats()
    batch = 4 * 2 * len(VARS) * NLAT * NLON * 4
    assert st["device_peak"] >= batch and st["device_budget"] >= st["device_peak"]
    assert st["device_cached"] > 0
    before = st["device_cached"] + st["pinned_cached"]
    assert zarrflow.release_memory() >= before > 0
    assert zarrflow.memory_stats()["device_cached"] == 0


@pytest.mark.parametrize("gpu_decode", ["auto", "off"])
def test_steady_epochs_allocate_and_free_nothing(store, gpu_decode):
    """Once the pools hold a loader's working set, later epochs make no cudaMalloc /
    cudaHostAlloc and no free (a free waits for the whole GPU, stalling the model), also while
    the consumer keeps each batch through a step of its own."""
    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, workers=1, prefetch=2,
                         dtype="bfloat16", normalize=zarrflow.compute_stats(store, VARS),
                         gpu_decode=gpu_decode, host_decode_share=0.0, output="torch")

    def epoch(e):
        ld.set_epoch(e)
        for b in ld:
            (b["x"].float().mean() + b["y"].float().mean()).item()  # a "step" using the batch

    for e in range(3):
        epoch(e)
    before = zarrflow.memory_stats()
    for e in range(3, 6):
        epoch(e)
    after = zarrflow.memory_stats()
    for k in ("device_allocations", "device_frees", "pinned_allocations", "pinned_frees"):
        assert after[k] == before[k], (k, before, after)
    ld.close()


def test_host_decode_share_splits_decoding_and_changes_no_bits(store):
    kw = dict(batch_size=4, shuffle=False)
    cpu = zarrflow.Loader(store, VARS, device="cpu", output="numpy", **kw)
    half = zarrflow.Loader(store, VARS, device="cuda", host_decode_share=0.5, **kw)
    for a, b in zip(cpu, half, strict=True):
        for k in ("x", "y"):
            assert np.array_equal(a[k].view(np.uint32), b[k].cpu().numpy().view(np.uint32)), k
    st = half.stats()
    assert st["gpu_decoded"] > 0 and st["cpu_decoded"] > 0
    # (CPU counts include chunks several samples share; GPU counts do not)
    assert 0.25 <= st["cpu_decoded"] / (st["cpu_decoded"] + st["gpu_decoded"]) <= 0.75


def test_decoding_moves_to_the_gpu_while_the_consumer_waits_and_bits_do_not_change(store):
    # The default (gpu_decode="auto", host_decode_share="auto"): a loop that takes batches as
    # fast as they come always waits, so decoding moves to the GPU at once; a consumer
    # slower than the host threads leaves it all to them. Same bits either way.
    kw = dict(batch_size=2, shuffle=False, workers=1, prefetch=2)
    cpu = zarrflow.Loader(store, VARS, device="cpu", output="numpy", **kw)
    ref = [b for b in cpu]
    eager = zarrflow.Loader(store, VARS, device="cuda", **kw)
    assert eager.decode_share == 1.0
    # Batches this small are read in well under the 0.5 ms a wait must last to count.
    eager._balance = DecodeBalance(min_wait_s=0.0)
    for e in range(4):
        eager.set_epoch(e)
        got = list(eager)  # taken as fast as they come; compared afterwards
        for a, b in zip(ref, got, strict=True):
            for k in ("x", "y"):
                assert np.array_equal(a[k].view(np.uint32), b[k].cpu().numpy().view(np.uint32))
    st = eager.stats()
    assert st["decode_moves_to_gpu"] >= 1 and st["host_decode_share"] == 0.0, st
    assert st["gpu_decoded"] > 0 and st["cpu_decoded"] > 0
    shares = [r["host_share"] for r in eager.timeline()]
    assert shares[0] == 1.0 and min(shares) == 0.0

    slow = zarrflow.Loader(store, VARS, device="cuda", **kw)
    for a, b in zip(ref, slow, strict=True):
        time.sleep(0.05)  # a training step far longer than reading a tiny batch
        for k in ("x", "y"):
            assert np.array_equal(a[k].view(np.uint32), b[k].cpu().numpy().view(np.uint32))
    st = slow.stats()
    assert st["host_decode_share"] == 1.0 and st["decode_moves_to_gpu"] == 0, st
    assert st["gpu_decoded"] == 0 and st["cpu_decoded"] > 0


def test_batches_made_while_the_pools_grew_are_not_judged(store):
    # A batch during which zarrflow's pools allocated waited for the driver, not for the host's
    # decoding: the balance must not cut the host's share for it (one such stall in the first
    # epoch of a training process used to move decoding to the GPU for the rest of the run).
    zarrflow.release_memory()  # idle pool memory back: the first batches must allocate
    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=2, shuffle=False, workers=1,
                         prefetch=1, prime_next_epoch=False)
    for e in range(3):
        ld.set_epoch(e)
        for _ in ld:
            time.sleep(0.02)  # a consumer slower than the loader: the share stays where it is
    tl = ld.timeline()
    grew = [r["pools_grew"] for r in tl]
    assert grew[0] and not grew[-1], grew  # the first batch allocated; later ones reuse
    for r in tl:
        if r["pools_grew"]:
            assert not r["judged"], r
    assert any(r["judged"] for r in tl)  # batches of warm pools are judged
    ld.close()


def test_uncompressed_planes_are_converted_as_they_are_read(tmp_path):
    # Whole uncompressed float32 planes of a local store go through a small per-thread buffer on
    # the host, piece by piece (256 KiB; a plane here is 1.4 pieces), and are copied up already
    # normalised and cast. Same bits and NaN count as the CPU loader; a missing plane is filled.
    zarr = pytest.importorskip("zarr")
    nt, ny, nx = 6, 300, 301
    root = zarr.open_group(str(tmp_path / "raw.zarr"), mode="w", zarr_format=3)
    rng = np.random.default_rng(3)
    data = (rng.standard_normal((nt, 2, ny, nx)) * 40 + 250).astype("float32")
    data[2, 1, 7, 11:20] = np.nan
    a = root.create_array("x", shape=data.shape, chunks=(1, 1, ny, nx), dtype="float32",
                          dimension_names=["time", "channel", "latitude", "longitude"],
                          fill_value=np.nan, compressors=None)
    a[...] = data
    (tmp_path / "raw.zarr" / "x" / "c" / "4" / "0" / "0" / "0").unlink()  # time 4, channel 0
    norm = {"mean": [250.0, 249.0], "std": [40.0, 39.0]}
    kw = dict(batch_size=2, shuffle=False, normalize=norm)
    for dtype, view in (("bfloat16", np.uint16), ("float32", np.uint32)):
        cpu = zarrflow.Loader(tmp_path / "raw.zarr", ["x@0", "x@1"], device="cpu",
                              output="numpy", dtype=dtype, **kw)
        gpu = zarrflow.Loader(tmp_path / "raw.zarr", ["x@0", "x@1"], device="cuda", dtype=dtype,
                              **kw)
        assert_same_bits(cpu, gpu, dtype, view)
        st = gpu.stats()
        assert st["missing"] > 0 and st["nans"] == cpu.stats()["nans"] > 0
        assert st["host_transformed"] > 0 and st["cpu_decoded"] == 0


def test_host_blocks_decoded_while_read_and_after_the_checks(tmp_path, monkeypatch):
    # Chunks the plan gives the host threads (host_decode_share) are decoded by the thread that
    # read them; numcodecs LZ4 chunks over 1 MiB go to the host only at the host checks, after
    # the reading. Three variables, so that the share alternates within each: the batches' reads
    # have LZ4 chunks of both kinds, and their host blocks are laid out and decoded again after
    # the checks. Same bits as the CPU loader, normalised and cast (and as many NaNs) or not.
    from zarrflow import _gpu

    zarr = pytest.importorskip("zarr")
    numcodecs = pytest.importorskip("numcodecs")
    nt, ny, nx = 6, 520, 560  # a float32 plane of 1.16 MB
    root = zarr.open_group(str(tmp_path / "mixed.zarr"), mode="w", zarr_format=2)
    rng = np.random.default_rng(4)
    blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)
    for name, compressor in (("a", blosc), ("b", numcodecs.LZ4()), ("c", blosc)):
        data = (np.cumsum(rng.standard_normal((nt, ny, nx)), axis=-1) + 250).astype("float32")
        data[3, 5, 7:40] = np.nan
        arr = root.create_array(name, shape=data.shape, chunks=(1, ny, nx), dtype="float32",
                                compressors=compressor, fill_value=np.nan)
        arr.attrs["_ARRAY_DIMENSIONS"] = ["time", "latitude", "longitude"]
        arr[...] = data
    norm = {"mean": [250.0, 251.0, 252.0], "std": [30.0, 31.0, 32.0]}
    for extra, dtype, view in ((dict(normalize=norm), "bfloat16", np.uint16),
                               ({}, "float32", np.uint32)):
        kw = dict(batch_size=2, shuffle=False, dtype=dtype, **extra)
        cpu = zarrflow.Loader(tmp_path / "mixed.zarr", list("abc"), device="cpu",
                              output="numpy", **kw)
        gpu = zarrflow.Loader(tmp_path / "mixed.zarr", list("abc"), device="cuda",
                              host_decode_share=0.5, **kw)
        monkeypatch.setattr(_gpu, "_said", set())  # the note of the checks' move, every time
        with pytest.warns(RuntimeWarning, match="numcodecs LZ4 chunks over 1 MiB"):
            assert_same_bits(cpu, gpu, dtype, view)
        st = gpu.stats()
        if extra:  # NaNs are counted where elements are transformed
            assert st["nans"] == cpu.stats()["nans"] > 0
        assert st["cpu_decoded"] > st["gpu_decoded"] > 0, st
        gpu.close()


def test_out_of_memory_names_the_loaders_memory(store, monkeypatch):
    """A GPU read that runs out of memory says how much this loader keeps in flight and what
    needs less (a real out-of-memory would take the whole GPU; the engine's reads are made to
    fail)."""
    from zarrflow.errors import StoreIOError

    class FullGpu:  # the loader's engine, its every batch failing as nvCOMP's scratch would
        def submit(self, *args):
            return 1

        def take(self, pass_id):
            raise StoreIOError("nvCOMP scratch: CUDA: cudaMalloc of 8 bytes: "
                               "cudaErrorMemoryAllocation (out of memory)")

        def drop(self, pass_id):
            pass

    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=2, workers=3, prefetch=1)
    monkeypatch.setattr(ld, "_engine_here", FullGpu)
    with pytest.raises(StoreIOError, match=r"out of memory\)\n.*up to 5 are in flight \(prefetch 1 "
                                           r"\+ 3 workers \+ the one in use\).*of the GPU's "
                                           r"[0-9.]+ GB \([0-9.]+ GB free now\).*bfloat16"):
        next(iter(ld))
    ld.close()


@pytest.fixture
def memory_limit():
    """Sets zarrflow's GPU memory limit for one test, then puts the process's back."""
    before = zarrflow.gpu_memory_limit()
    yield zarrflow.set_gpu_memory_limit
    zarrflow.set_gpu_memory_limit(before or None)


def test_the_default_limit_leaves_the_gpu_to_a_model(memory_limit, monkeypatch):
    from zarrflow import _gpu

    monkeypatch.setattr(_gpu, "_limit_chosen", False)  # as in a fresh process
    monkeypatch.delenv("ZARRFLOW_GPU_MEMORY_LIMIT", raising=False)
    free, total = zarrflow._core.device_memory(0)
    assert 0 < free <= total
    assert zarrflow.gpu_memory_limit() == int(_gpu.DEFAULT_LIMIT * total)
    assert zarrflow.memory_stats()["device_limit"] == int(_gpu.DEFAULT_LIMIT * total)
    monkeypatch.setenv("ZARRFLOW_GPU_MEMORY_LIMIT", "none")
    monkeypatch.setattr(_gpu, "_limit_chosen", False)
    assert zarrflow.gpu_memory_limit() == 0


def test_loader_fits_prefetch_and_workers_into_the_limit(store, memory_limit):
    """Batches here are tiny, but each worker reserves 1 GB of read buffers: under 1.5 GB the
    loader keeps one worker and one batch ahead, says so, and its batches are still right."""
    from zarrflow.loader._memory_plan import PER_WORKER

    memory_limit(int(1.5 * PER_WORKER))
    with pytest.warns(RuntimeWarning, match=r"prefetch 2 -> 1 and workers 2 -> 1.*GPU memory limit"):
        ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False)
    assert (ld.prefetch, ld.workers) == (1, 1) and ld.memory_plan.reduced
    cpu = zarrflow.Loader(store, VARS, device="cpu", output="numpy", batch_size=4, shuffle=False)
    for a, b in zip(cpu, ld, strict=True):
        assert np.array_equal(a["x"].view(np.uint32), b["x"].cpu().numpy().view(np.uint32))
    st = zarrflow.memory_stats()
    assert st["device_in_use"] <= 1.5 * PER_WORKER
    assert st["device_held"] <= st["device_limit"]  # in use and idle together
    ld.close()


def test_loader_refuses_a_plan_beyond_the_limit(store, memory_limit):
    memory_limit(256 * 2**20)
    with pytest.raises(zarrflow.LoaderError, match=r"limit of 0\.3 GB.*prefetch=1 and workers=1"):
        zarrflow.Loader(store, VARS, device="cuda", batch_size=4)
    memory_limit(None)  # no limit: the same loader is made as asked
    ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4)
    assert (ld.prefetch, ld.workers) == (2, 3) and not ld.memory_plan.reduced
    ld.close()


def test_the_default_third_worker_goes_first_and_silently(store, memory_limit):
    """Room for two workers' read buffers, not three: the default's spare worker is given up
    without a warning; asked for three, the same limit lowers prefetch first, with one."""
    import warnings

    from zarrflow.loader._memory_plan import PER_WORKER

    memory_limit(int(2.5 * PER_WORKER))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False)
    assert (ld.prefetch, ld.workers) == (2, 2) and not ld.memory_plan.reduced
    ld.close()
    with pytest.warns(RuntimeWarning, match=r"prefetch 2 -> 1 and workers 3 -> 2"):
        ld = zarrflow.Loader(store, VARS, device="cuda", batch_size=4, shuffle=False, workers=3)
    assert (ld.prefetch, ld.workers) == (1, 2) and ld.memory_plan.reduced
    ld.close()


def test_a_read_past_the_limit_is_out_of_memory(memory_limit):
    memory_limit(64 * 2**20)
    reader = zarrflow._gpu.reader()
    with pytest.raises(zarrflow.ZarrflowError, match=r"out of memory under zarrflow's GPU memory "
                                                     r"limit.*set_gpu_memory_limit"):
        zarrflow._core.empty_tensor([128, 2**20], "uint8", "cuda", 0, reader=reader)
    t = zarrflow._core.empty_tensor([32, 2**20], "uint8", "cuda", 0, reader=reader)  # within it
    del t


def test_a_batch_at_the_limit_waits_for_memory_given_back(memory_limit):
    """A loader's batch allocation at the limit waits for other reads to give memory back (a
    validation loader's batch beside a training loader's pieces) instead of failing at once."""
    import threading

    memory_limit(96 * 2**20)
    reader = zarrflow._gpu.reader()
    held = [zarrflow._core.empty_tensor([64, 2**20], "uint8", "cuda", 0, reader=reader)]
    given_back = threading.Event()

    def give_back():  # another reader's piece, done a moment later
        given_back.set()
        held.clear()

    threading.Timer(0.3, give_back).start()
    t = zarrflow._core.empty_tensor([64, 2**20], "uint8", "cuda", 0, reader=reader)
    assert given_back.is_set()  # allocated once the memory came back, not before
    del t


@pytest.mark.parametrize("dtype, view", [("float32", np.uint32), ("bfloat16", np.uint16)])
def test_anemoi_dataset_on_the_gpu(anemoi_store, dtype, view):
    """An anemoi dataset (Zarr v2, Blosc-LZ4, one chunk of all variables per date, NaNs): the GPU
    decodes its chunks, and its batches carry the CPU loader's bits."""
    kw = dict(channel_dim="variable", batch_size=3, shuffle="block", seed=2, dtype=dtype,
              normalize=None if dtype == "float32" else zarrflow.compute_stats(
                  anemoi_store, ["data@2t", "data@msl"], channel_dim="variable"))
    names = ["data@2t", "data@msl"]
    cpu = zarrflow.Loader(anemoi_store, names, device="cpu", output="numpy", **kw)
    gpu = zarrflow.Loader(anemoi_store, names, device="cuda", host_decode_share=0.0, **kw)
    assert_same_bits(cpu, gpu, dtype, view)
    assert gpu.stats()["gpu_decoded"] > 0 and gpu.stats()["cpu_decoded"] == 0
    gpu.close()


# --- Any numeric source: CF decoding, normalisation and cast on the GPU ------------------------

from test_loader_dtypes import (  # noqa: E402,F401 (masked_store, packed_store, typed_store)
    PACKED_VARS, STATS, masked_store, packed_store, typed_store)

SOURCE_PATHS = {"gpu-decode": dict(host_decode_share=0.0), "host-decode": dict(gpu_decode="off"),
                "gpu-cache": dict(host_decode_share=0.0, cache_gb=1)}
OUT_VIEWS = [("float32", np.uint32), ("bfloat16", np.uint16), ("float16", np.uint16)]


def cpu_and_gpu_of(path, names, path_kw, **kw):
    cpu = zarrflow.Loader(path, names, device="cpu", output="numpy", **kw)
    gpu = zarrflow.Loader(path, names, device="cuda", output="torch", decode_threads=2,
                          **path_kw, **kw)
    return cpu, gpu


@pytest.mark.parametrize("path", list(SOURCE_PATHS))
@pytest.mark.parametrize("crop", [None, {"longitude": (1, 6)}], ids=["planes", "cropped"])
def test_gpu_packed_int16_batches_equal_cpu_batches(packed_store, path, crop):
    # xarray-written ERA5-like packing (int16, scale_factor/add_offset, _FillValue or
    # missing_value, a missing chunk), Zarr v2 (Blosc-LZ4) and v3 (zstd): masked, unpacked in
    # float64, normalised and cast on the GPU (or by the host threads for chunks they decode)
    # with the CPU loader's bytes; NaNs counted alike.
    for dtype, view in OUT_VIEWS:
        cpu, gpu = cpu_and_gpu_of(packed_store, PACKED_VARS, SOURCE_PATHS[path], batch_size=2,
                                  shuffle=False, dtype=dtype, normalize=STATS, crop=crop)
        if path == "gpu-cache":
            list(gpu)  # fills the cache; the pass compared below decodes from it
        assert_same_bits(cpu, gpu, dtype, view)
        st = gpu.stats()
        passes = 2 if path == "gpu-cache" else 1
        assert st["nans"] == passes * cpu.stats()["nans"] > 0
        if path == "host-decode":
            assert st["cpu_decoded"] > 0 and st["gpu_decoded"] == 0
            if crop is None:
                assert st["host_transformed"] > 0
        if path == "gpu-cache":
            assert st["cache_hits"] > 0


@pytest.mark.parametrize("path", ["gpu-decode", "host-decode"])
def test_gpu_every_numeric_type_equals_cpu(typed_store, path):
    # int8..uint64, float16/32/64, bfloat16, little- and big-endian (byte-swapped on the GPU),
    # edge chunks and a crop: per-element and row paths of the scatter kernel. The floating-point
    # arrays store their one NaN at (0, 0, 0) (sample_values), so the crop, which starts at
    # longitude 1, reads none; the stored fill value 0 is no mask (Zarr v3, no _FillValue).
    root, _, values = typed_store
    names = sorted(values)
    norm = {"mean": [0.25 * i for i in range(len(names))],
            "std": [1.0 + i for i in range(len(names))]}
    for dtype, view in OUT_VIEWS:
        for crop in (None, {"longitude": (1, 6)}):
            cpu, gpu = cpu_and_gpu_of(root, names, SOURCE_PATHS[path], batch_size=2,
                                      shuffle=False, dtype=dtype, normalize=norm, crop=crop)
            assert_same_bits(cpu, gpu, dtype, view)
            assert gpu.stats()["nans"] == cpu.stats()["nans"]
            assert (cpu.stats()["nans"] > 0) == (crop is None), crop


@pytest.mark.filterwarnings("ignore:variable 'ints' has multiple fill values")
@pytest.mark.parametrize("path", ["gpu-decode", "host-decode"])
def test_gpu_masks_equal_cpu(masked_store, path):
    # Masks from attributes (int16 packed by a scale only, float32 with xarray's base64
    # _FillValue) and a v2 float32 fill_value 0: float32 with masks keeps the kernel's
    # four-at-a-time rows; NaNs counted alike.
    for name, names in (("masked.zarr", ["ints", "floats", "zero_fill"]),
                        ("v2.zarr", ["zero_fill"])):
        for dtype, view in OUT_VIEWS:
            cpu, gpu = cpu_and_gpu_of(masked_store.parent / name, names, SOURCE_PATHS[path],
                                      batch_size=2, shuffle=False, dtype=dtype)
            assert_same_bits(cpu, gpu, dtype, view)
            assert gpu.stats()["nans"] == cpu.stats()["nans"] > 0


def test_uncompressed_packed_planes_are_converted_as_they_are_read(tmp_path):
    # Whole uncompressed int16 planes (packed, with a fill value) and float64 planes go through
    # the host's piece-by-piece conversion (256 KiB pieces: 1.2 and 4.8 of them per plane).
    xr = pytest.importorskip("xarray")
    nt, ny, nx = 5, 400, 401
    rng = np.random.default_rng(5)
    t = (rng.standard_normal((nt, ny, nx)) * 10 + 280).astype("float32")
    t[1, 3, 5:40] = np.nan
    w = rng.standard_normal((nt, ny, nx))
    ds = xr.Dataset({"t": (("time", "latitude", "longitude"), t),
                     "w": (("time", "latitude", "longitude"), w)},
                    coords={"time": np.arange(nt, dtype="int64")})
    enc = {"t": dict(dtype="int16", scale_factor=0.002, add_offset=280.0, _FillValue=-32767,
                     chunks=(1, ny, nx), compressors=None),
           "w": dict(chunks=(1, ny, nx), compressors=None)}
    ds.to_zarr(tmp_path / "raw.zarr", zarr_format=3, encoding=enc, consolidated=False)
    norm = {"mean": [280.0, 0.0], "std": [10.0, 1.0]}
    for dtype, view in OUT_VIEWS:
        cpu, gpu = cpu_and_gpu_of(tmp_path / "raw.zarr", ["t", "w"], {}, batch_size=2,
                                  shuffle=False, dtype=dtype, normalize=norm)
        assert_same_bits(cpu, gpu, dtype, view)
        st = gpu.stats()
        assert st["nans"] == cpu.stats()["nans"] > 0
        assert st["host_transformed"] > 0 and st["cpu_decoded"] == 0
