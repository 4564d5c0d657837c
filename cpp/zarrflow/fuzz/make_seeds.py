"""Seed inputs for the fuzz targets in this folder, made from real encoded data.

Chunks and metadata come from numcodecs and zarr-python (the project's test peers), wrapped in
the input layouts the targets read (see each *_fuzzer.cc and fuzz_util.h). Usage:

    .venv/bin/python cpp/zarrflow/fuzz/make_seeds.py OUT_DIR

writes OUT_DIR/<target>/<name> files. scripts/fuzz.sh seed merges them into the committed corpora
(cpp/zarrflow/fuzz/corpus/<target>/), keeping only inputs that add coverage.
"""

from __future__ import annotations

import json
import pathlib
import struct
import sys
import tempfile

import numcodecs
import numpy as np
import zarr
from zarr.codecs import BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec, ZstdCodec

# Must match fuzz_util.cc.
TYPESTRS = ["|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8",
            "<u8", ">u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]
V3_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "float32", "float64", "bfloat16", "complex64", "complex128", "r8", "r24",
            "r40"]

RNG = np.random.default_rng(26)


class Seeds:
    def __init__(self, root: pathlib.Path):
        self.root = root
        self.count: dict[str, int] = {}

    def add(self, target: str, data: bytes) -> None:
        d = self.root / target
        d.mkdir(parents=True, exist_ok=True)
        n = self.count.get(target, 0)
        self.count[target] = n + 1
        (d / f"seed-{n:03d}").write_bytes(data)


def sample_arrays() -> list[np.ndarray]:
    """Small arrays of the kinds stored in weather data: smooth floats, ints, constants, noise."""
    x = np.linspace(0, 6.28, 600)
    return [
        (250 + 30 * np.sin(x)).astype("<f4"),
        np.arange(300, dtype="<i8"),
        np.zeros(512, dtype="<u2"),
        RNG.integers(0, 255, 700).astype("u1"),
        RNG.standard_normal(200).astype("<f8"),
        np.frombuffer(b"zarrflow " * 40, dtype="u1").copy(),
    ]


def b2b(flags: int, declared: int, payload: bytes) -> bytes:
    """fuzz_util.h's bytes-to-bytes layout: u8 flags | u32 declared size | encoded bytes."""
    return struct.pack("<BI", flags, declared) + payload


def compressor_seeds(s: Seeds) -> None:
    codecs = {
        "zstd_decode_fuzzer": [numcodecs.Zstd(level=1), numcodecs.Zstd(level=5, checksum=True)],
        "gzip_decode_fuzzer": [numcodecs.GZip(level=1), numcodecs.GZip(level=9)],
        "zlib_decode_fuzzer": [numcodecs.Zlib(level=1), numcodecs.Zlib(level=9)],
        "lz4_decode_fuzzer": [numcodecs.LZ4(acceleration=1), numcodecs.LZ4(acceleration=8)],
        "blosc_decode_fuzzer": [
            numcodecs.Blosc(cname=c, clevel=5, shuffle=sh, blocksize=bs)
            for c, sh, bs in [("lz4", 1, 0), ("blosclz", 2, 256), ("zstd", 1, 512),
                              ("zlib", 0, 0), ("lz4hc", 2, 1024)]
        ],
    }
    for target, cs in codecs.items():
        for codec in cs:
            for a in sample_arrays()[:4]:
                enc = bytes(codec.encode(a))
                s.add(target, b2b(1, a.nbytes, enc))
                s.add(target, b2b(0, a.nbytes, enc))
    # zstd: several frames in one chunk, and an empty frame.
    z = numcodecs.Zstd(level=1)
    a, b = sample_arrays()[:2]
    s.add("zstd_decode_fuzzer",
          b2b(1, a.nbytes + b.nbytes, bytes(z.encode(a)) + bytes(z.encode(b))))
    s.add("zstd_decode_fuzzer", b2b(0, 0, bytes(z.encode(np.zeros(0, "u1")))))
    for loc, flag in [("start", 1), ("end", 0)]:
        c = numcodecs.CRC32C(location=loc)
        for a in sample_arrays()[:3]:
            s.add("crc32c_decode_fuzzer", bytes([flag]) + b2b(1, a.nbytes, bytes(c.encode(a))))


