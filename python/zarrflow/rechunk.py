"""``zarrflow rechunk``: rechunk and convert a Zarr store (v2 → v3 too), optionally stacking
variables × levels into one channel array.

zarrflow reads the source (all codecs it knows, in parallel, GIL released); tensorstore writes the
result (any codec chain, sharding), so the output is ordinary Zarr for every reader.

How the work is cut: each output array is split into *units*, blocks that are whole output shards
(or chunks) and, memory permitting, also cover whole source chunks, so no source chunk is decoded
twice and no output chunk is written twice. Units run on a thread pool whose width keeps the
units in flight under ``--memory``.

Safety: everything is written under ``<out>.partial`` and renamed to ``<out>`` only after every
unit (of every part) is written and, with ``--verify``, read back and compared value by value.
Each finished unit is appended to a journal, so an interrupted run resumes where it stopped
(same command; units are idempotent). ``--part i/n`` runs the i-th of n disjoint shares, for
Slurm arrays or Dask; the part that finds all n done finalises the store.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import shutil
import sys
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TextIO

import numpy as np

from . import errors
from ._api import Array, Group, open as zf_open
from ._codec_choice import CodecChoice
from ._progress import Progress
from ._remote import add_storage_arguments, is_remote, storage_options_from
from ._staging import staging_path, swap_into_place

JOURNAL = ".zarrflow-rechunk"


class RechunkError(errors.ZarrflowError, ValueError):
    """The rechunk request cannot be carried out as asked (the message says why)."""


# --------------------------------------------------------------------------------------------
# What to write
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    chunks: dict[str, int] = field(default_factory=dict)  # target chunk per named dim
    shards: dict[str, int] | None = None  # shard shape per named dim (v3); None = no sharding
    codec: str = "zstd:3"
    crc32c: bool = False
    zarr_format: int = 3
    stack: tuple[str, ...] | None = None  # channel specs ("t2m", "u@500") or ("all",)
    stack_name: str = "data"
    arrays: tuple[str, ...] | None = None  # subset of source arrays (None = all)
    memory: int = 2 << 30
    threads: int = 0  # 0 = CPU count
    verify: bool = False
    storage_options: dict | None = None  # credentials/endpoint when the source is a URL


@dataclass
class ArrayPlan:
    """One output array: its metadata, and how to read any region of it from the source."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    dims: tuple[str, ...] | None
    chunks: tuple[int, ...]
    shards: tuple[int, ...] | None
    fill_value: object
    attrs: dict
    read: Callable[[tuple[slice, ...]], np.ndarray]
    source_chunks: tuple[int, ...]
    source_format: int = 3

    @property
    def write_block(self) -> tuple[int, ...]:
        return self.shards or self.chunks


def _dtype_v3(dt: np.dtype) -> str:
    if dt.name == "bfloat16":
        return "bfloat16"
    if dt.kind == "b":
        return "bool"
    if dt.kind in "iufc":
        return dt.newbyteorder("=").name
    raise RechunkError(f"rechunk: data type {dt} has no Zarr v3 name")


def _fill_json(value, dt: np.dtype):
    if value is None:
        return None
    v = np.asarray(value, dtype=dt).item() if dt.name != "bfloat16" else float(value)
    if isinstance(v, complex):
        return [_fill_json(v.real, np.dtype("f8")), _fill_json(v.imag, np.dtype("f8"))]
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
    return v


def _asked(dims, default, per_dim: dict[str, int], what: str, name: str) -> tuple:
    """Per axis: the size named for its dim, else `default`'s."""
    out = []
    for i, dflt in enumerate(default):
        d = dims[i] if dims else None
        want = per_dim.get(d, dflt) if d is not None else dflt
        if want < 1:
            raise RechunkError(f"rechunk: {what} of {name!r} along {d!r} must be >= 1, got {want}")
        out.append(want)
    return tuple(out)


