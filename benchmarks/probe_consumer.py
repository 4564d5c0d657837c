"""Probe: where the training thread's time goes when it takes a batch that is already made.

train_unet's 'waiting for data' is ~1-4 ms a step with zarrflow and ~0.15 ms with synthetic
tensors, while the loader's own wait for the finished batch (its timeline) is ~0.06 ms. This probe
runs a 6-channel GPU loader beside a stand-in model step (`torch.cuda._sleep`) and times, in the
consumer thread: dropping the previous batch (its memory goes back to zarrflow's pool after the
consumer's stream), `next()` split into the loader's generator (get, bookkeeping) and the
conversion to torch tensors (`torch.from_dlpack`: the consumer's stream waits on the batch's
event), and the stream synchronisation after it. Medians in ms, one JSON line per setting.
The GPU memory limit is --gpu-memory-limit (0.9); the twelfth session's runs used the library's
default, 0.4 (the 6-channel loader holds ~3 GB either way).

Usage (GPU host): python3 benchmarks/probe_consumer.py --data /tmp/zarrflow_probe --out $OUT
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import zarrflow
from zarrflow import loader as zl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_loader import probe_parser  # noqa: E402

SIX = ["2m_temperature", "u_component_of_wind@500", "v_component_of_wind@500",
       "temperature@500", "geopotential@500", "specific_humidity@500"]


def sleep_step(torch, ms: float):
    cycles = int(ms * 1e-3 * torch.cuda.get_device_properties(0).clock_rate * 1e3)

    def step(batch):
        torch.cuda._sleep(cycles)
    return step


def unet_step(torch):
    """A training step of examples/train_unet.py's model on the batch (nothing on the first)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from train_unet import UNetResNet18, loss_fn

    model = UNetResNet18(len(SIX)).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def step(batch):
        if batch is None:
            return
        x = batch["x"].contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), batch["y"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def wb2_store(data: str, ntime: int) -> Path:
    """The 6-channel WeatherBench2-style store (zarrflow synth), written once under `data`."""
    store = Path(data) / f"wb2_6ch_{ntime}.zarr"
    if not store.exists():
        subprocess.run([sys.executable, "-m", "zarrflow", "synth", str(store), "--layout", "wb2",
                        "--channels", "6", "--ntime", str(ntime), "--quiet"], check=True)
    return store


def main() -> int:
    ap = probe_parser(__doc__, epochs=3, ntime=160)
    ap.add_argument("--step-ms", type=float, default=140.0, help="the stand-in model step")
    ap.add_argument("--model", choices=["sleep", "unet"], default="sleep",
                    help="the step: a GPU sleep of --step-ms, or examples/train_unet.py's U-Net "
                         "(bf16, channels-last) trained on the batch")
    ap.add_argument("--grace", type=lambda t: [float(x) / 1e3 for x in t.split(",")], default=[],
                    help="also run with these hand-off grace times (ms, comma list; "
                         "zarrflow._prefetch.HANDOFF_GRACE_S)")
    args = ap.parse_args()
    import torch

    step = sleep_step(torch, args.step_ms) if args.model == "sleep" else unet_step(torch)

    zarrflow.set_gpu_memory_limit(args.gpu_memory_limit)
    store = wb2_store(args.data, args.ntime)
    stats = zarrflow.compute_stats(store, SIX, every=16)
    convert_s: list[float] = []
    plain = zl.Loader._convert

    def timed_convert(self, item):
        t = time.perf_counter()
        out = plain(self, item)
        convert_s.append(time.perf_counter() - t)
        return out

    zl.Loader._convert = timed_convert
    results = {"gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "model": args.model, "step_ms": args.step_ms, "runs": []}
    from zarrflow import _prefetch

    variants = [(True, 0.0), (False, 0.0)] + [(True, g) for g in args.grace]
    for hold, grace in variants:  # keep the batch until the next one is asked for, or drop it first
        _prefetch.HANDOFF_GRACE_S = grace
        ld = zarrflow.Loader(store, SIX, batch_size=16, device="cuda", dtype="bfloat16",
                             normalize=stats, shuffle="block", seed=0)
        rows = []
        for epoch in range(args.epochs):
            ld.set_epoch(epoch)
            it = iter(ld)
            prev = None  # the only reference to the last batch between steps
            while True:
                step(prev)  # the model's step on the last batch
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                if not hold:
                    prev = None  # the previous batch's memory goes back to the pool here
                t1 = time.perf_counter()
                n0 = len(convert_s)
                c1 = time.thread_time()
                try:
                    b = next(it)
                except StopIteration:
                    break
                t2 = time.perf_counter()
                cpu_next = time.thread_time() - c1
                x, y = b["x"], b["y"]
                torch.cuda.current_stream().synchronize()
                t3 = time.perf_counter()
                prev = None  # with hold: dropped after the next one came, as a loop rebinds it
                t4 = time.perf_counter()
                prev = b
                del b, x, y
                if epoch and len(convert_s) > n0:
                    rows.append((t1 - t0, t2 - t1, convert_s[-1], t3 - t2, t4 - t3, cpu_next))
            prev = None
        tl = [r["wait"] for r in ld.timeline() if r["epoch"] >= 1]
        med = np.median(np.array(rows), axis=0) * 1e3
        run = {"hold_previous": hold, "handoff_grace_ms": grace * 1e3, "batches": len(rows),
               "drop_before_next_ms": med[0], "next_ms": med[1], "convert_ms": med[2],
               "sync_ms": med[3], "drop_after_next_ms": med[4],
               # the consumer thread's CPU time in next(): far below next_ms = it was blocked
               "next_cpu_ms": med[5],
               "loader_internal_wait_ms": float(np.median(tl) * 1e3)}
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in run.items()}),
              flush=True)
        results["runs"].append(run)
        ld.close()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"probe_consumer_{args.model}.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
