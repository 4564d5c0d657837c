"""What one nvCOMP call costs: the GPU decode stage against the chunks decoded in one call, and
reads side by side against one read, for a store of 4 MB zstd chunks.

Why. zarrflow sizes the pieces it hands nvCOMP (read_plan.h: nvcomp_piece_bytes) on the premise
that a call costs about one chunk's serial decode whatever its size, and that two calls do not
overlap on the GPU: then a read or a loader batch should take as few calls as memory allows.
This measures both:

  calls        the first N fields of the store (one chunk each) read into GPU memory with
               gpu_decode="on" in one piece: the read report's decode_ms (the GPU time of the
               decode stage, one nvCOMP call) against N, median of --runs
  side by side the whole store read by 1, 2 and 4 threads at once, each its own read of an equal
               part (each read takes its own CUDA stream): decoded GB/s of the whole against the
               wall time. Calls that overlapped would read faster in parts.

Store: bench_gpu.py's zstd-3 store (the same path under --data, written once and reused; needs
zarr and numcodecs to write), every read checked against the CPU read once. Writes
bench_nvcomp_calls.json, .md (tables) and .png (with matplotlib) into --out:

    python benchmarks/bench_nvcomp_calls.py --data /tmp/zarrflow_bench --out OUT
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu as bg  # noqa: E402
import bench_read as br  # noqa: E402
from _plotting import pyplot  # noqa: E402

FIELD_BYTES = br.FIELD_BYTES  # one chunk: a 721 x 1440 float32 field


def read_to_gpu(arr, region, runs: int):
    """Median wall seconds and the reports of `runs` reads of `region` (after one untimed)."""
    import torch

    walls, reports = [], []
    for i in range(runs + 1):
        t = time.perf_counter()
        x = arr.read(region, device="cuda", gpu_decode="on")
        torch.cuda.synchronize()
        if i:
            walls.append(time.perf_counter() - t)
            reports.append(dict(arr.last_read_report))
        del x
    return statistics.median(walls), reports


def call_times(arr, counts: list[int], runs: int) -> list[dict]:
    rows = []
    for n in counts:
        wall, reports = read_to_gpu(arr, (slice(0, n),), runs)
        row = dict(chunks=n, decoded_GB=n * FIELD_BYTES / 1e9,
                   pieces=max(r["internal_batches"] for r in reports),
                   decode_ms=statistics.median(r["decode_ms"] for r in reports),
                   fetch_ms=statistics.median(r["fetch_ms"] for r in reports),
                   read_ms=1e3 * wall)
        rows.append(row)
        print(f"calls: {n:4d} chunks  decode {row['decode_ms']:6.1f} ms  "
              f"read {row['read_ms']:6.1f} ms  ({row['pieces']} piece)", flush=True)
    return rows


def side_by_side(arr, n: int, parts_list: list[int], runs: int) -> list[dict]:
    import torch

    rows = []
    for parts in parts_list:
        bounds = [(i * n // parts, (i + 1) * n // parts) for i in range(parts)]
        walls = []
        for rep in range(runs + 1):
            errors: list[BaseException] = []

            def read_part(lo: int, hi: int) -> None:
                try:
                    arr.read((slice(lo, hi),), device="cuda", gpu_decode="on")
                except BaseException as e:  # noqa: BLE001 (reported below)
                    errors.append(e)

            threads = [threading.Thread(target=read_part, args=b) for b in bounds]
            t = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            torch.cuda.synchronize()
            if errors:
                raise errors[0]
            if rep:
                walls.append(time.perf_counter() - t)
        wall = statistics.median(walls)
        rows.append(dict(reads=parts, GBps=n * FIELD_BYTES / 1e9 / wall, wall_ms=1e3 * wall))
        print(f"side by side: {parts} reads  {rows[-1]['GBps']:6.2f} GB/s", flush=True)
    return rows


def markdown(res: dict) -> str:
    lines = [f"nvCOMP zstd calls, {res['gpu']}, {res['fields']} chunks of 4.15 MB, {res['date']}",
             "",
             "| chunks in the call | decoded GB | decode stage ms |", "|---:|---:|---:|"]
    lines += [f"| {r['chunks']} | {r['decoded_GB']:.2f} | {r['decode_ms']:.1f} |"
              for r in res["calls"]]
    lines += ["", "| reads side by side | GB/s (whole store) |", "|---:|---:|"]
    lines += [f"| {r['reads']} | {r['GBps']:.2f} |" for r in res["side_by_side"]]
    return "\n".join(lines) + "\n"


def plot(res: dict, path: Path) -> None:
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    a.plot([r["chunks"] for r in res["calls"]], [r["decode_ms"] for r in res["calls"]], "o-")
    a.set_xscale("log")
    a.set_ylim(bottom=0)
    a.set_xlabel("4 MB zstd chunks in one nvCOMP call")
    a.set_ylabel("decode stage, ms")
    b.bar([str(r["reads"]) for r in res["side_by_side"]], [r["GBps"] for r in res["side_by_side"]])
    b.set_xlabel("reads of equal parts side by side")
    b.set_ylabel("whole store, decoded GB/s")
    fig.suptitle(f"nvCOMP zstd calls, {res['gpu']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("bench_data"))
    ap.add_argument("--out", type=Path, default=Path("bench_results"))
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--counts", default="1,4,16,33,66,132,264",
                    help="chunks per call (the whole store is added)")
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    import zarrflow

    if not zarrflow.cuda_available():
        sys.exit(f"zarrflow sees no usable GPU: {zarrflow.cuda_status()}")
    n = max(1, int(np.ceil(args.size_gb * 1e9 / FIELD_BYTES)))  # as bench_gpu.py: its store
    paths = bg.write_stores(args.data, n, ["zstd-3"], args.threads,
                            lambda c, why: sys.exit(f"{c}: {why}"))
    zarrflow.set_num_threads(args.threads)
    arr = zarrflow.open_array(paths["zstd-3"])
    expected = arr.read()
    got = torch.from_dlpack(arr.read(device="cuda", gpu_decode="on")).cpu().numpy()
    if not np.array_equal(got.view(np.uint32), expected.view(np.uint32)):
        sys.exit("the GPU read differs from the CPU read")
    counts = sorted({c for c in (int(x) for x in args.counts.split(",")) if 0 < c < n} | {n})
    res = dict(date=time.strftime("%Y-%m-%d"), gpu=torch.cuda.get_device_name(), fields=n,
               threads=args.threads, runs=args.runs, nvcomp=zarrflow.nvcomp_status() or "loaded",
               calls=call_times(arr, counts, args.runs),
               side_by_side=side_by_side(arr, n, [1, 2, 4], args.runs))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench_nvcomp_calls.json").write_text(json.dumps(res, indent=1))
    (args.out / "bench_nvcomp_calls.md").write_text(markdown(res))
    try:
        plot(res, args.out / "bench_nvcomp_calls.png")
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