def _finish_plan(name, shape, dtype, dims, fill, attrs, read, source_chunks, opts: Options,
                 source_format: int = 3) -> ArrayPlan:
    chunks = tuple(max(1, min(c, n)) for c, n in
                   zip(_asked(dims, source_chunks, opts.chunks, "chunk", name), shape))
    shards = None
    if opts.shards is not None:
        # A shard may reach past the array's end, as long as it holds whole chunks.
        shards = tuple(min(a, -(-n // c) * c) for a, n, c in
                       zip(_asked(dims, chunks, opts.shards, "shard", name), shape, chunks))
        for c, s, d in zip(chunks, shards, dims or [None] * len(shape)):
            if s % c:
                raise RechunkError(f"rechunk: {name!r}: chunk {c} does not divide shard {s} along "
                                   f"{d!r} (chunks {chunks}, shards {shards})")
    return ArrayPlan(name, tuple(shape), dtype, dims, chunks, shards, fill, attrs, read,
                     tuple(source_chunks), source_format)


def _walk(node: Group, groups: dict[str, dict], prefix: str = "") -> Iterator[tuple[str, Array]]:
    """Every array below `node` by path; every group's attributes into `groups` ("" = root)."""
    groups[prefix.rstrip("/")] = dict(node.attrs)
    for key, member in node.members():
        path = f"{prefix}{key}"
        if isinstance(member, Array):
            yield path, member
        else:
            yield from _walk(member, groups, path + "/")


def _clean_attrs(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if k != "_ARRAY_DIMENSIONS"}


def _array_plan(name: str, arr: Array, opts: Options) -> ArrayPlan:
    def read(region, arr=arr):
        return arr[region]

    dims = tuple(arr.dims) if arr.dims and all(d is not None for d in arr.dims) else None
    return _finish_plan(name, arr.shape, arr.dtype, dims, arr.fill_value, _clean_attrs(arr.attrs),
                        read, arr.chunks, opts, arr.zarr_format)


def _stack_plans(group: Group, opts: Options) -> tuple[ArrayPlan, set[str]]:
    """The stacked (time, channel, *spatial) array, and the source arrays it consumes."""
    from .loader import DatasetSpec, LoaderError

    specs = list(opts.stack or ())
    if specs == ["all"]:
        specs = _all_channels(group)
    try:
        ds = DatasetSpec.build(group, specs)
    except LoaderError as e:
        raise RechunkError(f"rechunk --stack: {e}") from None
    nchan, ntime = len(ds.channels), ds.ntime
    shape = (ntime, nchan, *ds.spatial_shape)
    first = ds.channels[0].array
    src_chunks = (first.chunks[ds.channels[0].time_axis], 1,
                  *(first.chunks[a] for a in ds.channels[0].spatial_axes))

    def read(region: tuple[slice, ...]) -> np.ndarray:
        t, c, *sp = region
        out = np.empty((t.stop - t.start, c.stop - c.start, *(s.stop - s.start for s in sp)),
                       dtype=np.float32)
        for k, ci in enumerate(range(c.start, c.stop)):
            ch = ds.channels[ci]
            out[:, k] = ch.array[ch.key(t, sp)]
        return out

    labels = [ch.name for ch in ds.channels]
    dims = (ds.time_dim, "channel", *ds.spatial_dims)
    plan = _finish_plan(opts.stack_name, shape, np.dtype(np.float32), dims, first.fill_value,
                        {"channels": labels}, read, src_chunks, opts)
    used = {ch.name.partition("@")[0] for ch in ds.channels}
    return plan, used


def _all_channels(group: Group, time_dim: str = "time", level_dim: str = "level") -> list[str]:
    """Every float32 array with a time dim, expanded over its levels."""
    out = []
    levels = group[level_dim][...] if level_dim in group.keys() else None
    for name, arr in group.arrays():
        dims = arr.dims or ()
        if time_dim not in dims or arr.dtype != np.float32 or arr.ndim < 3:
            continue
        if level_dim in dims:
            n = arr.shape[list(dims).index(level_dim)]
            vals = levels if levels is not None else np.arange(n)
            out += [f"{name}@{int(v) if float(v).is_integer() else v}" for v in vals[:n]]
        else:
            out.append(name)
    if not out:
        raise RechunkError("rechunk --stack all: the group has no float32 arrays with a time dim")
    return out


def plan(source: str | os.PathLike, opts: Options) -> tuple[list[ArrayPlan], dict[str, dict]]:
    """(array plans, {group path: attributes} of the groups the output keeps; {} when the source
    is a single array)."""
    if opts.zarr_format not in (2, 3):
        raise RechunkError(f"rechunk: zarr_format must be 2 or 3, not {opts.zarr_format}")
    if opts.zarr_format == 2 and (opts.shards is not None or opts.crc32c):
        raise RechunkError("rechunk: sharding and crc32c need Zarr v3 output (--zarr-format 3)")
    CodecChoice.parse(opts.codec, "rechunk")
    root = zf_open(source, storage_options=opts.storage_options)
    if isinstance(root, Array):
        if opts.stack:
            raise RechunkError("rechunk --stack needs a group (arrays plus coordinates)")
        return [_array_plan("", root, opts)], {}
    plans, consumed = [], set()
    if opts.stack:
        stacked, consumed = _stack_plans(root, opts)
        plans.append(stacked)
    wanted = set(opts.arrays or ())
    groups: dict[str, dict] = {}
    for name, arr in _walk(root, groups):
        if opts.stack:  # the stacked array, 1-D coordinates, and what --arrays adds
            keep = (arr.ndim <= 1 and name not in consumed) or name in wanted
        else:
            keep = opts.arrays is None or name in wanted
        if keep:
            plans.append(_array_plan(name, arr, opts))
    missing = wanted - {p.name for p in plans}
    if missing:
        raise RechunkError(f"rechunk: no array named {', '.join(sorted(missing))} in {source}")
    ancestors = {"/".join(p.name.split("/")[:k]) for p in plans
                 for k in range(p.name.count("/") + 1)}
    return plans, {g: a for g, a in groups.items() if g in ancestors}


# --------------------------------------------------------------------------------------------
# Units: write-aligned blocks that also cover whole source chunks when memory allows
# --------------------------------------------------------------------------------------------


def unit_shape(p: ArrayPlan, budget: int) -> tuple[int, ...]:
    """Per dim: lcm(source chunk, write block) when the unit stays within `budget` bytes, else
    the write block (dims are shrunk from the first, which is usually the long time axis)."""
    wb = p.write_block
    u = []
    for n, s, w in zip(p.shape, p.source_chunks, wb):
        lcm = math.lcm(s, w)
        u.append(min(lcm, -(-n // w) * w))
    item = p.dtype.itemsize
    for i in range(len(u)):
        if math.prod(min(a, n) for a, n in zip(u, p.shape)) * item <= budget:
            break
        u[i] = wb[i]
    return tuple(u)


def units(p: ArrayPlan, ushape: tuple[int, ...]) -> list[tuple[slice, ...]]:
    starts = [range(0, n, u) for n, u in zip(p.shape, ushape)]
    return [tuple(slice(o, min(o + u, n)) for o, u, n in zip(origin, ushape, p.shape))
            for origin in itertools.product(*starts)]


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _ts_spec(root: Path, p: ArrayPlan, opts: Options) -> dict:
    choice = CodecChoice.parse(opts.codec, "rechunk")
    path = str(root / p.name) if p.name else str(root)
    if opts.zarr_format == 2:
        fill = p.fill_value
        if p.source_format == 3 and fill is not None and not np.asarray(fill).any():
            # v3 → v2: a zero fill becomes null (missing chunks still read as zeros), since xarray
            # takes a v2 fill_value as a mask and would hide every real 0 (time 0, the equator).
            fill = None
        meta = {"shape": list(p.shape), "chunks": list(p.chunks), "dtype": p.dtype.newbyteorder("<").str
                if p.dtype.itemsize > 1 else p.dtype.str,
                "compressor": choice.v2_compressor(), "fill_value": _fill_json(fill, p.dtype),
                "order": "C", "filters": None}
        return {"driver": "zarr", "kvstore": {"driver": "file", "path": path}, "metadata": meta}
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}] + choice.v3_codecs(p.dtype.itemsize)
    if opts.crc32c:
        inner.append({"name": "crc32c"})
    if p.shards:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(p.chunks), "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}]
        grid = p.shards
    else:
        codecs, grid = inner, p.chunks
    fill = _fill_json(p.fill_value, p.dtype)
    meta = {"shape": list(p.shape), "data_type": _dtype_v3(p.dtype),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid)}},
            "chunk_key_encoding": {"name": "default"}, "codecs": codecs,
            "fill_value": 0 if fill is None else fill, "attributes": p.attrs}
    if p.dims:
        meta["dimension_names"] = list(p.dims)
    return {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "metadata": meta}


