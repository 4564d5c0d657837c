"""Codecs under every name zarr-python 3 writes, read bit-exactly.

- Zarr v3 stores zarr-python writes with its numcodecs codecs (`numcodecs.delta`, ...,
  `numcodecs.bz2`, `numcodecs.lzma`, the checksums, `numcodecs.pcodec`), plain and inside shards,
  and Zarr v2 stores with the same codecs as compressor or filters, read by zarrflow equal
  zarr-python's reads byte for byte (NaN payloads included), whole and in regions.
- Codecs zarrflow has no native decoder for go through numcodecs (the foreign-codec fallback):
  pcodec, a numcodecs codec without a native decoder (base64) and one registered by the user.
- Bad input: corrupt bz2/lzma streams, checksum mismatches, a fallback codec that raises or
  returns the wrong size, a codec whose package is missing or that numcodecs does not know: each a
  zarrflow error naming the array and chunk key (or the codec and the pip package).
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow import errors

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")
znc = pytest.importorskip("zarr.codecs.numcodecs")

# zarr-python warns that numcodecs codecs are not in the Zarr v3 spec each time one is created.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Numcodecs codecs are not in the Zarr version 3 specification")


def _data(dtype: str, shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt.kind == "f":
        # a smooth field with a few special values, like the data these filters are used on
        a = np.cumsum(rng.standard_normal(n)).astype(dt)
        a[:3] = [np.nan, np.inf, -0.0]
        return a.reshape(shape)
    info = np.iinfo(dt)
    a = np.cumsum(rng.integers(-3, 4, n)) + (0 if info.min < 0 else 100)
    return np.clip(a, info.min, info.max).astype(dt).reshape(shape)


def _write(path: Path, *, dtype: str, shape=(23, 17), chunks=(8, 5), data=None, seed=0, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw.setdefault("compressors", None)
        a = zarr.create_array(str(path), shape=shape, chunks=chunks, dtype=dtype, fill_value=0, **kw)
        d = _data(dtype, shape, seed) if data is None else data
        a[...] = d
    return d


def _zarr_read(path: Path) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(str(path), mode="r")[...]


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and a.tobytes() == b.tobytes()


def _check_reads(path: Path, want: np.ndarray) -> None:
    arr = zarrflow.open(path)
    assert _same_bytes(arr[...], want.astype(want.dtype.newbyteorder("="))), arr.codecs_description
    reg = tuple(slice(1, s - 2, 2) for s in want.shape)
    assert _same_bytes(arr[reg], want[reg].astype(want.dtype.newbyteorder("=")))


# Zarr v3: (case id, dtype, zarr.create_array keyword arguments); `shards` cases put the codecs in
# the inner chain, as zarr-python does.
with warnings.catch_warnings():  # (the cases create zarr-python codec objects)
    warnings.simplefilter("ignore")
    V3_CASES = [
        ("delta", "int32", dict(filters=[znc.Delta(dtype="int32", astype="int16")],
                                compressors=[znc.Zstd(level=1)])),
        ("delta-float64", "float64", dict(filters=[znc.Delta(dtype="float64")])),
        ("fixedscaleoffset", "float64", dict(filters=[znc.FixedScaleOffset(
            offset=10, scale=100, dtype="float64", astype="int32")], compressors=[znc.Zlib(level=3)])),
        ("fixedscaleoffset-no-dtype-u1", "float32",
         dict(filters=[znc.FixedScaleOffset(offset=-5, scale=10, astype="uint8")])),
        ("astype", "float64", dict(filters=[znc.AsType(encode_dtype="float32", decode_dtype="float64")],
                                   compressors=[znc.GZip(level=2)])),
        ("quantize", "float64", dict(filters=[znc.Quantize(digits=2, dtype="float64")],
                                     compressors=[znc.BZ2(level=1)])),
        ("bitround", "float32", dict(filters=[znc.BitRound(keepbits=6)],
                                     compressors=[znc.Blosc(cname="zstd", shuffle=1)])),
        ("packbits", "bool", dict(filters=[znc.PackBits()], compressors=[znc.LZ4()])),
        ("two-filters", "float64", dict(filters=[
            znc.AsType(encode_dtype="float32", decode_dtype="float64"),
            znc.FixedScaleOffset(offset=0, scale=8, dtype="float32", astype="int16")])),
        ("transpose-delta", "int16", dict(filters=[zarr.codecs.TransposeCodec(order=(1, 0)),
                                                   znc.Delta(dtype="int16")])),
        ("shuffle-zlib", "int32", dict(compressors=[znc.Shuffle(elementsize=4), znc.Zlib(level=1)])),
        ("bz2", "int32", dict(compressors=[znc.BZ2(level=9)])),
        ("lzma", "float32", dict(compressors=[znc.LZMA(preset=1)])),
        ("lzma-alone", "uint16", dict(compressors=[znc.LZMA(format=2, preset=0)])),
        ("lzma-raw-filters", "int64", dict(compressors=[znc.LZMA(format=3, filters=[
            {"id": 3, "dist": 8}, {"id": 33, "preset": 1}])])),
        ("crc32", "int16", dict(compressors=[znc.Zstd(level=1), znc.CRC32()])),
        ("crc32-end", "int16", dict(compressors=[znc.CRC32(location="end")])),
        ("adler32", "uint8", dict(compressors=[znc.Adler32()])),
        ("fletcher32", "float64", dict(compressors=[znc.Fletcher32()])),
        ("jenkins-lookup3", "int32", dict(compressors=[znc.BZ2(level=2), znc.JenkinsLookup3()])),
        ("crc32c", "int32", dict(compressors=[znc.CRC32C()])),
        ("blosc-defaults", "float32", dict(compressors=[znc.Blosc()])),
        ("gzip-zstd-lz4", "uint32", dict(compressors=[znc.GZip(), znc.Zstd(), znc.LZ4()])),
        ("shard-delta-bz2", "int32", dict(shards=(16, 10), filters=[znc.Delta(dtype="int32")],
                                          compressors=[znc.BZ2(level=1)])),
        ("shard-fixedscaleoffset-lzma-crc32", "float32", dict(
            shards=(16, 10), filters=[znc.FixedScaleOffset(offset=0, scale=4, dtype="float32",
                                                           astype="int16")],
            compressors=[znc.LZMA(preset=0), znc.CRC32()])),
        ("shard-packbits-fletcher32", "bool", dict(shards=(16, 10), filters=[znc.PackBits()],
                                                   compressors=[znc.Fletcher32()])),
        ("pcodec", "float32", dict(serializer="pcodec")),
        ("shard-pcodec-adler32", "int64", dict(shards=(16, 10), serializer="pcodec",
                                               compressors=[znc.Adler32()])),
    ]


def _write_v3_case(tmp_path: Path, case_id: str, dtype: str, kw: dict) -> Path:
    """The V3_CASES case written by zarr-python under tmp_path (pcodec ones skip without it)."""
    kw = dict(kw)
    if kw.get("serializer") == "pcodec":
        pytest.importorskip("pcodec")
        kw["serializer"] = znc.PCodec(level=4)
    path = tmp_path / case_id
    _write(path, dtype=dtype, zarr_format=3, **kw)
    return path


@pytest.mark.parametrize("case_id,dtype,kw", V3_CASES, ids=[c[0] for c in V3_CASES])
def test_v3_numcodecs_read_like_zarr_python(tmp_path, case_id, dtype, kw):
    path = _write_v3_case(tmp_path, case_id, dtype, kw)
    codecs = json.loads((path / "zarr.json").read_text())["codecs"]
    assert "numcodecs." in json.dumps(codecs)  # the names this test is about are on disk
    _check_reads(path, _zarr_read(path))


# Zarr v2: (case id, .zarray dtype, filters, compressor).
V2_CASES = [
    ("bz2", "<i4", None, numcodecs.BZ2(level=5)),
    ("lzma", "<f8", None, numcodecs.LZMA(preset=3)),
    ("lzma-raw", "<i2", None, numcodecs.LZMA(format=3, filters=[{"id": 33, "preset": 0}])),
    ("crc32", "<u2", None, numcodecs.CRC32()),
    ("adler32-end", "<f4", None, numcodecs.Adler32(location="end")),
    ("fletcher32", "<i8", None, numcodecs.Fletcher32()),
    ("jenkins-lookup3", "<u4", None, numcodecs.JenkinsLookup3(initval=7)),
    ("quantize", "<f8", [numcodecs.Quantize(digits=3, dtype="<f8", astype="<f4")],
     numcodecs.Zstd(level=1)),
    ("bitround", "<f4", [numcodecs.BitRound(keepbits=10)], numcodecs.Zlib(level=1)),
    ("packbits", "|b1", [numcodecs.PackBits()], numcodecs.BZ2(level=1)),
    ("checksum-filter", ">i4", [numcodecs.CRC32()], numcodecs.LZMA(preset=0)),
    ("pcodec", "<f8", None, "pcodec"),
    ("base64-fallback", "<i2", None, numcodecs.Base64()),
]


@pytest.mark.parametrize("case_id,dtype,filters,compressor", V2_CASES,
                         ids=[c[0] for c in V2_CASES])
def test_v2_numcodecs_read_like_zarr_python(tmp_path, case_id, dtype, filters, compressor):
    if compressor == "pcodec":
        pytest.importorskip("pcodec")
        compressor = numcodecs.get_codec({"id": "pcodec", "level": 3})
    path = tmp_path / case_id
    _write(path, dtype=dtype, zarr_format=2, filters=filters, compressors=compressor)
    _check_reads(path, _zarr_read(path))


def test_v3_delta_before_big_endian_bytes_reads_what_was_written(tmp_path):
    """zarr-python 3.1 writes this chain correctly but reads it back byte-swapped (its Delta views
    the big-endian int16 chunk as native); zarrflow returns the values written."""
    path = tmp_path / "delta-be"
    d = _write(path, dtype="int32", zarr_format=3,
               filters=[znc.Delta(dtype="int32", astype="int16")],
               serializer=zarr.codecs.BytesCodec(endian="big"))
    _check_reads(path, d)


def test_v3_unknown_codec_after_bytes_goes_to_numcodecs(tmp_path):
    """A `numcodecs.<id>` bytes→bytes codec zarr-python has no class for (hand-written metadata):
    numcodecs decodes it."""
    path = tmp_path / "b64"
    d = _write(path, dtype="int16", zarr_format=3, compressors=[znc.Zstd(level=1)])
    md = json.loads((path / "zarr.json").read_text())
    md["codecs"][-1] = {"name": "numcodecs.base64", "configuration": {}}
    (path / "zarr.json").write_text(json.dumps(md))
    b64 = numcodecs.Base64()
    zstd = numcodecs.Zstd(level=1)
    for chunk in (path / "c").rglob("*"):
        if chunk.is_file():
            chunk.write_bytes(b64.encode(zstd.decode(chunk.read_bytes())))
    arr = zarrflow.open(path)
    assert "numcodecs.base64() [numcodecs]" in arr.codecs_description
    _check_reads(path, d)


def test_fallback_decodes_from_many_threads_at_once(tmp_path):
    """Many chunks through the Python codec on zarrflow's threads, from two Python threads."""
    pytest.importorskip("pcodec")
    path = tmp_path / "pco"
    d = _write(path, dtype="float64", shape=(64, 64), chunks=(8, 8), zarr_format=3,
               serializer=znc.PCodec(level=2))
    arr = zarrflow.open(path)
    results = [None, None]

    def read(i):
        results[i] = arr[...]

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(_same_bytes(r, d) for r in results)


