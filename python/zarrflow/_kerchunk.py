"""Kerchunk reference sets: JSON (versions 0 and 1, parsed in C++) and Parquet (through pyarrow).

Opened the way fsspec's ReferenceFileSystem is, so code written for xarray + fsspec carries over::

    zarrflow.open("reference://", storage_options={
        "fo": "refs.json",                      # or a dict, or a Parquet reference directory
        "remote_protocol": "s3",                # where the chunks live ...
        "remote_options": {"anon": True},       # ... and how to read them
        "target_options": {...},                # how to read `fo` itself when it is remote
    })
    zarrflow.open("refs.json")                  # a local reference file: the same, no options

What may be read: the URLs of ``remote_protocol`` the references name (each bucket, host or
directory becomes a container read with ``remote_options``), the directory of a local reference
file (its sibling files), and the prefixes of ``virtual_chunk_containers=`` (each with its own
storage options). A reference to anything else is an error naming the key and the location.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any, Mapping

from . import _core
from ._remote import is_remote, open_remote
from ._virtual import build_containers, normalize_prefix, prefixes_of
from .errors import InvalidArgumentError, NodeNotFoundError, UnsupportedError

_OPTIONS = {"fo", "remote_protocol", "remote_options", "target_protocol", "target_options",
            "template_overrides", "simple_templates"}


def is_reference_url(path: str) -> bool:
    return path.startswith("reference://")


def looks_like_reference_file(path: str) -> bool:
    """A local file (not a directory) whose first non-blank byte opens a JSON object, or a
    Parquet reference directory (``.zmetadata`` with a ``record_size``)."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
        return head.startswith(b"{")
    return _is_parquet_refs(path)


# A Parquet reference set's .zmetadata holds the Zarr metadata of its arrays: far below this.
# Anything larger, or not naming "record_size", is left to the Zarr reader, whose parser bounds
# size and nesting (a plain store's consolidated .zmetadata is read there, not here).
_MAX_PARQUET_META_BYTES = 64 << 20


def _is_parquet_refs(path: str) -> bool:
    meta = os.path.join(path, ".zmetadata")
    try:
        if not os.path.isfile(meta) or os.path.getsize(meta) > _MAX_PARQUET_META_BYTES:
            return False
        with open(meta, "rb") as f:
            raw = f.read()
        if b'"record_size"' not in raw:
            return False
        doc = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and "record_size" in doc


def _read_fo(fo: str, target_options: Mapping[str, Any] | None) -> bytes:
    if is_remote(fo):
        parent, _, name = fo.rstrip("/").rpartition("/")
        value = open_remote(parent, dict(target_options or {})).get(name)
        if value is None:
            raise NodeNotFoundError(f"reference file '{fo}' does not exist")
        return value
    path = fo[len("file://"):] if fo.startswith("file://") else fo
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise NodeNotFoundError(f"reference file '{fo}' does not exist") from None


def _parquet_references(path: str) -> dict:
    """A version-0 reference dict from fsspec's Parquet layout: ``.zmetadata`` holds the
    metadata keys and ``record_size``; ``<variable>/refs.<n>.parq`` hold the chunk references of
    each array in C order of its chunk grid (columns path, offset, size, raw)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise UnsupportedError("Parquet reference sets need pyarrow: pip install pyarrow") from None
    import math

    with open(os.path.join(path, ".zmetadata"), "rb") as f:
        zmeta = json.load(f)
    record_size = int(zmeta["record_size"])
    meta = zmeta.get("metadata", {})
    refs: dict[str, Any] = {}
    for key, value in meta.items():
        refs[key] = value if isinstance(value, str) else json.dumps(value)
    for key, value in meta.items():
        if not key.endswith(".zarray"):
            continue
        field = key[: -len("/.zarray")] if "/" in key else ""
        zarray = json.loads(refs[key])
        grid = [math.ceil(s / c) for s, c in zip(zarray["shape"], zarray["chunks"])] or [1]
        sep = zarray.get("dimension_separator") or "."
        total = math.prod(grid)
        for n in range(math.ceil(total / record_size)):
            part = os.path.join(path, field, f"refs.{n}.parq")
            if not os.path.exists(part):
                continue
            table = pq.read_table(part).to_pydict()
            paths, offsets = table.get("path", []), table.get("offset", [])
            sizes, raws = table.get("size", []), table.get("raw", [None] * len(paths))
            for i, url in enumerate(paths):
                index = n * record_size + i
                if index >= total:
                    break
                coords, rest = [], index
                for g in reversed(grid):
                    coords.append(rest % g)
                    rest //= g
                chunk_key = sep.join(str(c) for c in reversed(coords))
                full = f"{field}/{chunk_key}" if field else chunk_key
                raw = raws[i] if i < len(raws) else None
                if raw is not None:
                    refs[full] = "base64:" + base64.b64encode(raw).decode()
                elif url:
                    size = int(sizes[i] or 0)
                    refs[full] = [url, int(offsets[i] or 0), size] if size else [url]
    return refs


def open_references(path: str, storage_options: Mapping[str, Any] | None,
                    virtual_chunk_containers: Mapping[str, Any]) -> Any:
    """The core store of a reference set (``reference://`` with ``fo``, or a local file)."""
    options = dict(storage_options or {})
    unknown = set(options) - _OPTIONS
    if unknown:
        raise InvalidArgumentError(f"unknown storage option(s) for reference sets: "
                                   f"{', '.join(sorted(unknown))} "
                                   f"(known: {', '.join(sorted(_OPTIONS))})")
    fo = options.get("fo") if is_reference_url(path) else path
    if fo is None:
        raise InvalidArgumentError("reference:// needs storage_options={'fo': <references>}")
    authorised: dict[str, Any] = dict(virtual_chunk_containers)
    if isinstance(fo, Mapping):
        text, source = json.dumps(fo).encode(), "<references>"
    else:
        fo = os.fspath(fo)
        source = fo
        local = fo[len("file://"):] if fo.startswith("file://") else fo
        if not is_remote(fo) and os.path.isdir(local):
            if not _is_parquet_refs(local):
                raise InvalidArgumentError(f"'{fo}' is a directory but not a Parquet reference set")
            text = json.dumps(_parquet_references(local)).encode()
        else:
            text = _read_fo(fo, options.get("target_options"))
        if not is_remote(fo):
            sibling = normalize_prefix(os.path.dirname(os.path.abspath(local)))
            authorised.setdefault(sibling, None)
    refs = _core.parse_kerchunk_json(text, source)
    protocol = options.get("remote_protocol")
    if protocol:
        protocol = "file" if protocol in ("local", "file") else str(protocol)
        for prefix in prefixes_of(refs.urls(), protocol):
            authorised.setdefault(prefix, None if protocol == "file"
                                  else dict(options.get("remote_options") or {}))
    return _core.open_kerchunk_store(refs, build_containers(authorised))
