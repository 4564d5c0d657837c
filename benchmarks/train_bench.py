"""Training benchmark: does the data loader keep the GPU busy while a model trains?

Trains the U-Net of examples/train_unet.py (ResNet-18 encoder, t -> t+1) on an ERA5-like store
and measures, per run, samples/s and the share of step time spent waiting for data. Runs
(``--runs``, several in one process, the same model and settings each time):

- ``synthetic``            compute only: random batches already on the GPU (the ceiling);
- ``zarrflow-gpu``         zarrflow.Loader with its defaults, batches in GPU memory (the host
                           threads decode while they keep up, the GPU takes chunks over while the
                           model waits: ``host_decode_share="auto"``);
- ``zarrflow-gpu-hostdecode`` the same loader with ``gpu_decode="off"``: the host threads decode,
                           the GPU only assembles, normalises and casts;
- ``zarrflow-gpu@F``       the GPU loader with ``host_decode_share=F`` (``@0``: all on the GPU);
- ``zarrflow-gpu-normal``  the GPU loader with ``stream_priority="normal"`` (the default is
                           ``"high"``; also with ``@F``);
- ``zarrflow-gpu@best``    the GPU loader at the host share benchmarks/decode_split.py finds
                           best from this process's earlier ``synthetic``, ``zarrflow-gpu@0`` and
                           ``zarrflow-gpu@1`` runs (which must come first); the results then
                           record that split's ceiling (``split_ceiling``) beside the runs;
- ``zarrflow-cpu``         zarrflow.Loader decoding on the CPU, batches copied up (pinned);
- ``baseline-tensorstore`` a PyTorch DataLoader (workers, pin_memory) over a Dataset that reads
                           each sample with tensorstore, channel by channel;
- ``baseline-xarray``      the same over xarray + zarr-python (``xr.open_zarr``);
- ``synthetic+RUN``        the model trains on the synthetic tensors while RUN's loader runs
                           alongside (each step takes a real batch and drops it): what the
                           loader's work costs the model's steps (``synthetic+zarrflow-cpu``
                           leaves its batches on the host: no CUDA calls of the loader's own);

A run may be listed more than once (``synthetic,zarrflow-gpu,synthetic``): real/synthetic then
divides by the mean of the synthetic runs, which brackets drift of the GPU's speed over time.
``--no-train`` drops the model (loader only). Per epoch, and averaged over the epochs after the
first (warm-up), each run reports samples/s, MB/s of (x, y) as delivered to the model, and

    wait = time blocked getting the next batch onto the GPU
    step = wait + compute (forward, backward, optimiser step; synchronised every step)
    data_wait_fraction = sum(wait) / sum(step)

and real/synthetic = samples/s of a data run / samples/s of the synthetic runs. Validation runs
after every epoch on the last ``--val-fraction`` of the time axis (``time_range``: no sample
straddles the split). With ``--out`` the results go to ``train_unet_<channels>ch_<gpus>gpu[_TAG]
.json`` and ``.md`` there (docs/performance.md plots them with benchmarks/plot_train.py).

Single GPU:  python benchmarks/train_bench.py --store era5.zarr --runs synthetic,zarrflow-gpu
DDP:         torchrun --nproc-per-node 2 benchmarks/train_bench.py --store era5.zarr ...
DDP check on one GPU (two ranks share it):
             torchrun --nproc-per-node 2 benchmarks/train_bench.py --dist-backend gloo \
                 --gpu-memory-limit 0.2 --store era5.zarr ...
On a GPU host: ``TRAIN_PLAN=benchmarks/train_plan.txt scripts/gpu_run.sh train``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

import zarrflow

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_split import best_split  # noqa: E402
from train_unet import UNetResNet18, loss_fn  # noqa: E402  (the model the example trains)

SIX = ["2m_temperature", "u_component_of_wind@500", "v_component_of_wind@500",
       "temperature@500", "geopotential@500", "specific_humidity@500"]


# --------------------------------------------------------------------------------------------
# Data: zarrflow loaders and the DataLoader baselines
# --------------------------------------------------------------------------------------------


def resolve_channels(group, names: list[str]) -> list[tuple[str, int, tuple]]:
    """(array path, time axis, index of the field at time 0) of each channel, by the Loader's
    naming rules for the stores ``zarrflow synth`` and bench_loader.py write: ``name`` is a
    (time, lat, lon) array, ``name@500`` picks a level by the ``level`` coordinate, ``data@label``
    a channel by the array's ``channels`` attribute."""
    out = []
    for spec in names:
        name, _, pick = spec.partition("@")
        arr = group[name]
        dims = list(arr.dims)
        key: list = [slice(None)] * arr.ndim
        key[dims.index("time")] = 0
        if pick and "level" in dims:
            levels = [float(v) for v in group["level"][...]]
            key[dims.index("level")] = levels.index(float(pick))
        elif pick:
            key[dims.index("channel")] = list(arr.attrs["channels"]).index(pick)
        out.append((arr.path, dims.index("time"), tuple(key)))
    return out


