"""Rechunk throughput: `zarrflow rechunk` against tensorstore copying the same arrays itself.

Source: a `zarrflow synth` WeatherBench2-style store (Zarr v2, Blosc-LZ4, one 721×1440 field per
chunk). Each case rewrites every data array into Zarr v3 with the target layout; the peer is
tensorstore's own copy (`dst.write(src)`, its fastest path: its reader, its writer, its thread
pool) into the identical output spec. zarrflow runs with and without --verify. Bytes are the
decoded bytes of the arrays copied; GB/s = bytes / wall seconds; the page cache is warm for both
(each case is run once to warm up, then timed best of `--repeats`).

    python benchmarks/bench_rechunk.py --ntime 16 --out docs/results
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import zarrflow
from zarrflow.tools.rechunk import Options, _ts_spec, plan, rechunk
from zarrflow.tools.synth import SynthSpec, synth

CASES = {
    # name: (target chunks, shards, codec)
    "time-batch 4, zstd:3": ({"time": 4}, None, "zstd:3"),
    "spatial tiles 181x360 x 8 steps, blosc-lz4": (
        {"time": 8, "latitude": 181, "longitude": 360}, None, "blosc-lz4"),
    "field chunks, sharded 8 steps, zstd:1 + crc32c": ({"time": 1}, {"time": 8}, "zstd:1"),
}


def tensorstore_copy(src: Path, dst: Path, opts: Options) -> float:
    import tensorstore as ts

    plans, _ = plan(src, opts)
    t0 = time.perf_counter()
    futures = []
    for p in plans:
        s = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(src / p.name)}}).result()
        d = ts.open(_ts_spec(dst, p, opts), create=True, open=True).result()
        futures.append(d.write(s))
    for f in futures:
        f.result()
    return time.perf_counter() - t0


def plot(runs: list[dict], path: Path) -> None:
    """Grouped bars: GB/s per case and tool, one panel per host."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tools = ("zarrflow", "zarrflow --verify", "tensorstore")
    fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.2), squeeze=False)
    for ax, res in zip(axes[0], runs):
        cases = list(res["cases"])
        x = np.arange(len(cases))
        for k, tool in enumerate(tools):
            vals = [res["cases"][c][tool]["GBps"] for c in cases]
            ax.bar(x + (k - 1) * 0.27, vals, 0.27, label=tool)
        ax.set_xticks(x, [c.replace(", ", "\n", 1) for c in cases], fontsize=7)
        ax.set_ylabel("GB/s (decoded bytes / wall s)")
        ax.set_title(f"{res['host']}: {res['cpus']} CPUs, {res['bytes'] / 1e9:.2f} GB, {res['date']}",
                     fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("zarrflow rechunk vs tensorstore copy (WB2 v2 source → Zarr v3)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ntime", type=int, default=16)
    ap.add_argument("--grid", default="721x1440")
    ap.add_argument("--work", type=Path, default=Path("/tmp/zarrflow_bench_rechunk"))
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    ap.add_argument("--tag", default=platform.node())
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--replot", nargs="+", type=Path, metavar="JSON",
                    help="only draw the plot from earlier result files")
    args = ap.parse_args()
    if args.replot:
        plot([json.loads(p.read_text()) for p in args.replot], args.out / "bench_rechunk.png")
        return 0
    nlat, nlon = (int(x) for x in args.grid.split("x"))
    args.work.mkdir(parents=True, exist_ok=True)
    src = args.work / "src.zarr"
    if not src.exists():
        synth(src, SynthSpec(layout="wb2", ntime=args.ntime, nlat=nlat, nlon=nlon))
    data_arrays = tuple(n for n, a in zarrflow.open_group(src).arrays() if a.ndim >= 3)
    nbytes = sum(zarrflow.open_group(src)[n].nbytes for n in data_arrays)
    results = {"host": args.tag, "cpus": os.cpu_count(), "ntime": args.ntime, "grid": [nlat, nlon],
               "bytes": nbytes, "date": time.strftime("%Y-%m-%d"), "cases": {}}
    print(f"source: {src} ({nbytes / 1e9:.2f} GB in {len(data_arrays)} arrays), {os.cpu_count()} CPUs")
    for name, (chunks, shards, codec) in CASES.items():
        row = {}
        for label, verify in (("zarrflow", False), ("zarrflow --verify", True), ("tensorstore", None)):
            opts = Options(chunks=chunks, shards=shards, codec=codec, crc32c=shards is not None,
                           arrays=data_arrays, verify=bool(verify), memory=4 << 30)
            best = float("inf")
            for _ in range(args.repeats + 1):  # first run warms the page cache
                dst = args.work / "dst.zarr"
                shutil.rmtree(dst, ignore_errors=True)
                shutil.rmtree(args.work / "dst.zarr.partial", ignore_errors=True)
                if verify is None:
                    secs = tensorstore_copy(src, dst, opts)
                else:
                    t0 = time.perf_counter()
                    rechunk(src, dst, opts, progress=False)
                    secs = time.perf_counter() - t0
                best = min(best, secs)
            if verify is None:  # the two outputs must hold the same values
                for n in data_arrays[:2]:
                    a = zarrflow.open_array(dst / n)[...]
                    assert np.array_equal(a, zarrflow.open_group(src)[n][...], equal_nan=True), n
            row[label] = {"seconds": best, "GBps": nbytes / best / 1e9}
        row["ratio tensorstore/zarrflow --verify (time)"] = (row["zarrflow --verify"]["seconds"]
                                                             / row["tensorstore"]["seconds"])
        results["cases"][name] = row
        print(f"{name:<48} " + "  ".join(f"{k} {v['GBps']:.2f} GB/s" for k, v in row.items()
                                           if isinstance(v, dict))
              + f"  (zarrflow --verify takes {row['ratio tensorstore/zarrflow --verify (time)']:.2f}x"
              " tensorstore's time)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"bench_rechunk_{args.tag}.json").write_text(json.dumps(results, indent=2))
    lines = ["| case | zarrflow GB/s | zarrflow --verify GB/s | tensorstore copy GB/s | "
             "time, zarrflow --verify / tensorstore |", "|---|---:|---:|---:|---:|"]
    for name, row in results["cases"].items():
        lines.append(f"| {name} | {row['zarrflow']['GBps']:.2f} | {row['zarrflow --verify']['GBps']:.2f} | "
                     f"{row['tensorstore']['GBps']:.2f} | "
                     f"{row['ratio tensorstore/zarrflow --verify (time)']:.2f} |")
    (args.out / f"bench_rechunk_{args.tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        plot([results], args.out / f"bench_rechunk_{args.tag}.png")
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
