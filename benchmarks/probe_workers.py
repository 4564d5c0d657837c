"""Probe: two loader workers against three, in float32 and in bfloat16, on the 71-channel store.

The loader's default keeps a third worker on a GPU where the plan with it takes at most half of
zarrflow's GPU memory limit. A bfloat16 batch is half the size of a float32 one, so on an 80 GB
H100 the third worker is kept for bfloat16 and given up for float32. This probe times both
counts in both types, in one process, twice over (whole 721x1440 fields, batch 16, GPU-only
decoding, 90% limit), so the default can be checked against the alternative.

Usage (GPU host): python3 benchmarks/probe_workers.py --data /tmp/zarrflow_bench --out $OUT
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loader import (  # noqa: E402
    probe_parser, probe_results, probe_store, record_run, time_stack71, write_probe)

KEYS = ("batch_bytes", "samples", "decode_ms", "internal_batches", "read_s", "stored_bytes")


def main() -> int:
    ap = probe_parser(__doc__, epochs=6)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    store = probe_store(args)
    results = probe_results()
    norm = {"mean": [0.0] * 71, "std": [1.0] * 71}
    for rep in range(args.repeats):
        for dtype in ("bfloat16", "float32"):
            for workers in (2, 3):
                kw = {"dtype": dtype, "workers": workers}
                if dtype != "float32":
                    kw["normalize"] = norm
                d, wall = time_stack71(store, args.epochs, KEYS, **kw)
                batches = max(1, d["samples"] // 16)
                d.update(repeat=rep, dtype=dtype, workers=workers, wall_s=wall,
                         batch_GBps=d["batch_bytes"] / 1e9 / wall,
                         samples_per_s=d["samples"] / wall,
                         pieces_per_batch=d["internal_batches"] / batches,
                         decode_ms_per_batch=d["decode_ms"] / batches)
                record_run(results, d)
    write_probe(results, args.out, "workers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
