"""Selections with integer arrays, boolean masks, ``None`` and pointwise coordinates.

Three ways to index an :class:`zarrflow.Array`, as in zarr-python:

- ``arr.oindex[...]`` — orthogonal: one integer, slice, or 1-d integer/boolean array per
  dimension, each selecting along its own dimension (``arr.oindex[[0, 5], :, [1, 2]]`` has shape
  ``(2, n1, 2)``).
- ``arr.vindex[...]`` — pointwise (coordinate) selection: integer arrays broadcast together and
  pick one element per point (``arr.vindex[[0, 5], [1, 2]]`` reads ``arr[0, 1]`` and
  ``arr[5, 2]``); a boolean mask picks the points where it is True. Integers count as 1-element
  arrays (as in zarr-python). Slices may follow: their dimensions come after the points', as
  with xarray's and dask's vectorised indexing.
- ``arr[...]`` — NumPy semantics when at most one dimension has an array index (an integer
  array of any shape, or a boolean mask over one or more dimensions), including NumPy's rule
  that the array's dimensions move to the front when an integer stands apart from it
  (``arr[0, :, [1, 2]]`` has shape ``(2, n1)``; ``.oindex`` keeps them in place). With several
  array indices it behaves as zarr-python's ``Array.__getitem__``: integer arrays and integers
  for every dimension select points (NumPy's result too); 1-d arrays for every dimension, some
  boolean, select orthogonally; anything else with several arrays is an error that points to
  ``.oindex``/``.vindex``, as in zarr-python. ``None`` (``np.newaxis``) inserts a dimension of
  length 1.

How a selection is read: every chunk it touches is read once per call. Orthogonal selections
group each dimension's sorted, de-duplicated indices by chunk; per chunk, indices that are evenly
spaced become one strided region read straight into the result, others one bounding region read
into a scratch buffer and gathered from it. Pointwise selections group their points by chunk and
read each group's bounding box. The regions of one call are read concurrently (each region's own
chunks in parallel on the array's thread pool); duplicates, unsorted indices and negative steps
are applied afterwards with one NumPy gather or a view.
"""

from __future__ import annotations

import itertools
import operator
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .errors import ZarrflowIndexError

if TYPE_CHECKING:
    from ._api import Array


# ---------------------------------------------------------------------------------------------
# Describing index values without printing them
# ---------------------------------------------------------------------------------------------

def describe(value: Any) -> str:
    """A short description of an index for error messages: never the values of a large array."""
    if isinstance(value, (np.ndarray, list, tuple)) and not isinstance(value, str):
        a = np.asarray(value) if not isinstance(value, np.ndarray) else value
        if a.size <= 8 and a.ndim <= 1:
            return f"{a.tolist()!r}"
        text = f"{type(value).__name__} of shape {a.shape}, dtype {a.dtype}"
        if a.size and a.dtype.kind in "iub":
            text += f", min {a.min()}, max {a.max()}"
        return text
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------
# Parsing: a key becomes a list of entries, one per key item
# ---------------------------------------------------------------------------------------------

class Entry(NamedTuple):
    kind: str          # "int", "slice", "array" (integer), "mask" (boolean) or "none"
    value: Any         # int, slice, np.ndarray or None
    nax: int           # dimensions of the array it consumes


def _entry(k: Any) -> Entry:
    if k is None:
        return Entry("none", None, 0)
    if isinstance(k, slice):
        return Entry("slice", k, 1)
    if isinstance(k, (bool, np.bool_)):
        raise TypeError(f"a boolean scalar index ({k!r}) is not supported; use a boolean array")
    if not isinstance(k, (np.ndarray, list, tuple)):
        try:
            return Entry("int", operator.index(k), 1)
        except TypeError:
            pass
        if not hasattr(k, "__array__"):
            raise TypeError(f"unsupported index {describe(k)}: use integers, slices, '...', None, "
                            f"integer arrays or boolean arrays")
    try:
        a = np.asarray(k)
    except (ValueError, TypeError) as e:
        raise TypeError(f"unsupported index {describe(k)}: {e}") from None
    if a.dtype == bool:
        if a.ndim == 0:
            raise TypeError("a boolean scalar index is not supported; use a boolean array")
        return Entry("mask", a, a.ndim)
    if a.size == 0 and a.dtype.kind not in "iu":
        a = a.astype(np.intp)  # [] selects nothing
    if a.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer or boolean type, got "
                         f"{describe(k)}")
    if a.ndim == 0:
        return Entry("int", int(a), 1)
    return Entry("array", a.astype(np.int64, copy=False), 1)


