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

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zarrflow  # noqa: E402
from zarrflow import loader as _loader  # noqa: E402

from bench_loader import (  # noqa: E402
    NLAT, NLON, probe_parser, probe_results, probe_store, record_run, time_stack71, write_probe)

KEYS = ("internal_batches", "gpu_idle_ms", "h2d_ms", "decode_ms", "scatter_ms", "fetch_ms",
        "enqueue_ms", "gpu_wait_ms", "read_s", "gpu_decoded", "cache_hits", "stored_bytes",
        "batch_bytes", "samples")


def run(store: Path, *, workers: int, batch_bytes: int, cache_gb: float, epochs: int) -> dict:
    orig = _loader._core.read_batch
    _loader._core.read_batch = functools.partial(orig, batch_bytes=batch_bytes)
    try:
        d, wall = time_stack71(store, epochs, KEYS, workers=workers, cache_gb=cache_gb)
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
    ap = probe_parser(__doc__, epochs=2)
    ap.add_argument("--quick", action="store_true", help="two workers only: default vs 2 GB pieces")
    ap.add_argument("--cache", action="store_true", help="only GPU-cache runs, three piece sizes")
    args = ap.parse_args()
    store = probe_store(args)
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
    results = probe_results()
    for workers, bb, cache in plan:
        print(f"run: workers={workers} batch_bytes={bb >> 20} MiB cache={cache} GB", flush=True)
        try:
            r = run(store, workers=workers, batch_bytes=bb, cache_gb=cache, epochs=args.epochs)
        except Exception as e:  # noqa: BLE001  (an out-of-memory piece size is a result too)
            r = {"workers": workers, "batch_bytes": bb, "cache_gb": cache, "error": str(e)[:400]}
        r["device_peak_so_far_GB"] = zarrflow.memory_stats().get("device_peak", 0) / 1e9
        record_run(results, r)  # the next piece size starts from an empty pool
    write_probe(results, args.out, "pieces")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
