"""The GPU read path (marked `gpu`; skips cleanly without a GPU).

On a GPU this build has no kernel image for (cuda_status() says so), device reads decode on the
host and copy up: the tests of results run there too, and the tests of the GPU's own decoders
skip with that reason.

- GPU reads equal CPU reads byte for byte on the whole conformance corpus (every codec, dtype,
  sharded and not, edge and missing chunks, transpose, big-endian), whole arrays and regions;
- with gpu_decode="on", the codecs zarrflow decodes on the GPU never fall back to the CPU;
- corrupt and fuzzed chunks for each GPU decoder raise the error the CPU path raises (naming the
  chunk), never crash, and leave the GPU usable;
- DLPack hand-off to PyTorch, CuPy and JAX without a copy, with stream ordering and ownership.
"""

from __future__ import annotations

import gc
import os
import random
import zlib
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow import _core

import corpus as C

# A GPU zarrflow's kernels cannot run on (the build lacks its architecture): its memory is used.
KERNELS_MISSING = not zarrflow.cuda_available() and _core.cuda_device_status() == ""
if not zarrflow.cuda_available() and not KERNELS_MISSING:
    pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}", allow_module_level=True)
needs_gpu_kernels = pytest.mark.skipif(
    KERNELS_MISSING, reason=f"tests the GPU's decoders: {zarrflow.cuda_status()}")
GPU_MARKS = [pytest.mark.gpu]
if KERNELS_MISSING:  # device reads say once why they decoded on the host
    GPU_MARKS.append(pytest.mark.filterwarnings("ignore:zarrflow. some chunks decode on the CPU"))
pytestmark = GPU_MARKS
torch = pytest.importorskip("torch")


def host_bytes(t) -> np.ndarray:
    """The bytes of a GPU tensor, on the host."""
    x = torch.from_dlpack(t)
    if x.is_complex():
        x = torch.view_as_real(x)
    x = x.contiguous().reshape(-1)
    if x.numel() == 0:
        return np.zeros(0, np.uint8)
    return x.view(torch.uint8).cpu().numpy()


