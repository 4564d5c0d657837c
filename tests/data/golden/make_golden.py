"""Writes the golden stores the C++ tests read (cpp/zarrflow/zarr/golden_test.cc).

    python tests/data/golden/make_golden.py      # rewrites v2.zarr, v3.zarr and expected.json

The stores are written by zarr-python, the reference implementation, and committed, so the C++
tests check zarrflow against bytes zarr-python wrote without needing Python. Each array is small
(a few hundred bytes to a few KB) and covers one codec or layout: Zarr v2 with Blosc, zlib, zstd
with a delta filter, gzip, LZ4, C and F order, big-endian types; Zarr v3 with zstd, Blosc with
bit shuffle, gzip behind a transpose, big-endian bytes, and sharding with a crc32c index. Several
have chunks that were never written (left out because they hold only the fill value), so readers
must fill them. expected.json holds, per array, its dtype, shape, the number of missing chunks
(shards, for sharded arrays) and every element in C order, as zarr-python reads them back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numcodecs
import numpy as np
import zarr
from zarr.codecs import BloscCodec, BytesCodec, GzipCodec, TransposeCodec, ZstdCodec

HERE = Path(__file__).resolve().parent


def values(shape: tuple[int, ...], dtype: str, scale: float = 1.0) -> np.ndarray:
    """Distinct, exactly representable values: (i * 7 mod 251) * scale - 100 * scale."""
    n = int(np.prod(shape))
    v = ((np.arange(n) * 7) % 251 - 100) * scale
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    return v.astype(dtype).reshape(shape)


def with_holes(a: np.ndarray, fill, chunks: tuple[int, ...], holes) -> np.ndarray:
    """`a` with the chunks at `holes` (chunk grid coordinates) set to the fill value, so
    zarr-python does not write them."""
    a = a.copy()
    for h in holes:
        a[tuple(slice(c * n, (c + 1) * n) for c, n in zip(h, chunks))] = fill
    return a


def v2_arrays(root: zarr.Group) -> dict:
    out = {}

    def add(name, data, chunks, **kw):
        arr = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks, **kw)
        arr[...] = data
        out[name] = arr

    add("blosc_lz4_i2", values((7, 9), "<i2"), (3, 4), fill_value=0,
        compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    add("zlib_f8_order_F", values((5, 6), "<f8", 0.25), (2, 4), fill_value=0.0, order="F",
        compressors=numcodecs.Zlib(level=1))
    add("zstd_delta_be_i4", values((10,), ">i4"), (4,), fill_value=0,
        filters=[numcodecs.Delta(dtype=">i4")], compressors=numcodecs.Zstd(level=3))
    add("gzip_u1_missing", with_holes(values((6, 6), "u1"), 7, (3, 3), [(0, 1), (1, 0)]),
        (3, 3), fill_value=7, compressors=numcodecs.GZip(level=5))
    add("lz4_f4_missing", with_holes(values((4, 5), "<f4", 0.5), -1.5, (2, 5), [(1, 0)]),
        (2, 5), fill_value=-1.5, compressors=numcodecs.LZ4())
    return out


def v3_arrays(root: zarr.Group) -> dict:
    out = {}

    def add(name, data, chunks, **kw):
        arr = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks, **kw)
        arr[...] = data
        out[name] = arr

    add("zstd_f4_missing", with_holes(values((7, 9), "float32", 0.5), -1.5, (3, 4),
                                      [(0, 0), (2, 2)]),
        (3, 4), fill_value=-1.5, compressors=ZstdCodec(level=3))
    add("blosc_zstd_bitshuffle_u2", values((8, 8), "uint16"), (4, 4), fill_value=0,
        compressors=BloscCodec(cname="zstd", clevel=5, shuffle="bitshuffle", typesize=2))
    add("transpose_gzip_i8", values((4, 6), "int64"), (3, 4), fill_value=0,
        filters=[TransposeCodec(order=(1, 0))], compressors=GzipCodec(level=6))
    add("bytes_big_endian_f8", values((3, 4), "float64", 0.125), (2, 3), fill_value=0.0,
        serializer=BytesCodec(endian="big"), compressors=None)
    # Three shards of 2 x 2 inner chunks: the middle shard holds only fill values (not written),
    # and the others each miss one inner chunk (an empty slot in the shard index).
    sharded = with_holes(values((12, 10), "uint16"), 0, (2, 5),
                         [(0, 1), (2, 0), (2, 1), (3, 0), (3, 1), (5, 0)])
    arr = root.create_array(
        "sharded_crc32c_missing", shape=sharded.shape, dtype=sharded.dtype, chunks=(2, 5),
        shards=(4, 10), fill_value=0, compressors=ZstdCodec(level=1))
    arr[...] = sharded
    out["sharded_crc32c_missing"] = arr
    return out


def main() -> None:
    expected = {}
    for fmt, build in ((2, v2_arrays), (3, v3_arrays)):
        path = HERE / f"v{fmt}.zarr"
        shutil.rmtree(path, ignore_errors=True)
        root = zarr.open_group(path, mode="w", zarr_format=fmt)
        arrays = build(root)
        zarr.consolidate_metadata(path)
        for name, arr in arrays.items():
            back = zarr.open_array(path / name, mode="r")
            data = back[...]
            stored = back.shards or back.chunks  # the grid of stored values
            grid = [range(-(-s // c)) for s, c in zip(back.shape, stored)]
            # zarr-python leaves out a chunk (a shard) that holds only the fill value.
            missing = sum(
                bool(np.all(data[tuple(slice(i * c, (i + 1) * c) for i, c in zip(cell, stored))]
                            == back.fill_value))
                for cell in np.ndindex(*[len(g) for g in grid]))
            expected[f"{path.name}/{name}"] = {
                "dtype": data.dtype.newbyteorder("=").name,
                "shape": list(data.shape),
                "chunks": list(back.chunks),
                "missing_chunks": int(missing),
                "values": data.astype(data.dtype.newbyteorder("=")).ravel().tolist(),
            }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
