"""The public Python objects: open(), Group and Array.

Reads go to the C++ core with the GIL released; results land directly in a NumPy array that
zarrflow allocates (or that the caller passes as ``out=``), so nothing is copied on the way back.
"""

from __future__ import annotations

import json
import operator
import os
from functools import cached_property
from typing import Any, Iterator, Sequence

import numpy as np

from . import _core, _dtypes, _gpu, _indexing
from ._names import unknown_name
from ._remote import is_remote, open_remote
from ._threads import make_executor
from .errors import MetadataError, NodeNotFoundError, ZarrflowIndexError


def _numpy_dtype(name: str) -> np.dtype:
    return _dtypes.numpy_dtype(name)


def _store_and_path(path: str | os.PathLike,
                    storage_options: dict[str, Any] | None = None, *, ref: str | None = None,
                    virtual_chunk_containers: Any = None) -> tuple[_core.Store, str]:
    """The core store for ``path``: an Icechunk repository or a Kerchunk reference set when the
    path is one (``_icechunk``, ``_kerchunk``), else a local directory or a remote store."""
    from . import _icechunk, _kerchunk
    from ._virtual import check_containers_argument

    containers = check_containers_argument(virtual_chunk_containers)
    p = os.fspath(path)
    if _kerchunk.is_reference_url(p):
        if ref is not None:
            raise ValueError("ref= selects an Icechunk snapshot; reference sets have none")
        return _kerchunk.open_references(p, storage_options, containers), ""
    if is_remote(p):
        if ref is not None:
            return _icechunk.open_remote_repository(p, storage_options, ref, containers), ""
        store = open_remote(p, storage_options)
        if containers:  # virtual chunks: an Icechunk repository
            return _icechunk.open_repository(p, store, None, containers), ""
        return store, ""
    if p.startswith("file://"):
        p = p[len("file://"):]
    if "://" in p:
        scheme = p.split("://", 1)[0]
        raise NotImplementedError(f"{scheme}:// stores are not supported "
                                  f"(local paths, file://, s3://, gs://, http(s)://, reference://)")
    if _icechunk.local_repository(p):
        if storage_options:
            raise ValueError("storage_options apply to remote URLs (s3://, gs://, http(s)://) "
                             "and reference:// only")
        return _icechunk.open_repository(p, _core.open_file_store(p), ref, containers), ""
    if ref is not None:
        raise NodeNotFoundError(f"'{p}' is not an Icechunk repository (ref= needs one)")
    if _kerchunk.looks_like_reference_file(p):
        return _kerchunk.open_references(p, storage_options, containers), ""
    if storage_options:
        raise ValueError("storage_options apply to remote URLs (s3://, gs://, http(s)://) only")
    if containers:
        raise ValueError("virtual_chunk_containers apply to Icechunk repositories and reference "
                         "sets only")
    return _core.open_file_store(p), ""


def _open_remote_node(path: str, store: Any, zarr_format: int | None, consolidated: bool,
                      limits: dict[str, int]) -> tuple[Any, Any]:
    """(node, store) of a remote plain Zarr store, or of the Icechunk repository at the URL when
    there is no Zarr node (detecting repositories costs requests only then)."""
    from . import _icechunk

    try:
        return _core.open_node(store, "", zarr_format, consolidated, **limits), store
    except NodeNotFoundError as original:
        try:
            repo_store = _icechunk.open_repository(path, store, None, {})
        except NodeNotFoundError:
            raise original from None
        return _core.open_node(repo_store, "", zarr_format, consolidated, **limits), repo_store


def _wrap(node: Any, executor: _core.Executor) -> "Array | Group":
    if isinstance(node, _core.Array):
        return Array(node, executor)
    return Group(node, executor)


_LIMITS = ("max_chunk_bytes", "max_metadata_bytes", "max_metadata_depth")


