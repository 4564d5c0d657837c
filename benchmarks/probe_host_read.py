"""Probe: how fast can this host move a warm store's chunk files into pinned memory and up to
the GPU?

A GPU read from local files has one host stage: each chunk file is read (pread) from the page
cache into pinned staging memory, and a copy engine takes it up to the GPU. This probe does only
that, with no zarrflow code: `--threads` Python threads (os.preadv releases the GIL) each read
their share of the store's chunk files into two pinned 64 MB slabs of their own, and, in the
`h2d` runs, copy each full slab up in one call on their own CUDA stream. (A first version made
one copy per 3 MB file and ran at 13-16 GB/s, below the loader itself: its own cost per copy set
that figure.) The loader's "stored GB/s read" (bench_loader) can then be set against what the
host manages with nothing else to do.

Usage (GPU host): python3 benchmarks/probe_host_read.py --data /tmp/zarrflow_bench --out $OUT
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loader import probe_parser, probe_results, probe_store  # noqa: E402

METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


def chunk_files(store: Path) -> list[tuple[str, int]]:
    """(path, size) of every chunk file of the store, largest first (even shares per thread)."""
    out = [(str(p), p.stat().st_size) for p in store.rglob("*")
           if p.is_file() and p.name not in METADATA]
    return sorted(out, key=lambda f: -f[1])


def read_all(files: list[tuple[str, int]], threads: int, h2d: bool, slab: int = 64 << 20) -> float:
    """Seconds to read every file once, `threads` at a time; with `h2d`, each thread packs files
    into pinned slabs of `slab` bytes (two, alternating) and copies each slab up in one call,
    as the GPU read path stages a piece's chunks and copies them up together."""
    import torch

    slab = max(slab, files[0][1])
    shares = [files[i::threads] for i in range(threads)]
    ready = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def work(share):
        try:
            pinned = [torch.empty(slab, dtype=torch.uint8, pin_memory=True) for _ in range(2)]
            views = [memoryview(p.numpy()) for p in pinned]
            dev = torch.empty(slab, dtype=torch.uint8, device="cuda") if h2d else None
            stream = torch.cuda.Stream() if h2d else None
            done = [None, None]  # the event of the copy that last read each slab
            b, used = 0, 0

            def flush():
                nonlocal b, used
                if h2d and used:
                    with torch.cuda.stream(stream):
                        dev[:used].copy_(pinned[b][:used], non_blocking=True)
                        done[b] = torch.cuda.Event()
                        done[b].record(stream)
                b, used = 1 - b, 0
                if done[b] is not None:
                    done[b].synchronize()  # the next slab is still being copied up

            ready.wait()
            for path, n in share:
                if used + n > slab:
                    flush()
                fd = os.open(path, os.O_RDONLY)
                try:
                    got = os.preadv(fd, [views[b][used:used + n]], 0)
                finally:
                    os.close(fd)
                if got != n:
                    raise OSError(f"{path}: read {got} of {n} bytes")
                used += n
            flush()
            if h2d:
                stream.synchronize()
        except BaseException as e:  # noqa: BLE001 (reported by the caller)
            errors.append(e)
            ready.abort()

    pool = [threading.Thread(target=work, args=(s,)) for s in shares]
    for t in pool:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:  # a thread failed before the start: its error below
        pass
    t0 = time.perf_counter()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


def main() -> int:
    ap = probe_parser(__doc__, epochs=3)
    ap.add_argument("--threads", default="8,16,32")
    args = ap.parse_args()
    store = probe_store(args)
    files = chunk_files(store)
    total = sum(n for _, n in files)
    results = probe_results(store=store.name, files=len(files), stored_bytes=total)
    read_all(files, 16, False)  # warm: every file in the page cache
    for threads in (int(t) for t in args.threads.split(",")):
        for h2d in (False, True):
            secs = [read_all(files, threads, h2d) for _ in range(args.epochs)]
            best = min(secs)
            r = {"threads": threads, "h2d": h2d, "seconds": secs, "GBps": total / 1e9 / best}
            results["runs"].append(r)
            print(json.dumps(r), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "probe_host_read.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
