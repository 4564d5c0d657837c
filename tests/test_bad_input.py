"""Bad input: every malformed, unsupported, corrupt or hostile store raises the documented
zarrflow exception, and its message names the array path (and, for chunk problems, the chunk key).

Stores are written by zarr-python 3 (valid to start with) and then broken by hand. The array under
test always lives at `<store>/g1/bad_arr`, so "g1/bad_arr" must appear in messages whether the array
was opened directly (its filesystem path ends in it) or through the root group (its store path).
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import corpus as C
import zarrflow

ARR = "g1/bad_arr"


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


@dataclass
class Store:
    root: Path  # the store root (a group)
    arr: Path  # root / "g1/bad_arr"
    data: np.ndarray  # what was written (everything)
    zarr_format: int

    def key(self, *coords: int) -> str:
        """The chunk key of chunk `coords` for the default encodings ("c/1/0" / "1.0")."""
        if self.zarr_format == 3:
            return "c/" + "/".join(map(str, coords))
        return ".".join(map(str, coords))

    def chunk(self, *coords: int) -> Path:
        return self.arr / self.key(*coords)

    def meta_file(self) -> Path:
        return self.arr / ("zarr.json" if self.zarr_format == 3 else ".zarray")


def make_store(tmp_path: Path, *, zarr_format: int = 3, shape: tuple = (8, 10), chunks: tuple = (4, 5),
               dtype: str = "int32", **kw: Any) -> Store:
    """A valid store: root group / group g1 / array bad_arr, fully written with compressible data."""
    zarr = C.require("zarr")
    root = tmp_path / "store"
    data = (np.arange(int(np.prod(shape))) % 251 + 1).astype(dtype).reshape(shape)

    def create() -> None:
        g = zarr.open_group(str(root), mode="w", zarr_format=zarr_format)
        sub = g.create_group("g1")
        kw.setdefault("compressors", None)
        kw.setdefault("fill_value", 0)
        kw.setdefault("filters", None)
        a = sub.create_array("bad_arr", shape=shape, chunks=chunks, dtype=dtype, **kw)
        a[...] = data

    C._quiet(create)
    return Store(root, root / ARR, data, zarr_format)


def edit_json(path: Path, fn: Callable[[dict], Any]) -> None:
    m = json.loads(path.read_text())
    fn(m)
    path.write_text(json.dumps(m))


def expect(exc: type, fn: Callable[[], Any], *needles: str) -> BaseException:
    """`fn()` raises `exc` (exactly that type or a subclass) and the message contains every needle."""
    with pytest.raises(exc) as ei:
        fn()
    msg = str(ei.value)
    for n in needles:
        assert n in msg, f"{type(ei.value).__name__} message {msg!r} does not mention {n!r}"
    return ei.value


def read_all_direct(s: Store) -> Callable[[], Any]:
    return lambda: zarrflow.open(s.arr)[...]


def read_all_via_group(s: Store) -> Callable[[], Any]:
    return lambda: zarrflow.open(s.root)[ARR][...]


def open_direct(s: Store) -> Callable[[], Any]:
    return lambda: zarrflow.open(s.arr)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), bitwise; small inputs only (shard indexes)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def flip(path: Path, offset: int, mask: int = 0xFF) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset] ^= mask
    path.write_bytes(bytes(raw))


def assert_not_poisoned(s: Store, bad_sel: tuple, good_sel: tuple, exc: type) -> None:
    """After a failure the same Array object still reads good regions, and the bad one still fails
    (no cached garbage, no stuck state)."""
    a = zarrflow.open(s.arr)
    with pytest.raises(exc):
        a[bad_sel]
    np.testing.assert_array_equal(a[good_sel], s.data[good_sel])
    with pytest.raises(exc):
        a[bad_sel]
    np.testing.assert_array_equal(a[good_sel], s.data[good_sel])


# --------------------------------------------------------------------------------------------
# the exception vocabulary
# --------------------------------------------------------------------------------------------


def test_exception_hierarchy() -> None:
    E = zarrflow
    for name in ("MetadataError", "UnsupportedError", "CorruptChunkError", "ChecksumError",
                 "NodeNotFoundError", "PathEscapeError", "StoreIOError", "ZarrflowIndexError"):
        assert issubclass(getattr(E, name), E.ZarrflowError), name
    assert issubclass(E.MetadataError, ValueError)
    assert issubclass(E.UnsupportedError, NotImplementedError)
    assert issubclass(E.CorruptChunkError, ValueError)
    assert issubclass(E.ChecksumError, E.CorruptChunkError)
    assert issubclass(E.NodeNotFoundError, FileNotFoundError)
    assert issubclass(E.PathEscapeError, PermissionError)
    assert issubclass(E.StoreIOError, OSError)
    assert issubclass(E.ZarrflowIndexError, IndexError)
    assert issubclass(E.ZarrflowError, Exception)


# --------------------------------------------------------------------------------------------
# malformed metadata -> MetadataError naming the array
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_malformed_json(tmp_path: Path, zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    s.meta_file().write_text('{"shape": [8, 10], "chunks": ')
    expect(zarrflow.MetadataError, open_direct(s), ARR)
    expect(zarrflow.MetadataError, lambda: zarrflow.open(s.root)[ARR], ARR)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_number_beyond_double_range(tmp_path: Path, zarr_format: int) -> None:
    """A JSON number past the double range is malformed metadata, not an exception that aborts
    the process (found by codec_chain_fuzzer)."""
    s = make_store(tmp_path, zarr_format=zarr_format)
    s.meta_file().write_text('{"zarr_format": 21e308}')
    expect(zarrflow.MetadataError, open_direct(s), ARR)
    expect(zarrflow.MetadataError, lambda: zarrflow.open(s.root)[ARR], ARR)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_metadata_not_an_object(tmp_path: Path, zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    s.meta_file().write_text("[1, 2, 3]")
    expect(zarrflow.MetadataError, open_direct(s), ARR)


def _v3_chunk_shape(m: dict, value: Any) -> None:
    m["chunk_grid"]["configuration"]["chunk_shape"] = value


WRONG_TYPES_V3: dict[str, Callable[[dict], Any]] = {
    "shape-is-string": lambda m: m.__setitem__("shape", "8,10"),
    "shape-has-float": lambda m: m.__setitem__("shape", [8.5, 10]),
    "chunk-shape-strings": lambda m: _v3_chunk_shape(m, ["4", "5"]),
    "chunk-shape-null": lambda m: _v3_chunk_shape(m, None),
    "data-type-number": lambda m: m.__setitem__("data_type", 4),
    "codecs-not-list": lambda m: m.__setitem__("codecs", {"name": "bytes"}),
    "codec-without-name": lambda m: m.__setitem__("codecs", [{"configuration": {"endian": "little"}}]),
    "missing-shape": lambda m: m.pop("shape"),
    "missing-data-type": lambda m: m.pop("data_type"),
    "missing-chunk-grid": lambda m: m.pop("chunk_grid"),
    "missing-codecs": lambda m: m.pop("codecs"),
    "fill-wrong-type": lambda m: m.__setitem__("fill_value", "not a number"),
    "fill-out-of-range": lambda m: m.__setitem__("fill_value", 2**40),  # int32 array
    "bad-node-type": lambda m: m.__setitem__("node_type", "table"),
    "dimension-names-wrong-length": lambda m: m.__setitem__("dimension_names", ["x"]),
    "chunk-rank-mismatch": lambda m: _v3_chunk_shape(m, [4, 5, 6]),
    "bytes-endian-invalid": lambda m: m.__setitem__("codecs", [{"name": "bytes", "configuration": {"endian": "middle"}}]),
    "transpose-not-permutation": lambda m: m.__setitem__(
        "codecs", [{"name": "transpose", "configuration": {"order": [0, 0]}}, {"name": "bytes"}]),
    "no-array-to-bytes-codec": lambda m: m.__setitem__("codecs", [{"name": "gzip", "configuration": {"level": 1}}]),
    "zero-chunk": lambda m: _v3_chunk_shape(m, [0, 5]),
    "negative-chunk": lambda m: _v3_chunk_shape(m, [-4, 5]),
    "negative-shape": lambda m: m.__setitem__("shape", [-8, 10]),
    # shape x itemsize does not fit in 64 bits (2**62 * 8 elements of 4 bytes)
    "shape-overflows-64bit": lambda m: m.__setitem__("shape", [2**62, 8]),
    # a small array whose (valid-looking, larger-than-shape) chunk is 2**80 elements
    "chunk-nbytes-overflows-64bit": lambda m: _v3_chunk_shape(m, [2**40, 2**40]),
}


@pytest.mark.parametrize("case", list(WRONG_TYPES_V3))
def test_v3_invalid_metadata(tmp_path: Path, case: str) -> None:
    s = make_store(tmp_path, zarr_format=3)
    edit_json(s.meta_file(), WRONG_TYPES_V3[case])
    expect(zarrflow.MetadataError, open_direct(s), ARR)


WRONG_TYPES_V2: dict[str, Callable[[dict], Any]] = {
    "shape-is-string": lambda m: m.__setitem__("shape", "8,10"),
    "chunks-strings": lambda m: m.__setitem__("chunks", ["4", "5"]),
    "missing-chunks": lambda m: m.pop("chunks"),
    "missing-dtype": lambda m: m.pop("dtype"),
    "bad-order": lambda m: m.__setitem__("order", "X"),
    "order-not-a-string": lambda m: m.__setitem__("order", 5),
    "order-null": lambda m: m.__setitem__("order", None),
    "bad-separator": lambda m: m.__setitem__("dimension_separator", ":"),
    "compressor-without-id": lambda m: m.__setitem__("compressor", {"level": 1}),
    "filters-not-list": lambda m: m.__setitem__("filters", {"id": "delta", "dtype": "<i4"}),
    "fill-wrong-type": lambda m: m.__setitem__("fill_value", "abc"),
    "chunk-rank-mismatch": lambda m: m.__setitem__("chunks", [4]),
    "zero-chunk": lambda m: m.__setitem__("chunks", [0, 5]),
    "negative-chunk": lambda m: m.__setitem__("chunks", [4, -5]),
    "shape-overflows-64bit": lambda m: m.__setitem__("shape", [2**62, 8]),
}


@pytest.mark.parametrize("case", list(WRONG_TYPES_V2))
def test_v2_invalid_metadata(tmp_path: Path, case: str) -> None:
    s = make_store(tmp_path, zarr_format=2, compressors=C.require("numcodecs").Zlib(level=1))
    edit_json(s.meta_file(), WRONG_TYPES_V2[case])
    expect(zarrflow.MetadataError, open_direct(s), ARR)


def test_shard_shape_not_multiple_of_inner_chunk(tmp_path: Path) -> None:
    s = make_store(tmp_path, shape=(16, 8), chunks=(4, 4), shards=(8, 8))
    edit_json(s.meta_file(), lambda m: m["codecs"][0]["configuration"].__setitem__("chunk_shape", [3, 4]))
    expect(zarrflow.MetadataError, open_direct(s), ARR)


# --------------------------------------------------------------------------------------------
# valid Zarr that zarrflow does not support -> UnsupportedError naming the thing
# --------------------------------------------------------------------------------------------


def test_v3_unknown_codec(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    edit_json(s.meta_file(), lambda m: m["codecs"].append({"name": "frobnicate", "configuration": {"x": 1}}))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, "frobnicate")


def test_v3_unknown_codec_inside_shard(tmp_path: Path) -> None:
    s = make_store(tmp_path, shape=(16, 8), chunks=(4, 4), shards=(8, 8))
    edit_json(s.meta_file(), lambda m: m["codecs"][0]["configuration"]["codecs"].append({"name": "wavelet9"}))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, "wavelet9")


def test_v2_compressor_whose_package_is_missing(tmp_path: Path) -> None:
    """zfpy decodes through numcodecs only when the zfpy package is installed."""
    try:
        import zfpy  # noqa: F401
        pytest.skip("zfpy is installed")
    except ImportError:
        pass
    s = make_store(tmp_path, zarr_format=2)
    edit_json(s.meta_file(), lambda m: m.__setitem__(
        "compressor", {"id": "zfpy", "mode": 4, "tolerance": -1, "rate": -1, "precision": -1}))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, "zfpy", "pip install zfpy")


def test_v3_unsupported_numcodecs_filter(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    edit_json(s.meta_file(), lambda m: m["codecs"].insert(0, {"name": "numcodecs.categorize",
                                                             "configuration": {}}))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, "numcodecs.categorize")


def test_v2_unknown_compressor_id(tmp_path: Path) -> None:
    s = make_store(tmp_path, zarr_format=2)
    edit_json(s.meta_file(), lambda m: m.__setitem__("compressor", {"id": "frobnicate", "level": 1}))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, "frobnicate")


@pytest.mark.parametrize("dtype", ["float8_e4m3", "complex32"])
def test_v3_unsupported_data_type(tmp_path: Path, dtype: str) -> None:
    s = make_store(tmp_path)
    edit_json(s.meta_file(), lambda m: m.__setitem__("data_type", dtype))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, dtype)


@pytest.mark.parametrize("typestr", ["|O", "<i3"])  # |O without an object codec
def test_v2_unsupported_dtype(tmp_path: Path, typestr: str) -> None:
    s = make_store(tmp_path, zarr_format=2)
    edit_json(s.meta_file(), lambda m: (m.__setitem__("dtype", typestr), m.__setitem__("fill_value", None)))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, typestr)


def test_v3_must_understand_extension_rejected(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    edit_json(s.meta_file(), lambda m: m.__setitem__("my_extension", {"must_understand": True, "x": 1}))
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, "my_extension")


def test_v3_must_understand_false_is_ignored(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    edit_json(s.meta_file(), lambda m: m.__setitem__("my_extension", {"must_understand": False, "x": 1}))
    a = zarrflow.open(s.arr)
    np.testing.assert_array_equal(a[...], s.data)


@pytest.mark.parametrize("what", ["chunk-grid", "chunk-key-encoding", "storage-transformer"])
def test_v3_unknown_extension_points(tmp_path: Path, what: str) -> None:
    s = make_store(tmp_path)
    if what == "chunk-grid":
        fn = lambda m: m.__setitem__("chunk_grid", {"name": "rectilinear", "configuration": {"chunk_shapes": [[4, 4], [5, 5]]}})  # noqa: E731
        needle = "rectilinear"
    elif what == "chunk-key-encoding":
        fn = lambda m: m.__setitem__("chunk_key_encoding", {"name": "morton"})  # noqa: E731
        needle = "morton"
    else:
        fn = lambda m: m.__setitem__("storage_transformers", [{"name": "sharding_v0", "configuration": {}}])  # noqa: E731
        needle = "sharding_v0"
    edit_json(s.meta_file(), fn)
    expect(zarrflow.UnsupportedError, open_direct(s), ARR, needle)


# --------------------------------------------------------------------------------------------
# corrupt / truncated / wrong-size chunks -> CorruptChunkError naming array + chunk key
# --------------------------------------------------------------------------------------------


def _compressor(spec: str) -> tuple[int, Any]:
    numcodecs = C.require("numcodecs")
    zarr = C.require("zarr")
    zc = zarr.codecs
    table = {
        "v3-zstd": (3, lambda: [zc.ZstdCodec(level=3)]),
        "v3-zstd-checksum": (3, lambda: [zc.ZstdCodec(level=3, checksum=True)]),
        "v3-blosc-lz4": (3, lambda: [zc.BloscCodec(cname="lz4", shuffle="shuffle")]),
        "v3-blosc-zstd": (3, lambda: [zc.BloscCodec(cname="zstd", shuffle="bitshuffle")]),
        "v3-gzip": (3, lambda: [zc.GzipCodec(level=5)]),
        "v3-raw": (3, lambda: None),
        "v2-zstd": (2, lambda: numcodecs.Zstd(level=3)),
        "v2-blosc": (2, lambda: numcodecs.Blosc(cname="lz4", shuffle=1)),
        "v2-gzip": (2, lambda: numcodecs.GZip(level=5)),
        "v2-zlib": (2, lambda: numcodecs.Zlib(level=5)),
        "v2-lz4": (2, lambda: numcodecs.LZ4()),
        "v2-raw": (2, lambda: None),
    }
    zf, make = table[spec]
    return zf, make()


def _corrupt(spec: str, path: Path) -> None:
    """Damage a compressed chunk in a way its format is guaranteed to notice."""
    raw = bytearray(path.read_bytes())
    kind = spec.split("-", 1)[1]
    if kind.startswith("zstd"):
        raw[0:4] = b"\x00\x00\x00\x00"  # zstd frame magic 28 B5 2F FD
    elif kind.startswith("blosc"):
        # blosc header: version, versionlz, flags, typesize, nbytes(u32), blocksize(u32), cbytes(u32)
        nbytes = struct.unpack_from("<I", raw, 4)[0]
        struct.pack_into("<I", raw, 4, nbytes * 3 + 7)
    elif kind == "gzip":
        raw[-5] ^= 0xFF  # inside the CRC-32 of the gzip trailer (CRC32 u32, ISIZE u32)
        raw[len(raw) // 2] ^= 0x55
    elif kind == "zlib":
        raw[-2] ^= 0xFF  # inside the Adler-32 trailer
        raw[len(raw) // 2] ^= 0x55
    elif kind == "lz4":
        raw[4:] = b"\xff" * (len(raw) - 4)  # numcodecs lz4: u32 size + block; all-0xFF tokens overrun
    else:
        raise AssertionError(spec)
    path.write_bytes(bytes(raw))


CORRUPTIBLE = ["v3-zstd", "v3-zstd-checksum", "v3-blosc-lz4", "v3-blosc-zstd", "v3-gzip",
               "v2-zstd", "v2-blosc", "v2-gzip", "v2-zlib", "v2-lz4"]


@pytest.mark.parametrize("spec", CORRUPTIBLE)
def test_corrupt_compressed_chunk(tmp_path: Path, spec: str) -> None:
    zf, comp = _compressor(spec)
    s = make_store(tmp_path, zarr_format=zf, compressors=comp)
    _corrupt(spec, s.chunk(1, 0))
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(1, 0))
    expect(zarrflow.CorruptChunkError, read_all_via_group(s), ARR, s.key(1, 0))
    # chunk (1, 0) covers rows 4..7, cols 0..4
    assert_not_poisoned(s, (slice(4, 8), slice(0, 5)), (slice(0, 4), slice(None)), zarrflow.CorruptChunkError)
    np.testing.assert_array_equal(zarrflow.open(s.arr)[4:, 5:], s.data[4:, 5:])


TRUNCATABLE = ["v3-zstd", "v3-blosc-lz4", "v3-gzip", "v3-raw", "v2-blosc", "v2-zlib", "v2-lz4", "v2-raw"]


@pytest.mark.parametrize("spec", TRUNCATABLE)
def test_truncated_chunk(tmp_path: Path, spec: str) -> None:
    zf, comp = _compressor(spec)
    s = make_store(tmp_path, zarr_format=zf, compressors=comp)
    p = s.chunk(0, 1)
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(0, 1))
    assert_not_poisoned(s, (0, 7), (slice(4, 8), slice(None)), zarrflow.CorruptChunkError)


def test_empty_chunk_file(tmp_path: Path) -> None:
    s = make_store(tmp_path, compressors=[C.require("zarr").codecs.ZstdCodec()])
    s.chunk(1, 1).write_bytes(b"")
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(1, 1))


def _wrong_size_blob(spec: str, nbytes: int) -> bytes:
    numcodecs = C.require("numcodecs")
    payload = bytes(range(256)) * (nbytes // 256 + 2)
    kind = spec.split("-", 1)[1]
    short = payload[: nbytes - 4]
    long = payload[: nbytes + 8]
    if kind == "zstd":
        return numcodecs.Zstd(level=1).encode(short)
    if kind == "gzip":
        return gzip.compress(long)
    if kind == "zlib":
        return zlib.compress(short)
    if kind == "blosc":
        return numcodecs.Blosc(cname="lz4").encode(np.frombuffer(long[: (nbytes + 8) // 4 * 4], "<i4"))
    if kind == "raw":
        return long
    raise AssertionError(spec)


@pytest.mark.parametrize("spec", ["v3-zstd", "v3-gzip", "v3-raw", "v2-zlib", "v2-blosc", "v2-raw"])
def test_decoded_size_mismatch(tmp_path: Path, spec: str) -> None:
    """A chunk that decodes cleanly but to the wrong number of bytes."""
    zf, comp = _compressor(spec)
    s = make_store(tmp_path, zarr_format=zf, compressors=comp)
    chunk_nbytes = 4 * 5 * 4  # (4, 5) int32
    s.chunk(1, 1).write_bytes(_wrong_size_blob(spec, chunk_nbytes))
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(1, 1))
    assert_not_poisoned(s, (slice(4, 8), slice(5, 10)), (slice(0, 4), slice(None)), zarrflow.CorruptChunkError)


# --------------------------------------------------------------------------------------------
# checksums -> ChecksumError
# --------------------------------------------------------------------------------------------


def test_crc32c_codec_mismatch(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    s = make_store(tmp_path, compressors=[zarr.codecs.Crc32cCodec()])
    flip(s.chunk(0, 1), 3)  # a data byte; the last 4 bytes are the checksum
    expect(zarrflow.ChecksumError, read_all_direct(s), ARR, s.key(0, 1))
    assert_not_poisoned(s, (slice(0, 4), slice(5, 10)), (slice(4, 8), slice(None)), zarrflow.ChecksumError)


def test_crc32c_stored_checksum_flipped(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    s = make_store(tmp_path, compressors=[zarr.codecs.ZstdCodec(level=1), zarr.codecs.Crc32cCodec()])
    p = s.chunk(1, 0)
    flip(p, len(p.read_bytes()) - 1, 0x01)
    expect(zarrflow.ChecksumError, read_all_direct(s), ARR, s.key(1, 0))


def test_zstd_content_checksum_mismatch(tmp_path: Path) -> None:
    """zstd's own content checksum (last 4 bytes of the frame) -> a CorruptChunkError (ChecksumError
    is one)."""
    zarr = C.require("zarr")
    s = make_store(tmp_path, compressors=[zarr.codecs.ZstdCodec(level=1, checksum=True)])
    p = s.chunk(1, 0)
    flip(p, len(p.read_bytes()) - 2)
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(1, 0))


# --------------------------------------------------------------------------------------------
# sharding: index problems
# --------------------------------------------------------------------------------------------

SHAPE, SHARDS, INNER = (16, 8), (8, 8), (4, 4)  # 2 shards of 2x2 inner chunks
N_INNER = 4


def make_sharded(tmp_path: Path, *, location: str = "end", index_crc: bool = True,
                 inner_codecs: Any = None) -> Store:
    zarr = C.require("zarr")
    zc = zarr.codecs
    index_codecs = [zc.BytesCodec(), zc.Crc32cCodec()] if index_crc else [zc.BytesCodec()]
    ser = zc.ShardingCodec(chunk_shape=INNER, codecs=inner_codecs or [zc.BytesCodec()],
                           index_codecs=index_codecs, index_location=location)
    return make_store(tmp_path, shape=SHAPE, chunks=SHARDS, serializer=ser)


def _index_span(raw: bytes, location: str, crc: bool) -> tuple[int, int]:
    size = N_INNER * 16 + (4 if crc else 0)
    return (0, size) if location == "start" else (len(raw) - size, len(raw))


def rewrite_index(path: Path, location: str, crc: bool, fn: Callable[[np.ndarray, int, int], None]) -> None:
    """Apply fn(entries[N,2] (offset, nbytes), file_size, index_start) and rewrite the index with a
    valid crc32c, so that the checksum is not what fails."""
    raw = bytearray(path.read_bytes())
    a, b = _index_span(bytes(raw), location, crc)
    entries = np.frombuffer(bytes(raw[a: a + N_INNER * 16]), "<u8").reshape(-1, 2).copy()
    fn(entries, len(raw), a)
    body = entries.astype("<u8").tobytes()
    raw[a: a + N_INNER * 16] = body
    if crc:
        raw[a + N_INNER * 16: b] = struct.pack("<I", crc32c(body))
    path.write_bytes(bytes(raw))


def test_shard_index_checksum_mismatch(tmp_path: Path) -> None:
    s = make_sharded(tmp_path)
    p = s.chunk(1, 0)
    raw = p.read_bytes()
    a, _ = _index_span(raw, "end", True)
    flip(p, a + 8, 0x01)  # nbytes of inner chunk 0
    expect(zarrflow.ChecksumError, read_all_direct(s), ARR, s.key(1, 0))
    assert_not_poisoned(s, (slice(8, 16),), (slice(0, 8),), zarrflow.ChecksumError)


def test_shard_inner_chunk_checksum_mismatch(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    s = make_sharded(tmp_path, inner_codecs=[zarr.codecs.BytesCodec(), zarr.codecs.Crc32cCodec()])
    p = s.chunk(0, 0)
    raw = p.read_bytes()
    a, _ = _index_span(raw, "end", True)
    off = int(np.frombuffer(raw[a: a + 16], "<u8")[0])  # inner chunk (0, 0)
    flip(p, off + 1)
    expect(zarrflow.ChecksumError, read_all_direct(s), ARR, s.key(0, 0))
    assert_not_poisoned(s, (slice(0, 4), slice(0, 4)), (slice(8, 16),), zarrflow.ChecksumError)


def _past_end(e: np.ndarray, size: int, start: int) -> None:
    e[1] = (size - 8, 64)


def _wrapping(e: np.ndarray, size: int, start: int) -> None:
    e[1] = (2**64 - 16, 64)  # offset + nbytes wraps around 2**64


def _huge_nbytes(e: np.ndarray, size: int, start: int) -> None:
    e[1] = (0, 2**63)


def _into_index(e: np.ndarray, size: int, start: int) -> None:
    e[1] = (start, 64)  # the index's own bytes


def _half_empty(e: np.ndarray, size: int, start: int) -> None:
    e[1] = (2**64 - 1, 64)  # only one half of the "empty" marker


BAD_INDEX = {"past-end": _past_end, "offset-wraps": _wrapping, "huge-nbytes": _huge_nbytes,
             "overlaps-index": _into_index, "half-empty-marker": _half_empty}


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize("index_crc", [True, False], ids=["crc", "nocrc"])
@pytest.mark.parametrize("bad", list(BAD_INDEX))
def test_shard_index_entry_invalid(tmp_path: Path, bad: str, location: str, index_crc: bool) -> None:
    s = make_sharded(tmp_path, location=location, index_crc=index_crc)
    rewrite_index(s.chunk(1, 0), location, index_crc, BAD_INDEX[bad])
    err = expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(1, 0))
    assert not isinstance(err, zarrflow.ChecksumError), "the index checksum was valid"
    # inner chunk 1 of shard (1, 0) is rows 8..11, cols 4..7; shard (0, 0) is fine
    assert_not_poisoned(s, (slice(8, 12), slice(4, 8)), (slice(0, 8),), zarrflow.CorruptChunkError)


def test_shard_shorter_than_index(tmp_path: Path) -> None:
    s = make_sharded(tmp_path)
    s.chunk(1, 0).write_bytes(b"\x00" * 10)
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(1, 0))


def test_nested_shard_index_past_end(tmp_path: Path) -> None:
    """An out-of-range entry in the *inner* shard's index of a nested shard."""
    zarr = C.require("zarr")
    zc = zarr.codecs
    inner = zc.ShardingCodec(chunk_shape=(2, 2), codecs=[zc.BytesCodec()], index_codecs=[zc.BytesCodec()],
                             index_location="start")
    s = make_sharded(tmp_path, inner_codecs=[inner])
    p = s.chunk(0, 0)
    raw = bytearray(p.read_bytes())
    a, _ = _index_span(bytes(raw), "end", True)
    off, nb = (int(x) for x in np.frombuffer(bytes(raw[a: a + 16]), "<u8"))  # inner shard 0
    struct.pack_into("<QQ", raw, off, nb * 10, 16)  # its first entry: far beyond its own bytes
    p.write_bytes(bytes(raw))
    expect(zarrflow.CorruptChunkError, read_all_direct(s), ARR, s.key(0, 0))


