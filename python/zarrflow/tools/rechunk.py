"""``zarrflow rechunk``: rechunk and convert a Zarr store (v2 → v3 too), optionally stacking
variables × levels into one channel array and unpacking CF-packed data.

zarrflow reads the source (all codecs it knows, in parallel, GIL released); tensorstore writes the
numeric arrays (any codec chain, sharding) and zarr-python the others (datetimes, strings), so the
output is ordinary Zarr for every reader.

How the work is cut: each output array is split into *units*, blocks that are whole output shards
(or chunks) and, memory permitting, also cover whole source chunks, so no source chunk is decoded
twice and no output chunk is written twice. Units run on a thread pool whose width keeps the
units in flight under ``--memory``.

Safety (see ``_rechunk_commit``): chunks are written under ``<dest>.partial`` without any
metadata, so nothing there opens as a store; only once every unit (of every part) is written and,
with ``--verify``, read back and compared value by value, is the metadata written and the store
renamed to ``<dest>`` (an existing one swapped out). Each finished unit is appended to a journal,
so an interrupted run resumes where it stopped (same command; units are idempotent), whichever
instant it was killed at. ``--part i/n`` runs the i-th of n disjoint shares, for Slurm arrays or
Dask; the part that finds all n done finalises the store.
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
import warnings
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

import numpy as np

from .. import errors
from .._api import Array, Group, open as zf_open
from .._cf import CFDecoding, carry_fill, decoded_attrs, unpack_decoding
from ._codec_choice import CodecChoice
from .._names import unknown_name
from ._progress import Progress
from ._rechunk_commit import (RechunkError, Staging, completed, crash_point, finalise,
                              join_or_create, write_atomic)
from .._remote import add_storage_arguments, is_remote, storage_options_from

DECODED_DTYPES = ("float32", "float64", "float16")
ROOT_COPY = "_root"  # journal/copies/ name of a root array written through zarr-python


class RechunkWarning(UserWarning):
    """Something in the source was left out of the output (the message names it and says why)."""


# --------------------------------------------------------------------------------------------
# What to write
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """What :func:`rechunk` writes; the fields are ``zarrflow rechunk``'s options.

    Parameters
    ----------
    chunks : dict of str to int, optional
        The output chunk per named dimension (``{"time": 1, "latitude": 721}``); dimensions not
        named keep the source's chunk.
    shards : dict of str to int, optional
        Zarr v3: the shard shape per named dimension (``{"time": 8}``); dimensions not named
        hold one chunk per shard. None: no sharding.
    codec : str, default "zstd:3"
        ``"none"``, ``"zstd[:level]"``, ``"gzip[:level]"`` or ``"blosc-<cname>[:level]"``
        (byte shuffle).
    crc32c : bool, default False
        Zarr v3: append a crc32c checksum codec.
    zarr_format : {3, 2}, default 3
        The output's Zarr version.
    stack : tuple of str, optional
        Stack variables into one ``(time, channel, ...)`` array: channel names as the
        :class:`~zarrflow.Loader` takes them (``("2m_temperature", "geopotential@500")``), or
        ``("all",)``. Stacked channels are always CF-decoded.
    stack_name : str, default "data"
        The stacked array's name.
    arrays : tuple of str, optional
        Only these source arrays (paths). Default: all.
    decode_cf : bool, default False
        Unpack CF-packed arrays (``scale_factor``/``add_offset``; ``_FillValue`` and
        ``missing_value`` become NaN) into floats. Default: keep them packed.
    dtype : {"float32", "float64", "float16"}, optional
        The float type of decoded and stacked arrays (default float32).
    memory : int, default 2 GiB
        Bound on the bytes of data in flight.
    threads : int, default 0
        Units written at once (0: the CPU count).
    verify : bool, default False
        Read every unit back and compare it, value by value, before the store is finalised.
    storage_options : dict, optional
        Credentials and endpoint when the source is a URL, as :func:`zarrflow.open` takes them.
    lease : float, default 120
        Seconds after which a finalisation claimed by another host that no longer beats is
        taken over.
    """

    chunks: dict[str, int] = field(default_factory=dict)  # target chunk per named dim
    shards: dict[str, int] | None = None  # shard shape per named dim (v3); None = no sharding
    codec: str = "zstd:3"
    crc32c: bool = False
    zarr_format: int = 3
    stack: tuple[str, ...] | None = None  # channel specs ("t2m", "u@500") or ("all",)
    stack_name: str = "data"
    arrays: tuple[str, ...] | None = None  # subset of source arrays (None = all)
    decode_cf: bool = False  # unpack scale_factor/add_offset, missing values → NaN
    dtype: str | None = None  # float type of decoded and stacked arrays (default float32)
    memory: int = 2 << 30
    threads: int = 0  # 0 = CPU count
    verify: bool = False
    storage_options: dict | None = None  # credentials/endpoint when the source is a URL
    lease: float = 120.0  # seconds without a beat before another host's finalisation claim is stale


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
    writer: str = "tensorstore"  # or "zarr" (zarr-python: data types tensorstore cannot write)
    extra_itemsize: int = 0  # bytes per element held besides the result while reading (raw data)

    @property
    def write_block(self) -> tuple[int, ...]:
        return self.shards or self.chunks


@dataclass
class _Source:
    """A source array as planning needs it, read by zarrflow or (as a fallback) zarr-python."""

    shape: tuple[int, ...]
    dtype: np.dtype
    dims: tuple[str, ...] | None
    chunks: tuple[int, ...]
    fill_value: Any
    attrs: dict
    zarr_format: int
    read: Callable[[tuple[slice, ...]], np.ndarray]
    by_zarr_python: bool = False


def _from_zarrflow(arr: Array) -> _Source:
    dims = tuple(arr.dims) if arr.dims and all(d is not None for d in arr.dims) else None
    return _Source(tuple(arr.shape), arr.dtype, dims, tuple(arr.chunks), arr.fill_value,
                   dict(arr.attrs), arr.zarr_format, lambda region, arr=arr: arr[region])


def _from_zarr_python(z) -> _Source:
    fmt = z.metadata.zarr_format
    attrs = dict(z.attrs)
    dims = (z.metadata.dimension_names if fmt == 3 else attrs.get("_ARRAY_DIMENSIONS")) or None
    dims = tuple(dims) if dims and all(d is not None for d in dims) else None
    return _Source(tuple(z.shape), z.dtype, dims, tuple(z.chunks), z.fill_value, attrs, fmt,
                   lambda region, z=z: z[region], by_zarr_python=True)


def _open_with_zarr_python(source, path: str):
    import zarr

    base = os.fspath(source)
    loc = f"{base.rstrip('/')}/{path}" if is_remote(base) else os.path.join(base, path)
    return zarr.open_array(loc, mode="r")


def _writable_by_tensorstore(dt: np.dtype) -> bool:
    return dt.kind in "biufc" or dt.name == "bfloat16"


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
                 writer: str = "tensorstore", extra_itemsize: int = 0) -> ArrayPlan:
    chunks = tuple(max(1, min(c, n)) for c, n in
                   zip(_asked(dims, source_chunks, opts.chunks, "chunk", name), shape))
    shards = None
    if opts.shards is not None and writer == "tensorstore":
        # A shard may reach past the array's end, as long as it holds whole chunks.
        shards = tuple(min(a, -(-n // c) * c) for a, n, c in
                       zip(_asked(dims, chunks, opts.shards, "shard", name), shape, chunks))
        for c, s, d in zip(chunks, shards, dims or [None] * len(shape)):
            if s % c:
                raise RechunkError(f"rechunk: {name!r}: chunk {c} does not divide shard {s} along "
                                   f"{d!r} (chunks {chunks}, shards {shards})")
    return ArrayPlan(name, tuple(shape), dtype, dims, chunks, shards, fill, attrs, read,
                     tuple(source_chunks), writer, extra_itemsize)


def _walk(node: Group, groups: dict[str, dict],
          prefix: str = "") -> Iterator[tuple[str, Array | None, Exception | None]]:
    """Every array below `node` by path, with the error when zarrflow cannot open it; every
    group's attributes into `groups` ("" = root)."""
    groups[prefix.rstrip("/")] = dict(node.attrs)
    for key in node.keys():
        path = f"{prefix}{key}"
        try:
            member = node[key]
        except errors.UnsupportedError as e:  # a data type or codec zarrflow does not read
            yield path, None, e
            continue
        if isinstance(member, Array):
            yield path, member, None
        else:
            yield from _walk(member, groups, path + "/")


