"""``zarrflow bench``: how fast zarrflow reads *your* store, array by array, into host or GPU
memory.

For each array (every array of a group but the dimension coordinates such as ``latitude``, or
the ones named with ``--array``) it reads a slab of whole chunks from the start of the first
axis, about ``--size-gb`` of decoded data, once to warm up and then ``--runs`` times, and reports
decoded GB/s (the first read's, and the median of the later ones, which find the store in the page
cache when it fits there), CPU core-seconds per decoded GB, and on the GPU where the chunks were
decoded.
Host reads go into one reused buffer, as a training loop's would; GPU reads into GPU memory
(``--device cuda``). Bytes are decoded bytes (the array's dtype), not stored ones.

    zarrflow bench era5.zarr --device cuda --size-gb 2
    zarrflow bench s3://bucket/era5.zarr --array 2m_temperature --anon --json bench.json
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from .. import _gpu, errors
from .._api import Array, Group, open as zf_open
from ._progress import Progress, human_bytes
from .._remote import add_storage_arguments, storage_options_from


@dataclass
class ArrayBench:
    """One array's figures from :func:`bench_array` (GB = 1e9 bytes of decoded data).

    Parameters
    ----------
    array : str
        The array's name.
    region : str
        The slab read, as ``"[0:4, 0:721, 0:1440]"``.
    decoded_bytes : int
        Bytes of the slab decoded.
    first_GBps : float
        GB/s of the first (untimed) read.
    GBps : float
        The median GB/s of the timed reads.
    runs_GBps : list of float
        GB/s of each timed read.
    core_s_per_GB : float
        The median CPU time (user + system) per decoded GB.
    gpu_decoded, cpu_decoded : int, optional
        GPU reads: chunks decoded on the GPU and on the host.
    notes : list of str
        GPU reads: why chunks were decoded on the host.
    """

    array: str
    region: str
    decoded_bytes: int
    first_GBps: float
    GBps: float  # median of the timed runs
    runs_GBps: list[float]
    core_s_per_GB: float
    gpu_decoded: int | None = None  # chunks, GPU reads only
    cpu_decoded: int | None = None
    notes: list[str] = field(default_factory=list)


def _is_dimension_coordinate(key: str, arr: Array) -> bool:
    """`latitude`, `time`, ...: a 1-d array named after its own dimension (xarray's rule)."""
    return arr.ndim == 1 and arr.dims is not None and arr.dims[0] == key


def _arrays(node: Array | Group, names: list[str] | None) -> list[tuple[str, Array]]:
    """(name, array) to measure: the named ones, or every non-empty array of the hierarchy but
    the dimension coordinates."""
    if isinstance(node, Array):
        if names:
            raise errors.InvalidArgumentError(
                "--array names arrays of a group; this store is one array")
        return [(node.path or "/", node)]
    if names:
        out = []
        for name in names:
            try:
                arr = node[name]
            except KeyError:
                raise errors.InvalidArgumentError(f"no array {name!r} in {node.path or '/'} "
                                        f"(it has: {', '.join(node.keys())})") from None
            if not isinstance(arr, Array):
                raise errors.InvalidArgumentError(f"{name!r} is a group, not an array")
            out.append((name, arr))
        return out
    found: list[tuple[str, Array]] = []

    def walk(group: Group, prefix: str) -> None:
        for key, child in group.members():
            if isinstance(child, Group):
                walk(child, prefix + key + "/")
            elif child.ndim and child.size and not _is_dimension_coordinate(key, child):
                found.append((prefix + key, child))
    walk(node, "")
    return found


def _slab(arr: Array, size_bytes: float) -> tuple[slice, ...]:
    """Whole chunks from the start of the first axis: about `size_bytes` decoded, at least one
    row of chunks, at most the array."""
    row = arr.nbytes // arr.shape[0] * arr.chunks[0]  # decoded bytes of one row of chunks
    rows = max(1, int(size_bytes // max(row, 1)))
    stop = min(arr.shape[0], rows * arr.chunks[0])
    return (slice(0, stop),) + tuple(slice(0, s) for s in arr.shape[1:])


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bench_array(name: str, arr: Array, *, device: str, size_gb: float, runs: int,
                progress: Progress | None = None) -> ArrayBench:
    """Read a slab of about ``size_gb`` of ``arr`` once untimed and ``runs`` times timed.

    CPU reads go into one reused buffer; GPU reads return a Tensor that is dropped at once.

    Parameters
    ----------
    name : str
        The array's name in the results.
    arr : Array
        The array.
    device : {"cpu", "cuda", "cuda:N"}
        Where to read to.
    size_gb : float
        Decoded GB to read: whole rows of chunks along the first dimension, at least one.
    runs : int
        Timed reads.
    progress : Progress, optional
        A progress bar to advance after each read.

    Returns
    -------
    ArrayBench
    """
    region = _slab(arr, size_gb * 1e9)
    shape = tuple(s.stop - s.start for s in region)
    nbytes = int(np.prod(shape)) * arr.dtype.itemsize
    out = np.empty(shape, arr.dtype) if device == "cpu" else None

    def once() -> tuple[float, float]:
        c0, t0 = _cpu_seconds(), time.perf_counter()
        if out is not None:
            arr.read(region, out=out)
        else:
            t = arr.read(region, device=device)
            del t  # back to zarrflow's pool; the read has finished when read() returns
        wall, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
        if progress is not None:
            progress.update(1, nbytes)
        return wall, cpu

    first, _ = once()
    timed = [once() for _ in range(runs)]
    walls = [w for w, _ in timed]
    rates = [nbytes / w / 1e9 for w in walls]
    where = "[" + ", ".join(f"{s.start}:{s.stop}" for s in region) + "]"
    res = ArrayBench(array=name, region=where,
                     decoded_bytes=nbytes, first_GBps=nbytes / first / 1e9,
                     GBps=statistics.median(rates), runs_GBps=rates,
                     core_s_per_GB=statistics.median(c for _, c in timed) / (nbytes / 1e9))
    if device != "cpu" and arr.last_read_report:
        rep = arr.last_read_report
        res.gpu_decoded, res.cpu_decoded = rep["gpu_decoded"], rep["cpu_decoded"]
        res.notes = list(rep.get("notes", []))
    return res


def table(results: list[ArrayBench], device: str) -> str:
    gpu = device != "cpu"
    head = "| array | region | decoded | first read GB/s | GB/s (median) | core-s/GB |"
    rule = "|---|---|---:|---:|---:|---:|"
    if gpu:
        head += " chunks decoded GPU / host |"
        rule += "---:|"
    lines = [head, rule]
    for r in results:
        line = (f"| {r.array} | {r.region} | {human_bytes(r.decoded_bytes)} | {r.first_GBps:.2f} | "
                f"{r.GBps:.2f} | {r.core_s_per_GB:.3f} |")
        if gpu:
            line += f" {r.gpu_decoded} / {r.cpu_decoded} |"
        lines.append(line)
    return "\n".join(lines)


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="measure how fast zarrflow reads a store's arrays",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="store (local path or URL)")
    p.add_argument("--array", "-a", action="append", help="array to measure (repeatable; default: "
                                                          "all but dimension coordinates)")
    p.add_argument("--device", default="cpu", help="cpu (NumPy buffer), cuda or cuda:N")
    p.add_argument("--size-gb", type=float, default=1.0,
                   help="decoded GB read per array and run (whole chunks; default 1)")
    p.add_argument("--runs", type=int, default=3, help="timed runs after the first (default 3)")
    p.add_argument("--threads", type=int, help="zarrflow's thread pool size (default: all CPUs)")
    p.add_argument("--json", type=Path, help="also write the figures here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_storage_arguments(p)


def run(args, out: TextIO | None = None) -> list[ArrayBench]:
    out = out if out is not None else sys.stdout
    if args.runs < 1 or not args.size_gb > 0:
        raise errors.InvalidArgumentError(
            f"--runs must be >= 1 and --size-gb > 0 (got {args.runs}, {args.size_gb})")
    try:
        kind, index = _gpu.parse_device(args.device)
    except ValueError as e:
        raise errors.InvalidArgumentError(str(e)) from None
    device = "cpu" if kind == "cpu" else f"cuda:{index}"
    if kind == "cuda" and not _gpu.cuda_available():
        raise errors.InvalidArgumentError(
            f"--device {args.device}: no usable GPU ({_gpu.cuda_status()})")
    if args.threads:
        from .._threads import set_num_threads

        set_num_threads(args.threads)
    node = zf_open(args.path, storage_options=storage_options_from(args))
    arrays = _arrays(node, args.array)
    if not arrays:
        raise errors.InvalidArgumentError(
            f"{args.path}: no arrays to measure; name one with --array")
    progress = Progress(len(arrays) * (args.runs + 1), "bench", enabled=not args.quiet)
    results = [bench_array(name, arr, device=device, size_gb=args.size_gb, runs=args.runs,
                           progress=progress) for name, arr in arrays]
    print(f"{args.path} into {'host memory' if device == 'cpu' else device} "
          f"({os.cpu_count()} CPUs visible); first read, then the median of {args.runs}:", file=out)
    print(table(results, device), file=out)
    for note in sorted({n for r in results for n in r.notes}):
        print(f"note: {note}", file=out)
    if args.json:
        args.json.write_text(json.dumps({"store": args.path, "device": device,
                                         "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                         "runs": args.runs,
                                         "arrays": [asdict(r) for r in results]}, indent=2))
    return results
