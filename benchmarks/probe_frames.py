"""Probe: does the size of a zstd frame set the speed of GPU decoding?

nvCOMP's zstd decodes one frame on one unit of the GPU. The seed's stacked store has one frame per
721x1440 float32 field (4.15 MB decoded), and a call of nvCOMP lasts at least one such frame's
decode (~35 ms on an H200, seventh session). This probe rechunks the bench_loader 71-channel store
into shards of the same fields whose inner chunks are bands of `--rows` rows (7 frames of 593 KB
at 103 rows), with `zarrflow rechunk` (the seed's step 1), and reads both stores with the same
loader settings:

  whole     721x1440 samples, 2 workers (whole3: 3, the loader's default when memory allows)
  window    640x1280 crops of the fields, 2 workers (window3: 3)
  cache     the GPU chunk cache (30 GB), 1 and 2 workers
  one       1 worker

It reports GB/s of batches, GB/s of GPU decoding per GPU-second (the read reports' decode_ms) and
the compression ratio of each store (smaller frames find fewer matches).

Usage (GPU host): python3 benchmarks/probe_frames.py --data /tmp/zarrflow_bench --out $OUT
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zarrflow  # noqa: E402
from zarrflow import rechunk as _rechunk  # noqa: E402

from bench_loader import (  # noqa: E402
    NLAT, NLON, probe_parser, probe_results, probe_store, record_run, time_stack71, write_once,
    write_probe)

KEYS = ("decode_ms", "internal_batches", "gpu_decoded", "cache_hits", "stored_bytes",
        "batch_bytes", "samples", "chunks", "plan_ms", "fetch_ms", "enqueue_ms", "gpu_wait_ms",
        "gpu_idle_ms", "read_s")
HOST_MS = ("plan_ms", "fetch_ms", "enqueue_ms", "gpu_wait_ms", "gpu_idle_ms")
RUNS = {  # name: (workers, crop, GPU cache GB)
    "whole": (2, None, 0.0),
    "window": (2, {"latitude": (0, 640), "longitude": (0, 1280)}, 0.0),
    "whole3": (3, None, 0.0),
    "window3": (3, {"latitude": (0, 640), "longitude": (0, 1280)}, 0.0),
    "one": (1, None, 0.0),
    "cache1": (1, None, 30.0),
    "cache2": (2, None, 30.0),
}


def store_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(store: Path, name: str, *, epochs: int) -> dict:
    workers, crop, cache_gb = RUNS[name]
    d, wall = time_stack71(store, epochs, KEYS, crop=crop, workers=workers, cache_gb=cache_gb)
    batches = max(1, d["samples"] // 16)
    d.update(run=name, workers=workers, cache_gb=cache_gb, wall_s=wall,
             batch_GBps=d["batch_bytes"] / 1e9 / wall,
             decode_ms_per_batch=d["decode_ms"] / batches,
             pieces_per_batch=d["internal_batches"] / batches,
             chunks_per_batch=d["chunks"] / batches, read_ms_per_batch=1e3 * d["read_s"] / batches,
             **{k.replace("_ms", "_ms_per_batch"): d[k] / batches for k in HOST_MS})
    return d


def main() -> int:
    ap = probe_parser(__doc__, epochs=3)
    ap.add_argument("--rows", type=int, default=103, help="rows of an inner chunk (divides 721)")
    ap.add_argument("--runs", default=",".join(RUNS))
    ap.add_argument("--stores", default="whole,rows", help="whole, rows or both")
    args = ap.parse_args()
    t_start = time.perf_counter()
    if NLAT % args.rows:
        ap.error(f"--rows must divide {NLAT}")
    whole = probe_store(args)
    bands = Path(args.data) / f"stack71_{args.ntime}_rows{args.rows}.zarr"
    opts = _rechunk.Options(chunks={"latitude": args.rows}, shards={"latitude": NLAT},
                            codec="zstd:3", memory=8 << 30)
    rechunk_s = write_once(bands, lambda: _rechunk.rechunk(whole, bands, opts, overwrite=True,
                                                           progress=False))
    decoded = args.ntime * 71 * NLAT * NLON * 4
    results = probe_results(rows=args.rows, rechunk_s=rechunk_s, stores={})
    stores = {"whole": ("whole-field frames", whole), "rows": (f"{args.rows}-row frames", bands)}
    for label, path in (stores[k] for k in args.stores.split(",")):
        stored = store_bytes(path)
        results["stores"][label] = {"path": str(path), "stored_GB": stored / 1e9,
                                    "ratio": decoded / stored}
        print(f"{label}: {stored / 1e9:.2f} GB stored, ratio {decoded / stored:.3f}", flush=True)
        for name in args.runs.split(","):
            try:
                r = run(path, name, epochs=args.epochs)
            except zarrflow.errors.ZarrflowError as e:  # out of memory is a result too
                r = {"run": name, "error": str(e).splitlines()[0][:300]}
            r["store"] = label
            r["t_end_s"] = time.perf_counter() - t_start
            record_run(results, r)
    write_probe(results, args.out, "frames")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