class SampleDataset(torch.utils.data.Dataset):
    """One (x, y) pair per valid time, read channel by channel with tensorstore or xarray —
    what a typical PyTorch pipeline does; the same fields as the zarrflow runs."""

    def __init__(self, store: str, channels: list[str], times: np.ndarray, backend: str,
                 mean: np.ndarray, std: np.ndarray):
        self.store, self.times, self.backend = store, times, backend
        # (array path, time axis, index at time 0): plain data, so workers can unpickle it
        self.chans = resolve_channels(zarrflow.open_group(store), channels)
        self.mean = mean.astype(np.float32)[:, None, None]
        self.std = std.astype(np.float32)[:, None, None]
        self._handles = None  # opened lazily in each worker

    def _open(self):
        if self.backend == "tensorstore":
            import tensorstore as ts

            out = {}
            for path, *_ in self.chans:
                if path not in out:
                    meta = Path(self.store, path)
                    driver = "zarr3" if (meta / "zarr.json").exists() else "zarr"
                    out[path] = ts.open({"driver": driver, "kvstore": {
                        "driver": "file", "path": str(meta)}}).result()
            return out
        import xarray as xr

        ds = xr.open_zarr(self.store, chunks=None, mask_and_scale=False, decode_times=False)
        return {path: ds[path].variable for path, *_ in self.chans}

    def _field(self, path, t_axis, key0, t) -> np.ndarray:
        key = key0[:t_axis] + (t,) + key0[t_axis + 1:]
        h = self._handles[path]
        if self.backend == "tensorstore":
            return h[key].read().result()
        return np.asarray(h[key].values)

    def __len__(self) -> int:
        return len(self.times)

    def __getitem__(self, i: int):
        if self._handles is None:
            self._handles = self._open()
        t = int(self.times[i])
        x = np.stack([self._field(*c, t) for c in self.chans]).astype(np.float32)
        y = np.stack([self._field(*c, t + 1) for c in self.chans]).astype(np.float32)
        return torch.from_numpy((x - self.mean) / self.std), torch.from_numpy((y - self.mean) / self.std)


def baseline_depth(args, nchan: int, world: int, batch_size: int) -> tuple[int, int]:
    """(workers, prefetch_factor) for a baseline DataLoader. Every worker holds prefetch_factor
    float32 batches in shared memory and builds the next one (its samples, then their collated
    copy): about prefetch_factor + 2 batches. At 71 channels, 721x1440, batch 16 a batch is
    9.4 GB, so 8 workers need 225-300 GB; on a 128 GB host the kernel's OOM killer ends the run
    (SIGKILL, no traceback; seen with 8 x 2 and 8 x 1). A loader gets at most 70% of the host's
    memory (shared by the ranks of this host; the train and validation loaders never read at
    the same time): prefetch 1 first, then fewer workers, and it says so."""
    h, w = args.spatial
    batch = 2 * nchan * h * w * 4 * batch_size
    budget = 0.7 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / max(1, world)
    workers, prefetch = args.workers, args.prefetch_factor
    while workers > 1 and workers * (prefetch + 2) * batch > budget:
        if prefetch > 1:
            prefetch = 1
        else:
            workers -= 1
    if (workers, prefetch) != (args.workers, args.prefetch_factor):
        print(f"  baseline: {args.workers} workers x prefetch {args.prefetch_factor} x "
              f"{batch / 1e9:.1f} GB batches would not fit in 70% of host memory "
              f"({budget / 1e9:.0f} GB per rank): {workers} workers x prefetch {prefetch}",
              flush=True)
    return workers, prefetch


