"""Loader benchmark: training batches per second into GPU memory, zarrflow vs the DataLoader
baseline users have today, on ERA5-like stores in the two layouts training reads.

Stores (written once; tensorstore writes the data, zarr-python the metadata and coordinates):
  wb2   WeatherBench2-style Zarr v2: t2m (time, lat, lon) and u/v/t/z/q (time, level, lat, lon),
        Blosc-LZ4 byte-shuffle, one field per chunk; 6 channels: t2m + u/v/t/z/q at 500 hPa
  stack stacked Zarr v3: data (time, channel=71, lat, lon), zstd-3, one field per chunk;
        71 channels
Grid 721x1440, also cropped to 640x1280. Batch 16, t→t+1, float32 and bfloat16 (normalised).
Reported per run: samples/s, GB/s of batches (x and y, in the output dtype), and with a simulated
50 ms training step, the fraction of step time the consumer waited for data. Baseline: a PyTorch
DataLoader (8 workers, pin_memory) over a map-style Dataset that reads each sample with
tensorstore (a common PyTorch pattern), then .cuda(); and the same over xarray with tensorstore
reading (xarray_tensorstore.open_zarr), when it is installed.

--ceilings: only the loader's default and two workers on both stores (whole 721x1440 fields,
float32, no training step), next to the stage ceilings of the same stores (benchmarks/ceilings.py):
(a) the stores' stored chunk bytes read by as many host threads as zarrflow reads with into pinned
memory, (b) pinned H2D, both × the run's compression ratio, and (c) the GPU decode stage (the
decode kernels' GPU time in the timed epochs, from the loader's counters). End to end is the
decoded bytes of the chunks the loader read (each chunk once, however many samples share it) per
second, so that it compares with the ceilings; the batches' GB/s counts x and y of every sample.
Writes bench_loader_ceilings.json and .md:

    python benchmarks/bench_loader.py --ceilings --data /tmp/zarrflow_bench --out OUT
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ceilings as cl  # noqa: E402
import zarrflow  # noqa: E402
from zarrflow.tools.synthetic import FieldMaker  # noqa: E402

NLAT, NLON = 721, 1440
FIELD_BYTES = NLAT * NLON * 4  # one chunk of either store, decoded
STAGING_BYTES = 2_000_000_000  # the pinned buffer the staging ceiling reads into, reused
VARS = ["u_component_of_wind", "v_component_of_wind", "temperature", "geopotential",
        "specific_humidity"]


@functools.lru_cache(maxsize=None)
def field_pool(n: int = 24) -> np.ndarray:
    names = ["2m_temperature"] + VARS
    return np.stack([FieldMaker(names[i % len(names)], NLAT, NLON, seed=i).at(0) for i in range(n)])


def write_wb2(path: Path, ntime: int, pool: np.ndarray, chunk_hw=(NLAT, NLON)) -> None:
    import numcodecs
    import tensorstore as ts
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    lev = root.create_array("level", shape=(2,), dtype="int64", chunks=(2,), compressors=None)
    lev[...] = [500, 850]
    lev.attrs["_ARRAY_DIMENSIONS"] = ["level"]
    specs = {"2m_temperature": (ntime, NLAT, NLON)} | {v: (ntime, 2, NLAT, NLON) for v in VARS}
    for k, (name, shape) in enumerate(specs.items()):
        a = root.create_array(name, shape=shape, chunks=(1,) * (len(shape) - 2) + tuple(chunk_hw),
                              dtype="float32", compressors=blosc, fill_value=np.nan)
        a.attrs["_ARRAY_DIMENSIONS"] = ["time", "latitude", "longitude"] if len(shape) == 3 else \
            ["time", "level", "latitude", "longitude"]
        t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(path / name)}}).result()
        for i in range(0, ntime, 16):
            j = min(i + 16, ntime)
            block = np.stack([np.roll(pool[(ti * 3 + k) % len(pool)], ti, axis=1) for ti in range(i, j)])
            if len(shape) == 4:
                block = np.stack([block, block[:, ::-1]], axis=1)
            t[i:j].write(block).result()
    zarr.consolidate_metadata(str(path))


def write_stack(path: Path, ntime: int, pool: np.ndarray, channels: int = 71,
                chunk_hw=(NLAT, NLON), zstd_level: int | None = 3) -> None:
    """The stacked layout; `zstd_level` None stores the chunks uncompressed."""
    import tensorstore as ts
    import zarr
    from zarr.codecs import ZstdCodec

    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    root.create_array("data", shape=(ntime, channels, NLAT, NLON), dtype="float32",
                      chunks=(1, 1, *chunk_hw), fill_value=np.nan,
                      compressors=None if zstd_level is None else ZstdCodec(level=zstd_level),
                      dimension_names=["time", "channel", "latitude", "longitude"],
                      attributes={"channels": [f"c{i}" for i in range(channels)]})
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / "data")}}).result()
    for ti in range(ntime):
        block = np.stack([np.roll(pool[(ti + c) % len(pool)], ti, axis=1) for c in range(channels)])
        t[ti].write(block).result()


def write_once(path: Path, write) -> float | None:
    """Runs `write()` unless `path` carries the `.complete` mark of an earlier run; then syncs
    (write-back of a fresh store would compete with the timed reads) and marks it. Returns the
    seconds it took, or None when the store was already there."""
    if (path / ".complete").exists():
        return None
    t0 = time.perf_counter()
    write()
    os.sync()
    (path / ".complete").touch()
    took = time.perf_counter() - t0
    print(f"wrote {path.name} in {took:.0f} s", file=sys.stderr, flush=True)
    return took


def pool_calls() -> dict:
    """Device and pinned allocations and frees zarrflow's pools made so far (a steady loader
    makes none)."""
    return {k: v for k, v in zarrflow.memory_stats().items() if k.endswith(("_allocations", "_frees"))}


def pool_held() -> dict:
    """The most the process's GPU pool has held so far, against its limit (GB)."""
    mem = zarrflow.memory_stats()
    return {"device_held_peak_GB": mem["device_held_peak"] / 1e9,
            "device_limit_GB": mem["device_limit"] / 1e9}


