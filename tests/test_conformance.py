"""zarrflow reads every corpus store exactly like the peer that wrote it.

For each case of tests/corpus.py (ids like `zp3-blosc-lz4-bitshuffle-int16`, `ts2-zlib-fill-nan-float64`):
metadata (shape, dtype, chunks, shards, dims, fill value, attributes, codecs), the whole array through
every entry point, a battery of hyperslabs (steps, negative indices, single elements, chunk-boundary
crossing, edge chunks, empty slices, Ellipsis), `read(region=...)` and `read(out=...)` into strided and
Fortran-order buffers. Every comparison is bitwise (both sides in native byte order; NaNs by bits).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import corpus as C
import zarrflow


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _open(built: C.Built):
    node = zarrflow.open(built.path)
    assert isinstance(node, zarrflow.Array), f"{built.case_id}: open() returned {type(node).__name__}"
    return node


def _sentinel_fill(a: np.ndarray) -> None:
    if a.size:
        a.reshape(-1).view(np.uint8)[:] = 0xAB


def _as_tuple(x):
    return None if x is None else tuple(int(v) for v in x)


def _plain_regions(shape: tuple, chunks: tuple) -> list[tuple]:
    """Regions for read(region=...): tuples of in-bounds slices with explicit start/stop."""
    if not shape:
        return [()]
    regs = [tuple(slice(0, s) for s in shape)]
    if all(s > 0 for s in shape):
        regs.append(tuple(slice(s // 2, s // 2 + 1) for s in shape))
        regs.append(tuple(slice(max(c - 1, 0), min(c + 1, s)) for s, c in zip(shape, chunks)))
        regs.append(tuple(slice((max(s - 1, 0) // c) * c, s) for s, c in zip(shape, chunks)))
        regs.append((slice(1, 1),) + tuple(slice(0, s) for s in shape[1:]))
    return regs


# --------------------------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------------------------


def test_metadata(built: C.Built) -> None:
    a = _open(built)
    m = built.meta
    assert a.zarr_format == m.zarr_format
    assert isinstance(a.shape, tuple) and a.shape == m.shape
    assert a.ndim == len(m.shape)
    assert a.size == math.prod(m.shape)
    assert a.dtype == m.dtype, f"dtype {a.dtype!r} != {m.dtype!r}"
    assert a.dtype.isnative or a.dtype.byteorder == "|"
    assert a.nbytes == math.prod(m.shape) * m.dtype.itemsize
    assert _as_tuple(a.chunks) == m.chunks
    assert _as_tuple(a.shards) == m.shards
    assert (None if a.dims is None else tuple(a.dims)) == m.dims
    assert dict(a.attrs) == m.attrs
    if m.fill is None:
        assert a.fill_value is None
    else:
        got = C.fill_as_bytes(a.fill_value, m.dtype)
        assert got == m.fill.tobytes(), f"fill {a.fill_value!r}: bytes {got.hex()} != {m.fill.tobytes().hex()}"
    if m.codecs is not None:
        assert list(a.codecs) == m.codecs


def test_open_entry_points_agree(built: C.Built) -> None:
    by_str = zarrflow.open(str(built.path))
    by_path = zarrflow.open(Path(built.path))
    explicit = zarrflow.open_array(built.path)
    for node in (by_str, by_path, explicit):
        assert isinstance(node, zarrflow.Array)
        assert node.shape == built.meta.shape and node.dtype == built.meta.dtype
    C.assert_bitwise_equal(explicit[...], built.expected, f"{built.case_id} open_array()[...]")


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


def test_read_whole_array(built: C.Built) -> None:
    a = _open(built)
    C.assert_bitwise_equal(a[...], built.expected, f"{built.case_id} a[...]")
    C.assert_bitwise_equal(a.read(), built.expected, f"{built.case_id} a.read()")
    C.assert_bitwise_equal(np.asarray(a), built.expected, f"{built.case_id} np.asarray(a)")
    got = a[...]
    assert isinstance(got, np.ndarray)
    assert got.flags.writeable


def test_hyperslabs(built: C.Built) -> None:
    a = _open(built)
    exp = C.native(built.expected)
    for sel in C.selections(built.meta.shape, built.meta.chunks):
        want = np.asarray(exp[sel])
        got = np.asarray(a[sel])
        C.assert_bitwise_equal(got, want, f"{built.case_id} a{C.sel_repr(sel)}")


def test_hyperslab_single_index_forms(built: C.Built) -> None:
    """A bare int / slice / Ellipsis (not wrapped in a tuple) behaves like NumPy."""
    a = _open(built)
    exp = C.native(built.expected)
    shape = built.meta.shape
    forms: list = [Ellipsis]
    if shape and shape[0] > 0:
        forms += [0, -1, shape[0] - 1, np.int64(shape[0] // 2), slice(None, None, 3), slice(-2, None)]
    for sel in forms:
        C.assert_bitwise_equal(np.asarray(a[sel]), np.asarray(exp[sel]), f"{built.case_id} a[{sel!r}]")


def test_read_region(built: C.Built) -> None:
    a = _open(built)
    exp = C.native(built.expected)
    for reg in _plain_regions(built.meta.shape, built.meta.chunks):
        C.assert_bitwise_equal(a.read(region=reg), exp[reg], f"{built.case_id} read(region={C.sel_repr(reg)})")


def test_read_into_strided_out(built: C.Built) -> None:
    a = _open(built)
    m = built.meta
    exp = C.native(built.expected)
    if not m.shape:
        out = np.empty((), m.dtype)
        res = a.read(out=out)
        assert res is out
        C.assert_bitwise_equal(out, exp, f"{built.case_id} read(out=0-d)")
        return
    big = np.empty(m.shape[:-1] + (2 * m.shape[-1],), m.dtype)
    _sentinel_fill(big)
    out = big[..., ::2]
    res = a.read(out=out)
    assert res is out or (isinstance(res, np.ndarray) and np.shares_memory(res, big))
    C.assert_bitwise_equal(out, exp, f"{built.case_id} read(out=big[..., ::2])")
    gaps = np.ascontiguousarray(big[..., 1::2])
    assert gaps.size == 0 or set(gaps.reshape(-1).view(np.uint8).tolist()) == {0xAB}, \
        "read(out=strided view) wrote between the view's elements"


def test_read_into_fortran_out(built: C.Built) -> None:
    a = _open(built)
    m = built.meta
    out = np.empty(m.shape, m.dtype, order="F")
    _sentinel_fill(out.T)  # the transpose of an F array is C-contiguous
    res = a.read(out=out)
    assert res is out
    C.assert_bitwise_equal(out, C.native(built.expected), f"{built.case_id} read(out=F-order)")


def test_read_region_into_strided_out(built: C.Built) -> None:
    m = built.meta
    a = _open(built)
    # a region straddling the first chunk boundary (for 0-d: the empty region; for empty arrays:
    # an empty region)
    reg = tuple(slice(min(max(c - 1, 0), s), min(c + 2, s)) for s, c in zip(m.shape, m.chunks))
    rshape = tuple(r.stop - r.start for r in reg)
    big = np.empty(tuple(2 * n + 1 for n in rshape), m.dtype)
    _sentinel_fill(big)
    # offset + step 2 in every dim (a 0-d view for 0-d arrays)
    out = big[tuple(slice(1, None, 2) for _ in rshape)] if rshape else big[...]
    assert out.shape == rshape
    res = a.read(region=reg, out=out)
    assert res is out or np.shares_memory(res, big)
    C.assert_bitwise_equal(out, C.native(built.expected)[reg], f"{built.case_id} read(region, out=strided)")
    mask = np.ones(big.shape, bool)
    mask[tuple(slice(1, None, 2) for _ in rshape)] = False
    untouched = np.ascontiguousarray(big[mask])
    assert set(untouched.reshape(-1).view(np.uint8).tolist()) <= {0xAB}


def test_repeated_reads_are_stable(built: C.Built) -> None:
    """Reading twice (caches, thread pool reuse) gives the same bytes."""
    a = _open(built)
    first = a[...]
    second = a[...]
    C.assert_bitwise_equal(second, first, f"{built.case_id} second read")


# --------------------------------------------------------------------------------------------
# groups
# --------------------------------------------------------------------------------------------


def _member_names(items) -> list[str]:
    if isinstance(items, dict):
        return sorted(items)
    out = []
    for it in items:
        if isinstance(it, str):
            out.append(it)
        elif isinstance(it, tuple):
            out.append(it[0])
        else:
            out.append(str(it.path).rstrip("/").split("/")[-1])
    return sorted(out)


def test_group_hierarchy(group_built: C.GroupBuilt) -> None:
    g = zarrflow.open(group_built.path)
    assert isinstance(g, zarrflow.Group)
    assert g.zarr_format == group_built.zarr_format
    assert dict(g.attrs) == group_built.attrs
    assert sorted(g.keys()) == ["empty_group", "sub", "top"]
    assert _member_names(g.arrays()) == ["top"]
    assert _member_names(g.groups()) == ["empty_group", "sub"]
    assert "sub" in g and "top" in g and "sub/arr" in g and "sub/deeper/b" in g
    assert "nope" not in g and "sub/nope" not in g

    sub = g["sub"]
    assert isinstance(sub, zarrflow.Group)
    assert dict(sub.attrs) == {"level": 1}
    assert sorted(sub.keys()) == ["arr", "deeper"]
    assert dict(g["sub/deeper"].attrs) == {"level": 2}
    assert list(g["empty_group"].keys()) == []

    arr = g["sub/arr"]
    assert isinstance(arr, zarrflow.Array)
    assert dict(arr.attrs) == {"units": "m"}
    for name, exp in group_built.arrays.items():
        C.assert_bitwise_equal(g[name][...], exp, f"{group_built.case_id}[{name!r}]")
        C.assert_bitwise_equal(zarrflow.open(group_built.path / name)[...], exp, f"open({name})")
    C.assert_bitwise_equal(g["sub"]["deeper"]["b"][...], group_built.arrays["sub/deeper/b"], "chained []")

    with pytest.raises(KeyError):
        g["nope"]
    with pytest.raises(KeyError):
        g["sub/deeper/nope"]


def test_open_group_and_open_array(group_built: C.GroupBuilt) -> None:
    g = zarrflow.open_group(group_built.path)
    assert isinstance(g, zarrflow.Group)
    a = zarrflow.open_array(group_built.path / "sub" / "arr")
    assert isinstance(a, zarrflow.Array)
    C.assert_bitwise_equal(a[...], group_built.arrays["sub/arr"], "open_array(sub/arr)")


def test_consolidated_group_matches_unconsolidated(corpus: C.Corpus) -> None:
    """Consolidated metadata (v3 inline, v2 .zmetadata) yields the same tree and data."""
    for fmt in ("zp3", "zp2"):
        plain = zarrflow.open(corpus.group(f"{fmt}-group").path)
        cons = zarrflow.open(corpus.group(f"{fmt}-group-consolidated").path)
        assert sorted(plain.keys()) == sorted(cons.keys())
        for name in ("sub/arr", "sub/deeper/b", "top"):
            C.assert_bitwise_equal(cons[name][...], plain[name][...], f"{fmt} consolidated {name}")
            assert cons[name].shape == plain[name].shape
            assert cons[name].chunks == plain[name].chunks


# --------------------------------------------------------------------------------------------
# spot checks that do not depend on the oracle's helpers
# --------------------------------------------------------------------------------------------


def test_bfloat16_is_ml_dtypes(corpus: C.Corpus) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = zarrflow.open(corpus.get("ts3-bfloat16-bytes-le").path)
    assert a.dtype == np.dtype(ml_dtypes.bfloat16)
    assert a[...].dtype == np.dtype(ml_dtypes.bfloat16)


def test_big_endian_v2_comes_back_native(corpus: C.Corpus) -> None:
    b = corpus.get("zp2-dtype-be-f8")
    a = zarrflow.open(b.path)
    assert a.dtype == np.dtype("=f8") and a.dtype.isnative
    got = a[...]
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, b.expected.astype("=f8"))


def test_nan_fill_payload_bits(corpus: C.Corpus) -> None:
    b = corpus.get("hand-fill-hex-float32-nan-payload")
    got = zarrflow.open(b.path)[...]
    assert got.view(np.uint32)[-1, -1] == 0x7FC00001  # a chunk that was never written
    b = corpus.get("hand-fill-hex-float16-nan-payload")
    assert zarrflow.open(b.path)[...].view(np.uint16)[-1, -1] == 0x7E01


def test_raw_r24_dtype(corpus: C.Corpus) -> None:
    b = corpus.get("hand-r24-gzip-2d")
    a = zarrflow.open(b.path)
    assert a.dtype == np.dtype("V3")
    assert a[...][-1, -1].tobytes() == bytes([0xAA, 0xBB, 0xCC])  # last chunk absent -> fill


def test_zero_d_scalar_read(corpus: C.Corpus) -> None:
    for cid, want in (("zp3-0d-unwritten-int32", -9), ("ts3-0d-int64", None), ("zp2-0d-float64", None)):
        b = corpus.get(cid)
        a = zarrflow.open(b.path)
        assert a.shape == () and a.ndim == 0 and a.size == 1
        got = np.asarray(a[()])
        assert got.shape == ()
        if want is not None:
            assert got == want
        C.assert_bitwise_equal(got, b.expected, cid)
