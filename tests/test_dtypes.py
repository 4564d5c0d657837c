"""Data types real stores hold, written by zarr-python 3 and read by zarrflow as zarr-python reads
them: fixed-length text and bytes, datetime64/timedelta64 in every unit, raw and structured
elements, variable-length text and bytes, in Zarr v2 and v3, sharded and not, with missing chunks
and inner chunks. Then bad input: corrupt variable-length chunks, impossible element sizes and
time units, wrong JSON types, GPU reads of text.

Fixed-size elements are compared bit for bit (zarrflow returns native byte order where
zarr-python keeps a v2 store's big-endian dtype; structured types keep their fields' order, as in
zarr-python); variable-length elements element by element, with the same dtype.

zarr-python 3 facts the cases rely on (zarr 3.1): v3 writes text little-endian whatever the
NumPy byte order; it cannot write numcodecs.VLenArray (so that case is hand-written, read as
zarr-python 2 read it), nor shard raw or structured elements (their fill value, a NumPy void
scalar, cannot be hashed), so those are read sharded only by the C++ tests; a v2 structured array with a null fill reads as zeros here, while
zarr-python 3 fills its text fields with b"0".
"""

from __future__ import annotations

import base64
import json
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import corpus as C
import zarrflow

SHAPE = (7, 5)
CHUNKS = (3, 2)
SHARDS = (6, 4)
# Two written boxes: chunks (0,0), (0,1) and (1,2) are stored, the rest missing; in the sharded
# layout shard (0,0) misses two inner chunks and shard (0,1) one, shards (1,*) are missing.
WRITTEN = ((slice(0, 2), slice(0, 3)), (slice(3, 4), slice(4, 5)))
UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
LAYOUTS = {"v2": (2, None), "v3": (3, None), "v3-sharded": (3, SHARDS)}
TEXT = ["", "a", "é", "zarr", "中文字符", "😀 emoji", "x" * 40, "tab\tnew\nline", "\x00nul"]