def attempt(run, *args, **kwargs) -> dict:
    """One run's results, or why it failed (e.g. a configuration the GPU's memory cannot hold):
    a failed run is reported as such and the benchmark goes on."""
    import torch

    try:
        return run(*args, **kwargs)
    except zarrflow.errors.ZarrflowError as e:
        print(f"run failed: {e}", file=sys.stderr, flush=True)
        return {"error": str(e).splitlines()[0][:300]}
    finally:
        torch.cuda.synchronize()
        zarrflow.release_memory()


def run_zarrflow(store, variables, *, crop, dtype, normalize, step_s: float, epochs: int = 4,
                 cache_gb: float = 0.0, host_cache_gb: float = 0.0, workers: int | None = None,
                 share: float | str = "auto") -> dict:
    ld = zarrflow.Loader(store, variables, batch_size=16, device="cuda", crop=crop, dtype=dtype,
                         normalize=normalize, shuffle="block", seed=0, prefetch=2,
                         workers=workers, cache_gb=cache_gb, host_cache_gb=host_cache_gb,
                         host_decode_share=share, drop_last=True)
    try:
        return timed_epochs(ld, variables, dtype=dtype, step_s=step_s, epochs=epochs)
    finally:
        ld.close()


def timed_epochs(ld, variables, *, dtype, step_s: float, epochs: int) -> dict:
    import torch

    # Warm-up epochs (page cache; pools grown to their working set; the host/GPU decode balance
    # settled): at least two, and until one makes no new device or pinned allocation and leaves the
    # balance where it was (at most eight).
    warm = 0
    for e in range(8):
        before, share = pool_calls(), ld.decode_share
        ld.set_epoch(e)
        warm += 1
        for _ in ld:
            if step_s:
                torch.cuda._sleep(int(step_s * 1.4e9))
                torch.cuda.synchronize()
        if e >= 1 and pool_calls() == before and ld.decode_share == share:
            break
    st0, calls0 = ld.stats(), pool_calls()
    per_sample = 2 * len(variables) * int(np.prod(ld.spatial_shape)) * (2 if dtype != "float32" else 4)
    t0, n, nb, waited = time.perf_counter(), 0, 0, 0.0
    epoch_s = []
    for e in range(epochs):
        te = time.perf_counter()
        # Numbered on from the warm-up epochs, as a training loop's are: the loader reads the
        # next epoch's first batches ahead, guessing epoch + 1.
        ld.set_epoch(warm + e)
        it = iter(ld)
        while True:
            w0 = time.perf_counter()
            try:
                b = next(it)
            except StopIteration:
                break
            torch.cuda.synchronize()
            waited += time.perf_counter() - w0
            n += b["x"].shape[0]
            nb += 1
            if step_s:
                torch.cuda._sleep(int(step_s * 1.4e9))  # ~step_s of GPU "training"
                torch.cuda.synchronize()
        epoch_s.append(round(time.perf_counter() - te, 4))
    wall = time.perf_counter() - t0
    st, calls = ld.stats(), pool_calls()
    gpu_times = {k: st[k] - st0[k] for k in ("h2d_ms", "decode_ms") if k in st and k in st0}
    return {**gpu_times,"samples_per_s": n / wall, "batch_GBps": n * per_sample / 1e9 / wall,
            "wait_fraction": waited / wall, "wall_s": wall, "samples": n, "workers": ld.workers,
            "prefetch": ld.prefetch,
            "stored_GB": (st["stored_bytes"] - st0["stored_bytes"]) / 1e9,
            "deduplicated": st["deduplicated"],
            "cache_hits": st["cache_hits"], "host_cache_hits": st["host_cache_hits"],
            "chunks": st["chunks"], "epoch_s": epoch_s,
            # chunks decoded by each side in the timed epochs, and each timed batch's host share
            "gpu_decoded": st["gpu_decoded"] - st0["gpu_decoded"],
            "cpu_decoded": st["cpu_decoded"] - st0["cpu_decoded"],
            "host_decode_share": [r["host_share"] for r in ld.timeline()[-nb:]],
            # pool calls during the timed epochs (a steady loader makes none)
            "pool_calls": {k: v - calls0.get(k, 0) for k, v in calls.items()}, **pool_held()}


