"""CPU read benchmark: zarrflow vs tensorstore, zarr-python 3 and zarr-python with the zarrs codec
pipeline (when installed; listed as unavailable otherwise) on the same ERA5-like stores.

Writes (with tensorstore, once per size/codec; reused afterwards) a float32 (N, 721, 1440) Zarr v3
array, one field per chunk, for each codec:
  raw, zstd level 3, blosc lz4 byte-shuffle, blosc zstd bit-shuffle,
then reads each whole array with a warm page cache and reports, per reader and codec:
  decoded GB/s (bytes of the float32 result / wall time) and CPU core-seconds per decoded GB
  (user + system CPU time of the process / decoded GB).
Results go to <out>/bench_read.json, bench_read.md (a table) and bench_read.png (a plot).

Usage: python benchmarks/bench_read.py [--size-gb 2] [--threads N] [--data bench_data]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import zarrflow
from zarrflow.tools._progress import Progress
from zarrflow.tools.synthetic import FieldMaker

NLAT, NLON = 721, 1440
FIELD_BYTES = NLAT * NLON * 4

CODECS = {
    "raw": [],
    "zstd-3": [{"name": "zstd", "configuration": {"level": 3, "checksum": False}}],
    "blosc-lz4-shuffle": [{"name": "blosc", "configuration": {
        "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}],
    "blosc-zstd-bitshuffle": [{"name": "blosc", "configuration": {
        "cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 4, "blocksize": 0}}],
}


def peer_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


VARIABLES = ("2m_temperature", "u_component_of_wind", "v_component_of_wind", "geopotential",
             "temperature", "specific_humidity")


def make_fields(n: int, nlat: int = NLAT, nlon: int = NLON) -> np.ndarray:
    """N ERA5-like fields (smooth structure + weather + noise, 16-bit GRIB packing) cycling
    through a few variables, each drifting in time."""
    makers = [FieldMaker(v, nlat, nlon, seed=i) for i, v in enumerate(VARIABLES)]
    out = np.empty((n, nlat, nlon), dtype=np.float32)
    bar = Progress(n, "generating fields")
    for i in range(n):
        out[i] = makers[i % len(makers)].at(i // len(makers))
        bar.update(1, out[i].nbytes)
    bar.close()
    return out


def ts_spec(path: Path, codec: str, threads: int, n: int | None = None) -> dict:
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
            "context": {"data_copy_concurrency": {"limit": threads},
                        "file_io_concurrency": {"limit": threads}}}
    if n is not None:
        spec["metadata"] = {
            "shape": [n, NLAT, NLON], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, NLAT, NLON]}},
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}] + CODECS[codec],
            "fill_value": 0.0}
        spec["create"] = True
        spec["delete_existing"] = True
    return spec


def write_store(path: Path, codec: str, data: np.ndarray, threads: int) -> None:
    import tensorstore as ts

    arr = ts.open(ts_spec(path, codec, threads, len(data))).result()
    bar = Progress(len(data), f"writing {codec}")
    step = max(1, threads)
    for i in range(0, len(data), step):
        j = min(i + step, len(data))
        arr[i:j].write(data[i:j]).result()
        bar.update(j - i, (j - i) * FIELD_BYTES)
    bar.close()
    (path / ".complete").touch()


def zarr_thread_config(threads: int) -> dict:
    """zarr-python's thread settings for a run on ``threads`` cores: its thread pool (file reads and
    codec calls; zarrs takes its thread count from the same key) gets ``threads`` workers;
    ``async.concurrency`` bounds chunks in flight, not threads, and is not set below zarr's default
    of 10. Set it before zarr's first use: zarr sizes its pool once."""
    return {"threading.max_workers": threads, "async.concurrency": max(threads, 10)}


def python_peers(path: Path, threads: int, unavailable: dict) -> list:
    """zarr-python 3 (its default codec pipeline) and zarr-python + zarrs, when importable."""
    try:
        import zarr
    except ImportError as e:
        unavailable["zarr-python"] = unavailable["zarr-python+zarrs"] = f"not installed ({e})"
        return []
    zarr.config.set(zarr_thread_config(threads))
    peers = []
    za = zarr.open_array(str(path), mode="r")
    peers.append(("zarr-python", lambda: za[...]))
    try:
        import zarrs  # noqa: F401

        pipeline = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}
        with zarr.config.set(pipeline):
            zs = zarr.open_array(str(path), mode="r")

        def read_zarrs():
            with zarr.config.set(pipeline):
                return zs[...]
        peers.append(("zarr-python+zarrs", read_zarrs))
    except ImportError as e:
        unavailable["zarr-python+zarrs"] = f"not installed ({e})"
    return peers