def _clean_attrs(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items() if k != "_ARRAY_DIMENSIONS"}


def _decoded_dtype(opts: Options) -> np.dtype:
    return np.dtype(opts.dtype or "float32")


def _array_plan(name: str, src: _Source, opts: Options) -> ArrayPlan:
    attrs = _clean_attrs(src.attrs)
    if not _writable_by_tensorstore(src.dtype):  # datetimes, strings: copied as they are
        return _finish_plan(name, src.shape, src.dtype, src.dims, src.fill_value, attrs, src.read,
                            src.chunks, opts, writer="zarr")
    packing = (unpack_decoding(name, src.attrs, src.dtype, src.zarr_format, src.fill_value)
               if opts.decode_cf else None)
    if packing is None:
        attrs, fill = carry_fill(name, attrs, src.dtype, src.fill_value, src.zarr_format,
                                 opts.zarr_format)
        return _finish_plan(name, src.shape, src.dtype, src.dims, fill, attrs, src.read,
                            src.chunks, opts)
    out = _decoded_dtype(opts)

    def read(region, raw=src.read, packing=packing):
        return packing.decode(raw(region), out)

    return _finish_plan(name, src.shape, out, src.dims, float("nan"),
                        decoded_attrs(attrs, packing), read, src.chunks, opts,
                        extra_itemsize=src.dtype.itemsize)


