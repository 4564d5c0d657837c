"""Decode cost to a model: the GPU time zarrflow's reads take from a compute job beside them, in
SM-seconds per decoded GB, per codec, for GPU decoding and for host decoding.

Method. A compute job of known length, back-to-back bfloat16 matmuls (--matmul-size square
matrices, torch, on a stream of its own) sized to --window-s seconds, runs alone, then while a
thread reads the codec's store whole into GPU memory in a loop (Array.read(device="cuda"),
--threads host threads), then alone again. The job's GPU time (CUDA events) stretches from T_alone
(the mean of the two runs alone) to T_with; the SM time the reads took from it is
(T_with - T_alone) x SMs, and

    SM-seconds per decoded GB = (T_with - T_alone) x SMs / D

where D is the decoded GB the reads delivered while the job ran (a read overlapping the job's
start or end counts in proportion to its overlap). A model step consuming R decoded GB/s then
loses R x (SM-s/GB) / SMs of its time to the reads, as long as the reads keep up. Rows:
  GPU decode   gpu_decode="on": every chunk decoded on the GPU (raw: no decoding, the copies and
               the scatter kernel only: what every GPU read costs besides decoding)
  host decode  gpu_decode="off": the host threads decode, the GPU receives decoded bytes (what
               the Loader's host_decode_share=1 does); expected near zero
Limits. The matmuls fill every SM with tensor-core work, as a large model's step does; a model
that leaves SMs idle or waits on memory loses less, or differently. The stretch counts everything
the reads put on the GPU (scatter kernels, copies contending for memory bandwidth), clock changes
(the job runs near the power limit) and host effects (the reads' threads delaying the job's
launches; each matmul runs ~10 ms, so the launch queue stays ahead). The two runs alone bound the
noise: both are recorded, and a stretch within their difference is no measurable cost.

Stores: bench_gpu.py's (the same paths under --data, written once and reused), checked once per
codec against zarrflow's CPU read. Writes bench_sm_cost.json, .md (a table) and .png into --out:

    python benchmarks/bench_sm_cost.py --data /tmp/zarrflow_bench --out OUT

--cpu-dry-run (no GPU, no torch) runs the same loop on the host to check the machinery: a NumPy
matmul job, host reads, core-seconds of the host per GB. Not a GPU figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu as bg  # noqa: E402
import bench_read as br  # noqa: E402
from _plotting import pyplot  # noqa: E402

import zarrflow  # noqa: E402

GPU_CODECS = ["raw", "zstd-3", "blosc-lz4-shuffle", "blosc-zstd-bitshuffle", "gzip-1", "lz4",
              bg.SHARDED]
HOST_CODECS = ["zstd-3", "blosc-lz4-shuffle"]


# --- the arithmetic ----------------------------------------------------------------------------------
def bytes_in_window(reads: Sequence[tuple[float, float]], nbytes: int, w0: float, w1: float) -> float:
    """Bytes delivered in [w0, w1] by reads of ``nbytes`` each that ran over (start, end): each
    counted in proportion to the part of it inside the window."""
    total = 0.0
    for t0, t1 in reads:
        if t1 <= t0:
            continue
        total += nbytes * max(0.0, min(t1, w1) - max(t0, w0)) / (t1 - t0)
    return total


def sm_seconds_per_gb(t_alone: float, t_with: float, units: int, decoded_bytes: float) -> float | None:
    """(T_with - T_alone) x units / decoded GB; None when nothing was decoded in the window."""
    if decoded_bytes <= 0:
        return None
    return (t_with - t_alone) * units / (decoded_bytes / 1e9)


# --- the compute job -----------------------------------------------------------------------------------
class GpuJob:
    """Back-to-back bf16 matmuls on a stream of their own; ``run`` returns their GPU time."""

    unit = "SM"

    def __init__(self, size: int):
        import torch

        self.torch = torch
        self.a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        self.b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        self.c = torch.empty_like(self.a)
        self.stream = torch.cuda.Stream()
        self.units = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        self.iters = 1

    def run(self, iters: int | None = None) -> float:
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            start.record()
            for _ in range(iters or self.iters):
                torch.matmul(self.a, self.b, out=self.c)
            end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3


class HostJob:
    """The dry run's stand-in: float32 NumPy matmuls on the host; ``run`` returns wall time."""

    unit = "core"

    def __init__(self, size: int):
        rng = np.random.default_rng(0)
        self.a = rng.standard_normal((size, size), dtype=np.float32)
        self.b = rng.standard_normal((size, size), dtype=np.float32)
        self.c = np.empty_like(self.a)
        self.units = len(os.sched_getaffinity(0))
        self.iters = 1

    def run(self, iters: int | None = None) -> float:
        t0 = time.perf_counter()
        for _ in range(iters or self.iters):
            np.matmul(self.a, self.b, out=self.c)
        return time.perf_counter() - t0