class TsDataset:
    """The baseline's map-style dataset: each sample read with tensorstore (x at t, y at t+1)."""

    def __init__(self, store: str, variables: list[str], length: int):
        self.store, self.variables, self.length, self.arrays = store, variables, length, None

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, t: int):
        import tensorstore as ts
        import torch

        if self.arrays is None:  # opened in the worker
            self.arrays = {v: ts.open({"driver": "zarr", "kvstore": {
                "driver": "file", "path": f"{self.store}/{v.split('@')[0]}"}}).result()
                for v in self.variables}

        def get(ti: int) -> np.ndarray:
            return np.stack([a[ti].read().result() if "@" not in v else a[ti, 0].read().result()
                             for v, a in self.arrays.items()])

        return torch.from_numpy(get(t)), torch.from_numpy(get(t + 1))


class XtsDataset(TsDataset):
    """The xarray baseline: the same samples through xarray, with tensorstore doing
    the reads (xarray_tensorstore.open_zarr: lazily indexed variables that tensorstore reads)."""

    def __getitem__(self, t: int):
        import torch
        import xarray_tensorstore as xts

        if self.arrays is None:  # opened in the worker
            self.arrays = xts.open_zarr(self.store)

        def get(ti: int) -> np.ndarray:
            reads = []
            for v in self.variables:
                name, _, level = v.partition("@")
                da = self.arrays[name].isel(time=ti)
                if level:
                    da = da.sel(level=int(level))
                reads.append(xts.read(da))  # started here, all fields at once
            return np.stack([r.values for r in reads])

        return torch.from_numpy(get(t)), torch.from_numpy(get(t + 1))