def _claim_partial(partial: Path, journal: Path, digest: str) -> None:
    """Create or join ``<dest>.partial`` for this request. Safe when parts start at once: the
    plan file appears atomically (link of a fully written file), and a `.partial` that is not a
    rechunk in progress is never deleted or mixed with."""
    import time

    if partial.exists() and not journal.exists():
        time.sleep(1.0)  # another part may be between creating the folder and its journal
        if not journal.exists():
            raise RechunkError(f"rechunk: {partial} exists but is not a rechunk in progress; "
                               "remove it")
    journal.mkdir(parents=True, exist_ok=True)
    plan_file = journal / "plan"
    tmp = journal / f"plan.{os.getpid()}.{threading.get_ident()}"
    tmp.write_text(digest)
    try:
        os.link(tmp, plan_file)
    except FileExistsError:
        if plan_file.read_text() != digest:
            raise RechunkError(f"rechunk: {partial} holds an interrupted run of a different "
                               "request; remove it or rerun that request") from None
    finally:
        tmp.unlink()


def _open_output(spec: dict):
    import tensorstore as ts

    return ts.open(spec, create=True, open=True).result()


def _write_group_meta(root: Path, groups: dict[str, dict], opts: Options) -> None:
    for g, attrs in groups.items():
        d = root / g if g else root
        d.mkdir(parents=True, exist_ok=True)
        if opts.zarr_format == 3:
            (d / "zarr.json").write_text(json.dumps(
                {"zarr_format": 3, "node_type": "group", "attributes": attrs}))
        else:
            (d / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
            if attrs:
                (d / ".zattrs").write_text(json.dumps(attrs))


def _write_v2_attrs_and_consolidate(root: Path, plans: list[ArrayPlan], groups: dict[str, dict]) -> None:
    meta: dict = {}
    for p in plans:
        za = dict(p.attrs)
        if p.dims:
            za["_ARRAY_DIMENSIONS"] = list(p.dims)
        d = root / p.name if p.name else root
        (d / ".zattrs").write_text(json.dumps(za))
        prefix = f"{p.name}/" if p.name else ""
        meta[prefix + ".zarray"] = json.loads((d / ".zarray").read_text())
        meta[prefix + ".zattrs"] = za
    if groups:
        for g, attrs in groups.items():
            prefix = f"{g}/" if g else ""
            meta[prefix + ".zgroup"] = {"zarr_format": 2}
            if attrs:
                meta[prefix + ".zattrs"] = attrs
        (root / ".zmetadata").write_text(json.dumps({"zarr_consolidated_format": 1, "metadata": meta}))


@dataclass
class Report:
    arrays: int = 0
    units: int = 0
    skipped: int = 0  # already done (resumed)
    bytes: int = 0
    verified: bool = False
    seconds: float = 0.0
    finalized: bool = False


def _parse_size(text: str | int) -> int:
    if isinstance(text, int):
        return text
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if t[-1:] in "KMGT" else t) * mult)
    except ValueError:
        raise RechunkError(f"rechunk: cannot read memory size {text!r} (e.g. 2GB, 512M)") from None