# --------------------------------------------------------------------------------------------
# paths escaping the store root -> PathEscapeError
# --------------------------------------------------------------------------------------------


def _outside_array(tmp_path: Path, zarr_format: int) -> Path:
    """A perfectly valid array *outside* the store: escaping would silently 'work'."""
    zarr = C.require("zarr")
    out = tmp_path / "outside"
    C._quiet(lambda: zarr.create_array(store=str(out), shape=(3,), chunks=(3,), dtype="int8",
                                       zarr_format=zarr_format, fill_value=1))
    return out


def _escape_attempt(root: Path, member: str) -> None:
    """Open the group, enumerate it, and fetch `member`; some step must refuse with PathEscapeError."""
    g = zarrflow.open(root)
    names = list(g.keys())
    assert member not in names, f"escaping member {member!r} listed as a child: {names}"
    for _ in g.arrays():
        pass
    g[member]


@pytest.mark.parametrize("member", ["../outside", "/ABS"])
def test_v2_consolidated_member_escapes(tmp_path: Path, member: str) -> None:
    s = make_store(tmp_path, zarr_format=2)
    outside = _outside_array(tmp_path, 2)
    if member == "/ABS":
        member = str(outside)
    zarr = C.require("zarr")
    C._quiet(lambda: zarr.consolidate_metadata(str(s.root)))
    zm = s.root / ".zmetadata"
    m = json.loads(zm.read_text())
    m["metadata"][f"{member}/.zarray"] = json.loads((outside / ".zarray").read_text())
    m["metadata"][f"{member}/.zattrs"] = {}
    zm.write_text(json.dumps(m))
    expect(zarrflow.PathEscapeError, lambda: _escape_attempt(s.root, member), "outside")