def _stack_plans(group: Group, opts: Options) -> tuple[ArrayPlan, set[str]]:
    """The stacked (time, channel, *spatial) array, and the source arrays it consumes.

    Channels are always CF-decoded (a stack has one float type, and packed channels each have
    their own scale), so the stack holds what the loader would read from the source."""
    from ..loader.spec import LoaderError, resolve_channel

    specs = list(opts.stack or ())
    if specs == ["all"]:
        specs = _all_channels(group)
    names = group.keys()
    for spec in specs:
        var = spec.partition("@")[0]
        if var not in names:
            raise RechunkError(f"rechunk --stack: {unknown_name('variable', var, names)}")
    try:
        channels = [resolve_channel(group, s, "time", "level", "channel") for s in specs]
    except LoaderError as e:
        raise RechunkError(f"rechunk --stack: {e}") from None
    except errors.UnsupportedError as e:
        raise RechunkError(f"rechunk --stack: {e}") from None
    first = channels[0]
    sdims = tuple(first.array.dims[a] for a in first.spatial_axes)
    sshape = tuple(first.array.shape[a] for a in first.spatial_axes)
    ntime = first.array.shape[first.time_axis]
    for ch in channels:
        dims = tuple(ch.array.dims[a] for a in ch.spatial_axes)
        shape = tuple(ch.array.shape[a] for a in ch.spatial_axes)
        if dims != sdims or shape != sshape:
            raise RechunkError(f"rechunk --stack: variables do not share a grid: {first.name} is "
                               f"{dict(zip(sdims, sshape))}, {ch.name} is {dict(zip(dims, shape))}")
        if ch.array.shape[ch.time_axis] != ntime:
            raise RechunkError(f"rechunk --stack: variables differ in length along 'time': "
                               f"{first.name} has {ntime}, {ch.name} has "
                               f"{ch.array.shape[ch.time_axis]}")
        if ch.array.dtype.kind not in "biuf":
            raise RechunkError(f"rechunk --stack: {ch.name} is {ch.array.dtype}; only numbers "
                               "can be stacked")
    dtype = _decoded_dtype(opts)
    packs: list[CFDecoding | None] = [
        unpack_decoding(ch.array.path, ch.array.attrs, ch.array.dtype, ch.array.zarr_format,
                        ch.array.fill_value)
        for ch in channels]
    nchan = len(channels)
    shape = (ntime, nchan, *sshape)
    src_chunks = (first.array.chunks[first.time_axis], 1,
                  *(first.array.chunks[a] for a in first.spatial_axes))

    def read(region: tuple[slice, ...]) -> np.ndarray:
        t, c, *sp = region
        out = np.empty((t.stop - t.start, c.stop - c.start, *(s.stop - s.start for s in sp)),
                       dtype=dtype)
        for k, ci in enumerate(range(c.start, c.stop)):
            ch = channels[ci]
            raw = ch.array[ch.key(t, sp)]
            out[:, k] = packs[ci].decode(raw, dtype) if packs[ci] is not None else raw
        return out

    labels = [ch.name for ch in channels]
    dims = ("time", "channel", *sdims)
    converted = any(p is not None or ch.array.dtype != dtype for p, ch in zip(packs, channels))
    extra = max(ch.array.dtype.itemsize for ch in channels) if converted else 0
    plan = _finish_plan(opts.stack_name, shape, dtype, dims, float("nan"), {"channels": labels},
                        read, src_chunks, opts, extra_itemsize=extra)
    used = {ch.name.partition("@")[0] for ch in channels}
    return plan, used


def _all_channels(group: Group, time_dim: str = "time", level_dim: str = "level") -> list[str]:
    """Every floating-point or CF-packed array with a time dim, expanded over its levels."""
    out = []
    levels = group[level_dim][...] if level_dim in group.keys() else None
    for name in group.keys():
        try:
            arr = group[name]
        except errors.UnsupportedError:
            continue  # datetimes, strings: not channels
        if not isinstance(arr, Array):
            continue
        dims = arr.dims or ()
        if time_dim not in dims or arr.ndim < 3:
            continue
        packing = unpack_decoding(name, arr.attrs, arr.dtype, arr.zarr_format, arr.fill_value)
        if arr.dtype.kind != "f" and not (packing is not None and packing.packed):
            continue
        if level_dim in dims:
            n = arr.shape[list(dims).index(level_dim)]
            vals = levels if levels is not None else np.arange(n)
            out += [f"{name}@{int(v) if float(v).is_integer() else v}" for v in vals[:n]]
        else:
            out.append(name)
    if not out:
        raise RechunkError("rechunk --stack all: the group has no floating-point or packed "
                           "arrays with a time dim")
    return out


