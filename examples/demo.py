"""The zarrflow demo: write a small ERA5-like store two ways, inspect it, read it, time it.

1. Writes (once; reused when present) with `zarrflow synth` into demo_data/ the 6 channels
   t2m + u/v/t/z/q at 500 hPa:
   - era5_wb2.zarr  — Zarr v2, WeatherBench2-style: one array per variable, (time, level, lat, lon)
     or (time, lat, lon), Blosc-LZ4 byte-shuffle, coordinates as arrays, xarray dims;
   - era5_stacked.zarr — Zarr v3, the stacked layout: one (time, channel, lat, lon)
     array `data`, zstd, sharded by time step with one field per inner chunk.
2. Prints `zarrflow inspect` of both.
3. Reads every array with zarrflow and with zarr-python, checks they agree byte for byte, and
   prints decoded GB/s for both.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import zarrflow
from zarrflow.tools import cli
from zarrflow.tools.synth import SynthSpec, synth


def timed_read(fn, repeats: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="demo_data", help="where to write the stores")
    ap.add_argument("--ntime", type=int, default=8, help="6-hourly time steps")
    ap.add_argument("--grid", default="721x1440", help="latitude x longitude points (0.25°)")
    ap.add_argument("--rewrite", action="store_true", help="rewrite the stores even if present")
    args = ap.parse_args()
    nlat, nlon = (int(x) for x in args.grid.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wb2_path, stacked_path = out / "era5_wb2.zarr", out / "era5_stacked.zarr"
    stamp = out / f".complete-{args.ntime}-{nlat}x{nlon}"
    if args.rewrite or not stamp.exists():
        for p in (wb2_path, stacked_path, *out.glob(".complete-*")):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        print(f"writing ERA5-like stores ({args.ntime} steps on a {nlat}x{nlon} grid) ...",
              flush=True)
        t0 = time.perf_counter()
        for path, layout in ((wb2_path, "wb2"), (stacked_path, "stacked")):
            spec = SynthSpec(layout=layout, ntime=args.ntime, nlat=nlat, nlon=nlon,
                             shard=layout == "stacked")
            report = synth(path, spec, overwrite=True)
            print(f"{path.name}: {spec.resolved_codec()}, stored/decoded ratio "
                  f"{report.decoded / report.stored:.2f}")
        stamp.touch()
        print(f"  written in {time.perf_counter() - t0:.1f} s")

    for p in (wb2_path, stacked_path):
        print(f"\n$ zarrflow inspect {p}")
        cli.inspect(str(p))

    import zarr

    print(f"\nreading every array ({zarrflow._threads.default_threads()} threads), best of 3:")
    print(f"  {'array':<34} {'MB':>8} {'zarrflow GB/s':>14} {'zarr-python GB/s':>17}  equal")
    total_zf = total_zp = total_bytes = 0.0
    for store_path in (wb2_path, stacked_path):
        node = zarrflow.open(store_path)
        arrays = node.arrays() if isinstance(node, zarrflow.Group) else [("", node)]
        zp_node = zarr.open(str(store_path), mode="r")
        for name, arr in arrays:
            if arr.nbytes < 1 << 20:  # coordinates
                continue
            zp_arr = zp_node[name] if name else zp_node
            t_zf, a = timed_read(lambda: arr[...])
            t_zp, b = timed_read(lambda: zp_arr[...])
            native = np.ascontiguousarray(b.astype(b.dtype.newbyteorder("=")))
            equal = np.array_equal(np.ascontiguousarray(a).view(np.uint8), native.view(np.uint8))
            gb = arr.nbytes / 1e9
            total_zf += t_zf
            total_zp += t_zp
            total_bytes += gb
            label = f"{store_path.name}/{name}" if name else store_path.name
            print(f"  {label:<34} {arr.nbytes / 1e6:8.0f} {gb / t_zf:14.2f} {gb / t_zp:17.2f}  "
                  f"{equal}")
            if not equal:
                print("zarrflow and zarr-python disagree", file=sys.stderr)
                return 1
    print(f"  {'all':<34} {total_bytes * 1e3:8.0f} {total_bytes / total_zf:14.2f} "
          f"{total_bytes / total_zp:17.2f}  → zarrflow {total_zp / total_zf:.1f}x zarr-python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