def calibrate(job, window_s: float) -> None:
    """Sets the job's iteration count so that a run alone takes about ``window_s``."""
    job.run(3)  # warm-up: kernels chosen, clocks up
    one = job.run(10) / 10
    job.iters = max(10, math.ceil(window_s / one))


# --- the read loop -----------------------------------------------------------------------------------
class ReadLoop:
    """``read()`` called back to back on a thread until ``stop()``; each read's (start, end)."""

    def __init__(self, read: Callable[[], Any]):
        self.read, self.reads = read, []
        self._stop, self._first = threading.Event(), threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                x = self.read()
                self.reads.append((t0, time.perf_counter()))
                del x
                self._first.set()
        except BaseException as e:  # noqa: BLE001 (re-raised by stop())
            self._error = e
            self._first.set()

    def start(self) -> None:
        """Starts the loop and returns once its first read is done (the job starts on a busy GPU)."""
        self._thread.start()
        self._first.wait()
        if self._error is not None:
            self.stop()

    def stop(self) -> list[tuple[float, float]]:
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self.reads


# --- one row -------------------------------------------------------------------------------------------
def decode_on(codec: str, mode: str, dry: bool) -> str:
    if codec == "raw":
        return "none (uncompressed)"
    return "host (dry run)" if dry else "GPU" if mode == "on" else "host"


def reader(arr, mode: str, dry: bool) -> Callable[[], Any]:
    if dry:
        out = np.empty(arr.shape, arr.dtype)
        return lambda: arr.read(out=out)
    return lambda: arr.read(device="cuda", gpu_decode=mode)


def check(arr, read: Callable[[], Any], codec: str, mode: str, dry: bool) -> None:
    """The read's values equal zarrflow's CPU read, and its chunks were decoded where asked."""
    x = read()
    if dry:
        return
    import torch

    got = torch.from_dlpack(x)
    ref = torch.from_numpy(arr.read()).cuda()
    same = torch.equal(got.view(torch.int32), ref.view(torch.int32))
    del got, ref, x
    if not same:
        raise RuntimeError(f"{codec}: the GPU read (gpu_decode={mode!r}) differs from the CPU read")
    rep = arr.last_read_report
    if codec != "raw" and mode == "on" and rep["cpu_decoded"]:
        raise RuntimeError(f"{codec}: {rep['cpu_decoded']} chunks decoded on the host: {rep['notes']}")
    if codec != "raw" and mode == "off" and rep["gpu_decoded"]:
        raise RuntimeError(f"{codec}: {rep['gpu_decoded']} chunks decoded on the GPU with gpu_decode='off'")


def measure(job, arr, codec: str, mode: str, dry: bool, alone_reads: int = 3) -> dict:
    nbytes = arr.nbytes
    read = reader(arr, mode, dry)
    check(arr, read, codec, mode, dry)
    t0 = time.perf_counter()
    for _ in range(alone_reads):
        read()
    reads_alone = nbytes * alone_reads / 1e9 / (time.perf_counter() - t0)
    before = job.run()
    loop = ReadLoop(read)
    loop.start()
    w0 = time.perf_counter()
    with_reads = job.run()
    w1 = time.perf_counter()
    reads = loop.stop()
    after = job.run()
    alone = (before + after) / 2
    decoded = bytes_in_window(reads, nbytes, w0, w1)
    cost = sm_seconds_per_gb(alone, with_reads, job.units, decoded)
    row = {"codec": codec, "gpu_decode": mode, "decode_on": decode_on(codec, mode, dry),
           "decoded_bytes_per_read": nbytes, "reads_alone_GBps": reads_alone,
           "job_alone_s": [before, after], "job_with_reads_s": with_reads, "window_s": w1 - w0,
           "decoded_GB_in_window": decoded / 1e9, "reads_in_window": len(reads),
           "reads_beside_job_GBps": decoded / 1e9 / (w1 - w0),
           "job_slowdown": with_reads / alone - 1, "alone_runs_differ": abs(before - after) / alone,
           "unit_s_per_GB": cost,
           "gpu_ms_per_GB": None if cost is None else cost / job.units * 1e3}
    if not dry:
        rep = arr.last_read_report
        row["report"] = {k: rep[k] for k in ("gpu_decoded", "cpu_decoded", "stored_bytes") if k in rep}
    return row