def _source_id(source) -> str:
    return source if is_remote(source) else os.path.abspath(source)


def _plan_digest(source, plans: list[ArrayPlan], opts: Options) -> str:
    desc = {"source": _source_id(source), "format": opts.zarr_format, "codec": opts.codec,
            "crc32c": opts.crc32c, "arrays": [(p.name, p.shape, p.chunks, p.shards, str(p.dtype))
                                              for p in plans]}
    return hashlib.sha1(json.dumps(desc, sort_keys=True, default=list).encode()).hexdigest()


def rechunk(source: str | os.PathLike, dest: str | os.PathLike, opts: Options = Options(), *,
            part: tuple[int, int] = (0, 1), overwrite: bool = False, progress: bool = True,
            out: TextIO | None = None) -> Report:
    """Rechunk/convert ``source`` into ``dest``; see the module docstring."""
    import time

    t0 = time.perf_counter()
    try:
        import tensorstore  # noqa: F401  (the writer)
    except ImportError as e:
        raise errors.UnsupportedError(f"rechunk writes through tensorstore, which is not installed "
                                      f"({e}); pip install 'zarrflow[tools]'") from e
    i_part, n_parts = part
    if not (n_parts >= 1 and 0 <= i_part < n_parts):
        raise RechunkError(f"rechunk: part must be i/n with 0 <= i < n, got {i_part}/{n_parts}")
    dest = Path(dest)
    if _source_id(source) == os.path.abspath(dest):
        raise RechunkError("rechunk: source and destination are the same path")
    if dest.exists() and not overwrite:
        raise RechunkError(f"rechunk: {dest} already exists (pass --overwrite to replace it)")
    plans, groups = plan(source, opts)
    memory = _parse_size(opts.memory)
    threads = opts.threads or os.cpu_count() or 1
    copies = 2 if opts.verify else 1
    per_unit_budget = max(memory // (copies * 2), 1)

    work = []
    for p in plans:
        wb_bytes = math.prod(p.write_block) * p.dtype.itemsize
        if wb_bytes * copies > memory:
            raise RechunkError(f"rechunk: one {'shard' if p.shards else 'chunk'} of {p.name!r} "
                               f"({wb_bytes / 2**20:.1f} MiB) does not fit in --memory "
                               f"{memory / 2**20:.1f} MiB")
        work += [(p, k, region) for k, region in enumerate(units(p, unit_shape(p, per_unit_budget)))]

    partial = staging_path(dest)
    journal = partial / JOURNAL
    digest = _plan_digest(source, plans, opts)
    try:
        _claim_partial(partial, journal, digest)
    except OSError as e:
        raise errors.StoreIOError(f"rechunk: cannot create {partial}: {e.strerror or e}") from e

    done: set[str] = set()
    for f in journal.glob("done-*"):
        done.update(line for line in f.read_text().splitlines() if line)

    # Metadata first (every part writes the same; tensorstore opens what matches).
    try:
        _write_group_meta(partial, groups, opts)
        handles = {p.name: _open_output(_ts_spec(partial, p, opts)) for p in plans}
    except (OSError, ValueError) as e:
        raise errors.StoreIOError(f"rechunk: writing metadata under {partial} failed: {e}") from e

    mine = [w for idx, w in enumerate(work) if idx % n_parts == i_part]
    todo = [w for w in mine if f"{w[0].name}:{w[1]}" not in done]
    report = Report(arrays=len(plans), units=len(todo), skipped=len(mine) - len(todo),
                    verified=opts.verify)
    biggest = max((math.prod(s.stop - s.start for s in r) * p.dtype.itemsize for p, _, r in todo),
                  default=1)
    width = max(1, min(threads, len(todo) or 1, memory // max(biggest * copies, 1)))
    bar = Progress(len(todo), f"rechunk {dest.name}", enabled=progress, out=out)
    lock = threading.Lock()
    log = open(journal / f"done-{i_part}-of-{n_parts}", "a")
    verify_arrays: dict[str, Array] = {}

    def run_unit(p: ArrayPlan, k: int, region: tuple[slice, ...]) -> None:
        where = f"array {p.name or '/'!r} region {[(s.start, s.stop) for s in region]}"
        try:
            block = p.read(region)
        except errors.ZarrflowError as e:
            raise type(e)(f"rechunk: reading {where}: {e}") from None
        try:
            handles[p.name][region].write(block).result()
        except Exception as e:  # tensorstore reports I/O failures (full disk, EACCES) as ValueError
            raise errors.StoreIOError(f"rechunk: writing {where} under {partial} failed: {e}; "
                                      f"rerun the same command to resume") from None
        if opts.verify:
            with lock:
                arr = verify_arrays.get(p.name)
                if arr is None:
                    arr = verify_arrays[p.name] = zf_open(partial / p.name if p.name else partial)
            back = arr[region]
            if not np.array_equal(np.ascontiguousarray(back).view(np.uint8),
                                  np.ascontiguousarray(block).view(np.uint8)):
                raise RechunkError(f"rechunk --verify: {where} differs from the source after writing")
        with lock:
            log.write(f"{p.name}:{k}\n")
            log.flush()
            bar.update(1, block.nbytes)

    try:
        with ThreadPoolExecutor(width, thread_name_prefix="zarrflow-rechunk") as pool:
            pending: set = set()
            for w in todo:  # at most `width` units in flight, so memory stays bounded
                pending.add(pool.submit(run_unit, *w))
                while len(pending) >= width:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        f.result()
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    f.result()
    finally:
        log.close()
        bar.close()
    report.bytes = bar.nbytes
    (journal / f"part-{i_part}-of-{n_parts}.done").touch()
    report.finalized = _finalize(partial, dest, plans, groups, opts, n_parts, overwrite)
    report.seconds = time.perf_counter() - t0
    return report


def _finalize(partial: Path, dest: Path, plans, groups, opts: Options, n_parts: int,
              overwrite: bool) -> bool:
    journal = partial / JOURNAL
    if len(list(journal.glob(f"part-*-of-{n_parts}.done"))) < n_parts:
        return False
    claim = journal / "finalizing"
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # one part finalises
        os.close(fd)
    except FileExistsError:
        return False
    if opts.zarr_format == 2:
        _write_v2_attrs_and_consolidate(partial, plans, groups)
    shutil.rmtree(journal)
    if dest.exists() and not overwrite:
        raise RechunkError(f"rechunk: {dest} appeared while rechunking; result left in {partial}")
    swap_into_place(partial, dest)
    return True


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _dim_map(text: str | None, flag: str) -> dict[str, int] | None:
    if text is None:
        return None
    out = {}
    for item in filter(None, text.split(",")):
        k, eq, v = item.partition("=")
        if not eq or not k:
            raise RechunkError(f"rechunk: {flag} wants dim=size pairs like time=1,latitude=721, "
                               f"not {item!r}")
        try:
            out[k.strip()] = int(v)
        except ValueError:
            raise RechunkError(f"rechunk: {flag}: {v!r} is not an integer size for {k!r}") from None
    return out


def add_parser(sub) -> None:
    p = sub.add_parser("rechunk", help="rechunk / convert a Zarr store (v2 → v3, codecs, sharding)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("source", help="local path, or s3://, gs://, http(s):// URL")
    add_storage_arguments(p)
    p.add_argument("dest", help="output store (refused if present unless --overwrite)")
    p.add_argument("--chunks", help="target chunk per named dim, e.g. time=1,latitude=721,longitude=1440"
                                    " (dims not named keep the source chunk)")
    p.add_argument("--shards", help="shard shape per named dim (Zarr v3), e.g. time=8; "
                                    "dims not named: one chunk per shard")
    p.add_argument("--codec", default="zstd:3",
                   help="none, zstd[:L], gzip[:L], blosc-<cname>[:L] (byte shuffle); default zstd:3")
    p.add_argument("--crc32c", action="store_true", help="append a crc32c checksum codec (v3)")
    p.add_argument("--zarr-format", type=int, choices=(2, 3), default=3)
    p.add_argument("--stack", help="stack variables into one (time, channel, ...) array: "
                                   "'all' or a list like 2m_temperature,geopotential@500")
    p.add_argument("--stack-name", default="data", help="name of the stacked array (default data)")
    p.add_argument("--arrays", help="only these source arrays (comma-separated paths)")
    p.add_argument("--memory", default="2GB", help="bound on data in flight (default 2GB)")
    p.add_argument("--threads", type=int, default=0, help="parallel units (default: CPU count)")
    p.add_argument("--part", default="0/1", help="run share i of n (0-based), e.g. 3/16")
    p.add_argument("--verify", action="store_true", help="read every unit back and compare")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args, out: TextIO = sys.stdout) -> None:
    try:
        i, n = (int(x) for x in args.part.split("/"))
    except ValueError:
        raise RechunkError(f"rechunk: --part wants i/n like 0/4, not {args.part!r}") from None
    shards = _dim_map(args.shards, "--shards")
    opts = Options(chunks=_dim_map(args.chunks, "--chunks") or {}, shards=shards,
                   codec=args.codec, crc32c=args.crc32c, zarr_format=args.zarr_format,
                   stack=tuple(args.stack.split(",")) if args.stack else None,
                   stack_name=args.stack_name,
                   arrays=tuple(args.arrays.split(",")) if args.arrays else None,
                   memory=_parse_size(args.memory), threads=args.threads, verify=args.verify,
                   storage_options=storage_options_from(args))
    rep = rechunk(args.source, args.dest, opts, part=(i, n), overwrite=args.overwrite,
                  progress=not args.quiet)
    rate = rep.bytes / max(rep.seconds, 1e-9) / 1e9
    state = "complete" if rep.finalized else f"part {i}/{n} done; waiting for the other parts"
    print(f"rechunk {args.source} -> {args.dest}: {rep.arrays} arrays, {rep.units} units "
          f"({rep.skipped} already done), {rep.bytes / 1e9:.2f} GB in {rep.seconds:.1f} s "
          f"({rate:.2f} GB/s){', verified' if rep.verified else ''}; {state}", file=out)
