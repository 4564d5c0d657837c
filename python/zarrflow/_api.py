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
                    virtual_chunk_containers: Any = None,
                    limits: dict[str, int] | None = None) -> tuple[_core.Store, str]:
    """The core store for ``path``: an Icechunk repository or a Kerchunk reference set when the
    path is one (``_icechunk``, ``_kerchunk``), else a local directory or a remote store.
    ``limits``: open()'s, of which repositories use their metadata caps."""
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
            return _icechunk.open_remote_repository(p, storage_options, ref, containers,
                                                    limits), ""
        store = open_remote(p, storage_options)
        if containers:  # virtual chunks: an Icechunk repository
            return _icechunk.open_repository(p, store, None, containers, limits), ""
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
        return _icechunk.open_repository(p, _core.open_file_store(p), ref, containers,
                                         limits), ""
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
        return _core.open_node(store, "", zarr_format, consolidated,
                               **_node_limits(limits)), store
    except NodeNotFoundError as original:
        try:
            repo_store = _icechunk.open_repository(path, store, None, {}, limits)
        except NodeNotFoundError:
            raise original from None
        return _core.open_node(repo_store, "", zarr_format, consolidated,
                               **_node_limits(limits)), repo_store


def _wrap(node: Any, executor: _core.Executor) -> "Array | Group":
    if isinstance(node, _core.Array):
        return Array(node, executor)
    return Group(node, executor)


_NODE_LIMITS = ("max_chunk_bytes", "max_metadata_bytes", "max_metadata_depth")
_LIMITS = _NODE_LIMITS + ("max_manifest_bytes",)


def _node_limits(limits: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in limits.items() if k in _NODE_LIMITS}


def open(path: str | os.PathLike, *, zarr_format: int | None = None,
         use_consolidated: bool | None = None, threads: int | None = None,
         storage_options: dict[str, Any] | None = None, ref: str | None = None,
         virtual_chunk_containers: Any = None,
         limits: dict[str, int] | None = None) -> "Array | Group":
    """Open the Zarr array or group (v2 or v3) stored at ``path``.

    Only metadata is read here; chunks are read when the array is indexed.

    Parameters
    ----------
    path : str or os.PathLike
        A local directory, or a ``file://``, ``s3://bucket/prefix``, ``gs://bucket/prefix`` or
        ``http(s)://`` URL; an Icechunk repository (a directory or URL holding one); a Kerchunk
        reference set (``"refs.json"``, or ``"reference://"`` with ``storage_options``).
    zarr_format : {2, 3}, optional
        Read only this Zarr version's metadata. Default: detect it.
    use_consolidated : bool, optional
        As in zarr-python: None lists a group's members from its consolidated metadata when it
        has some, True requires consolidated metadata, False lists and opens members from the
        store.
    threads : int, optional
        Size of the thread pool this hierarchy decodes with. Default: the shared pool, sized by
        ``ZARRFLOW_NUM_THREADS`` or the CPUs of this process (:func:`set_num_threads`). Remote
        stores fetch on their own I/O pool of ``max_in_flight`` threads.
    storage_options : dict, optional
        Remote stores: credentials, endpoint, requests in flight, timeouts and retries (see the
        Storage options of the settings page). Kerchunk reference sets: ``fo``,
        ``remote_protocol`` and ``remote_options``, as fsspec takes them.
    ref : str, optional
        Icechunk repositories: the branch (default ``"main"``), tag or snapshot id to read.
    virtual_chunk_containers : dict or list of str, optional
        Icechunk repositories and Kerchunk reference sets: the URL prefixes virtual chunks may
        be read from, as ``{url_prefix: storage_options}`` (or a list of prefixes, read with
        the default options). Virtual chunks anywhere else are refused.
    limits : dict, optional
        Bounds on what a store's metadata may make zarrflow read or allocate, for this node and
        everything opened through it: ``max_chunk_bytes`` (decoded bytes of one chunk,
        default 2 GiB), ``max_metadata_bytes`` (one metadata document, default 64 MiB; also
        an Icechunk snapshot, repo info file or config.yaml, stored and decompressed),
        ``max_metadata_depth`` (JSON nesting, default 256), ``max_manifest_bytes`` (one
        Icechunk manifest, decompressed, default 1 GiB).

    Returns
    -------
    Array or Group
        The node at ``path``. Its ``snapshot_id`` is the Icechunk snapshot read (None for other
        stores).

    Raises
    ------
    NodeNotFoundError
        No Zarr array or group at ``path`` (or ``ref`` given for a path that is not an
        Icechunk repository).
    MetadataError
        The metadata is invalid, or ``use_consolidated=True`` and the group has none.
    StoreIOError
        The store could not be read (an I/O error, or a server's error answer).
    ValueError
        An unknown name in ``limits``, or options that do not apply to this kind of store.
    NotImplementedError
        A URL scheme zarrflow does not read.

    See Also
    --------
    open_array, open_group

    Examples
    --------
    >>> import zarrflow
    >>> store = zarrflow.open("era5.zarr")
    >>> store["data"]
    <zarrflow.Array 'data' shape=(8, 6, 721, 1440) dtype=float32 chunks=(1, 1, 721, 1440)>
    >>> public = zarrflow.open("s3://bucket/era5.zarr", storage_options={"anon": True})
    """
    limits = dict(limits or {})
    for name in limits:
        if name not in _LIMITS:
            raise ValueError(unknown_name("limit", name, _LIMITS))
    p = os.fspath(path)
    store, node_path = _store_and_path(path, storage_options, ref=ref,
                                       virtual_chunk_containers=virtual_chunk_containers,
                                       limits=limits)
    consolidated = use_consolidated is not False
    if is_remote(p) and ref is None and not virtual_chunk_containers \
            and not isinstance(store, _core.ReferenceStore):
        node, store = _open_remote_node(p, store, zarr_format, consolidated, limits)
    else:
        node = _core.open_node(store, node_path, zarr_format, consolidated,
                               **_node_limits(limits))
    if use_consolidated and isinstance(node, _core.Group) and not node.consolidated:
        raise MetadataError(f"'{os.fspath(path)}' has no consolidated metadata "
                            f"(use_consolidated=True; pass None or False to list the store)")
    wrapped = _wrap(node, make_executor(threads))
    wrapped.snapshot_id = getattr(store, "snapshot_id", None)
    return wrapped