def filter_seeds(s: Seeds) -> None:
    for dtype, astype in [("<i4", "<i2"), ("<i8", "|u1"), ("<f8", "<f4"), ("|u1", "|u1"),
                          (">i2", "<i2"), ("<f4", "<f2"), ("<u2", "<i8")]:
        a = np.arange(64, dtype=dtype) * 3
        enc = bytes(numcodecs.Delta(dtype=dtype, astype=astype).encode(a))
        head = bytes([TYPESTRS.index(dtype), TYPESTRS.index(astype)])
        s.add("delta_decode_fuzzer", head + b2b(1, a.nbytes, enc))
    for dtype, astype, scale, offset in [("<f8", "|u1", 10.0, 1000.0), ("<f4", "<i2", 100.0, 0.0),
                                         ("<f8", "<u4", 0.5, -3.0), ("<f4", ">i8", 1e6, 7.0),
                                         ("<f8", "<f4", 1.0, 0.0), ("<i4", "<i2", 2.0, 5.0)]:
        a = np.linspace(1000, 1020, 50).astype(dtype)
        enc = bytes(numcodecs.FixedScaleOffset(offset=offset, scale=scale, dtype=dtype,
                                               astype=astype).encode(a))
        head = bytes([TYPESTRS.index(dtype), TYPESTRS.index(astype)]) + struct.pack("<dd", scale,
                                                                                    offset)
        s.add("fixedscaleoffset_decode_fuzzer", head + b2b(1, a.nbytes, enc))
    for enc_t, dec_t in [("<f4", "<f8"), ("<f2", "<f4"), ("<i2", "<i8"), ("|u1", "<f4"),
                         (">f8", "<f8"), ("<i4", "<f2")]:
        a = np.linspace(-5, 120, 40).astype(dec_t)
        enc = bytes(numcodecs.AsType(encode_dtype=enc_t, decode_dtype=dec_t).encode(a))
        head = bytes([TYPESTRS.index(enc_t), TYPESTRS.index(dec_t)])
        s.add("astype_decode_fuzzer", head + b2b(1, a.nbytes, enc))
    for es in [1, 2, 4, 8, 3]:
        data = sample_arrays()[0].tobytes()[: 60 * es]
        enc = bytes(numcodecs.Shuffle(elementsize=es).encode(np.frombuffer(data, "u1")))
        s.add("shuffle_decode_fuzzer", bytes([es]) + b2b(1, len(data), enc))


def selection_bytes(shape: tuple[int, ...], starts, steps, counts) -> bytes:
    """fuzz_util.h's selection layout: per dimension u8 start | u8 step - 1 | u8 count - 1."""
    out = b""
    for n, st, sp, c in zip(shape, starts, steps, counts):
        out += bytes([st, sp - 1, c - 1])
    return out