# --- output ------------------------------------------------------------------------------------------
def _f(x: float | None, fmt: str) -> str:
    return "n/a" if x is None else format(x, fmt)


def table(results: dict) -> str:
    unit = results["unit"]
    lines = [f"| codec | decoded on | reads alone GB/s | reads beside the job GB/s | job slowed | "
             f"two runs alone differ | {unit}-s per decoded GB | whole-{'GPU' if unit == 'SM' else 'host'} "
             "ms per GB |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        if "error" in r:
            lines.append(f"| {r['codec']} | {r['decode_on']} | {r['error']} | | | | | |")
            continue
        lines.append(f"| {r['codec']} | {r['decode_on']} | {r['reads_alone_GBps']:.1f} | "
                     f"{r['reads_beside_job_GBps']:.1f} | {100 * r['job_slowdown']:.1f}% | "
                     f"{100 * r['alone_runs_differ']:.1f}% | {_f(r['unit_s_per_GB'], '.2f')} | "
                     f"{_f(r['gpu_ms_per_GB'], '.1f')} |")
    return "\n".join(lines) + "\n"


def describe(results: dict) -> str:
    dry = ("**CPU dry run**: a host matmul job and host reads; not GPU figures. "
           if results["cpu_dry_run"] else "")
    return (f"{dry}{results['gpu']} ({results['units']} {results['unit']}s), {results['threads']} read "
            f"threads, {results['decoded_bytes'] / 1e9:.2f} GB per read, job of "
            f"{results['job']} ≈ {results['window_s']:.1f} s alone; {results['date']}; zarrflow "
            f"{results['zarrflow']}.\n")


def plot(results: dict, path: Path) -> None:
    plt = pyplot()
    rows = [r for r in results["rows"] if r.get("unit_s_per_GB") is not None]
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    get = {(r["codec"], r["gpu_decode"] == "off"): r["unit_s_per_GB"] for r in rows}
    fig, ax = plt.subplots(figsize=(9, 4.2))
    x = np.arange(len(codecs))
    for k, (host, label, colour) in enumerate(((False, "decoded on the GPU (raw: copies only)", "tab:red"),
                                               (True, "decoded on the host", "tab:blue"))):
        ys = [get.get((c, host), np.nan) for c in codecs]
        bars = ax.bar(x + (k - 0.5) * 0.4, ys, 0.4, label=label, color=colour)
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, codecs, rotation=15)
    unit = results["unit"]
    ax.set_ylabel(f"{unit}-seconds per decoded GB")
    ax.set_title(f"Reads' cost to a compute job beside them: {results['gpu']}, "
                 f"{results['units']} {unit}s" + (" (CPU DRY RUN)" if results["cpu_dry_run"] else ""),
                 fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(results: dict, out: Path, plot_too: bool) -> str:
    text = describe(results) + "\n" + table(results)
    (out / "bench_sm_cost.json").write_text(json.dumps(results, indent=2))
    (out / "bench_sm_cost.md").write_text(text)
    if plot_too:
        try:
            plot(results, out / "bench_sm_cost.png")
        except ImportError:
            print("matplotlib is not installed: no plot", file=sys.stderr)
    return text


# --- the run ---------------------------------------------------------------------------------------
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="bench_data",
                    help="where bench_gpu.py's stores are (written if missing)")
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--size-gb", type=float, default=2.0, help="decoded size of each store (default 2)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="zarrflow's read threads (default: this host's cores)")
    ap.add_argument("--codecs", default=",".join(GPU_CODECS),
                    help="GPU decode rows (default: every GPU codec and raw)")
    ap.add_argument("--host-codecs", default=",".join(HOST_CODECS),
                    help="host decode rows, gpu_decode='off' (default zstd-3,blosc-lz4-shuffle; "
                         "'' for none)")
    ap.add_argument("--window-s", type=float, default=2.0, help="the job's length alone (default 2 s)")
    ap.add_argument("--matmul-size", type=int, default=None,
                    help="square matrix size (default 16384 on the GPU, 512 in a dry run)")
    ap.add_argument("--budget-s", type=float, default=300,
                    help="wall seconds after which the remaining rows are skipped and listed (default 300)")
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="no GPU, no torch: a host matmul job and host reads (checks the machinery)")
    args = ap.parse_args(argv)
    args.codec_list = [c for c in args.codecs.split(",") if c]
    args.host_list = [c for c in args.host_codecs.split(",") if c]
    bad = [c for c in args.codec_list + args.host_list if c not in bg.ALL_CODECS]
    bad += [c for c in args.host_list if c == "raw"]
    if bad:
        ap.error(f"unknown or uncompressed codec: {', '.join(bad)} (codecs: {', '.join(bg.ALL_CODECS)}; "
                 "host rows need a compressed one)")
    if args.window_s <= 0 or args.size_gb <= 0:
        ap.error("--window-s and --size-gb must be positive")
    if args.matmul_size is None:
        args.matmul_size = 512 if args.cpu_dry_run else 16384
    return args


