"""The stage ceilings of a read into GPU memory, and how close an end-to-end rate comes to them.

A read of a store into GPU memory runs three stages, which overlap when the pipeline works:
  (a) staging: the host threads read the chunks' stored bytes (warm page cache) into pinned memory;
  (b) the PCIe copy (host to device) of the stored bytes;
  (c) decoding on the GPU, from chunks already in device memory.
In decoded bytes per second, with ratio = decoded bytes / stored bytes, they allow at most
a × ratio, b × ratio and c; end to end cannot beat the smallest of the three, the ceiling. An
uncompressed store has no decode stage: its ceiling is min(a, b). "Of ceiling" is end to end ÷
ceiling; the target is 0.8 for compressed stores and 0.9 for uncompressed ones.

Here: what the benchmarks share to measure (a) and (b) (`stored_pieces`, `staging_rate`,
`pinned_h2d_gbps`), and the pure computation and table of the ceilings (`ceiling_row`,
`ceilings_table`). Throughput counts bytes, 1 GB = 1e9 bytes.

    python benchmarks/ceilings.py RESULT.json...   prints the ceiling tables those files hold
"""

from __future__ import annotations

import json
import math
import os
import statistics
import struct
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

TARGET = 0.8
TARGET_UNCOMPRESSED = 0.9
EMPTY = 2**64 - 1   # a shard index entry of a chunk that is not stored
METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata", ".complete"}


# --- where the stored bytes are ------------------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """One chunk's stored bytes: ``length`` bytes of ``file`` from ``offset``."""
    file: Path
    offset: int
    length: int


def _array_dirs(store: Path) -> list[Path]:
    """The arrays of a Zarr v2 or v3 store (the store itself when it is one array)."""
    found = []
    for meta in sorted(store.rglob("*")):
        if meta.name == ".zarray":
            found.append(meta.parent)
        elif meta.name == "zarr.json" and json.loads(meta.read_text()).get("node_type") == "array":
            found.append(meta.parent)
    return found


def _sharding(array_dir: Path) -> dict | None:
    """The sharding codec's configuration with the shard shape added, or None (not sharded)."""
    meta = array_dir / "zarr.json"
    if not meta.exists():
        return None
    md = json.loads(meta.read_text())
    codecs = md.get("codecs") or []
    if not codecs or codecs[0].get("name") != "sharding_indexed":
        return None
    grid = md["chunk_grid"]["configuration"]["chunk_shape"]
    return dict(codecs[0]["configuration"], shard_shape=grid)


def shard_index_pieces(shard: Path, config: dict) -> list[Piece]:
    """The inner chunks stored in one shard file, from its index (``index_location`` "end" or
    "start"; a crc32c index codec adds 4 bytes)."""
    inner = config["chunk_shape"]
    n = math.prod(-(-s // c) for s, c in zip(config["shard_shape"], inner))
    checksum = any(c.get("name") == "crc32c" for c in config.get("index_codecs", []))
    size = 16 * n + (4 if checksum else 0)
    with open(shard, "rb") as f:
        total = f.seek(0, os.SEEK_END)
        if total < size:
            raise ValueError(f"{shard}: {total} bytes, shorter than its shard index ({size} bytes)")
        f.seek(total - size if config.get("index_location", "end") == "end" else 0)
        raw = f.read(16 * n)
    words = struct.unpack(f"<{2 * n}Q", raw)  # (offset, nbytes) per inner chunk, little-endian
    return [Piece(shard, words[2 * i], words[2 * i + 1]) for i in range(n) if words[2 * i] != EMPTY]


def stored_pieces(store: Path) -> list[Piece]:
    """Every chunk's stored bytes in a store (inner chunks of shards, one by one), metadata not
    included; files in the order of their paths."""
    pieces: list[Piece] = []
    for array_dir in _array_dirs(store):
        sharding = _sharding(array_dir)
        for f in sorted(array_dir.rglob("*")):
            if not f.is_file() or f.name in METADATA or f.name.startswith("."):
                continue
            if sharding is None:
                pieces.append(Piece(f, 0, f.stat().st_size))
            else:
                pieces += shard_index_pieces(f, sharding)
    if not pieces:
        raise ValueError(f"{store}: no stored chunks")
    return pieces


# --- (a) staging ------------------------------------------------------------------------------------
def ring_offsets(lengths: Sequence[int], capacity: int) -> list[int]:
    """Where each piece lands in a buffer of ``capacity`` bytes: one after another, starting
    again at 0 when the next would not fit (as pinned staging is reused batch after batch)."""
    offsets, at = [], 0
    for n in lengths:
        if n > capacity:
            raise ValueError(f"a chunk of {n} stored bytes does not fit the {capacity}-byte buffer")
        if at + n > capacity:
            at = 0
        offsets.append(at)
        at += n
    return offsets


def _read_into(piece: Piece, dest: memoryview) -> None:
    fd = os.open(piece.file, os.O_RDONLY)
    try:
        done = 0
        while done < piece.length:
            n = os.preadv(fd, [dest[done:piece.length]], piece.offset + done)
            if n == 0:
                raise EOFError(f"{piece.file}: ends before byte {piece.offset + piece.length}")
            done += n
    finally:
        os.close(fd)


def stage_once(pieces: Sequence[Piece], offsets: Sequence[int], buffer, threads: int,
               cpus: Sequence[int] | None = None) -> float:
    """Seconds for ``threads`` threads to pread every piece into ``buffer`` (a writable byte
    buffer: pinned memory on a GPU host) at its offset; thread k takes pieces k, k + threads...
    ``cpus``: the CPUs the threads run on (as zarrflow places a rank's decoding threads)."""
    view = memoryview(buffer).cast("B")
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            if cpus:
                os.sched_setaffinity(0, cpus)  # this thread only
            for i in range(k, len(pieces), threads):
                _read_into(pieces[i], view[offsets[i]:offsets[i] + pieces[i].length])
        except BaseException as e:  # noqa: BLE001 (raised in the caller's thread)
            errors.append(e)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(max(1, min(threads, len(pieces))))]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    took = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return took


def staging_rate(pieces: Sequence[Piece], buffer, threads: int, runs: int) -> dict:
    """The staging stage (a): stored GB/s of ``threads`` host threads reading every piece into
    ``buffer``, the median of ``runs`` timed passes after one untimed pass (page cache warm)."""
    offsets = ring_offsets([p.length for p in pieces], len(memoryview(buffer).cast("B")))
    stored = sum(p.length for p in pieces)
    stage_once(pieces, offsets, buffer, threads)
    walls = [stage_once(pieces, offsets, buffer, threads) for _ in range(runs)]
    return {"stored_bytes": stored, "chunks": len(pieces), "threads": threads,
            "buffer_bytes": len(memoryview(buffer).cast("B")), "walls_s": walls,
            "stored_GBps": stored / 1e9 / statistics.median(walls)}


def pinned_buffer(nbytes: int, dry: bool):
    """A byte buffer for staging: pinned (torch) on a GPU host, pageable NumPy in a dry run."""
    if dry:
        import numpy as np

        return np.empty(nbytes, np.uint8)
    import torch

    return torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).numpy()


