"""zarrflow's native numcodecs decoders against numcodecs, and the cost of the numcodecs fallback.

1. Native codecs (bz2, lzma, crc32, adler32, fletcher32, jenkins_lookup3): the same chunk files
   of a Zarr v2 store (a smooth float32 field, like reanalysis data) read into one array, by
   numcodecs (read each file, `codec.decode`, copy into the array: the least any reader using
   numcodecs does) and by zarrflow one chunk per read call, so both decode one chunk at a time.
   MB/s are of decoded bytes.
2. The fallback (codecs zarrflow decodes through numcodecs): an identity numcodecs codec against
   no codec at all, over chunks of several sizes; the difference per chunk is the fallback's
   fixed cost (GIL, the Python call, the copy out). And pcodec through the fallback against
   numcodecs, and on 1 and on all threads.

Run:  .venv/bin/python benchmarks/bench_numcodecs.py [--chunks 16] [--chunk-mib 1] [--out r.json]
Timings are the best of --repeat runs, in CPU time of the process (all its threads) for the
comparisons, so that other processes on a shared machine count less; thread scaling is in wall
time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import zarrflow


def field(n: int, seed: int = 0) -> np.ndarray:
    """A smooth float32 field with noise in the low bits, as reanalysis fields look."""
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.standard_normal(n)) * 0.1 + 280.0
    return (x + rng.standard_normal(n) * 0.01).astype("<f4")


def best(fn, repeat: int, clock=time.process_time) -> float:
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def write_v2(path: Path, data: np.ndarray, chunk: int, compressor, filters=None) -> None:
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(str(path), shape=data.shape, chunks=(chunk,), dtype=data.dtype,
                              zarr_format=2, compressors=compressor, filters=filters, fill_value=0)
        a[...] = data


def chunk_paths(path: Path) -> list[Path]:
    return sorted((p for p in path.iterdir() if not p.name.startswith(".")), key=lambda p: int(p.name))


def chunk_files(path: Path) -> list[bytes]:
    return [p.read_bytes() for p in chunk_paths(path)]


def numcodecs_read(codec, files: list[Path], out: np.ndarray) -> None:
    """Reads every chunk file, decodes it with numcodecs and copies it into its place in `out`."""
    flat = out.reshape(-1).view(np.uint8)
    pos = 0
    for f in files:
        dec = np.frombuffer(codec.decode(f.read_bytes()), np.uint8)
        flat[pos:pos + dec.size] = dec
        pos += dec.size


def zarrflow_chunk_by_chunk(arr, out: np.ndarray, chunk: int) -> None:
    for start in range(0, out.size, chunk):
        arr.read(slice(start, start + chunk), out=out[start:start + chunk])


def native_vs_numcodecs(root: Path, n_chunks: int, chunk_elems: int, repeat: int) -> list[dict]:
    import numcodecs

    data = field(n_chunks * chunk_elems)
    nbytes = data.nbytes
    codecs = {
        "bz2(level=1)": numcodecs.BZ2(level=1),
        "bz2(level=9)": numcodecs.BZ2(level=9),
        "lzma(preset=1)": numcodecs.LZMA(preset=1),
        "lzma(preset=6)": numcodecs.LZMA(preset=6),
        "crc32": numcodecs.CRC32(),
        "adler32": numcodecs.Adler32(),
        "fletcher32": numcodecs.Fletcher32(),
        "jenkins_lookup3": numcodecs.JenkinsLookup3(),
    }
    rows = []
    for name, codec in codecs.items():
        path = root / name.replace("(", "_").replace(")", "").replace("=", "")
        write_v2(path, data, chunk_elems, codec)
        files = chunk_paths(path)
        arr = zarrflow.open(path, threads=1)
        out = np.empty_like(data)
        # Alternated, so that a change in the machine's load hits both alike.
        t_nc = t_zf = float("inf")
        for _ in range(repeat):
            out[...] = 0
            t_nc = min(t_nc, best(lambda: numcodecs_read(codec, files, out), 1))
            assert np.array_equal(out.view(np.uint32), data.view(np.uint32)), name
            out[...] = 0
            t_zf = min(t_zf, best(lambda: zarrflow_chunk_by_chunk(arr, out, chunk_elems), 1))
            assert np.array_equal(out.view(np.uint32), data.view(np.uint32)), name
        stored = sum(f.stat().st_size for f in files)
        rows.append({"codec": name, "chunks": len(files), "decoded_mb": nbytes / 1e6,
                     "ratio": nbytes / stored,
                     "numcodecs_mb_s": nbytes / t_nc / 1e6, "zarrflow_mb_s": nbytes / t_zf / 1e6})
    return rows


class Identity:
    """Registered on demand: a numcodecs codec that stores bytes as they are."""

    codec_id = "zarrflow_bench_identity"

    @staticmethod
    def make():
        import numcodecs

        class _Identity(numcodecs.abc.Codec):
            codec_id = Identity.codec_id

            def encode(self, buf):
                return bytes(np.ascontiguousarray(buf).view(np.uint8))

            def decode(self, buf, out=None):
                return buf

        numcodecs.register_codec(_Identity)
        return _Identity()


def fallback_cost(root: Path, repeat: int) -> list[dict]:
    identity = Identity.make()
    rows = []
    total = 16 << 20  # bytes read per measurement
    for chunk_bytes in (4 << 10, 64 << 10, 1 << 20):
        elems = chunk_bytes // 4
        n = total // chunk_bytes
        data = field(n * elems, seed=1)
        plain, foreign = root / f"plain-{chunk_bytes}", root / f"identity-{chunk_bytes}"
        write_v2(plain, data, elems, None)
        write_v2(foreign, data, elems, identity)
        out = np.empty_like(data)
        t = {}
        for label, path in (("plain", plain), ("fallback", foreign)):
            arr = zarrflow.open(path, threads=1)
            t[label] = best(lambda: arr.read(out=out), repeat)
            assert np.array_equal(out.view(np.uint32), data.view(np.uint32))
        rows.append({"chunk_kib": chunk_bytes >> 10, "chunks": n,
                     "plain_us_per_chunk": t["plain"] / n * 1e6,
                     "fallback_us_per_chunk": t["fallback"] / n * 1e6,
                     "overhead_us_per_chunk": (t["fallback"] - t["plain"]) / n * 1e6})
    return rows


def pcodec_fallback(root: Path, n_chunks: int, chunk_elems: int, repeat: int) -> list[dict]:
    """pcodec through the fallback: CPU time against numcodecs doing the same reads, and the
    whole array on 1 and on all threads in wall time."""
    try:
        import numcodecs
        import pcodec  # noqa: F401
    except ImportError:
        return []
    data = field(n_chunks * chunk_elems, seed=2)
    path = root / "pcodec"
    codec = numcodecs.get_codec({"id": "pcodec", "level": 8})
    write_v2(path, data, chunk_elems, codec)
    files = chunk_paths(path)
    out = np.empty_like(data)
    arr = zarrflow.open(path, threads=1)
    t_nc = t_zf = float("inf")
    for _ in range(repeat):
        t_nc = min(t_nc, best(lambda: numcodecs_read(codec, files, out), 1))
        t_zf = min(t_zf, best(lambda: zarrflow_chunk_by_chunk(arr, out, chunk_elems), 1))
        assert np.array_equal(out.view(np.uint32), data.view(np.uint32))
    rows = [{"reader": "numcodecs (file, decode, copy), CPU time", "mb_s": data.nbytes / t_nc / 1e6},
            {"reader": "zarrflow fallback, chunk by chunk, CPU time",
             "mb_s": data.nbytes / t_zf / 1e6}]
    for threads in sorted({1, os.cpu_count() or 1}):
        arr = zarrflow.open(path, threads=threads)
        t = best(lambda: arr.read(out=out), repeat, clock=time.perf_counter)
        assert np.array_equal(out.view(np.uint32), data.view(np.uint32))
        rows.append({"reader": f"zarrflow fallback, whole array, {threads} thread(s), wall time",
                     "mb_s": data.nbytes / t / 1e6})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=16)
    ap.add_argument("--chunk-mib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    chunk_elems = int(args.chunk_mib * (1 << 20)) // 4
    root = Path(tempfile.mkdtemp(prefix="bench_numcodecs_"))
    try:
        result = {
            "cpu_count": os.cpu_count(),
            "chunk_mib": args.chunk_mib,
            "native": native_vs_numcodecs(root, args.chunks, chunk_elems, args.repeat),
            "fallback_cost": fallback_cost(root, args.repeat),
            "pcodec": pcodec_fallback(root, args.chunks, chunk_elems, args.repeat),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'codec':18} {'ratio':>6} {'numcodecs MB/s':>15} {'zarrflow MB/s':>14}")
    for r in result["native"]:
        print(f"{r['codec']:18} {r['ratio']:6.2f} {r['numcodecs_mb_s']:15.1f} {r['zarrflow_mb_s']:14.1f}")
    print(f"\n{'chunk KiB':>9} {'plain us/chunk':>15} {'fallback us/chunk':>18} {'overhead':>9}")
    for r in result["fallback_cost"]:
        print(f"{r['chunk_kib']:9} {r['plain_us_per_chunk']:15.1f} {r['fallback_us_per_chunk']:18.1f} "
              f"{r['overhead_us_per_chunk']:9.1f}")
    for r in result["pcodec"]:
        print(f"pcodec: {r['reader']}: {r['mb_s']:.1f} MB/s")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