def run_baseline(store: Path, variables: list[str], step_s: float, batches: int = 6,
                 workers: int = 8, dataset=TsDataset) -> dict:
    import torch
    import torch.multiprocessing
    from torch.utils.data import DataLoader

    # Worker batches travel through shared memory; small /dev/shm (containers) needs files.
    torch.multiprocessing.set_sharing_strategy("file_system")

    ds = dataset(str(store), list(variables), 16 * batches)
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=workers, pin_memory=True,
                    persistent_workers=workers > 0, multiprocessing_context="spawn" if workers else None)
    for x, y in dl:  # warm-up
        break
    t0, n, waited = time.perf_counter(), 0, 0.0
    it = iter(dl)
    while True:
        w0 = time.perf_counter()
        try:
            x, y = next(it)
        except StopIteration:
            break
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        torch.cuda.synchronize()
        waited += time.perf_counter() - w0
        n += x.shape[0]
        if step_s:
            torch.cuda._sleep(int(step_s * 1.4e9))
            torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    per_sample = 2 * len(variables) * NLAT * NLON * 4
    return {"samples_per_s": n / wall, "batch_GBps": n * per_sample / 1e9 / wall,
            "wait_fraction": waited / wall, "wall_s": wall, "samples": n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="bench_data")
    ap.add_argument("--out", default="bench_results")
    ap.add_argument("--ntime-wb2", type=int, default=128)
    ap.add_argument("--ntime-stack", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=4,
                    help="timed epochs per run (x4 for the 6-channel store's 7-batch epochs)")
    ap.add_argument("--only-cache", action="store_true", help="only the cached runs")
    ap.add_argument("--chunks-640", action="store_true",
                    help="only: stores chunked (640, 1280) per "
                         "field (edge chunks at 721x1440), read as 640x1280 windows (2 and 3 "
                         "workers) and as whole 721x1440 fields (2 workers)")
    ap.add_argument("--windows", action="store_true",
                    help="only: 640x1280 windows of the 721x1440-chunked stores (2 to 4 workers) "
                         "and whole 721x1440 fields (2 workers) for reference")
    ap.add_argument("--full", action="store_true",
                    help="every grid x dtype x step combination (default: the ones the targets "
                         "name, plus one worker vs two)")
    ap.add_argument("--shares", type=lambda t: [x if x == "auto" else float(x) for x in t.split(",")],
                    help="only: loader-only runs at these host decode shares (e.g. auto,0,0.1,0.2), "
                         "two workers, both grids, float32: does the host add to the GPU's decoding "
                         "when the consumer always waits?")
    ap.add_argument("--ceilings", action="store_true",
                    help="only: the default and two workers on both stores next to their stage "
                         "ceilings (staging, H2D, GPU decode)")
    ap.add_argument("--gpu-memory-limit", default="0.9",
                    help="zarrflow's GPU memory limit in these loader-only loops, with no model "
                         "beside them (the library's default leaves 60%% of the GPU to a model)")
    args = ap.parse_args()
    if args.ceilings and (args.chunks_640 or args.windows or args.shares or args.full or args.only_cache):
        ap.error("--ceilings runs alone (whole fields of the 721x1440-chunked stores)")
    import torch

    limit = zarrflow.set_gpu_memory_limit(args.gpu_memory_limit)
    data, out = Path(args.data), Path(args.out)
    data.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    tag = ("_c640" if args.chunks_640 else "_windows" if args.windows else
           "_shares" if args.shares else "_ceilings" if args.ceilings else "")
    if args.ceilings:  # staging is measured with as many threads as the loader reads with
        zarrflow.set_num_threads(len(os.sched_getaffinity(0)))
    chunk_hw = (640, 1280) if args.chunks_640 else (NLAT, NLON)
    store_tag = "_c640" if args.chunks_640 else ""
    wb2 = data / f"wb2_{args.ntime_wb2}{store_tag}.zarr"
    stack = data / f"stack71_{args.ntime_stack}{store_tag}.zarr"
    for path, writer, nt in ((wb2, write_wb2, args.ntime_wb2), (stack, write_stack, args.ntime_stack)):
        write_once(path, lambda: writer(path, nt, field_pool(), chunk_hw=chunk_hw))
    wb2_vars = ["2m_temperature"] + [f"{v}@500" for v in VARS]
    stack_vars = [f"data@c{i}" for i in range(71)]
    stats_wb2 = {"mean": [0.0] * 6, "std": [1.0] * 6}
    stats_stack = {"mean": [0.0] * 71, "std": [1.0] * 71}
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "gpu": torch.cuda.get_device_name(), "cpus": len(os.sched_getaffinity(0)),
               "gpu_memory_limit": limit, "runs": []}
    crops = {"721x1440": None, "640x1280": {"latitude": (0, 640), "longitude": (0, 1280)}}
    configs = [(wb2, wb2_vars, stats_wb2, "wb2 v2 blosc-lz4, 6 ch"),
               (stack, stack_vars, stats_stack, "stacked v3 zstd, 71 ch")]
    plan = []  # (config, grid, dtype, step, workers, host decode share)

    def add(cfg, grid, dtype, step, workers, share="auto"):
        plan.append((cfg, grid, dtype, step, workers, share))

    for cfg in ([] if args.only_cache else configs):
        if args.ceilings:
            for workers in (None, 2):
                add(cfg, "721x1440", "float32", 0.0, workers)
            continue
        if args.shares:
            for grid in ("640x1280", "721x1440"):
                for share in args.shares:
                    add(cfg, grid, "float32", 0.0, 2, share)
            continue
        if args.chunks_640:
            for workers in (3, 2):
                add(cfg, "640x1280", "float32", 0.0, workers)
            # whole fields from the same store: four chunks each (640x1280 and the edges)
            add(cfg, "721x1440", "float32", 0.0, 2)
            continue
        if args.windows:
            add(cfg, "721x1440", "float32", 0.0, 2)
            for workers in (4, 3, 2):
                add(cfg, "640x1280", "float32", 0.0, workers)
            continue
        if args.full:
            for grid in crops:
                for dtype in ("float32", "bfloat16"):
                    for step in (0.0, 0.05):
                        for workers in (1, 2, 3):
                            add(cfg, grid, dtype, step, workers)
            continue
        # The shapes in float32 (GB/s of batches): one and two workers, and the loader's
        # default (None: three when the memory limit has room); bf16 and a simulated training
        # step with the default.
        for workers in (1, 2, None):
            add(cfg, "721x1440", "float32", 0.0, workers)
        for workers in (2, None):
            add(cfg, "640x1280", "float32", 0.0, workers)
        add(cfg, "721x1440", "bfloat16", 0.0, None)
        add(cfg, "721x1440", "bfloat16", 0.05, None)

    def epochs_for(variables) -> int:
        # Short epochs need more of them for a steady rate: 7 batches of the 6-channel store,
        # 3 of the 71-channel one.
        return args.epochs * (4 if len(variables) < 16 else 2)

    def loader_name(workers: int | None, used: int | None = None) -> str:
        if workers is None:  # the loader's default: say what the memory plan made of it
            return f"zarrflow-gpu (default: {used or '?'} workers)"
        return f"zarrflow-gpu ({workers} worker{'s' if workers > 1 else ''})"

    for (store, variables, stats, label), grid, dtype, step, workers, share in plan:
        print(f"run: {label} {grid} {dtype} step={step} workers={workers} share={share}", flush=True)
        r = attempt(run_zarrflow, store, variables, crop=crops[grid], dtype=dtype,
                    normalize=stats if dtype != "float32" else None, step_s=step,
                    workers=workers, epochs=epochs_for(variables), share=share)
        name = loader_name(workers, r.get("workers")) + ("" if share == "auto" else
                                                         f", host share {share}")
        r.update(store=label, grid=grid, dtype=dtype, step_s=step, loader=name)
        results["runs"].append(r)
        print(json.dumps(r), flush=True)
    # The GPU cache of compressed chunks: the warm-up epoch fills it, the timed epochs read from it.
    for store, variables, label in ((wb2, wb2_vars, "wb2 v2 blosc-lz4, 6 ch"),
                                    (stack, stack_vars, "stacked v3 zstd, 71 ch")):
        tiers = (("GPU", {"cache_gb": 30.0}, 1), ("GPU", {"cache_gb": 30.0}, None),
                 ("pinned host", {"host_cache_gb": 30.0}, None))
        for tier, kw, workers in (() if args.chunks_640 or args.windows or args.shares or args.ceilings else
                                  tiers if args.full or args.only_cache else tiers[:2]):
            print(f"run: {label} {tier} cache, {workers} workers", flush=True)
            r = attempt(run_zarrflow, store, variables, crop=None, dtype="float32",
                        normalize=None, step_s=0.0, epochs=epochs_for(variables), workers=workers,
                        **kw)
            r.update(store=label, grid="721x1440", dtype="float32", step_s=0.0,
                     loader=f"{loader_name(workers, r.get('workers'))} + 30 GB {tier} chunk cache")
            results["runs"].append(r)
            print(json.dumps(r), flush=True)
    (out / f"bench_loader{tag}.json").write_text(json.dumps(results, indent=2))
    baselines = [("DataLoader+tensorstore", TsDataset)]
    try:
        importlib.import_module("xarray_tensorstore")
        baselines.append(("DataLoader+xarray+tensorstore", XtsDataset))
    except ImportError as e:  # listed, not dropped
        results["unavailable"] = {"DataLoader+xarray+tensorstore": str(e)}
        print(f"baseline xarray+tensorstore unavailable: {e}", file=sys.stderr, flush=True)
    for step in (() if args.only_cache or args.chunks_640 or args.windows or args.shares
                 or args.ceilings else (0.0, 0.05)):
        for base, dataset in baselines:
            try:
                r = run_baseline(wb2, wb2_vars, step, dataset=dataset)
                name = f"{base} (8 workers)"
            except RuntimeError as e:  # workers killed (e.g. no shared memory): run in-process
                print(f"baseline with 8 workers failed: {e}", file=sys.stderr, flush=True)
                r = run_baseline(wb2, wb2_vars, step, workers=0, dataset=dataset)
                name = f"{base} (0 workers; 8 failed)"
            r.update(store="wb2 v2 blosc-lz4, 6 ch", grid="721x1440", dtype="float32",
                     step_s=step, loader=name)
            results["runs"].append(r)
            print(json.dumps(r), flush=True)
    (out / f"bench_loader{tag}.json").write_text(json.dumps(results, indent=2))
    lines = [f"{results['gpu']}, {results['cpus']} CPUs, {results['date']}; batch 16, t→t+1", "",
             "| loader | store | grid | dtype | training step | samples/s | GB/s of batches | "
             "stored GB/s read | time waiting for data |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in results["runs"]:
        if "error" in r:
            lines.append(f"| {r['loader']} | {r['store']} | {r['grid']} | {r['dtype']} | "
                         f"{r['step_s'] * 1000:.0f} ms | failed: {r['error']} | | | |")
            continue
        stored = f"{r['stored_GB'] / r['wall_s']:.2f}" if "stored_GB" in r else "—"
        lines.append(f"| {r['loader']} | {r['store']} | {r['grid']} | {r['dtype']} | "
                     f"{r['step_s'] * 1000:.0f} ms | {r['samples_per_s']:.1f} | {r['batch_GBps']:.2f} | "
                     f"{stored} | "
                     + (f"{100 * r['wait_fraction']:.0f}% |" if r["step_s"] else "— (loader only) |"))
    if args.ceilings:
        loader_ceilings(results, {label: store for store, _, _, label in configs})
        (out / f"bench_loader{tag}.json").write_text(json.dumps(results, indent=2))
        lines += ["", "Stage ceilings, decoded GB/s of the chunks read (each once):", "",
                  cl.ceilings_table(results["ceiling_rows"], "store, loader")]
    (out / f"bench_loader{tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def loader_ceilings(results: dict, stores: dict[str, Path]) -> None:
    """The stores' staging rates and the pinned H2D rate, measured now, and a ceiling row per
    loader run (into results)."""
    import torch

    threads = len(os.sched_getaffinity(0))
    h2d = cl.pinned_h2d_gbps(torch, STAGING_BYTES)
    buffer = cl.pinned_buffer(STAGING_BYTES, dry=False)
    staging = {label: cl.staging_rate(cl.stored_pieces(path), buffer, threads, runs=3)
               for label, path in stores.items()}
    del buffer
    results["ceilings"] = {"pinned_h2d_GBps": h2d, "staging": staging, "threads": threads}
    results["ceiling_rows"] = [row for r in results["runs"]
                               if (row := loader_ceiling_row(r, staging, h2d)) is not None]


def loader_ceiling_row(run: dict, staging: dict, h2d_GBps: float) -> dict | None:
    """A loader run against its store's ceilings, in decoded GB/s of the chunks it read; None
    for a failed run or one without the GPU counters."""
    if "error" in run or not run.get("stored_GB") or run["store"] not in staging:
        return None
    decoded = (run["gpu_decoded"] + run["cpu_decoded"]) * FIELD_BYTES
    decode_s = run.get("decode_ms", 0) / 1e3
    decode = run["gpu_decoded"] * FIELD_BYTES / 1e9 / decode_s if decode_s > 0 else None
    row = cl.ceiling_row(f"{run['store']}: {run['loader']}", decoded / (run["stored_GB"] * 1e9),
                         staging[run["store"]]["stored_GBps"], h2d_GBps, decode,
                         decoded / 1e9 / run["wall_s"], compressed=True)
    row.update(store=run["store"], loader=run["loader"], batch_GBps=run["batch_GBps"],
               cpu_decoded=run["cpu_decoded"],
               gpu_decoded=run["gpu_decoded"])
    return row


if __name__ == "__main__":
    sys.exit(main())