# --- (b) the PCIe copy -----------------------------------------------------------------------------
def pinned_h2d_gbps(torch, nbytes: int, runs: int = 3, pinned=None, dev=None) -> float:
    """GB/s of one host-to-device copy of ``nbytes`` from pinned memory, median of ``runs``
    (the tensors are made here unless given)."""
    if pinned is None:
        pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    if dev is None:
        dev = torch.empty(pinned.shape, dtype=pinned.dtype, device="cuda")
    size = pinned.numel() * pinned.element_size()
    rates = []
    for _ in range(runs + 1):  # the first copy is not timed
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dev.copy_(pinned, non_blocking=True)
        torch.cuda.synchronize()
        rates.append(size / 1e9 / (time.perf_counter() - t0))
    return statistics.median(rates[1:])


# --- the ceiling -------------------------------------------------------------------------------------
STAGES = {"staging": "a × ratio", "H2D": "b × ratio", "decode": "c"}


def ceiling_row(name: str, ratio: float, staging_GBps: float | None, h2d_GBps: float | None,
                decode_GBps: float | None, end_to_end_GBps: float | None, *,
                compressed: bool) -> dict:
    """One row of the ceilings: the stage rates in decoded GB/s, the smallest (the ceiling, and
    which stage it is), end to end ÷ ceiling and its target. ``staging_GBps`` and ``h2d_GBps``
    are stored GB/s (a, b); ``decode_GBps`` decoded GB/s (c; ignored for an uncompressed
    store, which has no decode stage). A stage not measured is None and left out of the
    minimum."""
    stages = {"staging": None if staging_GBps is None else staging_GBps * ratio,
              "H2D": None if h2d_GBps is None else h2d_GBps * ratio,
              "decode": decode_GBps if compressed else None}
    known = {k: v for k, v in stages.items() if v is not None}
    binding = min(known, key=known.get) if known else None
    ceiling = known[binding] if binding else None
    of = end_to_end_GBps / ceiling if ceiling and end_to_end_GBps is not None else None
    target = TARGET if compressed else TARGET_UNCOMPRESSED
    return {"name": name, "ratio": ratio, "compressed": compressed,
            "staging_stored_GBps": staging_GBps, "h2d_stored_GBps": h2d_GBps,
            **{f"{k}_decoded_GBps": v for k, v in stages.items()},
            "end_to_end_GBps": end_to_end_GBps, "ceiling_GBps": ceiling, "binding": binding,
            "of_ceiling": of, "target": target, "meets_target": None if of is None else of >= target}


def _num(x: float | None, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def ceilings_table(rows: Iterable[dict], first: str = "read") -> str:
    """The rows as a Markdown table (decoded GB/s)."""
    lines = [f"| {first} | ratio | (a) staging × ratio | (b) H2D × ratio | (c) GPU decode | "
             "ceiling | (d) end to end | d ÷ ceiling | target |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        ceiling = "n/a" if r["ceiling_GBps"] is None else f"{r['ceiling_GBps']:.1f} ({r['binding']})"
        of = _num(r["of_ceiling"], 2)
        if r["meets_target"] is False:
            of = f"**{of}**"
        lines.append(f"| {r['name']} | {r['ratio']:.2f} | {_num(r['staging_decoded_GBps'])} | "
                     f"{_num(r['H2D_decoded_GBps'])} | {_num(r['decode_decoded_GBps'])} | {ceiling} | "
                     f"{_num(r['end_to_end_GBps'])} | {of} | ≥ {r['target']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    files = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not files:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    shown = 0
    for f in files:
        if not f.exists():
            print(f"{f}: not written (that step failed or was skipped)")
            continue
        res: dict[str, Any] = json.loads(f.read_text())
        if res.get("ceiling_rows"):
            print(f"{f.name}: {res.get('gpu', '?')}, decoded GB/s")
            print(ceilings_table(res["ceiling_rows"]))
            shown += 1
        else:
            print(f"{f.name}: no ceilings in it")
    return 0 if shown else 1


if __name__ == "__main__":
    sys.exit(main())