def open(path: str | os.PathLike, *, zarr_format: int | None = None,
         use_consolidated: bool | None = None, threads: int | None = None,
         storage_options: dict[str, Any] | None = None, ref: str | None = None,
         virtual_chunk_containers: Any = None,
         limits: dict[str, int] | None = None) -> "Array | Group":
    """Open the Zarr array or group (v2 or v3) stored at ``path``.

    ``path`` is a local directory, ``file://``, ``s3://bucket/prefix``, ``gs://bucket/prefix``
    or ``http(s)://`` URL. ``storage_options`` configure remote stores (credentials, endpoint,
    requests in flight, timeouts, retries; see ``zarrflow._remote``). ``threads`` sets the size
    of the pool this hierarchy decodes with (default: the shared pool, sized by
    ZARRFLOW_NUM_THREADS or the CPU count); remote stores fetch on their own I/O pool of
    ``max_in_flight`` threads. ``use_consolidated`` (as in zarr-python): None lists a group's
    members from its consolidated metadata when it has some, True requires it, False lists
    and opens them from the store. ``limits`` bounds what a store's metadata may make zarrflow
    read or allocate (for this node and everything opened through it): ``max_chunk_bytes``
    (decoded bytes of one chunk, default 2 GiB), ``max_metadata_bytes`` (one metadata document,
    default 64 MiB), ``max_metadata_depth`` (JSON nesting, default 256).

    Icechunk repositories (a directory or URL holding one) open at ``ref``: a branch (default
    ``main``), a tag or a snapshot id. Kerchunk reference sets open as fsspec opens them:
    ``open("reference://", storage_options={"fo": "refs.json", "remote_protocol": "s3",
    "remote_options": {...}})``, or ``open("refs.json")``. Virtual chunks of either are read only
    from ``virtual_chunk_containers``: ``{url_prefix: storage_options}`` (docs/icechunk.md).
    """
    limits = dict(limits or {})
    for name in limits:
        if name not in _LIMITS:
            raise ValueError(unknown_name("limit", name, _LIMITS))
    p = os.fspath(path)
    store, node_path = _store_and_path(path, storage_options, ref=ref,
                                       virtual_chunk_containers=virtual_chunk_containers)
    consolidated = use_consolidated is not False
    if is_remote(p) and ref is None and not virtual_chunk_containers \
            and not isinstance(store, _core.ReferenceStore):
        node, store = _open_remote_node(p, store, zarr_format, consolidated, limits)
    else:
        node = _core.open_node(store, node_path, zarr_format, consolidated, **limits)
    if use_consolidated and isinstance(node, _core.Group) and not node.consolidated:
        raise MetadataError(f"'{os.fspath(path)}' has no consolidated metadata "
                            f"(use_consolidated=True; pass None or False to list the store)")
    wrapped = _wrap(node, make_executor(threads))
    wrapped.snapshot_id = getattr(store, "snapshot_id", None)
    return wrapped


def open_array(path: str | os.PathLike, **kwargs: Any) -> "Array":
    node = open(path, **kwargs)
    if not isinstance(node, Array):
        raise NodeNotFoundError(f"'{os.fspath(path)}' is a group, not an array")
    return node


def open_group(path: str | os.PathLike, **kwargs: Any) -> "Group":
    node = open(path, **kwargs)
    if not isinstance(node, Group):
        raise NodeNotFoundError(f"'{os.fspath(path)}' is an array, not a group")
    return node


class _Node:
    """What arrays and groups share: a core handle, the executor reads use, path and attrs."""

    #: The Icechunk snapshot this node reads (its ref was resolved once, at open); None for
    #: other stores.
    snapshot_id: str | None = None

    def __init__(self, handle: Any, executor: _core.Executor):
        self._h = handle
        self._executor = executor

    @property
    def path(self) -> str:
        """Path of the node inside its store ("" for the root)."""
        return self._h.path

    @property
    def zarr_format(self) -> int:
        return self._h.zarr_format

    @cached_property
    def attrs(self) -> dict:
        return json.loads(self._h.attrs_json)