@pytest.mark.parametrize("member", ["../outside", "/ABS"])
def test_v3_consolidated_member_escapes(tmp_path: Path, member: str) -> None:
    s = make_store(tmp_path, zarr_format=3)
    outside = _outside_array(tmp_path, 3)
    if member == "/ABS":
        member = str(outside)
    zarr = C.require("zarr")
    C._quiet(lambda: zarr.consolidate_metadata(str(s.root)))
    zj = s.root / "zarr.json"
    m = json.loads(zj.read_text())
    m["consolidated_metadata"]["metadata"][member] = json.loads((outside / "zarr.json").read_text())
    zj.write_text(json.dumps(m))
    expect(zarrflow.PathEscapeError, lambda: _escape_attempt(s.root, member), "outside")


def test_v3_consolidated_member_node_type_not_a_string(tmp_path: Path) -> None:
    """A consolidated member whose node_type is not a string is malformed metadata naming the
    member (not an nlohmann type_error)."""
    s = make_store(tmp_path, zarr_format=3)
    zarr = C.require("zarr")
    C._quiet(lambda: zarr.consolidate_metadata(str(s.root)))
    edit_json(s.root / "zarr.json",
              lambda m: m["consolidated_metadata"]["metadata"]["g1"].__setitem__("node_type", 5))
    expect(zarrflow.MetadataError, lambda: zarrflow.open(s.root)["g1"], "g1")


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("key", ["../outside", "g1/../../outside", "g1/bad_arr/../../../outside", "ABS"])
def test_group_getitem_escapes(tmp_path: Path, zarr_format: int, key: str) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    outside = _outside_array(tmp_path, zarr_format)
    if key == "ABS":
        key = str(outside)  # an absolute path to a real array outside the store
    g = zarrflow.open(s.root)
    expect(zarrflow.PathEscapeError, lambda: g[key], "outside")
    expect(zarrflow.PathEscapeError, lambda: g["g1"][key if key.startswith("/") else "../" + key], "outside")