def _check_request(opts: Options) -> None:
    if opts.zarr_format not in (2, 3):
        raise RechunkError(f"rechunk: zarr_format must be 2 or 3, not {opts.zarr_format}")
    if opts.zarr_format == 2 and (opts.shards is not None or opts.crc32c):
        raise RechunkError("rechunk: sharding and crc32c need Zarr v3 output (--zarr-format 3)")
    if opts.dtype is not None:
        if opts.dtype not in DECODED_DTYPES:
            raise RechunkError(f"rechunk --dtype: {opts.dtype!r} is not one of "
                               f"{', '.join(DECODED_DTYPES)}")
        if not (opts.decode_cf or opts.stack):
            raise RechunkError("rechunk --dtype sets the type of decoded (--decode-cf) and "
                               "stacked (--stack) arrays; pass one of those")
    CodecChoice.parse(opts.codec, "rechunk")


def _check_plans(plans: list[ArrayPlan], opts: Options) -> None:
    """--chunks / --shards name only dimensions some output array has; every data type has a
    name in the output format."""
    for p in plans:
        if opts.zarr_format == 2 and p.dtype.name == "bfloat16":
            raise RechunkError(f"rechunk: {p.name or 'the array'!r} is bfloat16, which Zarr v2 "
                               "has no data type for; write Zarr v3")
    known = list(dict.fromkeys(d for p in plans for d in (p.dims or ())))
    for flag, asked in (("--chunks", opts.chunks), ("--shards", opts.shards or {})):
        for d in asked:
            if d not in known:
                raise RechunkError(f"rechunk {flag}: {unknown_name('dimension', d, known)}")


def _skip(name: str, why: str) -> None:
    warnings.warn(f"rechunk: array {name!r} is left out: {why}", RechunkWarning, stacklevel=3)


def plan(source: str | os.PathLike, opts: Options) -> tuple[list[ArrayPlan], dict[str, dict]]:
    """(array plans, {group path: attributes} of the groups the output keeps; {} when the source
    is a single array). Arrays zarrflow cannot read are read through zarr-python; one that
    neither can read is left out with a :class:`RechunkWarning`."""
    _check_request(opts)
    try:
        root = zf_open(source, storage_options=opts.storage_options)
    except errors.UnsupportedError as e:  # a single array zarrflow does not read
        try:
            z = _open_with_zarr_python(source, "")
        except Exception:
            raise e from None
        root = _from_zarr_python(z)
    if not isinstance(root, Group):
        if opts.stack:
            raise RechunkError("rechunk --stack needs a group (arrays plus coordinates)")
        src = _from_zarrflow(root) if isinstance(root, Array) else root
        plans = [_array_plan("", src, opts)]
        _check_plans(plans, opts)
        return plans, {}
    plans, consumed = [], set()
    if opts.stack:
        stacked, consumed = _stack_plans(root, opts)
        plans.append(stacked)
    wanted = set(opts.arrays or ())
    groups: dict[str, dict] = {}
    found: list[str] = []
    for name, arr, why in _walk(root, groups):
        found.append(name)
        if opts.arrays is not None and not opts.stack and name not in wanted:
            continue
        src = _from_zarrflow(arr) if arr is not None else None
        if src is None or not _writable_by_tensorstore(src.dtype):
            why = why or f"data type {src.dtype}"
            try:
                src = _from_zarr_python(_open_with_zarr_python(source, name))
            except Exception as e:  # noqa: BLE001  (any reason zarr-python has)
                if name in wanted:
                    raise RechunkError(f"rechunk: cannot read {name!r} ({why}; zarr-python: "
                                       f"{e})") from None
                _skip(name, f"neither zarrflow ({why}) nor zarr-python ({e}) reads it")
                continue
        if opts.stack:  # the stacked array, 1-D coordinates, and what --arrays adds
            keep = (len(src.shape) <= 1 and name not in consumed) or name in wanted
        else:
            keep = opts.arrays is None or name in wanted
        if keep:
            plans.append(_array_plan(name, src, opts))
    missing = sorted(wanted - set(found))
    if missing:
        raise RechunkError(f"rechunk --arrays: {unknown_name('array', missing[0], found)}")
    if opts.stack and opts.stack_name in {p.name for p in plans[1:]}:
        raise RechunkError(f"rechunk --stack-name: {opts.stack_name!r} is also the name of an "
                           "array the output keeps; choose another")
    _check_plans(plans, opts)
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
    item = p.dtype.itemsize + p.extra_itemsize
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
# Writing: tensorstore (no metadata until finalisation) or zarr-python (into journal/copies/)
# --------------------------------------------------------------------------------------------