def parse(key: tuple, ndim: int) -> list[Entry]:
    """Entries for ``key`` with '...' expanded into full slices."""
    n_ellipsis = sum(1 for k in key if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    entries: list[Entry | None] = [None if k is Ellipsis else _entry(k) for k in key]
    used = sum(e.nax for e in entries if e is not None)
    if used > ndim:
        raise IndexError(f"too many indices: {used} for a {ndim}-d array")
    fill = [Entry("slice", slice(None), 1)] * (ndim - used)
    if n_ellipsis:
        i = entries.index(None)
        return entries[:i] + fill + entries[i + 1:]  # type: ignore[return-value]
    return entries + fill  # type: ignore[return-value]


def _axis_of(entries: list[Entry]) -> list[int]:
    """The first array dimension each entry indexes (None entries: the next one)."""
    axes, ax = [], 0
    for e in entries:
        axes.append(ax)
        ax += e.nax
    return axes


def _check_bounds(a: np.ndarray, n: int, axis: int) -> np.ndarray:
    """``a`` with negative indices wrapped, or an error describing (not printing) it."""
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if lo < -n or hi >= n:
            raise ZarrflowIndexError(f"index array ({describe(a)}) is out of bounds for axis "
                                     f"{axis} with size {n}")
        if lo < 0:
            a = np.where(a < 0, a + n, a)
    return a


def _mask_coords(mask: np.ndarray, shape: tuple[int, ...], axis: int) -> tuple[np.ndarray, ...]:
    if mask.shape != shape:
        raise ZarrflowIndexError(f"boolean index ({describe(mask)}) does not match axes "
                                 f"{axis}..{axis + mask.ndim - 1} of shape {shape}")
    return tuple(c.astype(np.int64) for c in np.nonzero(mask))


# ---------------------------------------------------------------------------------------------
# Per-dimension selections
# ---------------------------------------------------------------------------------------------

class _Slice(NamedTuple):
    """An ascending strided range, read reversed when ``reverse``."""
    start: int
    count: int
    step: int
    reverse: bool


class _Points(NamedTuple):
    """Sorted unique indices, and where each requested index lies among them (None: as is)."""
    unique: np.ndarray
    inverse: np.ndarray | None


def _slice_sel(s: slice, n: int) -> _Slice:
    start, stop, step = s.indices(n)
    r = range(start, stop, step)
    if step < 0 and len(r):
        return _Slice(r[-1], len(r), -step, True)
    return _Slice(r.start if len(r) else 0, len(r), abs(step), False)


def _points_sel(a: np.ndarray) -> _Points:
    if a.size <= 1 or bool(np.all(a[1:] > a[:-1])):
        return _Points(a, None)
    u, inv = np.unique(a, return_inverse=True)
    return _Points(u, inv.reshape(-1))


# ---------------------------------------------------------------------------------------------
# Running regions concurrently
# ---------------------------------------------------------------------------------------------

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    with _pools_lock:
        if workers not in _pools:
            _pools[workers] = ThreadPoolExecutor(workers, thread_name_prefix="zarrflow-index")
        return _pools[workers]


def _run(arr: "Array", regions: list[tuple[list[int], list[int], list[int], np.ndarray]]) -> None:
    """Reads each (start, count, step, destination view). The regions touch disjoint chunks;
    they run on a few threads at once, each region's chunks on the array's pool."""
    if len(regions) == 1:
        arr._read_region(*regions[0])
        return
    workers = max(1, min(len(regions), arr._executor.threads))
    futures = [_pool(workers).submit(arr._read_region, *r) for r in regions]
    errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e


# ---------------------------------------------------------------------------------------------
# The orthogonal reader
# ---------------------------------------------------------------------------------------------

class _Piece(NamedTuple):
    start: int
    count: int
    step: int
    dst: int                     # where it lands along the dimension in the compact result
    local: np.ndarray | None     # None: read straight in; else positions in the bounding region


def _point_pieces(u: np.ndarray, chunk: int) -> list[_Piece]:
    """One piece per chunk that sorted unique indices ``u`` touch."""
    c = u // chunk
    bounds = np.flatnonzero(c[1:] != c[:-1]) + 1
    pieces = []
    for s, e in zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(u)].tolist()):
        v = u[s:e]
        first = int(v[0])
        if len(v) == 1:
            pieces.append(_Piece(first, 1, 1, s, None))
            continue
        d = np.diff(v)
        if bool(np.all(d == d[0])):
            pieces.append(_Piece(first, len(v), int(d[0]), s, None))
            continue
        g = int(np.gcd.reduce(d))
        pieces.append(_Piece(first, (int(v[-1]) - first) // g + 1, g, s, (v - first) // g))
    return pieces


def read_orthogonal(arr: "Array", sels: list[_Slice | _Points]) -> np.ndarray:
    """The compact result (one dimension per array dimension, sorted unique indices), with
    duplicates, order and negative steps applied."""
    shape = tuple(s.count if isinstance(s, _Slice) else len(s.unique) for s in sels)
    out = np.empty(shape, dtype=arr.dtype)
    if out.size:
        per_dim = []
        for s, chunk in zip(sels, arr.chunks):
            if isinstance(s, _Slice):
                per_dim.append([_Piece(s.start, s.count, s.step, 0, None)])
            else:
                per_dim.append(_point_pieces(s.unique, chunk))
        regions, gathers = [], []
        for block in itertools.product(*per_dim):
            start = [p.start for p in block]
            count = [p.count for p in block]
            step = [p.step for p in block]
            dst = tuple(slice(p.dst, p.dst + (p.count if p.local is None else len(p.local)))
                        for p in block) + (Ellipsis,)  # a view, also of a 0-d result
            if all(p.local is None for p in block):
                regions.append((start, count, step, out[dst]))
            else:
                scratch = np.empty(count, dtype=arr.dtype)
                regions.append((start, count, step, scratch))
                pick = np.ix_(*[np.arange(p.count) if p.local is None else p.local
                                for p in block])
                gathers.append((dst, scratch, pick))
        _run(arr, regions)
        for dst, scratch, pick in gathers:
            out[dst] = scratch[pick]
    for axis, s in enumerate(sels):
        if isinstance(s, _Points) and s.inverse is not None:
            out = np.take(out, s.inverse, axis=axis)
    flips = tuple(slice(None, None, -1) if isinstance(s, _Slice) and s.reverse else slice(None)
                  for s in sels)
    return out[flips] if any(f.step for f in flips) else out


# ---------------------------------------------------------------------------------------------
# The pointwise reader
# ---------------------------------------------------------------------------------------------

def read_points(arr: "Array", coords: dict[int, np.ndarray],
                slices: dict[int, _Slice]) -> np.ndarray:
    """Elements at N points (``coords``: dimension → (N,) indices, in bounds, non-negative) with
    every dimension in ``slices`` read whole: shape (N, *slice counts in dimension order)."""
    paxes = sorted(coords)
    saxes = sorted(slices)
    n = len(coords[paxes[0]])
    scounts = [slices[a].count for a in saxes]
    out = np.empty((n, *scounts), dtype=arr.dtype)
    if out.size:
        cc = np.stack([coords[a] // arr.chunks[a] for a in paxes])  # (P, N) chunk coordinates
        order = np.lexsort(cc[::-1])
        sorted_cc = cc[:, order]
        bounds = np.flatnonzero(np.any(sorted_cc[:, 1:] != sorted_cc[:, :-1], axis=0)) + 1
        regions, gathers, repeats = [], [], []
        for s, e in zip(np.r_[0, bounds].tolist(), np.r_[bounds, n].tolist()):
            ids = order[s:e]
            local = [coords[a][ids] for a in paxes]
            lo = [int(x.min()) for x in local]
            start, count, step = [], [], []
            for axis in range(arr.ndim):
                if axis in coords:
                    i = paxes.index(axis)
                    start.append(lo[i])
                    count.append(int(local[i].max()) - lo[i] + 1)
                    step.append(1)
                else:
                    sl = slices[axis]
                    start.append(sl.start)
                    count.append(sl.count)
                    step.append(sl.step)
            if all(int(x.max()) == b for x, b in zip(local, lo)):
                # One distinct point (a time step of a time-chunked array): read straight into
                # the result, copied to any repeats afterwards.
                regions.append((start, count, step, np.expand_dims(out[ids[0], ...], paxes)))
                if len(ids) > 1:
                    repeats.append(ids)
                continue
            scratch = np.empty(count, dtype=arr.dtype)
            regions.append((start, count, step, scratch))
            gathers.append((ids, scratch, tuple(x - b for x, b in zip(local, lo))))
        _run(arr, regions)
        for ids, scratch, pick in gathers:
            # Point dimensions first, then the sliced ones, as in the result.
            out[ids] = np.moveaxis(scratch, paxes, range(len(paxes)))[pick]
        for ids in repeats:
            out[ids[1:]] = out[ids[0]]
    flips = (slice(None),) + tuple(slice(None, None, -1) if slices[a].reverse else slice(None)
                                   for a in saxes)
    return out[flips] if any(f.step for f in flips) else out


# ---------------------------------------------------------------------------------------------
# The three front doors
# ---------------------------------------------------------------------------------------------

def oindex(arr: "Array", key: Any) -> np.ndarray:
    entries = parse(key if isinstance(key, tuple) else (key,), arr.ndim)
    for e in entries:
        if e.kind == "mask" and e.nax != 1 or e.kind == "array" and e.value.ndim != 1:
            raise IndexError(f"orthogonal indexing takes 1-d arrays, got {describe(e.value)} "
                             f"(use .vindex or arr[...] for multi-dimensional indices)")
    return _orthogonal(arr, entries)


def _orthogonal(arr: "Array", entries: list[Entry]) -> np.ndarray:
    """Orthogonal selection of parsed entries, each array 1-d; result dimensions in key order
    (integers drop theirs, None adds one)."""
    sels: list[_Slice | _Points] = []
    shape: list[int] = []
    for e, axis in zip(entries, _axis_of(entries)):
        if e.kind == "none":
            shape.append(1)
            continue
        n = arr.shape[axis]
        if e.kind == "slice":
            s = _slice_sel(e.value, n)
            sels.append(s)
            shape.append(s.count)
        elif e.kind == "int":
            if not -n <= e.value < n:
                raise ZarrflowIndexError(f"index {e.value} is out of bounds for axis {axis} "
                                         f"with size {n}")
            sels.append(_Points(np.array([e.value % n], np.int64), None))
        else:
            a = (_mask_coords(e.value, (n,), axis)[0] if e.kind == "mask"
                 else _check_bounds(e.value, n, axis))
            sels.append(_points_sel(a))
            shape.append(len(a))
    return read_orthogonal(arr, sels).reshape(shape)


def vindex(arr: "Array", key: Any) -> np.ndarray:
    entries = parse(key if isinstance(key, tuple) else (key,), arr.ndim)
    if any(e.kind == "none" for e in entries):
        raise IndexError("np.newaxis / None is not supported with .vindex")
    # Integers are 1-element coordinate arrays here, as in zarr-python.
    entries = [Entry("array", np.array([e.value], np.int64), 1) if e.kind == "int" else e
               for e in entries]
    if not any(e.kind in ("array", "mask") for e in entries):
        raise IndexError("vindex needs at least one integer or boolean array; use arr[...] for "
                         "slices")
    points, broadcast_shape = _broadcast_points(arr, entries)
    slices = {axis: _slice_sel(e.value, arr.shape[axis])
              for e, axis in zip(entries, _axis_of(entries)) if e.kind == "slice"}
    result = read_points(arr, points, slices)
    return result.reshape(broadcast_shape + result.shape[1:])


def _broadcast_points(arr: "Array", entries: list[Entry]
                      ) -> tuple[dict[int, np.ndarray], tuple[int, ...]]:
    """Coordinates per dimension of the integer/array/mask entries, broadcast and flattened, and
    the broadcast shape."""
    parts: list[tuple[list[int], list[np.ndarray]]] = []
    for e, axis in zip(entries, _axis_of(entries)):
        if e.kind == "mask":
            cs = _mask_coords(e.value, arr.shape[axis:axis + e.nax], axis)
            parts.append((list(range(axis, axis + e.nax)), list(cs)))
        elif e.kind == "array":
            parts.append(([axis], [_check_bounds(e.value, arr.shape[axis], axis)]))
        elif e.kind == "int":
            n = arr.shape[axis]
            if not -n <= e.value < n:
                raise ZarrflowIndexError(f"index {e.value} is out of bounds for axis {axis} "
                                         f"with size {n}")
            parts.append(([axis], [np.array(e.value % n, np.int64)]))
    flat_axes = [a for axes, _ in parts for a in axes]
    flat_arrays = [c for _, cs in parts for c in cs]
    try:
        b = np.broadcast_arrays(*flat_arrays)
    except ValueError:
        shapes = ", ".join(str(np.shape(c)) for c in flat_arrays)
        raise IndexError(
            f"index arrays could not be broadcast together (shapes {shapes})") from None
    shape = b[0].shape
    return {a: np.ascontiguousarray(x).reshape(-1) for a, x in zip(flat_axes, b)}, shape


def getitem(arr: "Array", key: tuple) -> np.ndarray:
    """``arr[key]`` for keys that hold an array index or None (see the module docstring)."""
    entries = parse(key, arr.ndim)
    arrays = [e for e in entries if e.kind in ("array", "mask")]
    if not arrays:
        return _basic_with_new_axes(arr, entries)
    if len(arrays) > 1:
        if all(e.kind in ("int", "array") for e in entries):
            return vindex_numpy(arr, entries)  # zarr-python: pointwise; NumPy agrees
        if len(entries) == len(arrays) and all(e.nax == 1 and e.value.ndim == 1 for e in arrays):
            return _orthogonal(arr, entries)  # zarr-python: 1-d arrays (some boolean) for all
        raise IndexError(f"{len(arrays)} array indices together with slices, None or integers: "
                         f"NumPy and zarr-python disagree on what that selects; use "
                         f".oindex[...] (each array along its own dimension) or .vindex[...] "
                         f"(arrays broadcast into points)")
    return _numpy_single(arr, entries)


def vindex_numpy(arr: "Array", entries: list[Entry]) -> np.ndarray:
    points, shape = _broadcast_points(arr, entries)
    return read_points(arr, points, {}).reshape(shape)


def _numpy_single(arr: "Array", entries: list[Entry]) -> np.ndarray:
    """NumPy advanced indexing with one array (or mask) entry among integers, slices and None."""
    (e,) = [x for x in entries if x.kind in ("array", "mask")]
    real = [x for x in entries if x.kind != "none"]
    if e.kind == "array" or e.nax == 1:
        # An orthogonal read with the array flattened, its dimension then moved to the front.
        index = e.value.reshape(-1) if e.kind == "array" else e.value
        result = _orthogonal(arr, [Entry(e.kind, index, 1) if x is e else x for x in real])
        at = next(i for i, x in enumerate(real) if x is e)
        pos = sum(1 for x in real[:at] if x.kind == "slice")
        result = np.moveaxis(result, pos, 0)
        adv_shape = e.value.shape if e.kind == "array" else result.shape[:1]
        result = result.reshape(adv_shape + result.shape[1:])
    else:  # a mask over several dimensions: its True elements are points
        points, adv_shape = _broadcast_points(arr, real)
        slices = {axis: _slice_sel(x.value, arr.shape[axis])
                  for x, axis in zip(real, _axis_of(real)) if x.kind == "slice"}
        result = read_points(arr, points, slices)
    return _numpy_layout(result, entries, len(adv_shape))


def _numpy_layout(result: np.ndarray, entries: list[Entry], nadv: int) -> np.ndarray:
    """From (advanced dimensions, sliced dimensions in key order) to NumPy's layout: the
    advanced block where its entries stand when they are adjacent (integers count as advanced),
    else first; None entries add length-1 dimensions."""
    adv = [i for i, e in enumerate(entries) if e.kind in ("int", "array", "mask")]
    contiguous = adv == list(range(adv[0], adv[-1] + 1))
    order: list[int | None] = [] if contiguous else list(range(nadv))
    k = 0
    for i, e in enumerate(entries):
        if e.kind == "none":
            order.append(None)
        elif e.kind == "slice":
            order.append(nadv + k)
            k += 1
        elif contiguous and i == adv[0]:
            order.extend(range(nadv))
    shape = [1 if o is None else result.shape[o] for o in order]
    return result.transpose([o for o in order if o is not None]).reshape(shape)


def _basic_with_new_axes(arr: "Array", entries: list[Entry]) -> np.ndarray:
    from ._api import _Selection

    plain = tuple(e.value for e in entries if e.kind != "none")
    sel = _Selection.parse(plain, arr.shape)
    result = arr._read(sel, None)
    shape = []
    it = iter(result.shape)
    for axis_entry in entries:
        if axis_entry.kind == "none":
            shape.append(1)
        elif axis_entry.kind == "slice":
            shape.append(next(it))
        else:
            next(it)  # integer: read as length 1, dropped
    return result.reshape(shape)


class OIndex:
    """``arr.oindex[...]``: orthogonal selection (see :mod:`zarrflow._indexing`)."""

    def __init__(self, arr: "Array"):
        self._arr = arr

    def __getitem__(self, key: Any) -> np.ndarray:
        return oindex(self._arr, key)


class VIndex:
    """``arr.vindex[...]``: pointwise (coordinate) selection (see :mod:`zarrflow._indexing`)."""

    def __init__(self, arr: "Array"):
        self._arr = arr

    def __getitem__(self, key: Any) -> np.ndarray:
        return vindex(self._arr, key)