def open_array(path: str | os.PathLike, **kwargs: Any) -> "Array":
    """Open the Zarr array at ``path``: :func:`open`, refusing a group.

    Parameters
    ----------
    path : str or os.PathLike
        As for :func:`open`.
    **kwargs
        The keyword arguments of :func:`open`.

    Returns
    -------
    Array

    Raises
    ------
    NodeNotFoundError
        ``path`` holds a group, or nothing.
    """
    node = open(path, **kwargs)
    if not isinstance(node, Array):
        raise NodeNotFoundError(f"'{os.fspath(path)}' is a group, not an array")
    return node


def open_group(path: str | os.PathLike, **kwargs: Any) -> "Group":
    """Open the Zarr group at ``path``: :func:`open`, refusing an array.

    Parameters
    ----------
    path : str or os.PathLike
        As for :func:`open`.
    **kwargs
        The keyword arguments of :func:`open`.

    Returns
    -------
    Group

    Raises
    ------
    NodeNotFoundError
        ``path`` holds an array, or nothing.
    """
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
        """The Zarr version of the node's metadata: 2 or 3."""
        return self._h.zarr_format

    @cached_property
    def attrs(self) -> dict:
        """The node's user attributes (v3 ``attributes``, or v2 ``.zattrs``), as a dict."""
        return json.loads(self._h.attrs_json)


class Group(_Node):  # numpydoc ignore=PR01
    """A Zarr group: a mapping from member names to arrays and groups.

    Not made directly: :func:`open` and :func:`open_group` return groups, and indexing a group
    returns its members. ``group["name"]`` and ``group["a/b"]`` open members, ``"name" in
    group`` checks for one, ``len(group)`` and ``iter(group)`` count and list the names.

    Attributes
    ----------
    snapshot_id : str or None
        The Icechunk snapshot this group reads (its ref was resolved once, when it was opened);
        None for other stores.

    Examples
    --------
    >>> group = zarrflow.open_group("wb2.zarr")
    >>> group.keys()
    ['2m_temperature', 'geopotential', 'latitude', 'level', ..., 'v_component_of_wind']
    >>> t2m = group["2m_temperature"]
    """

    @property
    def consolidated(self) -> bool:
        """True when members were listed from consolidated metadata."""
        return self._h.consolidated

    def keys(self) -> list[str]:
        """The names of the group's members (arrays and groups), sorted.

        Returns
        -------
        list of str
        """
        return self._h.member_names()

    def __iter__(self) -> Iterator[str]:
        """The names of the members, as :meth:`keys` lists them."""
        return iter(self.keys())

    def __len__(self) -> int:
        """The number of members."""
        return len(self.keys())

    def __contains__(self, name: object) -> bool:
        """Whether the group has the member ``name``.

        Parameters
        ----------
        name : str
            A member name or a path below the group; anything else is not a member.

        Returns
        -------
        bool
        """
        if not isinstance(name, str):
            return False
        try:
            self._h.open_member(name)
        except NodeNotFoundError:
            return False
        return True

    def __getitem__(self, name: str) -> "Array | Group":
        """The member ``name``.

        Parameters
        ----------
        name : str
            A member name (``"t2m"``) or a path below the group (``"pressure/u"``).

        Returns
        -------
        Array or Group

        Raises
        ------
        KeyError
            No such member; the message lists the names that are there, closest match first.
        """
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
        """Every member, opened.

        Returns
        -------
        list of (str, Array or Group)
            ``(name, member)`` pairs in the order of :meth:`keys`.
        """
        return [(k, self[k]) for k in self.keys()]

    def arrays(self) -> list[tuple[str, "Array"]]:
        """The members that are arrays.

        Returns
        -------
        list of (str, Array)
        """
        return [(k, v) for k, v in self.members() if isinstance(v, Array)]

    def groups(self) -> list[tuple[str, "Group"]]:
        """The members that are groups.

        Returns
        -------
        list of (str, Group)
        """
        return [(k, v) for k, v in self.members() if isinstance(v, Group)]

    def __repr__(self) -> str:
        return f"<zarrflow.Group '{self.path or '/'}' v{self.zarr_format}>"


