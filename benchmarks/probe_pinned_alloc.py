"""Does pinning host memory stall another thread's GPU work, and does the way it is pinned matter?

The first zarrflow run of a training process had one model step of 300-400 ms (against 131 ms)
while a loader worker grew its pinned pool (docs/benchmarks.md, fifth session). This probe runs a
"training" thread that launches a 2 ms kernel and waits for it, over and over, and meanwhile pins
and frees SIZE bytes of host memory in the main thread three ways:

  hostalloc   cudaHostAlloc / cudaFreeHost (what the pools did until the sixth session)
  register    mmap, pages touched first by 8 threads (no CUDA call), then cudaHostRegister;
              cudaHostUnregister + munmap
  populate    mmap(MAP_POPULATE), then cudaHostRegister; cudaHostUnregister + munmap
  hugepage    as register, with madvise(MADV_HUGEPAGE) before the pages are touched
  device      cudaMalloc / cudaFree of device memory, for comparison

For each: how long each call takes, and the training thread's longest step while it ran.
Needs torch and cupy (the GPU machine). Prints one JSON line per method and size.
"""

from __future__ import annotations

import argparse
import json
import mmap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, nargs="+", default=[0.5, 2.0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--methods", nargs="+", default=["hostalloc", "register", "populate", "hugepage",
                                                     "device"])
    args = ap.parse_args()
    import cupy
    import torch

    rt = cupy.cuda.runtime
    torch.zeros(1, device="cuda")
    steps: list[tuple[float, float]] = []  # (start, duration) of each training step
    stop = threading.Event()

    def train() -> None:
        cycles = int(2e-3 * 1.7e9)  # ~2 ms at H100/H200 clocks (the quiet median is printed)
        while not stop.is_set():
            t = time.perf_counter()
            torch.cuda._sleep(cycles)
            torch.cuda.synchronize()
            steps.append((t, time.perf_counter() - t))

    def worst_step(t0: float, t1: float) -> float:
        d = [dur for s, dur in steps if s + dur >= t0 and s <= t1]
        return max(d) if d else float("nan")

    def touch(mm: mmap.mmap, size: int) -> None:
        a = np.frombuffer(mm, dtype=np.uint8, count=size)
        part = -(-size // 8)
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: a[i * part:(i + 1) * part].fill(0), range(8)))

    def one(method: str, size: int) -> dict:
        t0 = time.perf_counter()
        mm = None
        if method == "hostalloc":
            ptr = rt.hostAlloc(size, 0)
        elif method == "device":
            ptr = rt.malloc(size)
        else:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
            if method == "populate":
                flags |= mmap.MAP_POPULATE
            mm = mmap.mmap(-1, size, flags=flags)
            if method == "hugepage":
                mm.madvise(mmap.MADV_HUGEPAGE)
            if method in ("register", "hugepage"):
                touch(mm, size)
            t_touch = time.perf_counter()
            ptr = np.frombuffer(mm, dtype=np.uint8, count=size).ctypes.data
            t_reg = time.perf_counter()
            rt.hostRegister(ptr, size, 0)
        t1 = time.perf_counter()
        time.sleep(0.05)
        t2 = time.perf_counter()
        if method == "hostalloc":
            rt.freeHost(ptr)
        elif method == "device":
            rt.free(ptr)
        else:
            rt.hostUnregister(ptr)

        t3 = time.perf_counter()
        if mm is not None:
            mm.close()
        t4 = time.perf_counter()
        time.sleep(0.05)
        r = {"method": method, "GB": size / 1e9, "alloc_s": t1 - t0, "free_s": t3 - t2,
             "unmap_s": t4 - t3, "worst_step_ms_alloc": 1e3 * worst_step(t0, t1),
             "worst_step_ms_free": 1e3 * worst_step(t2, t4)}
        if mm is not None:
            r["prepare_s"], r["register_s"] = t_touch - t0, t1 - t_reg
        return r

    th = threading.Thread(target=train, daemon=True)
    th.start()
    time.sleep(0.5)
    quiet = sorted(d for _, d in steps)
    print(json.dumps({"quiet_step_ms_median": 1e3 * quiet[len(quiet) // 2],
                      "quiet_step_ms_max": 1e3 * quiet[-1]}), flush=True)
    for gb in args.gb:
        for method in args.methods:
            for _ in range(args.repeat):
                print(json.dumps({k: round(v, 4) if isinstance(v, float) else v
                                  for k, v in one(method, int(gb * 1e9)).items()}), flush=True)
    stop.set()
    th.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