def _ts_spec(root: Path, p: ArrayPlan, opts: Options) -> dict:
    choice = CodecChoice.parse(opts.codec, "rechunk")
    path = str(root / p.name) if p.name else str(root)
    if opts.zarr_format == 2:
        dtype = p.dtype.newbyteorder("<").str if p.dtype.itemsize > 1 else p.dtype.str
        meta = {"shape": list(p.shape), "chunks": list(p.chunks), "dtype": dtype,
                "compressor": choice.v2_compressor(),
                "fill_value": _fill_json(p.fill_value, p.dtype), "order": "C", "filters": None}
        return {"driver": "zarr", "kvstore": {"driver": "file", "path": path}, "metadata": meta}
    little = {"name": "bytes", "configuration": {"endian": "little"}}
    inner = [little] + choice.v3_codecs(p.dtype.itemsize)
    if opts.crc32c:
        inner.append({"name": "crc32c"})
    if p.shards:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(p.chunks), "codecs": inner,
            "index_codecs": [little, {"name": "crc32c"}],
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


def _ts_open(spec: dict, *, metadata: bool):
    """A tensorstore handle; with `metadata` False it neither reads nor writes the metadata
    document, so chunks can be written where no metadata exists yet."""
    import tensorstore as ts

    if metadata:
        return ts.open(spec, create=True, open=True).result()
    return ts.open(spec, open=True, assume_metadata=True).result()


def _open_output(spec: dict):
    """The handle units are written through (chunks only)."""
    return _ts_open(spec, metadata=False)


def _node_dir(root: Path, name: str) -> Path:
    return root / name if name else root


def _copy_dir(stage: Staging, p: ArrayPlan) -> Path:
    return stage.copies / (p.name or ROOT_COPY)


def _open_copy(stage: Staging, p: ArrayPlan, opts: Options):
    """The zarr-python array a non-numeric array is written to until finalisation moves it in."""
    import zarr

    path = _copy_dir(stage, p)
    meta = ".zarray" if opts.zarr_format == 2 else "zarr.json"
    moved = _node_dir(stage.store, p.name)
    if not (path / meta).exists() and (moved / meta).exists():
        return zarr.open_array(str(moved), mode="r+")  # an interrupted finalisation moved it in
    if not (path / meta).exists():
        attrs = dict(p.attrs)
        kwargs: dict = {}
        if p.dims and opts.zarr_format == 3:
            kwargs["dimension_names"] = list(p.dims)
        elif p.dims:
            attrs["_ARRAY_DIMENSIONS"] = list(p.dims)
        try:
            return zarr.create_array(str(path), shape=p.shape, dtype=p.dtype, chunks=p.chunks,
                                     fill_value=p.fill_value, zarr_format=opts.zarr_format,
                                     attributes=attrs, overwrite=False, **kwargs)
        except zarr.errors.ContainsArrayError:
            pass  # another part created it meanwhile
    return zarr.open_array(str(path), mode="r+")