# ---- bad input ---------------------------------------------------------------------------------


def _first_chunk(path: Path) -> Path:
    return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(
        (".z", "zarr.json")))[0]


def _chunk_key(path: Path, chunk: Path) -> str:
    return chunk.relative_to(path).as_posix()


def _corrupt(chunk: Path, where: int) -> None:
    b = bytearray(chunk.read_bytes())
    b[where % len(b)] ^= 0x55
    chunk.write_bytes(bytes(b))


@pytest.mark.parametrize("name,cls,kw", [("bz2", "BZ2", {"level": 1}), ("lzma", "LZMA", {"preset": 1})])
def test_corrupt_stream_names_array_and_chunk(tmp_path, name, cls, kw):
    path = tmp_path / name
    _write(path, dtype="float64", zarr_format=3, compressors=[getattr(znc, cls)(**kw)])
    chunk = _first_chunk(path)
    _corrupt(chunk, len(chunk.read_bytes()) // 2)
    with pytest.raises(errors.CorruptChunkError) as e:
        zarrflow.open(path)[...]
    msg = str(e.value)
    assert f"chunk '{_chunk_key(path, chunk)}'" in msg and name in msg and path.name in msg


def test_truncated_stream_is_corrupt(tmp_path):
    path = tmp_path / "bz2-cut"
    _write(path, dtype="int32", zarr_format=2, compressors=numcodecs.BZ2())
    chunk = _first_chunk(path)
    chunk.write_bytes(chunk.read_bytes()[:-7])
    with pytest.raises(errors.CorruptChunkError, match="truncated"):
        zarrflow.open(path)[...]


@pytest.mark.parametrize("name,cls", [("crc32", "CRC32"), ("adler32", "Adler32"),
                                      ("fletcher32", "Fletcher32"),
                                      ("jenkins_lookup3", "JenkinsLookup3")])
def test_checksum_mismatch_names_array_and_chunk(tmp_path, name, cls):
    path = tmp_path / name
    _write(path, dtype="int32", zarr_format=3, compressors=[getattr(znc, cls)()])
    chunk = _first_chunk(path)
    _corrupt(chunk, 9)  # inside the payload, whichever end the checksum sits at
    with pytest.raises(errors.ChecksumError) as e:
        zarrflow.open(path)[...]
    msg = str(e.value)
    assert f"chunk '{_chunk_key(path, chunk)}'" in msg and f"{name}: stored checksum" in msg


class _Raising(numcodecs.abc.Codec):
    """A codec whose decode raises (registered under a test-only id)."""

    codec_id = "zarrflow_test_raising"

    def encode(self, buf):
        return bytes(np.ascontiguousarray(buf).view(np.uint8))

    def decode(self, buf, out=None):
        raise RuntimeError("stored block 3 is not valid")


class _Short(_Raising):
    """A codec whose decode loses the last byte."""

    codec_id = "zarrflow_test_short"

    def decode(self, buf, out=None):
        return bytes(buf)[:-1]


@pytest.fixture
def test_codecs():
    numcodecs.register_codec(_Raising)
    numcodecs.register_codec(_Short)
    yield
    for c in (_Raising, _Short):
        numcodecs.registry.codec_registry.pop(c.codec_id, None)


def test_fallback_codec_that_raises(tmp_path, test_codecs):
    path = tmp_path / "raising"
    _write(path, dtype="int16", zarr_format=2, compressors=_Raising())
    arr = zarrflow.open(path)
    with pytest.raises(errors.CorruptChunkError) as e:
        arr[...]
    msg = str(e.value)
    # Every chunk raises; which one is reported first depends on the threads' order.
    assert re.search(rf"array '{re.escape(str(path))}': chunk '\d+\.\d+'", msg), msg
    assert "zarrflow_test_raising (numcodecs): RuntimeError: stored block 3 is not valid" in msg


def test_fallback_codec_with_wrong_size(tmp_path, test_codecs):
    path = tmp_path / "short"
    _write(path, dtype="int16", zarr_format=2, compressors=_Short())
    with pytest.raises(errors.CorruptChunkError, match=r"chunk '\d+\.\d+'.*zarrflow_test_short"):
        zarrflow.open(path)[...]


def test_codec_whose_package_is_missing(tmp_path, monkeypatch):
    """Without pcodec installed (simulated: numcodecs forgets the codec), opening names it."""
    pytest.importorskip("pcodec")
    path = tmp_path / "pco"
    _write(path, dtype="float32", zarr_format=3, serializer=znc.PCodec())
    monkeypatch.delitem(numcodecs.registry.codec_registry, "pcodec")
    with pytest.raises(errors.UnsupportedError,
                       match=r"codec 'numcodecs.pcodec' needs the Python package 'pcodec': "
                             r"pip install pcodec"):
        zarrflow.open(path)


def _v2_array_naming_compressor(path: Path, written, named: dict) -> Path:
    """An int16 v2 array written with the compressor `written` whose .zarray then names the
    compressor configuration `named` instead."""
    _write(path, dtype="int16", zarr_format=2, compressors=written)
    meta = json.loads((path / ".zarray").read_text())
    meta["compressor"] = named
    (path / ".zarray").write_text(json.dumps(meta))
    return path


def test_codec_numcodecs_does_not_know(tmp_path):
    path = _v2_array_naming_compressor(tmp_path / "unknown", numcodecs.Zlib(),
                                       {"id": "nosuchcodec", "level": 1})
    with pytest.raises(errors.UnsupportedError, match="has no codec 'nosuchcodec'") as e:
        zarrflow.open(path)
    assert "unknown" in str(e.value)  # the array


def test_fallback_codec_configuration_numcodecs_refuses(tmp_path):
    path = _v2_array_naming_compressor(tmp_path / "badcfg", numcodecs.Base64(),
                                       {"id": "base64", "no_such_option": 1})
    with pytest.raises(errors.MetadataError, match="numcodecs refused the configuration"):
        zarrflow.open(path)


# ---- the GPU path ----------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_reads_host_decoded_codecs_and_says_why(tmp_path):
    if not zarrflow.cuda_available():
        pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}")
    torch = pytest.importorskip("torch")
    cases = [("bz2", dict(compressors=[znc.BZ2(level=1)]), "bz2(level=1)"),
             ("delta", dict(filters=[znc.Delta(dtype="float32")]), "delta")]
    try:
        import pcodec  # noqa: F401
        cases.append(("pcodec", dict(serializer=znc.PCodec(level=2)), "numcodecs.pcodec"))
    except ImportError:
        pass
    for name, kw, reason in cases:
        path = tmp_path / name
        _write(path, dtype="float32", shape=(40, 30), chunks=(16, 8), zarr_format=3, **kw)
        arr = zarrflow.open(path)
        # The reference is what the CPU reads (zarr-python's values), not the data written:
        # Delta is lossy here, the NaN at the start of chunk (0, 0) makes its whole running sum NaN.
        want = arr[...]
        assert _same_bytes(want, _zarr_read(path)), name
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = arr.read(device="cuda")
        got = torch.from_dlpack(t).cpu().numpy()
        assert _same_bytes(got, want), name
        report = arr.last_read_report
        assert report["cpu_decoded"] > 0 and report["gpu_decoded"] == 0, report
        assert any(reason in n for n in report["notes"]), report["notes"]
        assert any("some chunks decode on the CPU" in str(w.message) for w in caught)


@pytest.mark.gpu
@pytest.mark.parametrize("case_id,dtype,kw", V3_CASES, ids=[c[0] for c in V3_CASES])
def test_gpu_reads_v3_numcodecs_chains_like_the_cpu(tmp_path, case_id, dtype, kw):
    """Every zarr-python v3 chain with numcodecs codecs (filters lowered after `bytes`: delta,
    fixedscaleoffset, astype, quantize, bitround, packbits, shuffle; sharded too) reaches the GPU
    with the CPU read's bytes: whole arrays and a strided region across edge chunks."""
    if not zarrflow.cuda_available():
        pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}")
    torch = pytest.importorskip("torch")
    arr = zarrflow.open(_write_v3_case(tmp_path, case_id, dtype, kw))
    for reg in ((slice(None), slice(None)), (slice(1, 21, 2), slice(2, 16, 3))):
        want = arr[reg]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "some chunks decode on the CPU"
            got = torch.from_dlpack(arr.read(reg, device="cuda")).cpu().numpy()
        assert _same_bytes(got, want), (case_id, reg)
        report = arr.last_read_report
        assert report["cpu_decoded"] == 0 or report["notes"], report