def _move_chunk_outside(s: Store, tmp_path: Path, coords: tuple, relative: bool) -> Path:
    src = s.chunk(*coords)
    target = tmp_path / "elsewhere" / "chunk.bin"
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, target)
    os.symlink(os.path.relpath(target, src.parent) if relative else target, src)
    return target


@pytest.mark.parametrize("relative", [False, True], ids=["absolute-link", "relative-link"])
@pytest.mark.parametrize("zarr_format", [3, 2])
def test_chunk_symlink_outside_root(tmp_path: Path, zarr_format: int, relative: bool) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    _move_chunk_outside(s, tmp_path, (1, 0), relative)
    expect(zarrflow.PathEscapeError, read_all_direct(s), ARR, s.key(1, 0))
    expect(zarrflow.PathEscapeError, read_all_via_group(s), ARR, s.key(1, 0))
    # other chunks still read
    np.testing.assert_array_equal(zarrflow.open(s.arr)[0:4], s.data[0:4])


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_chunk_symlink_inside_root_works(tmp_path: Path, zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    # (a) into a blob folder inside the array directory: fine whichever way the array is opened
    src = s.chunk(1, 0)
    blob = s.arr / "_blobs" / "c10"
    blob.parent.mkdir()
    os.replace(src, blob)
    os.symlink(os.path.relpath(blob, src.parent), src)
    # (b) into a folder elsewhere inside the store root: fine when opened through the root group
    src2 = s.chunk(0, 1)
    blob2 = s.root / "blobs" / "c01"
    blob2.parent.mkdir()
    os.replace(src2, blob2)
    os.symlink(blob2, src2)
    g = zarrflow.open(s.root)
    np.testing.assert_array_equal(g[ARR][...], s.data)
    np.testing.assert_array_equal(zarrflow.open(s.arr)[4:8, 0:5], s.data[4:8, 0:5])


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_metadata_symlink_outside_root(tmp_path: Path, zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    mf = s.meta_file()
    target = tmp_path / "elsewhere" / mf.name
    target.parent.mkdir()
    os.replace(mf, target)
    os.symlink(target, mf)
    expect(zarrflow.PathEscapeError, lambda: zarrflow.open(s.root)[ARR], ARR)


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_directory_symlink_member(tmp_path: Path, zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    outside = _outside_array(tmp_path, zarr_format)
    os.symlink(outside, s.root / "g1" / "linked_out")
    os.symlink(s.arr, s.root / "g1" / "alias")  # inside the root: allowed
    g = zarrflow.open(s.root)
    expect(zarrflow.PathEscapeError, lambda: g["g1/linked_out"][...], "linked_out")
    np.testing.assert_array_equal(g["g1/alias"][...], s.data)


def test_chunk_is_a_directory(tmp_path: Path) -> None:
    """The OS refuses to read a chunk (here: a directory where the v2 chunk file should be)."""
    s = make_store(tmp_path, zarr_format=2)
    p = s.chunk(1, 0)
    p.unlink()
    p.mkdir()
    expect(zarrflow.StoreIOError, read_all_direct(s), ARR, s.key(1, 0))
    np.testing.assert_array_equal(zarrflow.open(s.arr)[0:4], s.data[0:4])


# --------------------------------------------------------------------------------------------
# missing nodes, bad indices, bad out buffers
# --------------------------------------------------------------------------------------------


def test_missing_store_path(tmp_path: Path) -> None:
    p = tmp_path / "no_such_store.zarr"
    for fn in (zarrflow.open, zarrflow.open_array, zarrflow.open_group):
        err = expect(zarrflow.NodeNotFoundError, lambda: fn(p), "no_such_store.zarr")
        assert isinstance(err, FileNotFoundError)
    expect(zarrflow.NodeNotFoundError, lambda: zarrflow.open(str(p)), "no_such_store.zarr")


def test_directory_without_metadata(tmp_path: Path) -> None:
    p = tmp_path / "plain_dir"
    (p / "c").mkdir(parents=True)
    expect(zarrflow.NodeNotFoundError, lambda: zarrflow.open(p), "plain_dir")


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_group_member_missing_is_keyerror(tmp_path: Path, zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    g = zarrflow.open(s.root)
    with pytest.raises(KeyError):
        g["nope"]
    with pytest.raises(KeyError):
        g["g1/nope"]
    assert "g1/nope" not in g


def test_open_array_on_group_and_open_group_on_array(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    with pytest.raises(zarrflow.ZarrflowError):
        zarrflow.open_array(s.root)
    with pytest.raises(zarrflow.ZarrflowError):
        zarrflow.open_group(s.arr)


@pytest.mark.parametrize("sel", [(8,), (-9,), (0, 10), (0, -11), (Ellipsis, 10), (slice(None), -11)],
                         ids=["8", "-9", "0,10", "0,-11", "...,10", ":,-11"])
def test_index_out_of_range(tmp_path: Path, sel: tuple) -> None:
    s = make_store(tmp_path)
    a = zarrflow.open(s.arr)
    with pytest.raises(IndexError) as ei:
        a[sel]
    assert isinstance(ei.value, zarrflow.ZarrflowIndexError)


def test_too_many_indices(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    a = zarrflow.open(s.arr)
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        a.read(region=(slice(0, 8),) * 3)


@pytest.mark.parametrize("region", [(slice(0, 9), slice(0, 10)), (slice(0, 8), slice(5, 11)),
                                    (slice(8, 9), slice(None))],
                         ids=["dim0-past-end", "dim1-past-end", "starts-at-end"])
def test_read_region_out_of_range(tmp_path: Path, region: tuple) -> None:
    """read(region=...) takes explicit hyperslabs: one reaching past the array raises
    ZarrflowIndexError (the brief's contract) instead of being clamped like NumPy slicing."""
    s = make_store(tmp_path)
    a = zarrflow.open(s.arr)
    with pytest.raises(zarrflow.ZarrflowIndexError):
        a.read(region=region)


def test_read_out_buffer_mismatch(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    a = zarrflow.open(s.arr)
    with pytest.raises((ValueError, TypeError)):
        a.read(out=np.empty((8, 9), "int32"))  # wrong shape
    with pytest.raises((ValueError, TypeError)):
        a.read(out=np.empty((8, 10), "float32"))  # wrong dtype
    ro = np.empty((8, 10), "int32")
    ro.flags.writeable = False
    with pytest.raises((ValueError, TypeError)):
        a.read(out=ro)  # read-only
    np.testing.assert_array_equal(a.read(), s.data)  # and the array is still fine