def _block_keys(p: ArrayPlan, region: tuple[slice, ...], zarr_format: int) -> Iterator[str]:
    """Keys of the chunk (or shard) files that hold `region` (write-block aligned)."""
    ranges = [range(s.start // b, -(-s.stop // b)) for s, b in zip(region, p.write_block)]
    for idx in itertools.product(*ranges):
        if zarr_format == 3:
            yield "/".join(["c", *map(str, idx)])
        else:
            yield ".".join(map(str, idx)) or "0"


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "biufcMm":  # bit for bit (NaN payloads, NaT)
        return np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                              np.ascontiguousarray(b).view(np.uint8))
    return bool(np.array_equal(a, b))


class _Output:
    """Where units go, and how --verify reads them back: tensorstore arrays through zarrflow from
    journal/view/ (their metadata plus hard links of the chunk files written), zarr-python
    arrays through zarr-python."""

    def __init__(self, stage: Staging, plans: list[ArrayPlan], opts: Options):
        self.stage, self.opts = stage, opts
        self.handles = {p.name: _open_output(_ts_spec(stage.store, p, opts))
                        for p in plans if p.writer == "tensorstore"}
        self.copies = {p.name: _open_copy(stage, p, opts) for p in plans if p.writer == "zarr"}
        self.views: dict[str, Array] = {}
        self._lock = threading.Lock()
        if opts.verify:
            for p in plans:
                if p.writer == "tensorstore":
                    _ts_open(_ts_spec(stage.view, p, opts), metadata=True)

    def write(self, p: ArrayPlan, region: tuple[slice, ...], block: np.ndarray) -> None:
        if p.writer == "zarr":
            self.copies[p.name][region] = block
        else:
            self.handles[p.name][region].write(block).result()

    def read_back(self, p: ArrayPlan, region: tuple[slice, ...]) -> np.ndarray:
        if p.writer == "zarr":
            return self.copies[p.name][region]
        store, view = _node_dir(self.stage.store, p.name), _node_dir(self.stage.view, p.name)
        for key in _block_keys(p, region, self.opts.zarr_format):
            written, link = store / key, view / key
            link.unlink(missing_ok=True)  # a rewritten chunk is a new file
            if written.exists():
                link.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(written, link)
                except OSError:  # a file system without hard links
                    shutil.copyfile(written, link)
        with self._lock:
            arr = self.views.get(p.name)
            if arr is None:
                arr = self.views[p.name] = zf_open(view)
        return arr[region]


# --------------------------------------------------------------------------------------------
# Metadata, written only at finalisation (every array and sub-group, then the root)
# --------------------------------------------------------------------------------------------


def _group_docs(d: Path, attrs: dict, zarr_format: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    if zarr_format == 3:
        write_atomic(d / "zarr.json", json.dumps(
            {"zarr_format": 3, "node_type": "group", "attributes": attrs}))
        return
    if attrs:
        write_atomic(d / ".zattrs", json.dumps(attrs))
    write_atomic(d / ".zgroup", json.dumps({"zarr_format": 2}))


def _array_docs(stage: Staging, p: ArrayPlan, opts: Options) -> None:
    target = _node_dir(stage.store, p.name)
    if p.writer == "zarr":
        staged = _copy_dir(stage, p)
        if staged.exists():  # not yet moved in by an earlier, interrupted finalisation
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staged, target)
    else:
        _ts_open(_ts_spec(stage.store, p, opts), metadata=True)
    if opts.zarr_format == 2:
        za = dict(p.attrs)
        if p.dims:
            za["_ARRAY_DIMENSIONS"] = list(p.dims)
        write_atomic(target / ".zattrs", json.dumps(za))


def _consolidate_v2(root: Path, plans: list[ArrayPlan], groups: dict[str, dict]) -> None:
    meta: dict = {}
    for p in plans:
        prefix = f"{p.name}/" if p.name else ""
        d = _node_dir(root, p.name)
        meta[prefix + ".zarray"] = json.loads((d / ".zarray").read_text())
        meta[prefix + ".zattrs"] = json.loads((d / ".zattrs").read_text())
    for g, attrs in groups.items():
        prefix = f"{g}/" if g else ""
        meta[prefix + ".zgroup"] = {"zarr_format": 2}
        if attrs:
            meta[prefix + ".zattrs"] = attrs
    write_atomic(root / ".zmetadata",
                 json.dumps({"zarr_consolidated_format": 1, "metadata": meta}))


def _write_metadata(stage: Staging, plans: list[ArrayPlan], groups: dict[str, dict],
                    opts: Options, still_mine: Callable[[], None]) -> None:
    try:
        for p in plans:
            if p.name:
                _array_docs(stage, p, opts)
        for g, attrs in groups.items():
            if g:
                _group_docs(stage.store / g, attrs, opts.zarr_format)
        crash_point("arrays-metadata-written")
        still_mine()
        if not groups:  # a single array: its own metadata is the root's
            _array_docs(stage, plans[0], opts)
        elif opts.zarr_format == 3:
            _group_docs(stage.store, groups[""], 3)
        else:
            _group_docs(stage.store, groups[""], 2)
            _consolidate_v2(stage.store, plans, groups)
    except (OSError, ValueError) as e:  # tensorstore reports I/O failures as ValueError
        raise errors.StoreIOError(f"rechunk: writing metadata under {stage.store} failed: {e}; "
                                  "rerun the same command to finish") from e
    crash_point("root-metadata-written")


@dataclass
class Report:
    """What a :func:`rechunk` call did.

    Parameters
    ----------
    arrays : int
        Output arrays.
    units : int
        Units (blocks of whole output shards or chunks) this call wrote.
    skipped : int
        Units found already written (a resumed run).
    bytes : int
        Decoded bytes this call wrote.
    verified : bool
        Whether the units were read back and compared.
    seconds : float
        Wall time of the call.
    finalized : bool
        Whether this call wrote the metadata and moved the store into place.
    state : str
        ``"complete"``, ``"waiting for the other parts"``, or which part finalises instead.
    """

    arrays: int = 0
    units: int = 0
    skipped: int = 0  # already done (resumed)
    bytes: int = 0
    verified: bool = False
    seconds: float = 0.0
    finalized: bool = False
    state: str = ""  # "complete", "waiting for the other parts", or who finalises instead


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
            "crc32c": opts.crc32c, "decode_cf": opts.decode_cf,
            "arrays": [(p.name, p.shape, p.chunks, p.shards, str(p.dtype), p.writer)
                       for p in plans]}
    return hashlib.sha1(json.dumps(desc, sort_keys=True, default=list).encode()).hexdigest()