class Group(_Node):
    """A Zarr group: a mapping from member names to arrays and groups."""

    @property
    def consolidated(self) -> bool:
        """True when members were listed from consolidated metadata."""
        return self._h.consolidated

    def keys(self) -> list[str]:
        return self._h.member_names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self._h.open_member(name)
        except NodeNotFoundError:
            return False
        return True

    def __getitem__(self, name: str) -> "Array | Group":
        """The member ``name`` ("t2m", or a path such as "pressure/u"); a KeyError for a name
        that is not there lists the names that are, closest match first."""
        try:
            node = _wrap(self._h.open_member(name), self._executor)
        except NodeNotFoundError as e:
            raise KeyError(self._unknown_member(name)) from e
        node.snapshot_id = self.snapshot_id
        return node

    def _unknown_member(self, name: str) -> str:
        """"group 'a': unknown member 'B' (did you mean 'b'?; known: b, c)", naming the deepest
        group of the path that exists."""
        parts = [p for p in str(name).split("/") if p]
        group: Group = self
        for i, part in enumerate(parts[:-1]):
            try:
                child = group[part]
            except KeyError:
                parts = parts[i:]
                break
            if not isinstance(child, Group):
                return f"'{'/'.join(parts[:i + 1])}' is an array, not a group"
            group = child
        else:
            parts = parts[-1:]
        where = f"group '{group.path or '/'}'"
        return f"{where}: {unknown_name('member', parts[0] if parts else name, group.keys())}"

    def members(self) -> list[tuple[str, "Array | Group"]]:
        return [(k, self[k]) for k in self.keys()]

    def arrays(self) -> list[tuple[str, "Array"]]:
        return [(k, v) for k, v in self.members() if isinstance(v, Array)]

    def groups(self) -> list[tuple[str, "Group"]]:
        return [(k, v) for k, v in self.members() if isinstance(v, Group)]

    def __repr__(self) -> str:
        return f"<zarrflow.Group '{self.path or '/'}' v{self.zarr_format}>"


