"""Integer-array, boolean, pointwise and newaxis selections of zarrflow.Array, compared with
zarr-python (``oindex``, ``vindex``, ``__getitem__``) and NumPy (``__getitem__`` with one array
index), and the chunk reads they cost (each chunk once per call, counted on an HTTP server)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

import zarrflow  # noqa: E402
from zarrflow.errors import ZarrflowIndexError  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from servers.range_server import RangeServer  # noqa: E402

SHAPE = (20, 7, 9)
CHUNKS = (3, 4, 5)


@pytest.fixture(scope="module", params=[2, 3])
def arrays(request, tmp_path_factory):
    """(zarrflow array, zarr-python array, NumPy reference) of one (20, 7, 9) int32 array."""
    path = tmp_path_factory.mktemp("idx") / f"a{request.param}.zarr"
    ref = np.arange(np.prod(SHAPE), dtype="int32").reshape(SHAPE)
    z = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype="int32", fill_value=0,
                          zarr_format=request.param)
    z[...] = ref
    return zarrflow.open(path), z, ref


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _each_key(keys: dict[str, tuple]):
    """Parametrizes a test over the index keys in `keys`, named by their ids."""
    return pytest.mark.parametrize("key", list(keys.values()), ids=list(keys))


M0 = np.arange(20) % 3 == 1                      # a mask over axis 0
M12 = (np.arange(63).reshape(7, 9) % 4) == 0     # a mask over axes 1 and 2
FULL = np.arange(np.prod(SHAPE)).reshape(SHAPE) % 7 == 3

NUMPY_KEYS = {
    "ints_then_list": (0, 0, [1, 5, 3]),
    "ints_then_array": (0, 0, np.array([1, 5, 3])),
    "unsorted_duplicates_negative": ([5, 1, 1, -1, 19, 0],),
    "array_2d": (np.array([[1, 2], [19, 4]]),),
    "array_2d_middle": (slice(None), np.array([[6, 0], [3, 3]]), slice(2, 4)),
    "int_apart_from_array": (0, slice(None), [1, 2]),
    "newaxis_first": (None, 0),
    "newaxis_last": (..., None),
    "newaxis_with_array": (slice(2, 9, 2), None, [4, 0]),
    "newaxis_around_array": (1, None, [1, 2], None),
    "array_then_newaxis_then_int": ([1, 2], None, 0),
    "mask_axis0": (M0,),
    "mask_axis1": (slice(None), [True, False, True, True, False, False, True]),
    "mask_axes12": (slice(None), M12),
    "mask_axes12_negative_step": (slice(None, None, -3), M12),
    "mask_full": (FULL,),
    "empty_list": ([],),
    "negative_step_with_array": (slice(None, None, -2), [0, 3]),
    "array_negative_slice_int": (np.array([19, 0, 7]), slice(6, 1, -1), 4),
    "repeated": ([3, 3, 3],),
    "ellipsis_then_array": (..., [8, 1, 8]),
    "all_points": ([1, 2, -1], [3, 4, 0], [5, 6, 8]),
    "points_broadcast": (np.array([[1], [2]]), 0, np.array([0, 4, 8])),
    "one_point_per_chunk_of_many": (np.arange(0, 20, 2), slice(None), slice(None)),
}


@_each_key(NUMPY_KEYS)
def test_getitem_matches_numpy(arrays, key):
    a, _, ref = arrays
    _same(a[key], ref[key])


ZARR_GETITEM_KEYS = {
    "points": ([1, 5, 19], [2, 3, 0], [4, 4, 8]),
    "points_with_ints": (0, [6, 1], [2, 8]),
    "one_array_1d": ([4, 0, 19],),
    "mask_full": (FULL,),
    "orthogonal_all_1d_some_bool": ([2, 4], [True] * 3 + [False] * 4, [0, 8]),
}


@_each_key(ZARR_GETITEM_KEYS)
def test_getitem_matches_zarr_python(arrays, key):
    a, z, _ = arrays
    _same(a[key], z[key])


@pytest.mark.parametrize("key", [([1, 5], slice(None), [2, 3]), (M0, [1, 0])],
                         ids=["two_arrays_and_a_slice", "mask_and_array_short_key"])
def test_several_arrays_with_slices_are_refused_like_zarr_python(arrays, key):
    a, z, _ = arrays
    with pytest.raises(IndexError):
        z[key]
    with pytest.raises(IndexError, match=r"\.oindex.*\.vindex"):
        a[key]


OINDEX_KEYS = {
    "arrays_and_slice": ([1, 5, 5, -1], slice(None), [2, 3]),
    "int_mask_strided_slice": (0, [True] * 7, slice(1, 8, 3)),
    "unsorted_array_and_int": (slice(None), [6, 0, 3], 2),
    "ellipsis": (..., [8, 1]),
    "spread_within_chunk": ([0, 2, 19, 18, 15], [1, 3], [0, 4, 1]),
    "masks": (M0, [True, False] * 3 + [True], np.arange(9) > 4),
    "nothing": (np.array([], dtype="int64"), slice(None), 0),
}


@_each_key(OINDEX_KEYS)
def test_oindex_matches_zarr_python(arrays, key):
    a, z, _ = arrays
    _same(a.oindex[key], z.oindex[key])


def test_oindex_negative_steps_like_numpy(arrays):
    # zarr-python refuses negative steps; NumPy, one dimension at a time, is the reference
    a, _, ref = arrays
    _same(a.oindex[::-4, [1, 1, 6], 8::-3], ref[::-4][:, [1, 1, 6]][:, :, 8::-3])


VINDEX_KEYS = {
    "points": ([1, 5, 19, -1], [2, 3, 0, 6], [0, 8, 4, 4]),
    "broadcast_2d": (np.array([[1, 2], [3, 4]]), 0, 1),
    "all_ints": (0, 0, 0),
    "mask": (FULL,),
    "duplicates_unsorted": ([7, 7, 2, 19, 7], [0, 0, 6, 6, 1], [8, 8, 0, 3, 2]),
    "many_chunks": (np.arange(20), np.arange(20) % 7, np.arange(20) % 9),
}


@_each_key(VINDEX_KEYS)
def test_vindex_matches_zarr_python(arrays, key):
    a, z, _ = arrays
    _same(a.vindex[key], z.vindex[key])


def test_vindex_with_slices_puts_point_dimensions_first(arrays):
    a, _, ref = arrays
    times = np.array([19, 1, 4, 1])
    _same(a.vindex[times, :, 2:5], ref[times, :, 2:5])
    _same(a.vindex[times, ::-1, 1], ref[times, ::-1, 1])
    _same(a.vindex[times, [0, 6, 2, 2], :], ref[times, [0, 6, 2, 2], :])
    _same(a.vindex[:, [0, 6], [8, 1]], np.moveaxis(ref[:, [0, 6], [8, 1]], 1, 0))


@pytest.mark.parametrize("key", [([0, 20],), ([-21],), (slice(None), [7]), (0, 0, np.arange(10))])
def test_out_of_bounds_like_zarr_python(arrays, key):
    a, z, _ = arrays
    with pytest.raises(IndexError):
        z.oindex[key]
    with pytest.raises(ZarrflowIndexError, match="out of bounds"):
        a[key]
    with pytest.raises(ZarrflowIndexError, match="out of bounds"):
        a.oindex[key]


def test_errors_describe_index_arrays_without_printing_them(arrays):
    a, _, _ = arrays
    big = np.arange(1000, 1500)
    with pytest.raises(ZarrflowIndexError) as e:
        a[big]
    msg = str(e.value)
    assert "shape (500,)" in msg and "min 1000" in msg and "max 1499" in msg
    assert "1001" not in msg and len(msg) < 200
    mask = np.ones(300, bool)
    with pytest.raises(ZarrflowIndexError) as e:
        a[mask]
    assert "shape (300,)" in str(e.value) and "True, True" not in str(e.value)
    with pytest.raises(IndexError) as e:
        a[np.linspace(0, 1, 400)]
    assert "float64" in str(e.value) and len(str(e.value)) < 200
    with pytest.raises(TypeError, match="unsupported index"):
        a["x"]
    with pytest.raises(TypeError, match="boolean scalar"):
        a[True]
    with pytest.raises(IndexError, match="vindex"):
        a.vindex[0, None]
    with pytest.raises(IndexError, match="1-d"):
        a.oindex[np.array([[1, 2]])]
    with pytest.raises(IndexError, match="broadcast"):
        a.vindex[[1, 2], [1, 2, 3], 0]


def test_other_dtypes_and_zero_d(tmp_path):
    for dtype in ("float64", "uint8", "bool", "complex64", "int16"):
        z = zarr.create_array(str(tmp_path / f"{dtype}.zarr"), shape=(11, 6), chunks=(4, 4),
                              dtype=dtype, fill_value=0)
        ref = (np.arange(66).reshape(11, 6) % 5).astype(dtype)
        z[...] = ref
        a = zarrflow.open(tmp_path / f"{dtype}.zarr")
        _same(a[[10, 0, 3, 3]], ref[[10, 0, 3, 3]])
        _same(a.vindex[[1, 10], [5, 0]], ref[[1, 10], [5, 0]])
    z = zarr.create_array(str(tmp_path / "scalar.zarr"), shape=(), dtype="float32", fill_value=0)
    z[...] = 3.5
    a = zarrflow.open(tmp_path / "scalar.zarr")
    _same(a[None], np.array([3.5], "float32"))
    _same(a.oindex[()], np.array(3.5, "float32"))


def test_missing_chunks_read_as_fill_value(tmp_path):
    z = zarr.create_array(str(tmp_path / "m.zarr"), shape=(12, 4), chunks=(2, 4), dtype="float32",
                          fill_value=-1.5)
    z[0:2] = 1.0  # only chunk 0 exists
    a = zarrflow.open(tmp_path / "m.zarr")
    _same(a[[0, 5, 11, 1]], z.oindex[[0, 5, 11, 1]])
    _same(a.vindex[[0, 7], [3, 0]], z.vindex[[0, 7], [3, 0]])


# --- what a selection reads --------------------------------------------------------------------

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A (T=40, C=3, H=8, W=8) float32 v3 store, chunks (1, 3, 8, 8) in time and (4, ...) in a
    second array, behind the logging HTTP server."""
    root = tmp_path_factory.mktemp("served")
    ref = np.random.default_rng(0).random((40, 3, 8, 8), dtype="float32")
    for name, chunks in (("t1", (1, 3, 8, 8)), ("t4", (4, 3, 4, 8))):
        z = zarr.create_array(str(root / name), shape=ref.shape, chunks=chunks, dtype="float32",
                              fill_value=0)
        z[...] = ref
    with RangeServer(root) as srv:
        yield srv, ref


