"""The host's ceiling when several GPUs of one node read at once.

Every rank (torchrun, one per GPU) runs the two host-side stages of a read into GPU memory at
the same moment as the others (benchmarks/ceilings.py has them for one GPU):

  staging  its threads pread its share of a store's stored chunks (warm page cache; rank r takes
           chunks r, r + N, ...) into pinned memory: what page cache and memory bandwidth allow;
  H2D      it copies a pinned buffer to its GPU over and over: what PCIe (and the switches the
           GPUs share) allows.

The node's ceiling for its loaders together is the smaller aggregate, in stored GB/s (× the
store's compression ratio in decoded GB/s): loaders on N GPUs together cannot pass it, whatever
one GPU alone reaches. Each
rank's threads are zarrflow's default pool for it (``zarrflow.thread_info``: count and CPUs).
These stages are Python threads and one copy; with --read-array, also

  read     zarrflow itself reads the rank's share of an array (a block of its first axis) into
           GPU memory, every rank at once: its C++ threads, pinned staging and copies up, as the
           Loader reads. For an uncompressed array that is the node's end-to-end ceiling of
           uncompressed loaders, which the two stages above may understate.

    torchrun --standalone --nproc-per-node 4 benchmarks/bench_node_ceiling.py --store S --out O
    python benchmarks/bench_node_ceiling.py --store S --out O        # one GPU, for comparison

Writes node_ceiling_<N>gpu.json into --out (rank 0).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ceilings as cl  # noqa: E402

import zarrflow  # noqa: E402


def together(world: int, fn) -> tuple[float, float]:
    """(this rank's seconds, the slowest rank's) of fn, started by every rank at once."""
    if world > 1:
        dist.barrier()
    t = fn()
    if world > 1:
        slowest = torch.tensor([t], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        return t, float(slowest)
    return t, t


def read_rate(path: Path, world: int, rank: int, runs: int) -> dict:
    """zarrflow reading this rank's block of the array's first axis into GPU memory, at the same
    moment as the other ranks: decoded and stored bytes, and (this rank's, the slowest rank's)
    seconds of each of ``runs`` timed reads after an untimed one."""
    arr = zarrflow.open_array(str(path))
    lo, hi = arr.shape[0] * rank // world, arr.shape[0] * (rank + 1) // world
    region = (slice(lo, hi),) + tuple(slice(0, n) for n in arr.shape[1:])

    def once() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        got = arr.read(region, device="cuda")
        torch.cuda.synchronize()
        took = time.perf_counter() - t0
        del got
        return took

    once()  # untimed: pools and page cache
    times = [together(world, once) for _ in range(runs)]
    decoded = (hi - lo) * math.prod(arr.shape[1:]) * arr.dtype.itemsize
    return {"decoded": decoded, "stored": int(arr.last_read_report["stored_bytes"]),
            "times": times}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--runs", type=int, default=3, help="timed passes of each stage (median)")
    ap.add_argument("--buffer-gb", type=float, default=1.0, help="pinned staging buffer per rank")
    ap.add_argument("--h2d-gb", type=float, default=1.0, help="bytes of each H2D copy")
    ap.add_argument("--read-array", type=Path,
                    help="also time zarrflow reading this array's first axis, split by rank, "
                         "into GPU memory (every rank at once)")
    args = ap.parse_args(argv)
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local % torch.cuda.device_count())
    if world > 1:
        dist.init_process_group("gloo")
    info = zarrflow.thread_info()
    cpus = zarrflow._placement.parse_cpu_list(info["cpus"]) if info["cpus"] else None
    threads = info["threads"]

    everything = cl.stored_pieces(args.store)
    pieces = everything[rank::world]
    stored = sum(p.length for p in pieces)
    buffer = cl.pinned_buffer(int(args.buffer_gb * 1e9), dry=False)
    offsets = cl.ring_offsets([p.length for p in pieces], len(memoryview(buffer).cast("B")))
    cl.stage_once(pieces, offsets, buffer, threads, cpus)  # untimed
    staging = [together(world, lambda: cl.stage_once(pieces, offsets, buffer, threads, cpus))
               for _ in range(args.runs)]

    n = int(args.h2d_gb * 1e9)
    pinned = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")

    def copy() -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dev.copy_(pinned, non_blocking=True)
        torch.cuda.synchronize()
        return time.perf_counter() - t0
    copy()  # untimed
    h2d = [together(world, copy) for _ in range(args.runs)]

    read = read_rate(args.read_array, world, rank, args.runs) if args.read_array else None

    total_stored = torch.tensor([stored], dtype=torch.float64)
    if world > 1:
        dist.all_reduce(total_stored)
    mine = {"rank": rank, "threads": threads, "cpus": info["cpus"], "stored_bytes": stored,
            "staging_GBps": stored / 1e9 / statistics.median(t for t, _ in staging),
            "h2d_GBps": n / 1e9 / statistics.median(t for t, _ in h2d)}
    if read:
        mine.update({"read_GBps": read["decoded"] / 1e9 / statistics.median(t for t, _ in read["times"]),
                     "read_decoded_bytes": read["decoded"], "read_stored_bytes": read["stored"]})
    ranks = [None] * world
    if world > 1:
        dist.all_gather_object(ranks, mine)
    else:
        ranks = [mine]
    if rank == 0:
        res = {"device": torch.cuda.get_device_name(), "gpus": world, "store": str(args.store),
               "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
               "stored_bytes": float(total_stored),
               # every rank's bytes over the slowest rank's time: what the node moved together
               "staging_GBps": float(total_stored) / 1e9 / statistics.median(s for _, s in staging),
               "h2d_GBps": world * n / 1e9 / statistics.median(s for _, s in h2d),
               "ranks": ranks}
        if read:  # every rank's bytes over the slowest rank's time, as above
            slowest = statistics.median(s for _, s in read["times"])
            res["read_array"] = str(args.read_array)
            res["read_GBps"] = sum(r["read_decoded_bytes"] for r in ranks) / 1e9 / slowest
            res["read_stored_GBps"] = sum(r["read_stored_bytes"] for r in ranks) / 1e9 / slowest
            print(f"{world} GPU(s): zarrflow reads {res['read_GBps']:.1f} GB/s decoded "
                  f"({res['read_stored_GBps']:.1f} stored) together; per rank "
                  + ", ".join(f"{r['read_GBps']:.1f}" for r in ranks), flush=True)
        print(f"{world} GPU(s): staging {res['staging_GBps']:.1f} GB/s stored, H2D "
              f"{res['h2d_GBps']:.1f} GB/s, together; per rank: "
              + "; ".join(f"{r['staging_GBps']:.1f} / {r['h2d_GBps']:.1f} ({r['threads']} "
                          f"threads, CPUs {r['cpus'] or 'any'})" for r in ranks), flush=True)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"node_ceiling_{world}gpu.json").write_text(json.dumps(res, indent=2))
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