class Array(_Node):
    """A Zarr array. Index it like NumPy (``arr[0, 10:20, ::2]``) to read into a new ndarray."""

    last_read_report: dict | None = None

    # --- metadata -------------------------------------------------------------------------
    @cached_property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._h.shape)

    @cached_property
    def dtype(self) -> np.dtype:
        """Element type, always in native byte order (big-endian stores are swapped on read)."""
        return _numpy_dtype(self._h.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def remote_stats(self, reset: bool = False) -> dict[str, int] | None:
        """Transport counters of a remote store: requests, retries, bytes, requests in flight
        (now and the maximum) and I/O threads; None for local stores. ``reset`` zeroes them
        after reading."""
        stats = self._h.remote_stats()
        if reset:
            self._h.reset_remote_stats()
        return stats

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @cached_property
    def chunks(self) -> tuple[int, ...]:
        """Shape of the unit of reading: the inner chunk for sharded arrays."""
        return tuple(self._h.chunks)

    @cached_property
    def shards(self) -> tuple[int, ...] | None:
        s = self._h.shards
        return None if s is None else tuple(s)

    @cached_property
    def dims(self) -> tuple[str | None, ...] | None:
        """Dimension names (v3 dimension_names, or v2 xarray _ARRAY_DIMENSIONS)."""
        return self._h.dims

    @cached_property
    def fill_value(self) -> Any:
        """The fill value as a NumPy scalar; None for Zarr v2 arrays that store null (missing
        chunks then read as zeros, as in zarr-python)."""
        return _dtypes.fill_value(self._h, self.dtype)

    @cached_property
    def codecs(self) -> list[dict] | dict:
        """The codecs as stored: v3 'codecs' list, or v2 compressor/filters/order."""
        return json.loads(self._h.codecs_json)

    @property
    def codecs_description(self) -> str:
        return self._h.codecs_description

    @cached_property
    def metadata(self) -> dict:
        return json.loads(self._h.metadata_json)

    def info(self) -> dict:
        """Stored chunks and bytes (lists the store)."""
        return self._h.storage_info()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"<zarrflow.Array '{self.path or '/'}' shape={self.shape} dtype={self.dtype} "
                f"chunks={self.chunks}{' shards=' + str(self.shards) if self.shards else ''}>")

    # --- reading --------------------------------------------------------------------------
    def read(self, region: Sequence[slice] | slice | None = None, out: np.ndarray | None = None,
             *, device: str | None = None, stream: int | None = None, gpu_decode: str = "auto",
             io: str = "auto") -> "np.ndarray | _core.Tensor":
        """Read a hyperslab (a tuple of slices, one per dimension; None = everything).

        Without ``device`` the result is a NumPy array (or ``out``, decoded into in place: any
        strides, matching dtype and shape). With ``device="cuda"`` (or ``"cuda:N"``) the chunks'
        compressed bytes go to the GPU and are decoded there; the result is a
        :class:`zarrflow.Tensor` that ``torch.from_dlpack``, ``cupy.from_dlpack`` and
        ``jax.dlpack.from_dlpack`` take without a copy (``device="cpu"`` gives one in host
        memory). ``stream`` is the CUDA stream (an int handle) to order the read on; consumers'
        streams wait on it through ``__dlpack__(stream=...)``. ``gpu_decode``: ``auto`` decodes
        on the CPU what the GPU cannot (and says why once), ``on`` fails instead, ``off`` decodes
        everything on the CPU. ``io``: ``auto``/``pinned`` read (buffered) into pinned host memory,
        ``direct`` uses O_DIRECT instead, ``cufile`` reads uncompressed chunks with GPUDirect
        Storage. The last GPU read's report
        (chunks decoded where, bytes moved, fallbacks) is in :attr:`last_read_report`.
        """
        if region is None:
            region = ()
        elif not isinstance(region, tuple):
            region = (region,)
        for r in region:
            if not isinstance(r, slice) and r is not Ellipsis:
                raise TypeError(f"read() takes slices, got {r!r}; use arr[...] for integer indexing")
        sel = _Selection.parse(region, self.shape, strict=True)
        if device is None:
            return self._read(sel, out)
        if (err := _dtypes.device_error(self._h.description, self.dtype)) is not None:
            raise err
        if out is not None:
            raise ValueError("out= and device= cannot be combined")
        if any(sel.reverse):
            raise NotImplementedError("negative steps are not supported with device=")
        if gpu_decode not in ("auto", "on", "off"):
            raise ValueError(f"gpu_decode must be 'auto', 'on' or 'off', got {gpu_decode!r}")
        if io not in ("auto", "pinned", "direct", "cufile"):
            raise ValueError(f"io must be 'auto', 'pinned', 'direct' or 'cufile', got {io!r}")
        kind, index = _gpu.parse_device(device)
        if kind == "cpu":
            return self._h.read_host_tensor(sel.start, sel.count, sel.step, self._executor)
        _gpu.configure()
        tensor, report = self._h.read_device_tensor(sel.start, sel.count, sel.step, index, stream,
                                                    gpu_decode, io, self._executor)
        self.last_read_report = report
        _gpu.say_once(report["notes"])
        return tensor

    def __getitem__(self, key: Any) -> np.ndarray:
        """NumPy-style selection: integers, slices (any step), ``...``, ``None``, an integer
        array or boolean mask (several arrays: as zarr-python). See :mod:`zarrflow._indexing`."""
        key = key if isinstance(key, tuple) else (key,)
        if not _is_basic(key):
            return _indexing.getitem(self, key)
        sel = _Selection.parse(key, self.shape)
        result = self._read(sel, None)
        if sel.drop:
            result = result.reshape(tuple(n for i, n in enumerate(result.shape) if i not in sel.drop))
        return result

    @property
    def oindex(self) -> _indexing.OIndex:
        """Orthogonal selection: ``arr.oindex[[0, 5], :, mask]`` selects along each dimension
        independently (integers, slices, 1-d integer or boolean arrays)."""
        return _indexing.OIndex(self)

    @property
    def vindex(self) -> _indexing.VIndex:
        """Pointwise selection: ``arr.vindex[t, y, x]`` reads ``arr[t[i], y[i], x[i]]`` for
        each i (arrays broadcast together; a boolean mask of the array's shape picks its True
        elements). Each chunk is read once per call."""
        return _indexing.VIndex(self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = self.read()
        return a if dtype is None else a.astype(dtype, copy=False)

    def _read_region(self, start: list[int], count: list[int], step: list[int],
                     target: np.ndarray) -> None:
        """Reads an ascending region into ``target`` (its shape, this dtype, any strides)."""
        if _dtypes.is_variable_length(self.dtype):  # strings, objects: the plain read path
            target[...] = self._read(_Selection.region(start, count, step), None)
            return
        view = _transport_view(target)
        if view is None:  # odd-sized raw elements in a strided destination: go via a copy
            tmp = np.empty(target.shape, dtype=target.dtype)
            self._h.read_into(start, count, step, _transport_view(tmp), self._executor)
            target[...] = tmp
        else:
            self._h.read_into(start, count, step, view, self._executor)

    def _read(self, sel: "_Selection", out: np.ndarray | None) -> np.ndarray:
        shape = tuple(sel.count)
        if _dtypes.is_variable_length(self.dtype):
            return _dtypes.read_vlen(self._h, self.dtype, sel, out, self._executor)
        if out is None:
            out = np.empty(shape, dtype=self.dtype)
        else:
            if not isinstance(out, np.ndarray):
                raise TypeError("out must be a numpy.ndarray")
            if out.shape != shape:
                raise ValueError(f"out has shape {out.shape}, the region has shape {shape}")
            if out.dtype != self.dtype:
                raise ValueError(f"out has dtype {out.dtype}, the array has {self.dtype}")
            if not out.flags.writeable:
                raise ValueError("out is read-only")
        if out.size:
            target = out
            # Negative steps are read ascending into a reversed view of the destination.
            flip = tuple(slice(None, None, -1) if r else slice(None) for r in sel.reverse)
            if any(sel.reverse):
                target = out[flip]
            self._read_region(sel.start, sel.count, sel.step, target)
        return out


def _is_basic(key: tuple) -> bool:
    """True when every item is an integer, a slice or '...' (the plain hyperslab path)."""
    for k in key:
        if isinstance(k, slice) or k is Ellipsis:
            continue
        if k is None or isinstance(k, (bool, np.bool_, np.ndarray, list, tuple)):
            return False
        try:
            operator.index(k)
        except TypeError:
            return False
    return True


def _transport_view(a: np.ndarray) -> np.ndarray | None:
    """A view of ``a`` the C++ side accepts: plain integer types for bfloat16, raw (V), text (U, S),
    datetime (M, m) and structured data."""
    if a.dtype.kind in "VUSMm" or a.dtype.name == "bfloat16":
        if a.dtype.itemsize in (1, 2, 4, 8):
            return a.view(f"u{a.dtype.itemsize}")
        if not a.flags.c_contiguous:
            return None
        # Raw elements of other sizes travel as a trailing axis of their bytes (a 0-d array goes
        # through shape (1,): NumPy cannot change the itemsize of a 0-d view).
        flat = a.reshape(a.shape or (1,))
        return flat.view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))
    return a


