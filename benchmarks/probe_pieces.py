"""Probe: what do the internal batches ("pieces") of a GPU read cost?

A loader batch of the 71-channel zstd store decodes ~9.4 GB; the GPU read cuts it into pieces
bounded in staged and decoded bytes (2 GB / 3 GB by default for zstd), double-buffered: the host
fetches piece i+1 while the GPU decodes piece i. An earlier run found GPU-cache batches cut into
3 GB pieces ran at two thirds of the speed of one piece. This probe reads the bench_loader
71-channel store (whole 721x1440 fields, float32, batch 16) with the piece size forced to several
values and reports, from the read reports, where the time goes:

  gpu_idle_ms   the stream idle between one piece's end and the next one's start (host-bound)
  decode_ms     GPU time of the decode kernels (GB/s of decoded chunks per GPU-second)
  fetch_ms / enqueue_ms / gpu_wait_ms   the reading threads' wall time per stage

Usage (GPU host): python3 benchmarks/probe_pieces.py --data /tmp/zarrflow_bench --out $OUT
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import zarrflow  # noqa: E402
from zarrflow import loader as _loader  # noqa: E402

from bench_loader import (  # noqa: E402
    NLAT, NLON, field_pool, warm_then_time, write_once, write_stack)

KEYS = ("internal_batches", "gpu_idle_ms", "h2d_ms", "decode_ms", "scatter_ms", "fetch_ms",
        "enqueue_ms", "gpu_wait_ms", "read_s", "gpu_decoded", "cache_hits", "stored_bytes",
        "batch_bytes", "samples")


def run(store: Path, *, workers: int, batch_bytes: int, cache_gb: float, epochs: int) -> dict:
    orig = _loader._core.read_batch
    _loader._core.read_batch = functools.partial(orig, batch_bytes=batch_bytes)
    try:
        ld = zarrflow.Loader(str(store), [f"data@c{i}" for i in range(71)], batch_size=16,
                             device="cuda", dtype="float32", shuffle="block", seed=0, prefetch=2,
                             workers=workers, cache_gb=cache_gb, host_decode_share=0.0)
        try:
            d, wall = warm_then_time(ld, epochs, KEYS)
        finally:
            ld.close()
    finally:
        _loader._core.read_batch = orig
    chunk = NLAT * NLON * 4
    decoded = d["gpu_decoded"] * chunk  # cache hits are decoded too (and counted there)
    d.update(workers=workers, batch_bytes=batch_bytes, cache_gb=cache_gb, wall_s=wall,
             batch_GBps=d["batch_bytes"] / 1e9 / wall,
             decoded_GB=decoded / 1e9,
             gpu_decode_GBps=decoded / 1e6 / d["decode_ms"] if d["decode_ms"] else 0.0,
             pieces_per_batch=d["internal_batches"] / max(1, d["samples"] / 16))
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="bench_data")
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--ntime", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="two workers only: default vs 2 GB pieces")
    ap.add_argument("--cache", action="store_true", help="only GPU-cache runs, three piece sizes")
    ap.add_argument("--gpu-memory-limit", default="0.9",
                    help="zarrflow's GPU memory limit (no model beside these loops)")
    args = ap.parse_args()
    import torch

    zarrflow.set_gpu_memory_limit(args.gpu_memory_limit)

    store = Path(args.data) / f"stack71_{args.ntime}.zarr"
    write_once(store, lambda: write_stack(store, args.ntime, field_pool()))
    gb = 1 << 30
    # (workers, batch_bytes, GPU cache GB); batch_bytes 0 = the default for the GPU's memory,
    # 2 GB = 2 GB staged as before (the staged bound set the earlier default pieces), now split
    # evenly; 8 GB = one piece per loader batch.
    plan = [(w, bb, 0.0) for w in (1, 2) for bb in (0, 2 * gb, 8 * gb)]
    plan += [(1, 0, 30.0), (2, 0, 30.0), (2, 2 * gb, 30.0)]
    if args.quick:
        plan = [(2, 0, 0.0), (2, 2 * gb, 0.0), (2, 0, 30.0)]
    if args.cache:
        # GPU-cache hits count half against the decoded bound: an explicit batch_bytes X lets a
        # piece of hits hold 4X. 1.5 GB: hits bounded like misses on an H200 (6 GB); 0.75 GB: 3 GB.
        plan = [(w, bb, 30.0) for w in (1, 2) for bb in (0, 3 * gb // 2, 3 * gb // 4)]
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "gpu": torch.cuda.get_device_name(), "cpus": len(os.sched_getaffinity(0)),
               "runs": []}
    for workers, bb, cache in plan:
        print(f"run: workers={workers} batch_bytes={bb >> 20} MiB cache={cache} GB", flush=True)
        try:
            r = run(store, workers=workers, batch_bytes=bb, cache_gb=cache, epochs=args.epochs)
        except Exception as e:  # noqa: BLE001  (an out-of-memory piece size is a result too)
            r = {"workers": workers, "batch_bytes": bb, "cache_gb": cache, "error": str(e)[:400]}
        results["runs"].append(r)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}),
              flush=True)
        r["device_peak_so_far_GB"] = zarrflow.memory_stats().get("device_peak", 0) / 1e9
        torch.cuda.empty_cache()
        zarrflow.release_memory()  # the next piece size starts from an empty pool
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"probe_pieces_{torch.cuda.get_device_name().split()[-1].lower()}.json"
    (out / name).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