def make_data(kind: str, args, stats: dict, split: tuple[range, range], device: torch.device,
              rank: int, world: int, copy_to_gpu: bool = True):
    """(train iterable factory(epoch) → iterator of (x, y) on the GPU, validation factory).

    ``copy_to_gpu=False`` leaves a host loader's batches on the host (a loader running beside
    synthetic training then makes no CUDA calls of its own)."""
    dtype = "bfloat16" if args.bf16 else "float32"
    tr, va = split
    # A short held-out range, in batches of at most 8: the validation loader's batches are in
    # flight beside the training loader's under zarrflow's GPU memory limit (at 71 channels on an
    # H100, 40% limit: 3 x 4.4 GB batches of 15 did not fit beside the training loader's plan).
    val_bs = max(1, min(args.batch_size, 8, (len(va) - 1) // world))
    if kind.startswith("zarrflow"):
        on_gpu = kind.startswith("zarrflow-gpu")
        kind, _, share = kind.partition("@")
        priority = {"stream_priority": "normal"} if kind == "zarrflow-gpu-normal" else {}
        common = dict(dtype=dtype, normalize=stats,
                      device=f"cuda:{device.index}" if on_gpu else "cpu", output="torch",
                      prefetch=args.prefetch, workers=args.loader_workers,
                      threads=args.loader_threads, rank=rank, world_size=world, drop_last=True,
                      gpu_decode="off" if kind == "zarrflow-gpu-hostdecode" else args.gpu_decode,
                      host_decode_share=float(share) if share else "auto", cache_gb=args.cache_gb,
                      **priority)
        train = zarrflow.Loader(args.store, args.channels, shuffle="block", seed=args.seed,
                                block=args.shuffle_block, buffer=args.shuffle_buffer,
                                time_range=(tr.start, tr.stop), batch_size=args.batch_size, **common)
        # Validation is a few batches per epoch: one worker and one batch ahead leave the GPU
        # memory (zarrflow.set_gpu_memory_limit) to the training loader's reads, and no next
        # epoch read ahead: its batches would sit in GPU memory through the training epoch.
        val = zarrflow.Loader(args.store, args.channels, shuffle=False,
                              time_range=(va.start, va.stop), batch_size=val_bs,
                              **(common | {"prefetch": 1, "workers": 1}), prime_next_epoch=False)

        def wrap(loader, epoch):
            loader.set_epoch(epoch)
            for b in loader:
                if on_gpu or not copy_to_gpu:
                    yield b["x"], b["y"]
                else:
                    yield (b["x"].pin_memory().to(device, non_blocking=True),
                           b["y"].pin_memory().to(device, non_blocking=True))
        train_factory = lambda e: wrap(train, e)  # noqa: E731
        train_factory.loader = train  # run() reports its stage counters
        val_factory = lambda: wrap(val, 0)  # noqa: E731
        val_factory.loader = val  # run() closes both
        return train_factory, val_factory

    backend = kind.removeprefix("baseline-")
    mean, std = np.asarray(stats["mean"]), np.asarray(stats["std"])
    tdtype = torch.bfloat16 if args.bf16 else torch.float32

    def loader(times, shuffle, batch_size):
        workers, prefetch = baseline_depth(args, len(mean), world, batch_size)
        ds = SampleDataset(args.store, args.channels, np.asarray(times), backend, mean, std)
        sampler = torch.utils.data.DistributedSampler(ds, world, rank, shuffle=shuffle, seed=args.seed,
                                                      drop_last=True) if world > 1 else None
        return torch.utils.data.DataLoader(
            ds, batch_size=batch_size, shuffle=shuffle and sampler is None, sampler=sampler,
            num_workers=workers, pin_memory=True, drop_last=True,
            persistent_workers=workers > 0, prefetch_factor=prefetch if workers else None)

    train_dl, val_dl = loader(tr[:-1], True, args.batch_size), loader(va[:-1], False, val_bs)

    def wrap_dl(dl, epoch):
        if isinstance(dl.sampler, torch.utils.data.DistributedSampler):
            dl.sampler.set_epoch(epoch)
        for x, y in dl:
            yield x.to(device, tdtype, non_blocking=True), y.to(device, tdtype, non_blocking=True)
    return (lambda e: wrap_dl(train_dl, e)), (lambda: wrap_dl(val_dl, 0))


# --------------------------------------------------------------------------------------------
# One run
# --------------------------------------------------------------------------------------------


def run(kind: str, args, stats: dict, split, device, rank: int, world: int) -> dict:
    torch.manual_seed(args.seed)
    nchan = len(args.channels)
    h, w = args.spatial
    train_model = not args.no_train or kind.startswith("synthetic")
    model = opt = None
    if train_model:
        model = UNetResNet18(nchan).to(device)
        if args.channels_last:
            model = model.to(memory_format=torch.channels_last)
        if world > 1:
            model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index])
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    tdtype = torch.bfloat16 if args.bf16 else torch.float32
    if kind.startswith("synthetic"):  # random batches already on the GPU
        gen = torch.Generator(device=device).manual_seed(args.seed + rank)
        xs = torch.randn(args.batch_size, nchan, h, w, device=device, generator=gen, dtype=tdtype)
        ys = torch.randn(args.batch_size, nchan, h, w, device=device, generator=gen, dtype=tdtype)
        val_iter = lambda: ((xs, ys) for _ in range(2))  # noqa: E731
    if kind == "synthetic":
        train_iter = lambda e: ((xs, ys) for _ in range(args.synthetic_steps))  # noqa: E731
    elif kind.startswith("synthetic+"):  # the model sees the synthetic tensors, the loader runs
        data_iter, _ = make_data(kind.removeprefix("synthetic+"), args, stats, split, device,
                                 rank, world, copy_to_gpu=False)

        def train_iter(e):  # same pace as a real run: each step takes (and drops) a real batch
            for x, _ in data_iter(e):
                yield xs[: x.shape[0]], ys[: x.shape[0]]
        train_iter.loader = getattr(data_iter, "loader", None)
    else:
        train_iter, val_iter = make_data(kind, args, stats, split, device, rank, world)
    sample_bytes = 2 * nchan * h * w * (2 if args.bf16 else 4)
    torch.cuda.synchronize(device)
    epochs = train_epochs(kind, args, model, opt, train_iter, val_iter, sample_bytes, device,
                          rank, world)
    timed = epochs[1:] or epochs
    loader = getattr(train_iter, "loader", None)
    if loader is not None and rank == 0:  # where the loader's time went (GPU stage times, waits)
        st = loader.stats()
        print(f"  [{kind}] loader: {st['workers']} workers, prefetch {st['prefetch']}; "
              f"{st['batches']} batches, read {st['read_s']:.2f} s "
              f"(GPU: H2D {st['h2d_ms'] / 1e3:.2f} s, decode {st['decode_ms'] / 1e3:.2f} s, "
              f"scatter {st['scatter_ms'] / 1e3:.2f} s), consumer waited {st['wait_s']:.2f} s, "
              f"mean queue depth {st['mean_queue_depth']:.2f}; GPU/host decoded {st['gpu_decoded']}/"
              f"{st['cpu_decoded']} chunks, host share now {st['host_decode_share']:.3f}", flush=True)
        mem = zarrflow.memory_stats()
        if mem:  # pool calls so far in this process: a steady loader stops making them
            print(f"  [{kind}] pools: device {mem['device_allocations']} allocations, "
                  f"{mem['device_frees']} frees, peak {mem['device_peak'] / 1e9:.1f} GB in use, "
                  f"{mem['device_held_peak'] / 1e9:.1f} GB held (limit "
                  f"{mem['device_limit'] / 1e9:.1f} GB); pinned "
                  f"{mem['pinned_allocations']} allocations, {mem['pinned_frees']} frees, peak "
                  f"{mem['pinned_peak'] / 1e9:.1f} GB", flush=True)
    result = {"run": kind, "train": train_model, "epochs": epochs,
              "loader_stats": loader.stats() if loader is not None else None,
              "loader_timeline": loader.timeline() if loader is not None else None,
              "samples_per_s": sum(e["samples"] for e in timed) / sum(e["seconds"] for e in timed),
              "MBps": sum(e["samples"] for e in timed) * sample_bytes / sum(e["seconds"] for e in timed) / 1e6,
              "data_wait_fraction": float(np.mean([e["data_wait_fraction"] for e in timed]))}
    # The next run of this process starts clean: the loaders' read-ahead of an epoch that will
    # not come, their pools' idle memory and PyTorch's cached blocks go back (a 71-channel
    # GPU-decode loader needs ~90 GB of its own next to the model).
    for ld in (loader, getattr(val_iter, "loader", None)):
        if ld is not None:
            ld.close()
    del model, opt, train_iter, val_iter, loader
    gc.collect()
    zarrflow.release_memory()
    torch.cuda.empty_cache()
    return result