class _Selection:
    """A NumPy-style key turned into per-dimension (start, count, step) over ascending indices."""

    __slots__ = ("start", "count", "step", "reverse", "drop")

    def __init__(self) -> None:
        self.start: list[int] = []
        self.count: list[int] = []
        self.step: list[int] = []
        self.reverse: list[bool] = []
        self.drop: set[int] = set()

    @classmethod
    def region(cls, start: Sequence[int], count: Sequence[int],
               step: Sequence[int]) -> "_Selection":
        """An ascending region, every dimension kept."""
        sel = cls()
        sel.start, sel.count, sel.step = list(start), list(count), list(step)
        sel.reverse = [False] * len(sel.start)
        return sel

    @classmethod
    def parse(cls, key: tuple, shape: tuple[int, ...], strict: bool = False) -> "_Selection":
        """NumPy semantics; with ``strict`` a slice bound past the end of its dimension is an
        error instead of being clipped (read() regions must lie inside the array)."""
        n_ellipsis = sum(1 for k in key if k is Ellipsis)
        if n_ellipsis > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if n_ellipsis:
            i = next(i for i, k in enumerate(key) if k is Ellipsis)
            fill = len(shape) - (len(key) - 1)
            if fill < 0:
                raise IndexError(f"too many indices for a {len(shape)}-d array")
            key = key[:i] + (slice(None),) * fill + key[i + 1:]
        if len(key) > len(shape):
            raise IndexError(f"too many indices: {len(key)} for a {len(shape)}-d array")
        key = key + (slice(None),) * (len(shape) - len(key))
        sel = cls()
        for dim, (k, n) in enumerate(zip(key, shape)):
            if isinstance(k, slice):
                # The end of the region is what must lie inside (an empty slice such as
                # slice(7, 5) is fine); without a stop, the start.
                bound = k.stop if k.stop is not None else k.start
                if strict and bound is not None and not -n <= operator.index(bound) <= n:
                    raise ZarrflowIndexError(f"region {k} reaches outside axis {dim} of size {n}")
                start, stop, step = k.indices(n)
                r = range(start, stop, step)
                if step < 0 and len(r):
                    sel.start.append(r[-1])
                    sel.step.append(-step)
                    sel.reverse.append(True)
                else:
                    sel.start.append(r.start if len(r) else 0)
                    sel.step.append(abs(step))
                    sel.reverse.append(False)
                sel.count.append(len(r))
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise TypeError(f"unsupported index {k!r}: use integers, slices or '...'") from None
                if i < -n or i >= n:
                    raise ZarrflowIndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
                sel.start.append(i % n)
                sel.count.append(1)
                sel.step.append(1)
                sel.reverse.append(False)
                sel.drop.add(dim)
        return sel