def _work(plans: list[ArrayPlan], opts: Options) -> list[tuple[ArrayPlan, int, tuple[slice, ...]]]:
    """Every unit of every array, after checking that one write block fits in --memory."""
    memory = _parse_size(opts.memory)
    copies = 2 if opts.verify else 1
    per_unit_budget = max(memory // (copies * 2), 1)
    work = []
    for p in plans:
        wb_bytes = math.prod(p.write_block) * (p.dtype.itemsize + p.extra_itemsize)
        if wb_bytes * copies > memory:
            raise RechunkError(f"rechunk: one {'shard' if p.shards else 'chunk'} of {p.name!r} "
                               f"({wb_bytes / 2**20:.1f} MiB) does not fit in --memory "
                               f"{memory / 2**20:.1f} MiB")
        regions = units(p, unit_shape(p, per_unit_budget))
        work += [(p, k, region) for k, region in enumerate(regions)]
    return work


def rechunk(source: str | os.PathLike, dest: str | os.PathLike, opts: Options = Options(), *,
            part: tuple[int, int] = (0, 1), overwrite: bool = False, progress: bool = True,
            out: TextIO | None = None) -> Report:
    """Rechunk and convert the store ``source`` into a new store ``dest``.

    Chunks are written under ``<dest>.partial`` without metadata; once every unit of every part
    is written (and, with ``opts.verify``, read back and compared), the metadata is written and
    the store renamed to ``dest``. An interrupted call resumes where it stopped when repeated.

    Parameters
    ----------
    source : str or os.PathLike
        The store to read: a local path or a URL (``s3://``, ``gs://``, ``http(s)://``).
    dest : str or os.PathLike
        The local directory to write.
    opts : Options, optional
        What to write (chunks, shards, codec, stacking...). Default: ``Options()``.
    part : tuple of (int, int), default (0, 1)
        ``(i, n)``: write the i-th (0-based) of n disjoint shares of the units, for Slurm arrays
        or Dask; the part that finds all n done finalises the store.
    overwrite : bool, default False
        Replace an existing ``dest`` (swapped out only once the new store is complete).
    progress : bool, default True
        Show a progress bar.
    out : file, optional
        Where the progress bar goes (default: standard error).

    Returns
    -------
    Report
        What the call did; ``report.state`` says whether the store is complete.

    Raises
    ------
    RechunkError
        The request cannot be carried out (an existing ``dest`` without ``overwrite``, a chunk
        that does not divide its shard, a block that does not fit ``opts.memory``...).
    UnsupportedError
        tensorstore, the writer, is not installed (``pip install 'zarrflow[tools]'``).
    StoreIOError
        ``dest`` cannot be written.

    Warns
    -----
    RechunkWarning
        Something in the source was left out of the output (the message says what and why).

    Examples
    --------
    >>> from zarrflow.tools.rechunk import Options, rechunk
    >>> report = rechunk("wb2.zarr", "train.zarr",
    ...                  Options(chunks={"time": 1}, shards={"time": 8}, crc32c=True))
    >>> report.state
    'complete'
    """
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
    plans, groups = plan(source, opts)
    digest = _plan_digest(source, plans, opts)
    stage = Staging(dest)
    report = Report(arrays=len(plans), verified=opts.verify)
    if completed(stage, digest) is None:  # else only the swap is left to do
        if dest.exists() and not overwrite:
            raise RechunkError(f"rechunk: {dest} already exists (pass --overwrite to replace it)")
        work = _work(plans, opts)
        try:
            join_or_create(stage, digest)
        except OSError as e:
            raise errors.StoreIOError(f"rechunk: cannot create {stage.root}: "
                                      f"{e.strerror or e}") from e
        crash_point("claimed")
        mine = [w for idx, w in enumerate(work) if idx % n_parts == i_part]
        _run_units(stage, plans, mine, opts, (i_part, n_parts), report, progress, out, dest.name)
        (stage.journal / f"part-{i_part}-of-{n_parts}.done").touch()
        crash_point("part-done")
        if len(list(stage.journal.glob(f"part-*-of-{n_parts}.done"))) < n_parts:
            report.state = "waiting for the other parts"
            report.seconds = time.perf_counter() - t0
            return report
    report.finalized, why = finalise(
        stage, digest, n_parts, overwrite, opts.lease,
        lambda still_mine: _write_metadata(stage, plans, groups, opts, still_mine))
    report.state = "complete" if report.finalized else why
    report.seconds = time.perf_counter() - t0
    return report


def _run_units(stage: Staging, plans: list[ArrayPlan], mine: list, opts: Options,
               part: tuple[int, int], report: Report, progress: bool, out: TextIO | None,
               label: str) -> None:
    done: set[str] = set()
    for f in stage.journal.glob("done-*"):
        done.update(line for line in f.read_text().splitlines() if line)
    todo = [w for w in mine if f"{w[0].name}:{w[1]}" not in done]
    report.units, report.skipped = len(todo), len(mine) - len(todo)
    if not todo:
        return
    try:
        output = _Output(stage, plans, opts)
    except (OSError, ValueError) as e:  # tensorstore reports I/O failures as ValueError
        raise errors.StoreIOError(f"rechunk: opening the output under {stage.store} failed: "
                                  f"{e}") from e
    memory = _parse_size(opts.memory)
    copies = 2 if opts.verify else 1
    threads = opts.threads or os.cpu_count() or 1
    biggest = max((math.prod(s.stop - s.start for s in r) * (p.dtype.itemsize + p.extra_itemsize)
                   for p, _, r in todo), default=1)
    width = max(1, min(threads, len(todo) or 1, memory // max(biggest * copies, 1)))
    bar = Progress(len(todo), f"rechunk {label}", enabled=progress, out=out)
    lock = threading.Lock()
    log = open(stage.journal / f"done-{part[0]}-of-{part[1]}", "a")

    def run_unit(p: ArrayPlan, k: int, region: tuple[slice, ...]) -> None:
        where = f"array {p.name or '/'!r} region {[(s.start, s.stop) for s in region]}"
        try:
            block = p.read(region)
        except errors.ZarrflowError as e:
            raise type(e)(f"rechunk: reading {where}: {e}") from None
        try:
            output.write(p, region, block)
        except Exception as e:  # tensorstore reports I/O failures (full disk, EACCES) as ValueError
            raise errors.StoreIOError(f"rechunk: writing {where} under {stage.store} failed: "
                                      f"{e}; rerun the same command to resume") from None
        crash_point("unit-written")
        if opts.verify and not _same_values(output.read_back(p, region), block):
            raise RechunkError(f"rechunk --verify: {where} differs from the source after writing")
        with lock:
            log.write(f"{p.name}:{k}\n")
            log.flush()
            crash_point("unit-recorded")
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
    p.add_argument("--chunks", help="target chunk per named dim, e.g. "
                                    "time=1,latitude=721,longitude=1440 (dims not named keep the "
                                    "source chunk)")
    p.add_argument("--shards", help="shard shape per named dim (Zarr v3), e.g. time=8; "
                                    "dims not named: one chunk per shard")
    p.add_argument("--codec", default="zstd:3",
                   help="none, zstd[:L], gzip[:L], blosc-<cname>[:L] (byte shuffle); "
                        "default zstd:3")
    p.add_argument("--crc32c", action="store_true", help="append a crc32c checksum codec (v3)")
    p.add_argument("--zarr-format", type=int, choices=(2, 3), default=3)
    p.add_argument("--stack", help="stack variables into one (time, channel, ...) array: "
                                   "'all' or a list like 2m_temperature,geopotential@500")
    p.add_argument("--stack-name", default="data", help="name of the stacked array (default data)")
    p.add_argument("--arrays", help="only these source arrays (comma-separated paths)")
    p.add_argument("--decode-cf", action="store_true",
                   help="unpack CF-packed arrays (scale_factor/add_offset; _FillValue and "
                        "missing_value become NaN) into floats; default: keep them packed")
    p.add_argument("--dtype", choices=DECODED_DTYPES,
                   help="float type of decoded and stacked arrays (default float32)")
    p.add_argument("--memory", default="2GB", help="bound on data in flight (default 2GB)")
    p.add_argument("--threads", type=int, default=0, help="parallel units (default: CPU count)")
    p.add_argument("--part", default="0/1", help="run share i of n (0-based), e.g. 3/16")
    p.add_argument("--lease", type=float, default=Options.lease,
                   help="seconds after which a finalisation claimed on another host and no "
                        "longer beating is taken over (default %(default)s)")
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
                   decode_cf=args.decode_cf, dtype=args.dtype,
                   memory=_parse_size(args.memory), threads=args.threads, verify=args.verify,
                   storage_options=storage_options_from(args), lease=args.lease)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RechunkWarning)
        try:
            rep = rechunk(args.source, args.dest, opts, part=(i, n), overwrite=args.overwrite,
                          progress=not args.quiet)
        finally:
            for w in caught:
                if issubclass(w.category, RechunkWarning):
                    print(f"zarrflow: warning: {w.message}", file=sys.stderr)
                else:
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    rate = rep.bytes / max(rep.seconds, 1e-9) / 1e9
    state = rep.state if rep.finalized else f"part {i}/{n} done; {rep.state}"
    print(f"rechunk {args.source} -> {args.dest}: {rep.arrays} arrays, {rep.units} units "
          f"({rep.skipped} already done), {rep.bytes / 1e9:.2f} GB in {rep.seconds:.1f} s "
          f"({rate:.2f} GB/s){', verified' if rep.verified else ''}; {state}", file=out)
