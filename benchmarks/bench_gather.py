"""Random minibatch gather benchmark: B random time steps of a (T, C, H, W) float32 Zarr v3 array
(zstd level 1, one time step per chunk), read in one call.

Readers, each the best of --runs with a warm page cache, reported as wall seconds and decoded GB/s:
  zarrflow arr[times]          (orthogonal: each needed chunk read once, regions in parallel)
  zarrflow arr.vindex[times]   (pointwise with trailing slices)
  zarrflow loop of arr[t]      (one call per time step)
  zarrflow arr[t0:t0+B]        (the same amount of contiguous data, for reference)
  zarr-python z.oindex[times]
The store is written once under --data and reused.

Usage: python benchmarks/bench_gather.py [--batch 64] [--shape 512,8,181,360] [--runs 5]
       [--threads N] [--data bench_data] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

import zarrflow


def _store(path: Path, shape: tuple[int, ...]):
    import zarr

    if not (path / "zarr.json").exists():
        z = zarr.create_array(str(path), shape=shape, chunks=(1, *shape[1:]), dtype="float32",
                              compressors=zarr.codecs.ZstdCodec(level=1), fill_value=0)
        rng = np.random.default_rng(0)
        for t in range(0, shape[0], 16):
            block = rng.standard_normal((min(16, shape[0] - t), *shape[1:]), dtype="float32")
            z[t:t + len(block)] = block.round(2)  # compressible, like real fields
    return zarr.open_array(str(path), mode="r")


def _best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--shape", default="512,8,181,360", help="T,C,H,W")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--data", default="bench_data")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    shape = tuple(int(x) for x in args.shape.split(","))
    path = Path(args.data) / f"gather_{'x'.join(map(str, shape))}.zarr"
    z = _store(path, shape)
    a = zarrflow.open(path, threads=args.threads)
    times = np.random.default_rng(1).choice(shape[0], args.batch, replace=False)
    want = z.oindex[times]
    assert np.array_equal(a[times], want) and np.array_equal(a.vindex[times], want)
    readers = {
        "zarrflow arr[times]": lambda: a[times],
        "zarrflow arr.vindex[times]": lambda: a.vindex[times],
        "zarrflow loop of arr[t]": lambda: [a[int(t)] for t in times],
        "zarrflow arr[t0:t0+B] (contiguous)": lambda: a[0:args.batch],
        "zarr-python z.oindex[times]": lambda: z.oindex[times],
    }
    gb = want.nbytes / 1e9
    rows = {name: _best(fn, args.runs) for name, fn in readers.items()}
    print(f"{args.batch} of {shape[0]} time steps of {shape}, {gb * 1e3:.1f} MB decoded; "
          f"{a._executor.threads} threads; {platform.node()}")
    print("| reader | best s | GB/s |\n|---|---:|---:|")
    for name, s in rows.items():
        print(f"| {name} | {s:.4f} | {gb / s:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"shape": shape, "batch": args.batch,
                                               "threads": a._executor.threads,
                                               "seconds": rows}, indent=1))


if __name__ == "__main__":
    main()
