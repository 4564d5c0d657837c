"""Probe: does the loader workers' hand-off grace (zarrflow._prefetch.HANDOFF_GRACE_S, 3 ms) cost
loader-only throughput? A 6-channel GPU loader with no model (batches taken as fast as they come,
90% GPU memory limit, loader defaults), timed with the grace off and on, alternating, in one
process. GB/s of float32 batches; one JSON line per run.

Usage (GPU host): python3 benchmarks/probe_grace.py --data /tmp/zarrflow_probe --out $OUT
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import zarrflow
from zarrflow import _prefetch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loader import probe_parser  # noqa: E402
from probe_consumer import SIX, wb2_store  # noqa: E402


def main() -> int:
    ap = probe_parser(__doc__, epochs=6, ntime=160)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    import torch

    zarrflow.set_gpu_memory_limit(args.gpu_memory_limit)
    store = wb2_store(args.data, args.ntime)
    results = {"gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "runs": []}
    for rep in range(args.repeats):
        for grace in (0.0, 0.003):
            _prefetch.HANDOFF_GRACE_S = grace
            ld = zarrflow.Loader(store, SIX, batch_size=16, device="cuda", shuffle="block",
                                 seed=0)
            for e in range(2):  # warm-up: page cache, pools, decode balance
                ld.set_epoch(e)
                for _ in ld:
                    pass
            torch.cuda.synchronize()
            n, t0 = 0, time.perf_counter()
            for e in range(2, 2 + args.epochs):
                ld.set_epoch(e)
                for b in ld:
                    n += b["x"].shape[0]
            torch.cuda.synchronize()
            wall = time.perf_counter() - t0
            nbytes = n * 2 * len(SIX) * 721 * 1440 * 4
            run = {"repeat": rep, "grace_ms": grace * 1e3, "workers": ld.workers,
                   "samples": n, "wall_s": round(wall, 3), "batch_GBps": round(nbytes / 1e9 / wall, 2)}
            print(json.dumps(run), flush=True)
            results["runs"].append(run)
            ld.close()
            zarrflow.release_memory()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "probe_grace.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
