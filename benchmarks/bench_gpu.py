"""GPU read benchmark: decoded GB/s landing in device memory, per codec, warm and cold.

Same ERA5-like data as bench_read.py: a float32 (N, 721, 1440) array, one field per chunk,
written once per codec (tensorstore; zarr-python for numcodecs LZ4, a Zarr v2 codec):
  raw, zstd-3, blosc-lz4-shuffle, blosc-zstd-bitshuffle, gzip-1, lz4.
Readers, all ending with the decoded array in GPU memory:
  zarrflow-gpu        arr.read(device="cuda"): compressed bytes to the GPU, decoded there
  zarrflow-cpu+copy   arr.read(out=pinned) on the CPU, then one pinned host→device copy
  tensorstore+copy    tensorstore read (new array), then torch.from_numpy(x).cuda()
Warm: page cache filled, median of the timed runs. Cold: every file of the store dropped from the
page cache (posix_fadvise DONTNEED) before each run.
Ceilings measured in the same run: pinned H2D bandwidth, O_DIRECT read bandwidth of the raw store,
and GPU decode throughput per codec (decoded bytes / GPU time of the decode stage, data already on
the GPU), plus the raw store read through cuFile vs pinned staging.
Writes bench_gpu.json, bench_gpu.md and bench_gpu.png into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_read as br  # noqa: E402

import zarrflow  # noqa: E402

CODECS = dict(br.CODECS)
CODECS["gzip-1"] = [{"name": "gzip", "configuration": {"level": 1}}]
LZ4 = "lz4"


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def drop_cache(path: Path) -> None:
    for f in path.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def write_lz4(path: Path, data: np.ndarray) -> None:
    import numcodecs
    import zarr

    a = zarr.create_array(str(path), shape=data.shape, chunks=(1,) + data.shape[1:], dtype="float32",
                          compressors=numcodecs.LZ4(), zarr_format=2, fill_value=0.0)
    for i in range(0, len(data), 16):
        a[i:i + 16] = data[i:i + 16]
    (path / ".complete").touch()


def timed(fn, runs: int, cold_path: Path | None, torch) -> tuple[float, float, list[float]]:
    walls, cpus = [], []
    for _ in range(runs):
        if cold_path is not None:
            drop_cache(cold_path)
        torch.cuda.synchronize()
        c0, t0 = cpu_s(), time.perf_counter()
        fn()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
        cpus.append(cpu_s() - c0)
    return statistics.median(walls), statistics.median(cpus), walls


def o_direct_read_gbps(path: Path, threads: int) -> float:
    files = sorted(f for f in path.rglob("*") if f.is_file() and f.stat().st_size >= 4096)
    drop_cache(path)
    block = 4 << 20

    def read(f: Path) -> int:
        fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
        buf = np.empty(block + 4096, np.uint8)
        off = (-buf.ctypes.data) % 4096
        mv = memoryview(buf[off:off + block])
        total = 0
        try:
            while True:
                n = os.preadv(fd, [mv], total)
                total += n
                if n < block:
                    return total
        finally:
            os.close(fd)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        n = sum(ex.map(read, files))
    return n / 1e9 / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--data", default="bench_data")
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--codecs", default=",".join(list(CODECS) + [LZ4]))
    args = ap.parse_args()

    import tensorstore as ts
    import torch

    if not zarrflow.cuda_available():
        print(f"no GPU: {zarrflow.cuda_status()}", file=sys.stderr)
        return 1
    n = max(1, int(np.ceil(args.size_gb * 1e9 / br.FIELD_BYTES)))
    nbytes = n * br.FIELD_BYTES
    data_dir, out_dir = Path(args.data), Path(args.out)
    data_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    codecs = args.codecs.split(",")
    fields = None
    paths = {}
    for codec in codecs:
        path = data_dir / f"era5_{n}x{br.NLAT}x{br.NLON}_{codec}.zarr"
        paths[codec] = path
        if not (path / ".complete").exists():
            if fields is None:
                fields = br.make_fields(n)
            if codec == LZ4:
                write_lz4(path, fields)
            else:
                br.CODECS[codec] = CODECS[codec]
                br.write_store(path, codec, fields, args.threads)
    del fields

    zarrflow.set_num_threads(args.threads)
    shape = (n, br.NLAT, br.NLON)
    pinned = torch.empty(shape, dtype=torch.float32, pin_memory=True)
    dev = torch.empty(shape, dtype=torch.float32, device="cuda")
    # Ceilings.
    h2d = []
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dev.copy_(pinned, non_blocking=True)
        torch.cuda.synchronize()
        h2d.append(nbytes / 1e9 / (time.perf_counter() - t0))
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "gpu": torch.cuda.get_device_name(), "threads": args.threads, "fields": n,
               "decoded_bytes": nbytes, "nvcomp": zarrflow.nvcomp_status() or "loaded",
               "ceilings": {"pinned_h2d_GBps": statistics.median(h2d)}, "runs": []}
    if "raw" in paths:
        results["ceilings"]["o_direct_read_GBps"] = o_direct_read_gbps(paths["raw"], args.threads)
    print(json.dumps(results["ceilings"]), flush=True)

    pinned_np = pinned.numpy()
    for codec in codecs:
        path = paths[codec]
        stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        arr = zarrflow.open_array(path)
        # Correctness first: the GPU result equals the CPU result.
        arr.read(out=pinned_np)
        t = arr.read(device="cuda")
        if not torch.equal(torch.from_dlpack(t).view(torch.int32).cpu(), pinned.view(torch.int32)):
            print(f"{codec}: GPU and CPU results differ", file=sys.stderr)
            return 1
        report = arr.last_read_report
        del t
        readers = {
            "zarrflow-gpu": lambda: arr.read(device="cuda"),
            "zarrflow-cpu+copy": lambda: (arr.read(out=pinned_np), dev.copy_(pinned, non_blocking=True)),
        }
        if codec != LZ4:
            tsa = ts.open(br.ts_spec(path, codec, args.threads)).result()
            readers["tensorstore+copy"] = lambda: torch.from_numpy(tsa.read().result()).cuda()
        for reader, fn in readers.items():
            for temp in ("warm", "cold"):
                if temp == "warm":
                    fn()  # warm-up (and page cache)
                wall, cpu, walls = timed(fn, args.runs if temp == "warm" else 2,
                                         path if temp == "cold" else None, torch)
                row = {"codec": codec, "reader": reader, "cache": temp, "wall_s": wall,
                       "walls_s": walls, "GBps": nbytes / 1e9 / wall,
                       "core_s_per_GB": cpu / (nbytes / 1e9), "ratio": nbytes / stored}
                if reader == "zarrflow-gpu":
                    rep = arr.last_read_report
                    row["report"] = {k: v for k, v in rep.items() if k != "notes"}
                    row["notes"] = rep["notes"]
                    if rep["decode_ms"] > 0 and codec != "raw":
                        row["gpu_decode_GBps"] = nbytes / 1e9 / (rep["decode_ms"] / 1e3)
                results["runs"].append(row)
                print(f"{codec:<22} {reader:<18} {temp:<4} {row['GBps']:7.2f} GB/s "
                      f"{row['core_s_per_GB']:6.3f} core-s/GB"
                      + (f"  (GPU decode stage {row['gpu_decode_GBps']:.0f} GB/s)"
                         if "gpu_decode_GBps" in row else ""), flush=True)
        if report["cpu_decoded"]:
            print(f"  note: {report['cpu_decoded']} chunks decoded on the CPU: {report['notes']}")
    if "raw" in paths:
        arr = zarrflow.open_array(paths["raw"])
        # Without nvidia-fs, cuFile needs compatibility mode allowed; ask for it for this run.
        os.environ.setdefault("CUFILE_FORCE_COMPAT_MODE", "true")
        for io in ("pinned", "direct", "cufile"):
            for temp in ("warm", "cold"):
                try:
                    if temp == "warm":
                        arr.read(device="cuda", io=io)
                    wall, cpu, walls = timed(lambda: arr.read(device="cuda", io=io),
                                             args.runs if temp == "warm" else 2,
                                             paths["raw"] if temp == "cold" else None, torch)
                    row = {"codec": "raw", "reader": f"io={io}", "cache": temp, "wall_s": wall,
                           "GBps": nbytes / 1e9 / wall, "core_s_per_GB": cpu / (nbytes / 1e9),
                           "io": arr.last_read_report["io"]}
                except zarrflow.ZarrflowError as e:
                    row = {"codec": "raw", "reader": f"io={io}", "cache": temp, "error": str(e)}
                results["runs"].append(row)
                print(json.dumps(row), flush=True)

    (out_dir / "bench_gpu.json").write_text(json.dumps(results, indent=2))
    table = write_table(results)
    (out_dir / "bench_gpu.md").write_text(table)
    print(table)
    try:
        plot(results, out_dir / "bench_gpu.png")
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
    return 0


def write_table(results: dict) -> str:
    rows = [r for r in results["runs"] if "GBps" in r and not r["reader"].startswith("io=")]
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    readers = ["zarrflow-gpu", "zarrflow-cpu+copy", "tensorstore+copy"]
    get = {(r["codec"], r["reader"], r["cache"]): r for r in rows}
    c = results["ceilings"]
    lines = [f"{results['fields']} fields of 721×1440 float32 ({results['decoded_bytes'] / 1e9:.2f} GB "
             f"decoded) into {results['gpu']} memory, {results['threads']} threads; {results['date']}. "
             f"Ceilings: pinned H2D {c['pinned_h2d_GBps']:.1f} GB/s"
             + (f", O_DIRECT disk read {c['o_direct_read_GBps']:.2f} GB/s" if "o_direct_read_GBps" in c else "")
             + ".", "",
             "| codec | ratio | cache | " + " | ".join(f"{r} GB/s" for r in readers)
             + " | zarrflow-gpu core-s/GB | zarrflow-cpu+copy core-s/GB | GPU decode stage GB/s |",
             "|---|---:|---|" + "---:|" * (len(readers) + 3)]
    for codec in codecs:
        for cache in ("warm", "cold"):
            g = get.get((codec, "zarrflow-gpu", cache))
            if g is None:
                continue
            vals = []
            for r in readers:
                x = get.get((codec, r, cache))
                vals.append(f"{x['GBps']:.2f}" if x else "—")
            cp = get.get((codec, "zarrflow-cpu+copy", cache))
            lines.append(f"| {codec} | {g['ratio']:.2f} | {cache} | " + " | ".join(vals)
                         + f" | {g['core_s_per_GB']:.3f} | {cp['core_s_per_GB']:.3f} | "
                         + (f"{g['gpu_decode_GBps']:.0f}" if "gpu_decode_GBps" in g else "—") + " |")
    io_rows = [r for r in results["runs"] if r["reader"].startswith("io=")]
    if io_rows:
        lines += ["", "| raw store read | cache | GB/s | path |", "|---|---|---:|---|"]
        for r in io_rows:
            lines.append(f"| {r['reader']} | {r['cache']} | "
                         + (f"{r['GBps']:.2f} | {r.get('io', '')} |" if "GBps" in r else f"— | {r['error']} |"))
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in results["runs"] if "GBps" in r and not r["reader"].startswith("io=")]
    codecs = list(dict.fromkeys(r["codec"] for r in rows))
    readers = ["zarrflow-gpu", "zarrflow-cpu+copy", "tensorstore+copy"]
    get = {(r["codec"], r["reader"], r["cache"]): r["GBps"] for r in rows}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
    x = np.arange(len(codecs))
    for ax, cache in zip(axes, ("warm", "cold")):
        for k, reader in enumerate(readers):
            ax.bar(x + (k - 1) * 0.27, [get.get((c, reader, cache), 0) for c in codecs], 0.27,
                   label=reader)
        ax.set_xticks(x, codecs, rotation=20)
        ax.set_title(f"{cache} page cache")
        ax.axhline(results["ceilings"]["pinned_h2d_GBps"], color="gray", ls="--", lw=1)
    axes[0].set_ylabel("decoded GB/s into GPU memory")
    axes[0].legend()
    fig.suptitle(f"{results['decoded_bytes'] / 1e9:.1f} GB ERA5-like float32 → {results['gpu']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