def measure(read, nbytes: int, repeats: int) -> dict:
    read()  # warm the page cache and the readers' own state
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = cpu_seconds(), time.perf_counter()
        read()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - c0)
    wall = statistics.median(walls)
    cpu = statistics.median(cpus)
    gb = nbytes / 1e9
    return {"wall_s": wall, "walls_s": walls, "cpu_s": cpu, "GBps": gb / wall,
            "core_s_per_GB": cpu / gb}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=2.0, help="decoded size of each store")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--data", default="bench_data", help="where the stores are written")
    ap.add_argument("--out", default="bench_results", help="where results go")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--codecs", default=",".join(CODECS))
    args = ap.parse_args()

    import tensorstore as ts

    n = max(1, int(np.ceil(args.size_gb * 1e9 / FIELD_BYTES)))
    data_dir, out_dir = Path(args.data), Path(args.out)
    data_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    codecs = args.codecs.split(",")
    fields = None
    for codec in codecs:
        path = data_dir / f"era5_{n}x{NLAT}x{NLON}_{codec}.zarr"
        if not (path / ".complete").exists():
            if fields is None:
                fields = make_fields(n)
            write_store(path, codec, fields, args.threads)
    del fields

    zarrflow.set_num_threads(args.threads)
    nbytes = n * FIELD_BYTES
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "host": platform.node(), "cpu": platform.processor() or platform.machine(),
               "cores_visible": len(os.sched_getaffinity(0)), "threads": args.threads,
               "fields": n, "decoded_bytes": nbytes, "tensorstore": peer_version("tensorstore"),
               "zarrflow": zarrflow.__version__, "zarr": peer_version("zarr"),
               "zarrs": peer_version("zarrs"), "unavailable": {}, "runs": []}
    out = np.empty((n, NLAT, NLON), dtype=np.float32)
    for codec in codecs:
        path = data_dir / f"era5_{n}x{NLAT}x{NLON}_{codec}.zarr"
        stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        zf = zarrflow.open_array(path)
        tsa = ts.open(ts_spec(path, codec, args.threads)).result()
        # Both must agree before either is timed.
        zf.read(out=out)
        if not np.array_equal(out.view(np.uint32), tsa.read().result().view(np.uint32)):
            print(f"{codec}: zarrflow and tensorstore disagree", file=sys.stderr)
            return 1
        # tensorstore's read() returns a new array (it has no out=); "zarrflow-new" does the same
        # (arr[...]) and is the like-for-like comparison; "zarrflow" reads into a reused buffer,
        # as a training loop would.
        readers = [("zarrflow", lambda: zf.read(out=out)), ("zarrflow-new", lambda: zf[...]),
                   ("tensorstore", lambda: tsa.read().result())]
        for name, fn in python_peers(path, args.threads, results["unavailable"]):
            if not np.array_equal(out.view(np.uint32), fn().view(np.uint32)):
                print(f"{codec}: zarrflow and {name} disagree", file=sys.stderr)
                return 1
            readers.append((name, fn))
        for reader, fn in readers:
            r = measure(fn, nbytes, args.repeats)
            r.update(codec=codec, reader=reader, stored_bytes=stored, ratio=nbytes / stored)
            results["runs"].append(r)
            print(f"{codec:<22} {reader:<13} {r['GBps']:7.2f} GB/s  {r['core_s_per_GB']:6.3f} "
                  f"core-s/GB  (ratio {nbytes / stored:.2f})", flush=True)

    (out_dir / "bench_read.json").write_text(json.dumps(results, indent=2))
    table = write_table(results)
    (out_dir / "bench_read.md").write_text(table)
    print(table)
    try:
        plot(results, out_dir / "bench_read.png")
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
    return 0


def write_table(results: dict) -> str:
    runs = {(r["codec"], r["reader"]): r for r in results["runs"]}
    codecs = list(dict.fromkeys(r["codec"] for r in results["runs"]))
    readers = list(dict.fromkeys(r["reader"] for r in results["runs"]))
    peers = [r for r in readers if not r.startswith("zarrflow")]
    lines = [f"{results['fields']} fields of 721×1440 float32 "
             f"({results['decoded_bytes'] / 1e9:.2f} GB decoded), {results['threads']} threads, "
             f"warm page cache, median of the timed runs; {results['date']}",
             "",
             "| codec | ratio | " + " | ".join(f"{r} GB/s" for r in readers) + " | "
             + " | ".join(f"zarrflow new ÷ {p}" for p in peers) + " | "
             + " | ".join(f"core-s/GB {r}" for r in readers) + " |",
             "|---|---:|" + "---:|" * (2 * len(readers) + len(peers))]
    for c in codecs:
        row = [runs[(c, r)] for r in readers]
        zn = runs[(c, "zarrflow-new")]
        lines.append(f"| {c} | {row[0]['ratio']:.2f} | " + " | ".join(f"{r['GBps']:.2f}" for r in row)
                     + " | " + " | ".join(f"{zn['GBps'] / runs[(c, p)]['GBps']:.2f}×" for p in peers)
                     + " | " + " | ".join(f"{r['core_s_per_GB']:.3f}" for r in row) + " |")
    for name, why in results.get("unavailable", {}).items():
        lines.append(f"\n{name}: not measured — {why}")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    codecs = list(dict.fromkeys(r["codec"] for r in results["runs"]))
    runs = {(r["codec"], r["reader"]): r for r in results["runs"]}
    x = np.arange(len(codecs))
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = {"zarrflow": "zarrflow (into out=)", "zarrflow-new": "zarrflow (new array)"}
    readers = list(dict.fromkeys(r["reader"] for r in results["runs"]))
    width = 0.8 / len(readers)
    for k, reader in enumerate(readers):
        vals = [runs[(c, reader)]["GBps"] for c in codecs]
        ax.bar(x + (k - (len(readers) - 1) / 2) * width, vals, width,
               label=labels.get(reader, f"{reader} (new array)"))
    ax.set_xticks(x, codecs)
    ax.set_ylabel("decoded GB/s (warm cache)")
    ax.set_title(f"Read of {results['decoded_bytes'] / 1e9:.1f} GB ERA5-like float32, "
                 f"{results['threads']} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