def plan(codecs: list[str], host: list[str]) -> list[tuple[str, str]]:
    """(codec, gpu_decode) in order: each codec's GPU row, then its host row when asked."""
    rows = []
    for c in list(dict.fromkeys(codecs + host)):
        if c in codecs:
            rows.append((c, "auto" if c == "raw" else "on"))
        if c in host:
            rows.append((c, "off"))
    return rows


def main(argv=None) -> int:
    t_start = time.monotonic()
    args = parse_args(argv)
    if not args.cpu_dry_run and not zarrflow.cuda_available():
        print(f"no GPU: {zarrflow.cuda_status()} (--cpu-dry-run checks the machinery on the host)",
              file=sys.stderr)
        return 1
    zarrflow.set_num_threads(args.threads)
    n = max(1, math.ceil(args.size_gb * 1e9 / br.FIELD_BYTES))
    out, data = Path(args.out), Path(args.data)
    out.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    rows_planned = plan(args.codec_list, args.host_list)
    failed: dict[str, str] = {}
    paths = bg.write_stores(data, n, list(dict.fromkeys(c for c, _ in rows_planned)), args.threads,
                            lambda c, why: failed.__setitem__(c, why))
    job = HostJob(args.matmul_size) if args.cpu_dry_run else GpuJob(args.matmul_size)
    calibrate(job, args.window_s)
    results: dict = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
        "gpu": "none (--cpu-dry-run)" if args.cpu_dry_run else job.torch.cuda.get_device_name(),
        "cpu_dry_run": args.cpu_dry_run, "unit": job.unit, "units": job.units,
        "cores_visible": len(os.sched_getaffinity(0)), "threads": args.threads,
        "decoded_bytes": n * br.FIELD_BYTES, "fields": n, "zarrflow": zarrflow.__version__,
        "job": (f"{job.iters} x {args.matmul_size}² " + ("float32 NumPy matmuls" if args.cpu_dry_run
                                                        else "bf16 matmuls")),
        "matmul_size": args.matmul_size, "window_s": args.window_s, "rows": [],
        "store_seconds": time.monotonic() - t_start,
    }
    for codec, mode in rows_planned:
        base = {"codec": codec, "gpu_decode": mode, "decode_on": decode_on(codec, mode, args.cpu_dry_run)}
        if codec in failed:
            results["rows"].append(base | {"error": failed[codec]})
        elif time.monotonic() - t_start > args.budget_s:
            results["rows"].append(base | {"error": f"skipped: --budget-s {args.budget_s:.0f} s spent"})
        else:
            try:
                results["rows"].append(measure(job, zarrflow.open_array(paths[codec]), codec, mode,
                                               args.cpu_dry_run))
            except Exception as e:  # noqa: BLE001 (a row that fails is a result; the run goes on)
                results["rows"].append(base | {"error": bg.why(e)})
        print(json.dumps(results["rows"][-1]), flush=True)
        write_outputs(results, out, plot_too=False)
    results["total_seconds"] = time.monotonic() - t_start
    print(write_outputs(results, out, plot_too=True))
    return 0 if any("error" not in r for r in results["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