def _chunk_gets(srv, name: str) -> list[str]:
    return [r.path for r in srv.requests if r.method == "GET" and f"/{name}/c/" in r.path]


@pytest.mark.parametrize("name", ["t1", "t4"])
def test_random_time_gather_reads_each_needed_chunk_once(served, name):
    srv, ref = served
    arr = zarrflow.open(f"{srv.url}/{name}")
    times = np.random.default_rng(1).integers(0, 40, 16)  # with duplicates, unsorted
    srv.clear_log()
    _same(arr[times], ref[times])
    gets = _chunk_gets(srv, name)
    assert len(gets) == len(set(gets))
    chunk_t = arr.chunks[0]
    expected = {int(t) // chunk_t for t in times}
    # t4 splits H in two chunks: each needed time chunk is read as its two pieces
    assert len(gets) == len(expected) * (ref.shape[2] // arr.chunks[2])
    srv.clear_log()
    _same(arr.vindex[times, :, 5, :], ref[times, :, 5, :])
    gets = _chunk_gets(srv, name)
    assert len(gets) == len(set(gets)) == len(expected)  # row 5 lies in one H chunk


def test_orthogonal_spread_indices_read_each_chunk_once(served):
    srv, ref = served
    arr = zarrflow.open(f"{srv.url}/t4")
    key = ([0, 3, 1, 9, 8, 11, 39], slice(None), [7, 0, 2], slice(None))
    srv.clear_log()
    _same(arr.oindex[key], ref[np.ix_(key[0], range(3), key[2], range(8))])
    gets = _chunk_gets(srv, "t4")
    assert len(gets) == len(set(gets)) == 3 * 2  # time chunks 0, 2, 9; both H chunks


@pytest.mark.parametrize("fmt", [2, 3])
def test_string_arrays_index_like_zarr_python(tmp_path, fmt):
    """Variable-length and fixed-width strings go through the same selections (the regions are
    read by the plain read path and gathered with NumPy)."""
    labels = np.array(["t2m", "u10", "", "msl", "tp", "z500", "sp"], dtype=object)
    for name, values in (("vlen", labels), ("fixed", labels.astype("U4"))):
        path = tmp_path / f"{name}{fmt}.zarr"
        z = zarr.create_array(str(path), shape=(7,), chunks=(3,), dtype=values.dtype if name ==
                              "fixed" else str, zarr_format=fmt)
        z[...] = values
        a = zarrflow.open(path)
        for key in ([6, 0, 0, 3], np.arange(7) % 2 == 0):
            got, want = a[key], z[key]
            assert got.dtype == want.dtype
            assert got.tolist() == want.tolist()
        assert a.vindex[[5, 1]].tolist() == z.vindex[[5, 1]].tolist()