def split_inputs_before(runs: list[str], best: str) -> bool:
    """Whether the runs before ``best`` include the three that decode_split.best_split needs."""
    before = set(runs[:runs.index(best)])
    return {"synthetic", "zarrflow-gpu@0", "zarrflow-gpu@1"} <= before


def split_ceiling(results: list[dict]) -> dict:
    """decode_split.best_split over the mean samples/s of the earlier runs that it needs."""
    def sps(name: str) -> float:
        return float(np.mean([r["samples_per_s"] for r in results if r["run"] == name]))
    return best_split(sps("synthetic"), sps("zarrflow-gpu@0"), sps("zarrflow-gpu@1"))


def train_epochs(kind, args, model, opt, train_iter, val_iter, sample_bytes, device, rank,
                 world) -> list:
    epochs = []
    for epoch in range(args.epochs):
        if model is not None:
            model.train()
        wait = compute = 0.0
        n = 0
        step_ms, wait_ms, sync_ms = [], [], []
        torch.cuda.synchronize(device)
        t_epoch = time.perf_counter()
        it = train_iter(epoch)
        while True:
            t0 = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            t_next = time.perf_counter()
            torch.cuda.current_stream(device).synchronize()  # the batch is on the GPU: waiting ends
            t1 = time.perf_counter()
            sync_ms.append(1e3 * (t1 - t_next))
            if model is not None:
                if args.channels_last:
                    x = x.contiguous(memory_format=torch.channels_last)
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
                    loss = loss_fn(model(x), y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                torch.cuda.current_stream(device).synchronize()
            t2 = time.perf_counter()
            wait += t1 - t0
            compute += t2 - t1
            step_ms.append(1e3 * (t2 - t1))
            wait_ms.append(1e3 * (t1 - t0))
            n += x.shape[0]
        wall = time.perf_counter() - t_epoch
        # wall = waits + compute + the rest (the epoch's start and end: the last next() that
        # ends the pass, the loader's read-ahead for the next epoch starting)
        outside = wall - wait - compute
        val_loss = float("nan")
        if model is not None:
            model.eval()
            tot, cnt = 0.0, 0
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
                for x, y in val_iter():
                    tot += float(loss_fn(model(x), y)) * x.shape[0]
                    cnt += x.shape[0]
            val_loss = tot / max(cnt, 1)
        t = torch.tensor([n, wall, wait, wait + compute, val_loss, compute, outside,
                          float(np.median(step_ms)) if step_ms else 0.0],
                         device=device, dtype=torch.float64)
        if world > 1:  # samples add up; times: the slowest rank; val loss: mean
            s = t.clone()
            dist.all_reduce(s, op=dist.ReduceOp.SUM)
            m = t.clone()
            dist.all_reduce(m, op=dist.ReduceOp.MAX)
            t = torch.cat([torch.stack([s[0], m[1]]), s[2:] / world])
        n_all, wall_all, wait_all, step_all, vl, compute_all, outside_all, med = t.tolist()
        rec = {"epoch": epoch, "samples": int(n_all), "seconds": wall_all,
               "samples_per_s": n_all / wall_all, "MBps": n_all * sample_bytes / wall_all / 1e6,
               "data_wait_fraction": wait_all / max(step_all, 1e-12), "val_loss": vl,
               "wait_s": wait_all, "compute_s": compute_all, "outside_steps_s": outside_all,
               "step_ms_median": med,
               # this rank's steps, in order: where in the epoch the waits fall
               "step_ms": [round(v, 2) for v in step_ms], "wait_ms": [round(v, 2) for v in wait_ms],
               # the part of each wait spent in the stream synchronisation after next()
               "sync_ms": [round(v, 2) for v in sync_ms]}
        epochs.append(rec)
        if rank == 0:
            print(f"  [{kind}] epoch {epoch}: {rec['samples']} samples in {wall_all:.2f} s, "
                  f"{rec['samples_per_s']:.1f} samples/s, {rec['MBps']:.0f} MB/s, waiting for data "
                  f"{100 * rec['data_wait_fraction']:.1f}%, val loss {vl:.4f} | compute "
                  f"{compute_all:.3f} s (median step {med:.1f} ms), waits {wait_all:.3f} s, "
                  f"outside steps {outside_all:.3f} s", flush=True)
    return epochs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", help="Zarr group (e.g. from `zarrflow synth`); not needed for synthetic")
    ap.add_argument("--channels", default="6",
                    help="'6' (t2m + u/v/t/z/q@500), 'stacked6'/'stacked71' (array 'data' of a "
                         "stacked store, all its channels), or a comma list")
    ap.add_argument("--runs", default="synthetic,zarrflow-gpu,baseline-tensorstore")
    ap.add_argument("--no-train", action="store_true", help="loader only (no model) for data runs")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--workers", type=int, default=8, help="baseline DataLoader workers")
    ap.add_argument("--prefetch-factor", type=int, default=2,
                    help="baseline DataLoader batches per worker (lowered, then the workers, "
                         "when they would not fit in 70%% of host memory)")
    ap.add_argument("--prefetch", type=int, default=2, help="zarrflow batches ready ahead")
    ap.add_argument("--loader-workers", type=int, default=None,
                    help="zarrflow threads producing batches at once (each with its own stream; "
                         "default: the loader's, 3 on a GPU when its memory limit allows, else 2)")
    ap.add_argument("--loader-threads", type=int, default=None,
                    help="zarrflow I/O + decode thread pool size (default: all CPUs)")
    ap.add_argument("--tag", default="", help="suffix of the result file names")
    ap.add_argument("--cache-gb", type=float, default=0.0,
                    help="zarrflow GPU loaders: GPU memory for stored chunks kept across epochs")
    ap.add_argument("--gpu-decode", default="auto", choices=["auto", "on", "off"],
                    help="zarrflow-gpu: decode on the GPU (auto/on) or on the CPU threads, "
                         "copied up (off) — the GPU then only normalises and casts")
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--synthetic-steps", type=int, default=0,
                    help="steps per synthetic epoch (default: the real train epoch's)")
    ap.add_argument("--grid", default="721x1440", help="synthetic-only runs: HxW")
    ap.add_argument("--thread-nice", type=int, default=None,
                    help="niceness added to zarrflow's decode threads (ZARRFLOW_THREAD_NICE): they "
                         "then yield their cores to this training thread")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shuffle-block", type=int, default=8,
                    help="zarrflow's block shuffle: blocks of this many neighbouring times")
    ap.add_argument("--shuffle-buffer", type=int, default=64,
                    help="zarrflow's block shuffle: samples mixed in a buffer of this many (1: "
                         "batches of whole blocks; with --shuffle-block = batch size, x at t+1 "
                         "is y at t for all but one sample, so about half the chunks to decode)")
    ap.add_argument("--gpu-memory-limit", default=None,
                    help="zarrflow's GPU memory limit (zarrflow.set_gpu_memory_limit: a fraction "
                         "such as 0.4, bytes such as 40GB, or none); default: the library's (40%%)")
    ap.add_argument("--out", type=Path, help="write results JSON + Markdown table here")
    ap.add_argument("--dist-backend", default="nccl", choices=["nccl", "gloo"],
                    help="torchrun's process group. Ranks take the visible GPUs in turn (local "
                         "rank modulo their count), so more ranks than GPUs share them; NCCL "
                         "refuses two ranks on one GPU, gloo allows it: a check of the DDP path "
                         "on a one-GPU machine, not a measure of DDP's speed (give each rank "
                         "its share with --gpu-memory-limit)")
    args = ap.parse_args(argv)

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    ngpu = torch.cuda.device_count()
    if ngpu == 0:
        ap.error("train_bench.py needs a CUDA GPU: PyTorch sees none")
    device = torch.device("cuda", local % ngpu)
    torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group(args.dist_backend,
                                device_id=device if args.dist_backend == "nccl" else None)

    if args.gpu_memory_limit is not None:
        limit = zarrflow.set_gpu_memory_limit(args.gpu_memory_limit, device.index)
        print(f"zarrflow GPU memory limit: {limit / 1e9:.1f} GB" if limit else
              "zarrflow GPU memory limit: none", flush=True)
    if args.thread_nice is not None:  # read when zarrflow makes its thread pools (below)
        os.environ["ZARRFLOW_THREAD_NICE"] = str(args.thread_nice)
    runs = [r for r in args.runs.split(",") if r]
    known = {"synthetic", "zarrflow-gpu", "zarrflow-gpu-hostdecode", "zarrflow-cpu",
             "baseline-tensorstore", "baseline-xarray", "zarrflow-gpu-normal"}
    base = [r.removeprefix("synthetic+") for r in runs]
    bad = {r for r, b in zip(runs, base) if b.split("@")[0] not in known
           or ("@" in b and b.split("@")[0] not in ("zarrflow-gpu", "zarrflow-gpu-normal"))
           or (b == "zarrflow-gpu@best" and not split_inputs_before(runs, r))
           or (r.startswith("synthetic+") and b == "synthetic")}
    if bad:
        ap.error(f"unknown runs {sorted(bad)}; choose from {sorted(known)} "
                 f"(zarrflow-gpu@F: host_decode_share F; zarrflow-gpu@best after synthetic, "
                 f"zarrflow-gpu@0 and zarrflow-gpu@1; synthetic+RUN: the model trains on "
                 f"synthetic tensors while RUN's loader runs alongside)")
    stats, split = None, None
    if args.store:
        g = zarrflow.open_group(args.store)
        if args.channels == "6":
            args.channels = SIX
        elif args.channels.startswith("stacked"):
            args.channels = [f"data@{c}" for c in g["data"].attrs["channels"]]
        else:
            args.channels = args.channels.split(",")
        path, t_axis, key = resolve_channels(g, args.channels)[0]
        field = g[path]
        ntime = field.shape[t_axis]
        args.spatial = tuple(n for n, k in zip(field.shape, key) if isinstance(k, slice))
        nval = max(3, int(round(ntime * args.val_fraction)))
        split = (range(0, ntime - nval), range(ntime - nval, ntime))
        stats = zarrflow.compute_stats(g, args.channels, every=max(1, ntime // 16))
    else:
        if set(runs) != {"synthetic"}:
            ap.error("--store is needed for data runs")
        args.channels = SIX if args.channels == "6" else list(range(int(args.channels.removeprefix("stacked"))))
        args.spatial = tuple(int(v) for v in args.grid.split("x"))
    if not args.synthetic_steps:
        args.synthetic_steps = ((len(split[0]) - 1) // (args.batch_size * world)) if split else 20
    if rank == 0:
        ranks = (f"{world} ranks on {ngpu} GPU(s), {args.dist_backend}"
                 if world > 1 else "1 GPU")
        print(f"U-Net/ResNet-18, {len(args.channels)} channels, {args.spatial[0]}x{args.spatial[1]}, "
              f"batch {args.batch_size} x {world} ({ranks}), bf16={args.bf16}, "
              f"channels_last={args.channels_last}, {torch.cuda.get_device_name(device)}", flush=True)
    # Where each rank's decoding threads run (zarrflow.thread_info: ZARRFLOW_THREAD_CPUS).
    placement = [zarrflow.thread_info()]
    if world > 1:
        placement = [None] * world
        dist.all_gather_object(placement, zarrflow.thread_info())
    if rank == 0:
        for r, info in enumerate(placement):
            print(f"rank {r}: {info['threads']} decoding threads on CPUs {info['cpus'] or 'any'} "
                  f"({info['placement']})", flush=True)
    results, ceiling = [], None
    for kind in runs:
        if kind == "zarrflow-gpu@best":
            ceiling = split_ceiling(results)
            if rank == 0:
                print(f"  split ceiling: host share {ceiling['host_share']:.3f}, "
                      f"{ceiling['samples_per_s']:.1f} samples/s, real/synthetic "
                      f"{ceiling['real_over_synthetic']:.3f}", flush=True)
            res = run(f"zarrflow-gpu@{ceiling['host_share']:.4f}", args, stats, split, device,
                      rank, world)
            res["run"], res["host_decode_share"] = kind, ceiling["host_share"]
            results.append(res)
        else:
            results.append(run(kind, args, stats, split, device, rank, world))
    synth_runs = [r["samples_per_s"] for r in results if r["run"] == "synthetic"]
    synth = float(np.mean(synth_runs)) if synth_runs else None
    if rank == 0:
        lines = ["| run | model | samples/s | MB/s (x+y) | waiting for data | real/synthetic |",
                 "|---|---|---:|---:|---:|---:|"]
        for r in results:
            wait = f"{100 * r['data_wait_fraction']:.1f}%" if r["train"] else "—"  # no compute
            ratio = r["samples_per_s"] / synth if synth and r["run"] != "synthetic" else None
            r["real_over_synthetic"] = ratio
            lines.append(f"| {r['run']} | {'train' if r['train'] else 'loader only'} | "
                         f"{r['samples_per_s']:.1f} | {r['MBps']:.0f} | {wait} | "
                         f"{'' if ratio is None else f'{ratio:.3f}'} |")
        if ceiling is not None:
            lines.append(f"| split ceiling (host share {ceiling['host_share']:.3f}) | train | "
                         f"{ceiling['samples_per_s']:.1f} | | | "
                         f"{ceiling['real_over_synthetic']:.3f} |")
        table = "\n".join(lines)
        print(table)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            tag = f"train_unet_{len(args.channels)}ch_{world}gpu{'_loader' if args.no_train else ''}"
            tag += f"_{args.tag}" if args.tag else ""
            meta = {"device": torch.cuda.get_device_name(device), "world_size": world,
                    "gpus": ngpu, "dist_backend": args.dist_backend,
                    "channels": len(args.channels), "grid": list(args.spatial),
                    "batch_size": args.batch_size, "bf16": args.bf16,
                    "channels_last": args.channels_last, "date": time.strftime("%Y-%m-%d"),
                    "loader_workers": args.loader_workers,
                    "shuffle_block": args.shuffle_block, "shuffle_buffer": args.shuffle_buffer,
                    "loader_threads": args.loader_threads, "store": args.store,
                    # zarrflow's default pool: this rank's share of the CPUs (LOCAL_WORLD_SIZE)
                    "zarrflow_default_threads": zarrflow._threads.default_threads(),
                    "thread_placement": placement,
                    "synthetic_samples_per_s_mean": synth, "split_ceiling": ceiling,
                    "runs": results}
            (args.out / f"{tag}.json").write_text(json.dumps(meta, indent=2))
            (args.out / f"{tag}.md").write_text(table + "\n")
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