class Array(_Node):  # numpydoc ignore=PR01
    """A Zarr array. Index it like NumPy (``arr[0, 10:20, ::2]``) to read into a new ndarray.

    Not made directly: :func:`open`, :func:`open_array` and indexing a :class:`Group` return
    arrays. Reading decodes the chunks a selection touches in parallel, with the GIL released,
    straight into the result. :meth:`read` reads a region into a buffer of yours (``out=``) or
    into GPU memory (``device="cuda"``); :attr:`oindex` and :attr:`vindex` select orthogonally
    and pointwise, as in zarr-python.

    Attributes
    ----------
    snapshot_id : str or None
        The Icechunk snapshot this array reads (its ref was resolved once, when it was opened);
        None for other stores.
    last_read_report : dict or None
        The last GPU read's report: chunks decoded on the GPU and on the CPU, bytes moved,
        fallbacks and their reasons, time spent per stage. None before the first GPU read.

    Examples
    --------
    >>> t2m = zarrflow.open("wb2.zarr")["2m_temperature"]
    >>> t2m.shape, t2m.dtype, t2m.chunks
    ((8, 721, 1440), dtype('float32'), (1, 721, 1440))
    >>> field = t2m[0, ::4, ::4]  # a NumPy array
    >>> out = np.empty((2, 721, 1440), np.float32)
    >>> t2m.read((slice(0, 2),), out=out)  # into a reused buffer
    """

    last_read_report: dict | None = None

    # --- metadata -------------------------------------------------------------------------
    @cached_property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return tuple(self._h.shape)

    @cached_property
    def dtype(self) -> np.dtype:
        """Element type, always in native byte order (big-endian stores are swapped on read)."""
        return _numpy_dtype(self._h.dtype)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    def remote_stats(self, reset: bool = False) -> dict[str, int] | None:
        """Transport counters of a remote store.

        Parameters
        ----------
        reset : bool, default False
            Zero the counters after reading them.

        Returns
        -------
        dict or None
            Requests, retries, bytes, requests in flight (now and the maximum) and I/O threads;
            None for local stores.
        """
        stats = self._h.remote_stats()
        if reset:
            self._h.reset_remote_stats()
        return stats

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array decoded (``size * dtype.itemsize``)."""
        return self.size * self.dtype.itemsize

    @cached_property
    def chunks(self) -> tuple[int, ...]:
        """Shape of the unit of reading: the inner chunk for sharded arrays."""
        return tuple(self._h.chunks)

    @cached_property
    def shards(self) -> tuple[int, ...] | None:
        """Shape of a shard (the unit of storage) for sharded arrays, else None."""
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
        """The codec chain in one line, as ``zarrflow inspect`` prints it."""
        return self._h.codecs_description

    @cached_property
    def metadata(self) -> dict:
        """The array's metadata document as stored (``zarr.json``, or v2 ``.zarray``)."""
        return json.loads(self._h.metadata_json)

    def info(self) -> dict:
        """Stored chunks and bytes (lists the store).

        Returns
        -------
        dict
            ``chunks_total`` (the chunk grid's size), ``chunks_present`` (chunks stored) and
            ``stored_bytes``.
        """
        return self._h.storage_info()

    def __len__(self) -> int:
        """The length of the first dimension (a TypeError for a 0-d array)."""
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
        """Read a hyperslab into host memory, into ``out``, or into GPU memory.

        Parameters
        ----------
        region : slice or tuple of slice, optional
            One slice per dimension (fewer: the rest whole; steps allowed, negative ones only
            on the host). None reads everything. The region must lie inside the array.
        out : numpy.ndarray, optional
            Decode into this array in place: the region's shape, the array's dtype, any
            strides. Host reads only.
        device : str, optional
            None: a NumPy array. ``"cuda"`` or ``"cuda:N"``: the chunks' compressed bytes go to
            the GPU and are decoded there; the result is a :class:`zarrflow.Tensor` in GPU
            memory. ``"cpu"``: a Tensor in host memory.
        stream : int, optional
            GPU reads: the CUDA stream (an integer handle) to order the read on; a consumer's
            stream waits on it through ``__dlpack__(stream=...)``. Default: a stream of
            zarrflow's, synchronised before returning.
        gpu_decode : {"auto", "on", "off"}, default "auto"
            GPU reads: ``"auto"`` decodes on the CPU what the GPU cannot (and says why, once),
            ``"on"`` raises instead, ``"off"`` decodes everything on the CPU.
        io : {"auto", "pinned", "direct", "cufile"}, default "auto"
            GPU reads of local files: ``"auto"``/``"pinned"`` read (buffered) into pinned host
            memory, ``"direct"`` uses O_DIRECT, ``"cufile"`` reads uncompressed chunks with
            GPUDirect Storage.

        Returns
        -------
        numpy.ndarray or Tensor
            ``out`` when given; a new NumPy array without ``device``; a Tensor that
            ``torch.from_dlpack``, ``cupy.from_dlpack`` and ``jax.dlpack.from_dlpack`` take
            without a copy with ``device``. A GPU read's report (chunks decoded where, bytes
            moved, fallbacks) is then in :attr:`last_read_report`.

        Raises
        ------
        ZarrflowIndexError
            The region reaches outside the array.
        ValueError
            ``out`` of the wrong shape or dtype, or read-only; ``out`` with ``device``; an
            unknown ``gpu_decode`` or ``io``.
        TypeError
            An integer or array index (use ``arr[...]`` for those).
        UnsupportedError
            ``device`` given for a data type or codec the GPU path cannot read, or
            ``gpu_decode="on"`` and a chunk the GPU cannot decode.
        CorruptChunkError
            A chunk's stored bytes cannot be decoded; the message names the array and chunk.

        Examples
        --------
        >>> arr = zarrflow.open("era5.zarr")["data"]
        >>> x = arr.read((slice(0, 2), slice(0, 3)))  # a NumPy array
        >>> t = arr.read((slice(0, 2),), device="cuda")
        >>> batch = torch.from_dlpack(t)  # no copy
        """
        if region is None:
            region = ()
        elif not isinstance(region, tuple):
            region = (region,)
        for r in region:
            if not isinstance(r, slice) and r is not Ellipsis:
                raise TypeError(f"read() takes slices, got {r!r}; use arr[...] for integer "
                                "indexing")
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
                                                    gpu_decode, io, self._executor,
                                                    _gpu.reader())
        self.last_read_report = report
        _gpu.say_once(report["notes"])
        return tensor

    def __getitem__(self, key: Any) -> np.ndarray:
        """NumPy-style selection, read into a new NumPy array.

        Parameters
        ----------
        key : int, slice, ellipsis, None, array-like, or a tuple of them
            Integers, slices (any step), ``...``, ``None`` (a new axis), an integer array or a
            boolean mask; several arrays combine as in zarr-python.

        Returns
        -------
        numpy.ndarray
            The selection, with the dimensions NumPy's indexing would give.

        Raises
        ------
        IndexError
            An index out of bounds, or too many indices.
        """
        key = key if isinstance(key, tuple) else (key,)
        if not _is_basic(key):
            return _indexing.getitem(self, key)
        sel = _Selection.parse(key, self.shape)
        result = self._read(sel, None)
        if sel.drop:
            kept = tuple(n for i, n in enumerate(result.shape) if i not in sel.drop)
            result = result.reshape(kept)
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
        """The whole array, read (``np.asarray(arr)``).

        Parameters
        ----------
        dtype : numpy.dtype, optional
            Convert the result to this type.
        copy : bool, optional
            NumPy's ``copy`` argument; the result is always a new array.

        Returns
        -------
        numpy.ndarray
        """
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
                    raise TypeError(
                        f"unsupported index {k!r}: use integers, slices or '...'") from None
                if i < -n or i >= n:
                    raise ZarrflowIndexError(
                        f"index {i} is out of bounds for axis {dim} with size {n}")
                sel.start.append(i % n)
                sel.count.append(1)
                sel.step.append(1)
                sel.reverse.append(False)
                sel.drop.add(dim)
        return sel
