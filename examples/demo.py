"""The zarrflow demo: write a small ERA5-like store two ways, inspect it, read it, time it.

1. Writes (once; reused when present) with zarr-python into demo_data/:
   - era5_wb2.zarr  — Zarr v2, WeatherBench2-style: one array per variable, (time, level, lat, lon)
     or (time, lat, lon), Blosc-LZ4 byte-shuffle, coordinates as arrays, xarray dims;
   - era5_stacked.zarr — Zarr v3, the hackathon's stacked layout: one (time, channel, lat, lon)
     array, zstd, sharded by time step with one field per inner chunk.
2. Prints `zarrflow inspect` of both.
3. Reads every array with zarrflow and with zarr-python, checks they agree byte for byte, and
   prints decoded GB/s for both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

import zarrflow
from zarrflow import cli
from zarrflow.synthetic import LEVELS, FieldMaker, grid


def write_wb2(path: Path, ntime: int, nlat: int, nlon: int) -> None:
    import numcodecs
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    lat, lon = grid(nlat, nlon)
    times = np.arange(ntime, dtype="int64") * 6
    for name, values, dims in (("time", times, ["time"]), ("level", np.array(LEVELS, "int64"), ["level"]),
                               ("latitude", lat, ["latitude"]), ("longitude", lon, ["longitude"])):
        a = root.create_array(name, shape=values.shape, dtype=values.dtype, chunks=values.shape,
                              compressors=None)
        a[...] = values
        a.attrs["_ARRAY_DIMENSIONS"] = dims
    root["time"].attrs["units"] = "hours since 2020-01-01"
    blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    surface = root.create_array("2m_temperature", shape=(ntime, nlat, nlon), dtype="float32",
                                chunks=(1, nlat, nlon), compressors=blosc, fill_value=np.nan)
    surface.attrs["_ARRAY_DIMENSIONS"] = ["time", "latitude", "longitude"]
    maker = FieldMaker("2m_temperature", nlat, nlon, seed=1)
    for t in range(ntime):
        surface[t] = maker.at(t)
    for k, name in enumerate(("u_component_of_wind", "v_component_of_wind", "geopotential")):
        arr = root.create_array(name, shape=(ntime, len(LEVELS), nlat, nlon), dtype="float32",
                                chunks=(1, 1, nlat, nlon), compressors=blosc, fill_value=np.nan)
        arr.attrs["_ARRAY_DIMENSIONS"] = ["time", "level", "latitude", "longitude"]
        for j, lev in enumerate(LEVELS):
            maker = FieldMaker(name, nlat, nlon, seed=10 + 3 * k + j, level=lev)
            for t in range(ntime):
                arr[t, j] = maker.at(t)
    zarr.consolidate_metadata(str(path))


def write_stacked(path: Path, wb2: zarrflow.Group) -> None:
    import zarr
    from zarr.codecs import ZstdCodec

    channels = [("2m_temperature", None)] + [(v, j) for v in ("u_component_of_wind",
                                                             "v_component_of_wind", "geopotential")
                                             for j in range(len(LEVELS))]
    t2m = wb2["2m_temperature"]
    ntime, nlat, nlon = t2m.shape
    arr = zarr.create_array(str(path), shape=(ntime, len(channels), nlat, nlon), dtype="float32",
                            chunks=(1, 1, nlat, nlon), shards=(1, len(channels), nlat, nlon),
                            compressors=ZstdCodec(level=3), fill_value=np.nan,
                            dimension_names=["time", "channel", "latitude", "longitude"],
                            zarr_format=3)
    arr.attrs["channels"] = [n if j is None else f"{n}@{LEVELS[j]}" for n, j in channels]
    for t in range(ntime):
        block = np.stack([wb2[n][t] if j is None else wb2[n][t, j] for n, j in channels])
        arr[t] = block


def timed_read(fn, repeats: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
        print(f"writing ERA5-like stores ({args.ntime} steps on a {nlat}x{nlon} grid) ...", flush=True)
        t0 = time.perf_counter()
        write_wb2(wb2_path, args.ntime, nlat, nlon)
        write_stacked(stacked_path, zarrflow.open_group(wb2_path))
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
            equal = np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                                   np.ascontiguousarray(b.astype(b.dtype.newbyteorder("="))).view(np.uint8))
            gb = arr.nbytes / 1e9
            total_zf += t_zf
            total_zp += t_zp
            total_bytes += gb
            label = f"{store_path.name}/{name}" if name else store_path.name
            print(f"  {label:<34} {arr.nbytes / 1e6:8.0f} {gb / t_zf:14.2f} {gb / t_zp:17.2f}  {equal}")
            if not equal:
                print("zarrflow and zarr-python disagree", file=sys.stderr)
                return 1
    print(f"  {'all':<34} {total_bytes * 1e3:8.0f} {total_bytes / total_zf:14.2f} "
          f"{total_bytes / total_zp:17.2f}  → zarrflow {total_zp / total_zf:.1f}x zarr-python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