def array_level_seeds(s: Seeds) -> None:
    for name, endian, shape in [("float32", 0, (4, 5)), ("int16", 1, (7,)), ("uint8", 2, (3, 2, 4)),
                                ("complex64", 1, (2, 3)), ("float64", 0, (16,)),
                                ("bool", 2, (5, 5)), ("r24", 2, (3,))]:
        dt = {"bool": "?", "r24": "V3"}.get(name, name)
        a = np.zeros(shape, dtype=dt)
        payload = a.tobytes() if endian != 1 else a.astype(np.dtype(dt).newbyteorder(">")).tobytes()
        head = bytes([V3_TYPES.index(name), endian, len(shape) - 1]) + bytes(n - 1 for n in shape)
        sel = selection_bytes(shape, [0] * len(shape), [1 + (i % 2) for i in range(len(shape))],
                              [max(1, n // 2) for n in shape])
        s.add("bytes_decode_fuzzer", head + sel + bytes([len(shape) % 2]) + payload)
    for name, shape, order in [("float32", (3, 4), (1, 0)), ("int64", (2, 3, 4), (2, 0, 1)),
                               ("uint8", (5,), (0,)), ("float16", (2, 2, 2, 2), (3, 2, 1, 0))]:
        a = np.arange(np.prod(shape)).astype(name).reshape(shape)
        payload = np.ascontiguousarray(a.transpose(order)).tobytes()
        head = bytes([V3_TYPES.index(name), len(shape) - 1]) + bytes(n - 1 for n in shape)
        sel = selection_bytes(shape, [n // 2 for n in shape], [1] * len(shape),
                              [n - n // 2 for n in shape])
        s.add("transpose_decode_fuzzer", head + bytes(order) + sel + b"\x01" + payload)


def store_files(build) -> dict[str, bytes]:
    """The files of a local zarr store that `build(path)` writes; JSON documents compacted (short
    inputs fuzz faster)."""
    with tempfile.TemporaryDirectory() as d:
        build(d)
        root = pathlib.Path(d)
        files = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    for key, value in files.items():
        if key.endswith(("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")):
            files[key] = json.dumps(json.loads(value), separators=(",", ":")).encode()
    return files


V3_ARRAYS = [
    dict(shape=(10, 12), chunks=(4, 6), dtype="float32", compressors=ZstdCodec(level=1),
         dimension_names=["lat", "lon"], attributes={"units": "K"}),
    dict(shape=(8, 8), chunks=(8, 8), shards=None, dtype="int16", compressors=GzipCodec(level=1),
         fill_value=-1),
    dict(shape=(6, 6), chunks=(2, 3), shards=(6, 6), dtype="uint8", compressors=ZstdCodec(level=3)),
    dict(shape=(5, 4, 3), chunks=(5, 4, 3), dtype="float64", compressors=None,
         filters=[TransposeCodec(order=(2, 1, 0))], fill_value=float("nan")),
    dict(shape=(16,), chunks=(16,), dtype="float16", compressors=None,
         serializer=BytesCodec(endian="big")),
    dict(shape=(9,), chunks=(9,), dtype="complex64", compressors=Crc32cCodec()),
    dict(shape=(4, 4), chunks=(4, 4), dtype="bool", compressors=None, fill_value=True),
    dict(shape=(12,), chunks=(12,), dtype="uint32",
         compressors=zarr.codecs.BloscCodec(cname="lz4", shuffle="bitshuffle")),
    dict(shape=(4, 6), chunks=(4, 6), dtype="int64", compressors=None,
         serializer=ShardingCodec(chunk_shape=(2, 3), index_location="start",
                                  codecs=[BytesCodec(), Crc32cCodec()])),
    dict(shape=(7, 3), chunks=(7, 3), dtype="uint16", compressors=None,
         chunk_key_encoding={"name": "v2", "separator": "."}),
]

V2_ARRAYS = [
    dict(shape=(10, 12), chunks=(4, 6), dtype="<f4", compressors=numcodecs.Zstd(level=1),
         attributes={"_ARRAY_DIMENSIONS": ["lat", "lon"]}),
    dict(shape=(20,), chunks=(20,), dtype=">i4", compressors=numcodecs.Blosc(cname="zstd"),
         fill_value=0),
    dict(shape=(6, 5), chunks=(6, 5), dtype="<f8", compressors=numcodecs.GZip(), order="F",
         fill_value=float("nan")),
    dict(shape=(30,), chunks=(30,), dtype="<f8", compressors=numcodecs.Zlib(level=1),
         filters=[numcodecs.FixedScaleOffset(offset=100, scale=10, dtype="<f8", astype="<i2")]),
    dict(shape=(30,), chunks=(30,), dtype="<i4", compressors=numcodecs.LZ4(),
         filters=[numcodecs.Delta(dtype="<i4", astype="<i2")]),
    dict(shape=(16,), chunks=(16,), dtype="<f8", compressors=None,
         filters=[numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8"),
                  numcodecs.Shuffle(elementsize=4)]),
    dict(shape=(8, 8), chunks=(4, 4), dtype="|u1", compressors=numcodecs.CRC32C(),
         fill_value=7),
    dict(shape=(5,), chunks=(5,), dtype="<M8[s]", compressors=None),
]


def make_array(kind: int, kwargs: dict):
    kw = dict(kwargs)
    dims = kw.pop("dimension_names", None)

    def build(d: str) -> None:
        a = zarr.create_array(d, zarr_format=kind, dimension_names=dims, **kw)
        data = np.arange(np.prod(a.shape)).reshape(a.shape) % 97
        a[...] = (data.astype(a.dtype) if a.dtype.kind != "M"
                  else data.astype("int64").astype(a.dtype))

    return store_files(build)


def metadata_and_chain_seeds(s: Seeds) -> None:
    for kw in V3_ARRAYS:
        files = make_array(3, kw)
        meta = files["zarr.json"]
        s.add("metadata_v3_fuzzer", meta)
        zeros = ["0"] * len(kw["shape"])
        v2_keys = json.loads(meta)["chunk_key_encoding"]["name"] == "v2"
        chunk = files.get(".".join(zeros) if v2_keys else "/".join(["c"] + zeros), b"")
        for flags in (0, 2, 4):
            s.add("codec_chain_fuzzer", bytes([flags]) + meta + b"\0" + chunk)
    for kw in V2_ARRAYS:
        files = make_array(2, kw)
        zarray, zattrs = files[".zarray"], files.get(".zattrs", b"{}")
        s.add("metadata_v2_fuzzer", zarray + b"\0" + zattrs)
        chunk = files.get(".".join("0" * len(kw["shape"])), b"")
        for flags in (1, 3, 5):
            s.add("codec_chain_fuzzer", bytes([flags]) + zarray + b"\0" + chunk)
    s.add("metadata_v2_fuzzer", b'{"zarr_format": 2}\0{"title": "era5"}')

    def hierarchy(fmt: int):
        def build(d: str) -> None:
            root = zarr.open_group(d, mode="w", zarr_format=fmt, attributes={"source": "era5"})
            g = root.create_group("pressure", attributes={"levels": [500, 850]})
            for name, grp in [("t2m", root), ("u", g), ("v", g)]:
                grp.create_array(name, shape=(4, 6), chunks=(2, 3), dtype="float32",
                                 dimension_names=["lat", "lon"] if fmt == 3 else None)
            g.create_group("deeper").create_array("z", shape=(3,), chunks=(3,), dtype="int8")
            zarr.consolidate_metadata(d, zarr_format=fmt)

        return store_files(build)

    v2 = hierarchy(2)
    s.add("consolidated_metadata_fuzzer", b"\0" + v2[".zmetadata"])
    v3 = hierarchy(3)
    s.add("consolidated_metadata_fuzzer", b"\1" + v3["zarr.json"])
    pretty = json.dumps(json.loads(v3["t2m/zarr.json"]), indent=2).encode()
    s.add("metadata_v3_fuzzer", pretty)  # as zarr-python writes it
    s.add("metadata_v3_fuzzer", v3["zarr.json"])
    s.add("metadata_v3_fuzzer", v3["pressure/zarr.json"])
    s.add("metadata_v2_fuzzer", v2[".zgroup"] + b"\0" + v2[".zattrs"])


def shard_seeds(s: Seeds) -> None:
    types = ["uint8", "uint16", "float32", "float64"]
    inner_choices = [[BytesCodec()], [BytesCodec(), Crc32cCodec()],
                     [BytesCodec(), ZstdCodec(level=1)], [BytesCodec(), GzipCodec(level=1)]]
    cases = [  # flags, type, inner extents, inner chunks per dimension, blank inner chunks
        (0, 0, (2,), (3,), False), (1, 1, (2, 3), (2, 1), False),
        (2, 2, (1, 2, 2), (2, 2, 1), True), (4, 3, (4,), (2,), False),
        (8, 0, (3, 3), (2, 2), True), (13, 2, (2, 2), (1, 3), False),
        (16, 1, (2, 2), (2, 2), False), (17 | 8, 2, (2,), (4,), True),
    ]
    for flags, t, inner, grid, blank in cases:
        shard = tuple(i * g for i, g in zip(inner, grid))
        codecs = inner_choices[(flags >> 2) & 3]
        if flags & 16:
            codecs = [ShardingCodec(chunk_shape=(1,) * len(inner), codecs=codecs)]
        index = [BytesCodec()] + ([] if flags & 2 else [Crc32cCodec()])
        sharding = ShardingCodec(chunk_shape=inner, codecs=codecs, index_codecs=index,
                                 index_location="start" if flags & 1 else "end")

        def build(d: str) -> None:
            a = zarr.create_array(d, shape=shard, chunks=shard, dtype=types[t],
                                  serializer=sharding, compressors=None, fill_value=0)
            data = (np.arange(np.prod(shard)).reshape(shard) % 50 + 1).astype(types[t])
            if blank:  # leaves the first inner chunk empty (fill value) in the index
                data[tuple(slice(0, i) for i in inner)] = 0
            a[...] = data

        files = store_files(build)
        stored = files["c/" + "/".join("0" * len(shard))]
        head = bytes([flags, t, len(inner) - 1])
        for i, g in zip(inner, grid):
            head += bytes([i - 1, g - 1])
        sel = selection_bytes(shard, [1 % n for n in shard], [1] * len(shard),
                              [max(1, n - 1) for n in shard])
        s.add("shard_index_fuzzer", head + sel + b"\0" + stored)


def gpu_seeds(s: Seeds) -> None:
    crc = numcodecs.CRC32C(location="end")
    chains = {  # index into gpu_framing_fuzzer.cc's kChains: codec, then crc32c?
        0: (None, False), 1: (None, True), 2: (numcodecs.Zstd(level=1), False),
        3: (numcodecs.Zstd(level=1), True), 4: (numcodecs.GZip(level=1), False),
        5: (numcodecs.GZip(level=1), True), 6: (numcodecs.Zlib(level=1), False),
        7: (numcodecs.LZ4(), False), 8: (numcodecs.LZ4(), True),
        9: (numcodecs.Blosc(cname="lz4", shuffle=1), False),
    }
    for index, (codec, with_crc) in chains.items():
        for t, dt in [(0, "u1"), (1, "<u2"), (2, ">u2")]:
            a = (np.arange(300) % 200).astype(dt)
            enc = bytes(codec.encode(a)) if codec else a.tobytes()
            if with_crc:
                enc = bytes(crc.encode(np.frombuffer(enc, "u1")))
            s.add("gpu_framing_fuzzer", struct.pack("<BBH", index, t, a.size - 1) + enc)
    for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
        for shuffle, typesize, blocksize in [(0, 1, 0), (1, 4, 256), (2, 8, 512), (1, 2, 128)]:
            a = np.linspace(0, 100, 600).astype(f"<f{max(typesize, 2)}" if typesize > 1 else "u1")
            c = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=blocksize)
            s.add("blosc_plan_fuzzer", bytes(c.encode(a)))
    noise = RNG.integers(0, 256, 2000).astype("u1")  # incompressible: a memcpyed chunk
    s.add("blosc_plan_fuzzer", bytes(numcodecs.Blosc(cname="lz4", shuffle=0).encode(noise)))


def text_seeds(s: Seeds) -> None:
    listing = """<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>era5</Name>
<Prefix>t2m/</Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter>
<IsTruncated>{trunc}</IsTruncated>{token}
<Contents><Key>t2m/zarr.json</Key><LastModified>2024-01-01T00:00:00.000Z</LastModified>
<ETag>&quot;6805f2cfc46c0f04559748bb039d69ae&quot;</ETag><Size>1234</Size>
<StorageClass>STANDARD</StorageClass></Contents>
<Contents><Key>t2m/c/0/1 &amp; &lt;x&gt; &#233;&#x1F600;</Key><Size>0</Size></Contents>
<CommonPrefixes><Prefix>t2m/c/</Prefix></CommonPrefixes>
</ListBucketResult>"""
    s.add("s3_xml_fuzzer", listing.format(trunc="false", token="").encode())
    s.add("s3_xml_fuzzer", listing.format(
        trunc="true", token="<NextContinuationToken>1ueGcxLPRx1T/AB==</NextContinuationToken>"
    ).encode())
    s.add("s3_xml_fuzzer", b"""<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>
<BucketName>era5</BucketName><RequestId>4442587FB7D0A2F9</RequestId></Error>""")
    headers = [
        "HTTP/1.1 206 Partial Content\r\nContent-Type: application/octet-stream\r\n"
        "Content-Length: 100\r\nContent-Range: bytes 0-99/1234\r\n\r\n",
        "HTTP/1.1 200 OK\r\ncontent-length: 1234\r\nETag: \"abc\"\r\n\r\n",
        "HTTP/1.1 503 Slow Down\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 301 Moved Permanently\r\nLocation: https://x/y\r\n\r\n"
        "HTTP/2 206\r\ncontent-range: bytes 1134-1233/1234\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 416 Range Not Satisfiable\r\n"
        "Content-Range: bytes */1234\r\n\r\n",
    ]
    for h in headers:
        s.add("http_headers_fuzzer", h.encode())


def icechunk_seeds(s: Seeds) -> None:
    """Snapshot (mode 0) and manifest (mode 1) files of the spec-2 golden repository that
    icechunk itself wrote (tests/data/icechunk_v2), whole files: header, zstd payload."""
    repo = pathlib.Path(__file__).resolve().parents[3] / "tests/data/icechunk_v2/repo"
    for mode, folder in ((0, "snapshots"), (1, "manifests")):
        for f in sorted((repo / folder).iterdir()):
            s.add("icechunk_fuzzer", bytes([mode]) + f.read_bytes())


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    s = Seeds(out)
    compressor_seeds(s)
    filter_seeds(s)
    array_level_seeds(s)
    metadata_and_chain_seeds(s)
    shard_seeds(s)
    gpu_seeds(s)
    text_seeds(s)
    icechunk_seeds(s)
    for target, n in sorted(s.count.items()):
        print(f"{target}: {n} seeds")


if __name__ == "__main__":
    main()