def cpu_bytes(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def regions(shape: tuple, chunks: tuple) -> list[tuple]:
    if not shape:
        return [()]
    regs = [tuple(slice(0, s) for s in shape)]
    if all(s > 0 for s in shape):
        regs.append(tuple(slice(0, s, 2) for s in shape))
        regs.append(tuple(slice(max(c - 1, 0), min(c + 1, s)) for s, c in zip(shape, chunks)))
        regs.append(tuple(slice((max(s - 1, 0) // c) * c, s) for s, c in zip(shape, chunks)))
    return regs


def test_gpu_equals_cpu(built: C.Built) -> None:
    arr = zarrflow.open(built.path)
    for reg in regions(arr.shape, arr.chunks):
        cpu = arr.read(reg)
        t = arr.read(reg, device="cuda")
        assert t.shape == cpu.shape
        assert np.array_equal(host_bytes(t), cpu_bytes(cpu)), f"{built.case_id} {reg}"
        report = arr.last_read_report
        if report["cpu_decoded"]:
            assert report["notes"], "a CPU fallback must say why"


def _write(tmp: Path, name: str, compressors, *, zarr_format=3, shards=None, dtype="float32",
           shape=(6, 50, 70), chunks=(1, 25, 35), serializer="auto", filters=None):
    zarr = C.require("zarr")
    rng = np.random.default_rng(0)
    data = (np.cumsum(rng.standard_normal(shape), axis=-1) * 4).astype(dtype)
    a = zarr.create_array(str(tmp / name), shape=shape, chunks=chunks, shards=shards, dtype=dtype,
                          compressors=compressors, zarr_format=zarr_format, fill_value=0,
                          serializer=serializer, filters=filters)
    a[...] = data
    return tmp / name, data


def gpu_codec_stores(tmp: Path) -> dict:
    C.require("zarr")
    numcodecs = C.require("numcodecs")
    from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ZstdCodec

    stores = {
        "raw": _write(tmp, "raw", None),
        "zstd": _write(tmp, "zstd", ZstdCodec(level=3)),
        "gzip": _write(tmp, "gzip", GzipCodec(level=5)),
        "zstd+crc32c": _write(tmp, "zc", [ZstdCodec(level=1), Crc32cCodec()]),
        "sharded-zstd": _write(tmp, "sz", ZstdCodec(level=3), shards=(2, 50, 70)),
        "big-endian": _write(tmp, "be", None, serializer=BytesCodec(endian="big")),
        "v2-lz4": _write(tmp, "lz4", numcodecs.LZ4(), zarr_format=2),
        "v2-zlib": _write(tmp, "zlib", numcodecs.Zlib(level=4), zarr_format=2),
    }
    for cname in ("lz4", "lz4hc", "blosclz", "zstd", "zlib"):
        for shuffle in ("noshuffle", "shuffle", "bitshuffle"):
            stores[f"blosc-{cname}-{shuffle}"] = _write(
                tmp, f"b-{cname}-{shuffle}", BloscCodec(cname=cname, clevel=5, shuffle=shuffle))
    stores["v2-blosc-lz4-small-blocks"] = _write(
        tmp, "b2", numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1, blocksize=2048), zarr_format=2)
    return stores


@pytest.fixture(scope="module")
def codec_stores(tmp_path_factory):
    return gpu_codec_stores(tmp_path_factory.mktemp("gpu_codecs"))


@needs_gpu_kernels
def test_gpu_decoders_take_every_supported_codec(codec_stores):
    needs_nvcomp = ("gzip", "zlib")
    have_nvcomp = zarrflow.nvcomp_status() == ""
    for name, (path, data) in codec_stores.items():
        arr = zarrflow.open(path)
        if not have_nvcomp and any(k in name for k in needs_nvcomp):
            continue
        t = arr.read(device="cuda", gpu_decode="on")
        assert np.array_equal(host_bytes(t), cpu_bytes(data)), name
        r = arr.last_read_report
        assert r["cpu_decoded"] == 0 and r["gpu_decoded"] > 0, (name, r)


@needs_gpu_kernels
@pytest.mark.parametrize("dtype", ["int8", "int16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("shuffle", ["shuffle", "bitshuffle"])
def test_gpu_unshuffles_every_element_size(dtype, shuffle, tmp_path):
    """Blosc's un-shuffles on the GPU for element sizes 1-16, on chunks of 2,048 elements (byte
    rows aligned: the byte un-shuffle gathers words for sizes 2, 4 and 8), of 1,000 (bit rows of
    125 bytes) and of 875 (not a multiple of 8: bit-shuffle stored the block as it was)."""
    from zarr.codecs import BloscCodec

    for chunks in [(1, 32, 64), (1, 25, 40), (1, 25, 35)]:
        path, data = _write(tmp_path, f"{dtype}-{shuffle}-{chunks[2]}",
                            BloscCodec(cname="lz4", clevel=5, shuffle=shuffle), dtype=dtype,
                            shape=(3, 64, 128), chunks=chunks)
        arr = zarrflow.open(path)
        t = arr.read(device="cuda", gpu_decode="on")
        assert np.array_equal(host_bytes(t), cpu_bytes(data)), chunks
        r = arr.last_read_report
        assert r["cpu_decoded"] == 0 and r["gpu_decoded"] > 0, (chunks, r)


@needs_gpu_kernels
def test_host_decoded_chunks_reach_the_gpu_unchanged(codec_stores):
    """gpu_decode="off": the host threads decode, and each block goes up straight into a dense
    destination (one chunk, a whole-row window) or through device scratch and a scatter (a
    window whose rows are strided in the destination) — the same bytes either way."""
    for name, (path, data) in codec_stores.items():
        arr = zarrflow.open(path)
        for reg in [(slice(0, 1), slice(0, 25), slice(0, 35)),   # one chunk, dense destination
                    (slice(2, 4), slice(0, 50), slice(0, 70)),   # chunks strided in the rows
                    (slice(0, 6), slice(10, 40), slice(20, 60)),  # strided destinations
                    (slice(1, 2), slice(0, 25), slice(35, 70))]:  # another single chunk
            t = arr.read(reg, device="cuda", gpu_decode="off")
            assert np.array_equal(host_bytes(t), cpu_bytes(data[reg])), (name, reg)
            r = arr.last_read_report
            assert r["gpu_decoded"] == 0 and r["cpu_decoded"] > 0, (name, r)


def _corrupt_once(path: Path, rng: random.Random) -> None:
    chunks = [p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "zarr.json"))]
    victim = rng.choice(chunks)
    b = bytearray(victim.read_bytes())
    mode = rng.randrange(3)
    if mode == 0 and len(b) > 8:  # truncate
        b = b[: rng.randrange(1, len(b))]
    else:  # flip a few bytes
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    victim.write_bytes(bytes(b))


# Chains whose data is covered by a checksum the GPU path verifies (crc32c; the CRC-32 / Adler-32
# trailers of gzip and zlib, checked after nvCOMP inflates): corruption never goes unnoticed.
CHECKSUMMED = {"zstd+crc32c", "gzip", "v2-zlib"}
# zarrflow's own decoders (Blosc's lz4/blosclz, numcodecs LZ4) accept exactly what liblz4/c-blosc
# accept, and decode it to the same bytes, corrupt or not; its zstd decoder accepts no more than
# libzstd and leaves to it what it does not take, so the same holds there (the zstd chains run
# twice: with nvCOMP's decoder where it is loaded, and with zarrflow's).
OWN_DECODERS = {"blosc-lz4-shuffle", "blosc-blosclz-bitshuffle", "v2-lz4", "zstd@zarrflow",
                "blosc-zstd-shuffle@zarrflow", "sharded-zstd@zarrflow"}
# Blosc's zlib streams have their Adler-32 verified; only Blosc's header is unprotected.
STRICT = OWN_DECODERS | {"blosc-zlib-noshuffle"}


@pytest.mark.parametrize("codec", ["blosc-lz4-shuffle", "blosc-blosclz-bitshuffle",
                                   "blosc-zstd-shuffle", "blosc-zlib-noshuffle", "zstd", "gzip",
                                   "v2-lz4", "v2-zlib", "zstd+crc32c", "sharded-zstd",
                                   "zstd@zarrflow", "blosc-zstd-shuffle@zarrflow",
                                   "sharded-zstd@zarrflow"])
def test_fuzzed_chunks_match_the_cpu_or_raise(codec, tmp_path, request):
    """Corrupt chunks never crash or hang the GPU path. Where the CPU reads a corrupt chunk
    without error, the GPU returns the same bytes; where the CPU raises, the GPU raises the same
    kind of error naming the chunk — except that a decoder may not notice corruption in formats
    without a checksum (nvCOMP validates less than libzstd/libdeflate); such reads are counted,
    and must not happen for checksummed chains or zarrflow's own decoders, which also decode
    every corrupt chunk the CPU decodes to the CPU's bytes."""
    store, _, decoder = codec.partition("@")  # "@zarrflow": zarrflow's zstd decoder
    zarrflow._gpu.configure()  # ZARRFLOW_GPU_ZSTD is read once, there; then the test chooses
    _core.set_zstd_decoder(decoder or "auto")
    request.addfinalizer(lambda: _core.set_zstd_decoder("auto"))
    stores = gpu_codec_stores(tmp_path)
    path, original = stores[store]
    rng = random.Random(zlib.crc32(codec.encode()))
    unnoticed = silently_corrupt = 0
    for _ in range(25):
        _corrupt_once(path, rng)
        arr = zarrflow.open(path)
        try:
            cpu = arr.read()
            cpu_error = None
        except zarrflow.ZarrflowError as e:
            cpu_error = e
        try:
            gpu = host_bytes(arr.read(device="cuda"))
            gpu_error = None
        except zarrflow.ZarrflowError as e:
            gpu_error = e
        if cpu_error is None:
            assert gpu_error is None, f"GPU raised {gpu_error!r} where the CPU read fine"
            if np.array_equal(cpu, original) or codec in CHECKSUMMED | OWN_DECODERS:
                assert np.array_equal(gpu, cpu_bytes(cpu))
            else:
                # A corrupt chunk that libzstd/libdeflate/liblz4 decode without complaint (no
                # checksum in the format): another decoder may turn it into other garbage.
                silently_corrupt += 1
        elif gpu_error is None:
            unnoticed += 1
            assert codec not in CHECKSUMMED | STRICT, f"CPU raised {cpu_error!r}; GPU returned data"
        else:
            assert isinstance(gpu_error, zarrflow.CorruptChunkError) == isinstance(
                cpu_error, zarrflow.CorruptChunkError), (gpu_error, cpu_error)
            assert "chunk '" in str(gpu_error)
    print(f"{codec}: {unnoticed} of 25 corruptions the CPU rejects decoded without error on the GPU;"
          f" {silently_corrupt} corrupt chunks the CPU decoded without error")
    # The GPU is still usable.
    x = torch.arange(10, device="cuda").sum().item()
    assert x == 45


def test_torch_stream_ordering_and_ownership(codec_stores):
    path, data = codec_stores["blosc-lz4-shuffle"]
    arr = zarrflow.open(path)
    s = torch.cuda.Stream()
    t = arr.read(device="cuda", stream=s.cuda_stream)
    consumer = torch.cuda.Stream()
    with torch.cuda.stream(consumer):
        x = torch.from_dlpack(t)  # consumer's stream waits on the read's event
        y = (x * 2).sum()
    consumer.synchronize()
    assert x.data_ptr() == t.data_ptr
    assert np.isclose(y.item(), float(data.astype(np.float64).sum() * 2), rtol=1e-3)
    del t
    gc.collect()
    _ = [torch.empty(1 << 20, device="cuda") for _ in range(8)]  # reuse freed memory if any
    assert np.array_equal(x.cpu().numpy(), data)  # x still owns the buffer


@needs_gpu_kernels
def test_any_number_of_read_streams_reads_the_same(codec_stores):
    """The reader's stream setting reaches its reads (their pieces over many streams: the C++
    tests EveryNumberOfLanesReadsTheSame and LanesStartWhereTheCallersStreamIs)."""
    from zarrflow import _gpu
    r = _gpu.reader()
    before = r.read_streams
    try:
        for codec in ("blosc-lz4-shuffle", "zstd"):
            path, data = codec_stores[codec]
            arr = zarrflow.open(path)
            for n in (1, 5):
                r.set_read_streams(n)
                assert r.read_streams == n
                got = host_bytes(arr.read(device="cuda"))
                assert np.array_equal(got, cpu_bytes(data)), (codec, n)
        with pytest.raises(ValueError, match="not in"):
            r.set_read_streams(0)
    finally:
        r.set_read_streams(before)


def test_read_streams_from_the_environment_reach_the_reader():
    import subprocess
    import sys
    env = dict(os.environ, ZARRFLOW_GPU_READ_STREAMS="2")
    out = subprocess.run([sys.executable, "-c", "from zarrflow import _gpu; "
                          "print(_gpu.reader().read_streams)"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"


def test_cupy_and_jax_take_the_tensor_without_a_copy(codec_stores):
    path, data = codec_stores["raw"]
    arr = zarrflow.open(path)
    cupy = pytest.importorskip("cupy")
    t = arr.read(device="cuda")
    c = cupy.from_dlpack(t)
    assert c.data.ptr == t.data_ptr
    assert np.array_equal(cupy.asnumpy(c), data)
    jax = pytest.importorskip("jax")
    j = jax.dlpack.from_dlpack(arr.read(device="cuda"))
    assert np.array_equal(np.asarray(j), data)