def _texts(shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = [TEXT[i] + str(j) * (j % 3) for j, i in enumerate(rng.integers(0, len(TEXT), np.prod(shape)))]
    return np.array(picks, dtype=object).reshape(shape)


def _blobs(shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty(int(np.prod(shape)), dtype=object)
    for i in range(out.size):
        out[i] = rng.integers(0, 256, int(rng.integers(0, 12)), dtype=np.uint8).tobytes()
    return out.reshape(shape)


def _ints(shape: tuple, seed: int, dtype: str, nat: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.integers(-10**6, 10**6, shape, dtype=np.int64)
    if nat:
        v.flat[::5] = np.iinfo(np.int64).min  # NaT
    return v.astype(np.dtype(dtype).newbyteorder("=")).view(np.dtype(dtype).newbyteorder("="))


def _fixed_text(shape: tuple, seed: int, dtype: str) -> np.ndarray:
    return np.array(_texts(shape, seed).tolist(), dtype=dtype)


def _raw(shape: tuple, seed: int, dtype: Any) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    return rng.integers(0, 256, int(np.prod(shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(shape)


@dataclass(frozen=True)
class DType:
    id: str
    spec: Callable[[], Any]  # what zarr.create_array takes as dtype
    make: Callable[[tuple, int], np.ndarray]
    fill: Callable[[], Any] | None = None  # fill_value for zarr.create_array (None: its default)
    layouts: tuple = tuple(LAYOUTS)


def _vlen_utf8():
    from zarr.core.dtype import VariableLengthUTF8

    return VariableLengthUTF8()


def _vlen_bytes():
    from zarr.core.dtype import VariableLengthBytes

    return VariableLengthBytes()


STRUCT = [("a", "<i4"), ("b", "<f8"), ("c", "S3")]
STRUCT_TIME = [("a", "<i4"), ("t", "<M8[s]")]  # numcodecs cannot write datetime fields to v2

DTYPES = [
    DType("bool", lambda: "bool", lambda s, k: np.random.default_rng(k).random(s) > 0.5, lambda: True),
    DType("U7", lambda: "<U7", lambda s, k: _fixed_text(s, k, "<U7"), lambda: "fill"),
    DType("U3-big-endian", lambda: ">U3", lambda s, k: _fixed_text(s, k, ">U3"), layouts=("v2",)),
    DType("S5", lambda: "S5", lambda s, k: _raw(s, k, "S5"), lambda: b"ab\x00"),
    DType("V4", lambda: "V4", lambda s, k: _raw(s, k, "V4"), layouts=("v2", "v3")),
    *[DType(f"M8[{u}]", lambda u=u: f"M8[{u}]", lambda s, k, u=u: _ints(s, k, f"M8[{u}]"),
            layouts=("v2", "v3") if u not in ("ns", "D") else tuple(LAYOUTS)) for u in UNITS],
    *[DType(f"m8[{u}]", lambda u=u: f"m8[{u}]", lambda s, k, u=u: _ints(s, k, f"m8[{u}]"),
            layouts=("v2", "v3") if u not in ("s",) else tuple(LAYOUTS)) for u in UNITS],
    DType("M8[10s]", lambda: "M8[10s]", lambda s, k: _ints(s, k, "M8[10s]")),
    DType("M8[ns]-fill", lambda: "M8[ns]", lambda s, k: _ints(s, k, "M8[ns]"),
          lambda: np.datetime64("2000-01-01T00:00:00.5", "ns")),
    DType("m8[ms]-big-endian", lambda: ">m8[ms]", lambda s, k: _ints(s, k, ">m8[ms]"), layouts=("v2",)),
    DType("structured", lambda: STRUCT, lambda s, k: _raw(s, k, STRUCT), layouts=("v2", "v3")),
    DType("structured-datetime", lambda: STRUCT_TIME,
          lambda s, k: _raw(s, k, [("a", "<i4"), ("t", "<i8")]).view(STRUCT_TIME), layouts=("v3",)),
    DType("structured-big-endian", lambda: [("a", ">i4"), ("b", ">f4")],
          lambda s, k: _raw(s, k, [("a", ">i4"), ("b", ">f4")]), layouts=("v2",)),
    DType("string", _vlen_utf8, _texts, lambda: "zz"),
    DType("string-default-fill", _vlen_utf8, _texts),
    DType("bytes", _vlen_bytes, _blobs, lambda: b"\x00q"),
]
DTYPE_CASES = [(d, layout) for d in DTYPES for layout in d.layouts]


def _quiet(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _write(path: Path, dt: DType, zarr_format: int, shards: tuple | None, seed: int,
           **kw: Any) -> np.ndarray:
    zarr = C.require("zarr")
    data = dt.make(SHAPE, seed)
    if dt.fill is not None:
        kw["fill_value"] = dt.fill()
    if shards is not None:
        kw["shards"] = shards

    def create():
        a = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dt.spec(),
                              zarr_format=zarr_format, **kw)
        for box in WRITTEN:
            a[box] = data[box]

    _quiet(create)
    return data


def _zarr_read(path: Path) -> np.ndarray:
    """Everything, as zarr-python reads it (an array of its dtype, also for 0-d arrays)."""
    zarr = C.require("zarr")
    z = _quiet(lambda: zarr.open_array(str(path), mode="r"))
    r = _quiet(lambda: z[...])
    return r if isinstance(r, np.ndarray) else np.array(r, dtype=z.dtype)


def _index(a: np.ndarray, key: Any) -> np.ndarray:
    """a[key] as an array of a's dtype (NumPy gives a scalar for an integer index)."""
    r = a[key]
    return r if isinstance(r, np.ndarray) else np.array(r, dtype=a.dtype)


def _native(dt: np.dtype) -> np.dtype:
    return dt.newbyteorder("=") if dt.names is None and dt.byteorder == ">" else dt


def assert_same(ours: np.ndarray, theirs: np.ndarray) -> None:
    """zarrflow's result equals zarr-python's: bit for bit for fixed-size elements (in native byte
    order), element by element with the same dtype for variable-length ones."""
    assert isinstance(ours, np.ndarray)
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape
    if theirs.dtype.kind in "OT":
        assert ours.dtype == theirs.dtype
        assert ours.tolist() == theirs.tolist()
        return
    assert ours.dtype == _native(theirs.dtype)
    assert ours.tobytes() == theirs.astype(_native(theirs.dtype)).tobytes()


def assert_same_fill(ours: Any, theirs: Any) -> None:
    """The fill values are the same kind of object with the same value (bits, for NumPy
    scalars, so that NaT and NaN compare)."""
    if theirs is None:
        assert ours is None
        return
    assert type(ours) is type(theirs), (ours, theirs)
    if isinstance(theirs, np.generic):
        mine = np.array(ours)
        assert mine.tobytes() == np.array(theirs).astype(mine.dtype).tobytes(), (ours, theirs)
    else:
        assert ours == theirs


SELECTIONS = [Ellipsis, (slice(1, 6, 2), slice(None, None, -1)), (4, 1), (0, 0), (slice(2, 3), 4),
              (slice(0, 0), slice(None))]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Callable[[DType, str], Path]:
    root = tmp_path_factory.mktemp("dtypes")
    made: dict[tuple[str, str], Path] = {}

    def get(dt: DType, layout: str) -> Path:
        if (dt.id, layout) not in made:
            fmt, shards = LAYOUTS[layout]
            path = root / layout / dt.id.replace("[", "_").replace("]", "_")
            _write(path, dt, fmt, shards, seed=len(made))
            made[(dt.id, layout)] = path
        return made[(dt.id, layout)]

    return get


@pytest.mark.parametrize("dt,layout", DTYPE_CASES, ids=[f"{d.id}-{lay}" for d, lay in DTYPE_CASES])
def test_reads_as_zarr_python(written: Callable, dt: DType, layout: str) -> None:
    path = written(dt, layout)
    ours = zarrflow.open_array(path)
    theirs = C.require("zarr")
    z = _quiet(lambda: theirs.open_array(str(path), mode="r"))
    assert ours.dtype == _native(z.dtype)
    assert_same_fill(ours.fill_value, z.fill_value)
    expected = _zarr_read(path)
    for key in SELECTIONS:  # zarr-python takes no negative steps: NumPy indexes its result
        assert_same(np.asarray(ours[key]), _index(expected, key))


@pytest.mark.parametrize("layout", ["v2", "v3"])
def test_missing_chunks_hold_the_fill_value(written: Callable, layout: str) -> None:
    """Independent of zarr-python's reading: the elements of chunks never written are the fill."""
    dt = next(d for d in DTYPES if d.id == "string")
    arr = zarrflow.open_array(written(dt, layout))
    got = arr[...]
    assert got[6, 0] == "zz" and got[2, 4] == "zz" and got[5, 3] == "zz"
    fixed = zarrflow.open_array(written(next(d for d in DTYPES if d.id == "U7"), layout))[...]
    assert fixed[6, 0] == "fill" and fixed.dtype == np.dtype("<U7")


# --------------------------------------------------------------------------------------------
# variable-length text through every codec chain zarr-python writes
# --------------------------------------------------------------------------------------------


CODEC_VARIANTS: dict[str, tuple[int, Callable[[Any, Any], dict]]] = {
    "v2-uncompressed": (2, lambda zc, nc: {"compressors": None}),
    "v2-zlib": (2, lambda zc, nc: {"compressors": nc.Zlib(level=1)}),
    "v2-blosc": (2, lambda zc, nc: {"compressors": nc.Blosc(cname="lz4", shuffle=1)}),
    "v2-lz4": (2, lambda zc, nc: {"compressors": nc.LZ4()}),
    "v2-order-F": (2, lambda zc, nc: {"order": "F"}),
    "v3-uncompressed": (3, lambda zc, nc: {"compressors": None}),
    "v3-gzip": (3, lambda zc, nc: {"compressors": zc.GzipCodec(level=1)}),
    "v3-blosc": (3, lambda zc, nc: {"compressors": zc.BloscCodec(cname="zstd", shuffle="noshuffle")}),
    "v3-crc32c": (3, lambda zc, nc: {"compressors": [zc.ZstdCodec(level=1), zc.Crc32cCodec()]}),
    "v3-sharded-crc32c": (3, lambda zc, nc: {"shards": SHARDS, "compressors": zc.Crc32cCodec()}),
    # zarr-python 3.1 writes these chunks untransposed and reads them transposed; zarrflow
    # decodes the transpose per the spec and so reads what zarr-python reads.
    "v3-transpose": (3, lambda zc, nc: {"filters": [zc.TransposeCodec(order=(1, 0))]}),
}


@pytest.mark.parametrize("variant", list(CODEC_VARIANTS))
def test_text_through_codec_chains(tmp_path: Path, variant: str) -> None:
    fmt, make_kw = CODEC_VARIANTS[variant]
    kw = make_kw(C.require("zarr").codecs, C.require("numcodecs"))
    dt = next(d for d in DTYPES if d.id == "string")
    _write(tmp_path / variant, dt, fmt, kw.pop("shards", None), seed=len(variant), **kw)
    ours = zarrflow.open_array(tmp_path / variant)
    expected = _zarr_read(tmp_path / variant)
    for key in SELECTIONS:
        assert_same(np.asarray(ours[key]), _index(expected, key))


def test_zero_dimensional_text(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    for fmt in (2, 3):
        p = tmp_path / f"v{fmt}"
        _quiet(lambda: zarr.create_array(str(p), shape=(), dtype=_vlen_utf8(), zarr_format=fmt,
                                         fill_value="")).__setitem__((), "scalar é")
        assert_same(zarrflow.open_array(p)[...], _zarr_read(p))


def test_out_and_negative_steps_for_text(written: Callable) -> None:
    arr = zarrflow.open_array(written(next(d for d in DTYPES if d.id == "string"), "v3"))
    out = np.empty((7, 5), dtype=arr.dtype)
    assert arr.read(out=out) is out
    assert out.tolist() == arr[...].tolist()
    assert arr[::-2, 1].tolist() == arr[...][::-2, 1].tolist()


# --------------------------------------------------------------------------------------------
# stores zarr-python 3 cannot write: hand-written v2 object arrays
# --------------------------------------------------------------------------------------------


def _hand_v2(path: Path, dtype: Any, filters: Any, compressor: Any, fill: Any,
             chunks: dict[str, bytes], shape: tuple = (3,), chunk: tuple = (2,)) -> Path:
    path.mkdir(parents=True)
    (path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": list(shape), "chunks": list(chunk), "dtype": dtype,
        "fill_value": fill, "order": "C", "filters": filters, "compressor": compressor}))
    for key, value in chunks.items():
        (path / key).write_bytes(value)
    return path


def _vlen(items: list[bytes], count: int | None = None) -> bytes:
    """numcodecs' vlen encoding; `count` overrides the item count in the header."""
    out = struct.pack("<I", len(items) if count is None else count)
    for it in items:
        out += struct.pack("<I", len(it)) + it
    return out


def test_vlen_array_reads_as_zarr_python_2_did(tmp_path: Path) -> None:
    numcodecs = C.require("numcodecs")
    codec = numcodecs.VLenArray("<i4")
    chunk = codec.encode(np.array([np.array([1, 2, 3], "i4"), np.array([], "i4")], dtype=object))
    for fill, missing in ((None, None), (0, 0)):
        p = _hand_v2(tmp_path / f"fill-{fill}", "|O", [{"id": "vlen-array", "dtype": "<i4"}], None,
                     fill, {"0": bytes(chunk)})
        arr = zarrflow.open_array(p)
        assert arr.dtype == np.dtype(object)
        got = arr[...]
        assert got.dtype == np.dtype(object) and got.shape == (3,)
        assert np.array_equal(got[0], [1, 2, 3]) and got[0].dtype == np.dtype("<i4")
        assert got[1].shape == (0,)
        assert got[2] is missing or got[2] == missing
        assert arr.fill_value == fill


def test_object_codec_as_compressor(tmp_path: Path) -> None:
    p = _hand_v2(tmp_path / "a", "|O", None, {"id": "vlen-utf8"}, "", {"0": _vlen([b"x", "é".encode()])})
    got = zarrflow.open_array(p)[...]
    assert got.tolist() == ["x", "é", ""]


# --------------------------------------------------------------------------------------------
# bad input: one test per case, each a clear error naming the array (and the chunk key)
# --------------------------------------------------------------------------------------------


def _string_store(tmp_path: Path, chunk0: bytes, fmt: int = 3) -> Path:
    """A 3-element text array with chunk 0 (2 elements) replaced by `chunk0`, uncompressed."""
    dt = next(d for d in DTYPES if d.id == "string")
    zarr = C.require("zarr")
    p = tmp_path / "bad_text"
    _quiet(lambda: zarr.create_array(str(p), shape=(3,), chunks=(2,), dtype=dt.spec(),
                                     zarr_format=fmt, compressors=None)).__setitem__(
        slice(None), np.array(["ab", "c", "d"], dtype=object))
    (p / ("c/0" if fmt == 3 else "0")).write_bytes(chunk0)
    return p


def _expect_chunk_error(path: Path, key: str, needle: str) -> None:
    arr = zarrflow.open_array(path)
    with pytest.raises(zarrflow.CorruptChunkError) as e:
        arr[...]
    msg = str(e.value)
    assert "bad_text" in msg and f"chunk '{key}'" in msg and needle in msg, msg


def test_vlen_item_count_mismatch(tmp_path: Path) -> None:
    _expect_chunk_error(_string_store(tmp_path, _vlen([b"ab"])), "c/0",
                        "1 items, the chunk shape has 2 elements")


def test_vlen_length_past_the_end(tmp_path: Path) -> None:
    _expect_chunk_error(_string_store(tmp_path, _vlen([b"ab", b"c"])[:-1], fmt=2), "0",
                        "item 1 of 2 claims 1 bytes, only 0 are left")


def test_vlen_negative_length(tmp_path: Path) -> None:
    chunk = struct.pack("<Ii", 2, -1) + b"abcdefgh"
    _expect_chunk_error(_string_store(tmp_path, chunk), "c/0", "claims 4294967295 bytes")


def test_vlen_huge_item_count(tmp_path: Path) -> None:
    _expect_chunk_error(_string_store(tmp_path, struct.pack("<II", 2**32 - 1, 0)), "c/0",
                        "4294967295 items, the chunk shape has 2 elements")


def test_vlen_truncated_header(tmp_path: Path) -> None:
    _expect_chunk_error(_string_store(tmp_path, b"\x02\x00"), "c/0", "too short for its 4-byte item count")


def test_vlen_invalid_utf8(tmp_path: Path) -> None:
    _expect_chunk_error(_string_store(tmp_path, _vlen([b"ok", b"\xff\xfe"])), "c/0", "not valid UTF-8")


def test_vlen_corrupt_inner_chunk_names_it(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    p = tmp_path / "bad_text"
    _quiet(lambda: zarr.create_array(str(p), shape=(4,), chunks=(1,), shards=(4,), dtype=_vlen_utf8(),
                                     compressors=None)).__setitem__(
        slice(None), np.array(["a", "b", "c", "d"], dtype=object))
    shard = bytearray((p / "c/0").read_bytes())
    inner = _vlen([b"b"])
    at = bytes(shard).index(inner)
    shard[at:at + 4] = struct.pack("<I", 3)  # inner chunk [1] claims 3 items
    (p / "c/0").write_bytes(bytes(shard))
    _expect_chunk_error(p, "c/0", "inner chunk [1]")


def test_huge_declared_text_length_fails_at_open(tmp_path: Path) -> None:
    p = _hand_v2(tmp_path / "bad_arr", "<U2000000000", None, None, None, {})
    with pytest.raises(zarrflow.UnsupportedError) as e:
        zarrflow.open_array(p)
    assert "bad_arr/.zarray" in str(e.value) and "<U2000000000" in str(e.value)
    assert "NumPy's limit" in str(e.value)


def test_unknown_datetime_unit(tmp_path: Path) -> None:
    p = _hand_v2(tmp_path / "bad_arr", "<M8[fortnight]", None, None, None, {})
    with pytest.raises(zarrflow.MetadataError) as e:
        zarrflow.open_array(p)
    assert "bad_arr/.zarray" in str(e.value) and "unknown time unit 'fortnight'" in str(e.value)


def test_malformed_v3_time_configuration(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    p = tmp_path / "bad_arr"
    _quiet(lambda: zarr.create_array(str(p), shape=(3,), chunks=(2,), dtype="M8[ns]"))
    meta = json.loads((p / "zarr.json").read_text())
    meta["data_type"]["configuration"] = {"unit": "ns", "scale_factor": "1"}
    (p / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(zarrflow.MetadataError) as e:
        zarrflow.open_array(p)
    msg = str(e.value)
    assert "bad_arr/zarr.json" in msg and "numpy.datetime64" in msg and "scale_factor" in msg, msg


def test_wrong_json_type_names_file_and_field(tmp_path: Path) -> None:
    p = _hand_v2(tmp_path / "bad_arr", "<f4", None, None, 0, {})
    meta = json.loads((p / ".zarray").read_text())
    meta["order"] = 5
    (p / ".zarray").write_text(json.dumps(meta))
    with pytest.raises(zarrflow.MetadataError) as e:
        zarrflow.open_array(p)
    msg = str(e.value)
    assert "bad_arr/.zarray" in msg and "'order'" in msg and "json.exception" not in msg, msg


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_text_cannot_be_read_into_a_tensor(written: Callable, device: str) -> None:
    for dt_id in ("string", "U7", "bytes"):
        arr = zarrflow.open_array(written(next(d for d in DTYPES if d.id == dt_id), "v3"))
        with pytest.raises(zarrflow.UnsupportedError) as e:
            arr.read(device=device)
        msg = str(e.value)
        assert "string/bytes/object data cannot be read into GPU memory; read on the host" in msg
        assert dt_id in msg


def test_base64_fill_of_text_matches(written: Callable) -> None:
    """v2 stores write a bytes fill as base64 (b'ab\\x00' -> 'YWIA'); zarrflow decodes it."""
    path = written(next(d for d in DTYPES if d.id == "S5"), "v2")
    assert json.loads((path / ".zarray").read_text())["fill_value"] == base64.b64encode(b"ab\x00").decode()
    assert zarrflow.open_array(path).fill_value == np.bytes_(b"ab")
