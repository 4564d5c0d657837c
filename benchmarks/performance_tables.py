"""The tables and figures of docs/performance.md, computed from the result files in docs/results.

Each ``*_values`` function reads the files of one section and returns ``{placeholder: text}``
for benchmarks/performance_page.md: tables as Markdown, single figures as formatted numbers.
Nothing here is typed in by hand except the names of things (stores, readers, codecs).
"""

from __future__ import annotations

import json
import math
import statistics
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

Values = dict[str, str]


# --- formatting ----------------------------------------------------------------------------------
def rate(x: float) -> str:
    """A throughput with three significant figures at most: 113.3, 55.3, 2.27, 0.62."""
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def times(x: float) -> str:
    return f"{x:.2f}×"


def percent(x: float) -> str:
    return f"{100 * x:.0f}%"


def span(values: Iterable[float], fmt: Callable[[float], str] = rate, unit: str = "") -> str:
    """"lo–hi" of the values (one value when they format alike)."""
    vals = list(values)
    lo, hi = fmt(min(vals)), fmt(max(vals))
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], text_columns: int = 1) -> str:
    """A Markdown table; the first ``text_columns`` columns left-aligned, the others right."""
    align = ["---"] * text_columns + ["---:"] * (len(header) - text_columns)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def load(results: Path, name: str) -> Any:
    return json.loads((results / name).read_text())


def codec_name(codec: str) -> str:
    """'blosc-lz4-shuffle' -> 'blosc-lz4 shuffle'."""
    for shuffle in ("-bitshuffle", "-shuffle"):
        if codec.endswith(shuffle):
            return codec[: -len(shuffle)] + " " + shuffle[1:]
    return codec


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


# --- synthetic data against real fields ------------------------------------------------------------
REALISM_CODECS = ("blosc-lz4 shuffle", "blosc-zstd shuffle", "zstd 3")


def realism_values(results: Path) -> Values:
    """Compression ratios of real fields against the synthetic fields standing in for them."""
    fields = load(results, "compression_realism.json")
    means = {c: (geometric_mean([f[c]["synth"] for f in fields]),
                 geometric_mean([f[c]["real"] for f in fields])) for c in REALISM_CODECS}
    blosc = [c for c in REALISM_CODECS if c.startswith("blosc")]
    gap = max(abs(real - synth) / real for c in blosc for synth, real in [means[c]])
    return {
        "realism_fields": str(len(fields)),
        "realism_blosc_gap": percent(gap),
        **{f"realism_{c.replace(' ', '_').replace('-', '_')}": f"{s:.2f} vs {r:.2f}"
           for c, (s, r) in means.items()},
    }


# --- reading into host memory ------------------------------------------------------------------------
READ_PEERS = {"tensorstore": "tensorstore", "zarr-python": "zarr-python",
              "zarr-python+zarrs": "zarr-python + zarrs"}


def read_table(res: dict) -> str:
    runs = {(r["codec"], r["reader"]): r for r in res["runs"]}
    codecs = list(dict.fromkeys(r["codec"] for r in res["runs"]))
    peers = [p for p in READ_PEERS if any(k[1] == p for k in runs)]
    header = ["codec", "ratio", "zarrflow into out", "zarrflow new",
              *(READ_PEERS[p] for p in peers), "new ÷ best peer",
              "core-s/GB zarrflow (out) / tensorstore"]
    rows = []
    for c in codecs:
        out, new = runs[(c, "zarrflow")], runs[(c, "zarrflow-new")]
        best = max(runs[(c, p)]["GBps"] for p in peers)
        ratio = new["GBps"] / best
        shown = times(ratio) if ratio >= 1 else f"**{times(ratio)}**"
        rows.append([codec_name(c), f"{out['ratio']:.2f}", rate(out["GBps"]), rate(new["GBps"]),
                     *(rate(runs[(c, p)]["GBps"]) for p in peers), shown,
                     f"{out['core_s_per_GB']:.2f} / {runs[(c, 'tensorstore')]['core_s_per_GB']:.2f}"])
    return table(header, rows)


def read_setup(res: dict) -> str:
    peers = [f"tensorstore {res['tensorstore']}"]
    if "zarr" in res:
        peers.append(f"zarr-python {res['zarr']}")
    if "zarrs" in res:
        peers.append(f"zarrs {res['zarrs']}")
    return (f"{res['cores_visible']} CPU cores, {res['threads']} threads, "
            f"{res['decoded_bytes'] / 1e9:.1f} GB decoded per codec, {res['date'][:10]}; "
            f"{', '.join(peers)}")


def read_values(results: Path) -> Values:
    many, two = load(results, "bench_read_16cores.json"), load(results, "bench_read_2cores.json")
    weak = {r["reader"]: r for r in two["runs"] if r["codec"] == "blosc-zstd-bitshuffle"}
    return {
        "read_16_setup": read_setup(many), "read_16_table": read_table(many),
        "read_2_setup": read_setup(two), "read_2_table": read_table(two),
        "read_2_new_array_cost": f"{weak['zarrflow-new']['core_s_per_GB'] - weak['zarrflow']['core_s_per_GB']:.2f}",
        "read_2_decode_cost": f"{weak['zarrflow']['core_s_per_GB']:.2f}",
    }


# --- numcodecs ------------------------------------------------------------------------------------------
def numcodecs_values(results: Path) -> Values:
    res = load(results, "bench_numcodecs_2cores.json")
    native = table(["codec", "ratio", "numcodecs", "zarrflow"],
                   [[r["codec"], f"{r['ratio']:.2f}", f"{r['numcodecs_mb_s']:.0f}",
                     f"{r['zarrflow_mb_s']:.0f}"] for r in res["native"]])
    fc = res["fallback_cost"]
    fallback = (" / ".join(f"{r['chunk_kib']}" for r in fc) + " KiB chunks "
                + " / ".join(f"{r['plain_us_per_chunk']:.1f}" for r in fc) + " without, "
                + " / ".join(f"{r['fallback_us_per_chunk']:.1f}" for r in fc) + " through numcodecs")
    small = [r["overhead_us_per_chunk"] for r in res["fallback_cost"] if r["chunk_kib"] <= 64]
    pcodec = {r["reader"].split(" ")[0]: r["mb_s"] for r in res["pcodec"]
              if "chunk by chunk" in r["reader"] or r["reader"].startswith("numcodecs")}
    return {"numcodecs_cores": str(res["cpu_count"]), "numcodecs_chunk_mib": f"{res['chunk_mib']:g}",
            "numcodecs_table": native, "fallback_sentence": fallback,
            "fallback_call_us": f"{sum(small) / len(small):.0f}",
            "pcodec_zarrflow": f"{pcodec['zarrflow']:.0f}", "pcodec_numcodecs": f"{pcodec['numcodecs']:.0f}"}


# --- reading into GPU memory -------------------------------------------------------------------------
GPU_READERS = {"zarrflow-gpu": "zarrflow GPU", "zarrflow-cpu+copy": "zarrflow CPU + pinned copy",
               "tensorstore+copy": "tensorstore + copy", "zarr-python": "zarr-python",
               "zarr-python-gpu": "zarr-python enable_gpu", "zarr-python+zarrs": "zarr-python + zarrs",
               "kvikio-GDSStore": "kvikio GDSStore"}
GPU_PEERS = [r for r in GPU_READERS if not r.startswith("zarrflow")]


def _gpu_runs(res: dict, cache: str) -> dict:
    return {(r["codec"], r["reader"]): r for r in res["runs"]
            if r["cache"] == cache and "GBps" in r and r["reader"] in GPU_READERS}


def _gpu_codecs(res: dict) -> list[str]:
    """The codecs every reader measured."""
    runs = _gpu_runs(res, "warm")
    return [c for c in res["codecs"] if all((c, r) in runs for r in GPU_READERS)]


def _best_peer(runs: dict, codec: str) -> float:
    return max(runs[(codec, p)]["GBps"] for p in GPU_PEERS)


def gpu_values(results: Path) -> Values:
    res = load(results, "bench_gpu_h100.json")
    warm, cold, codecs = _gpu_runs(res, "warm"), _gpu_runs(res, "cold"), _gpu_codecs(res)
    rows = [[codec_name(c), f"{warm[(c, 'zarrflow-gpu')]['ratio']:.2f}",
             *(rate(warm[(c, r)]["GBps"]) for r in GPU_READERS),
             f"{warm[(c, 'zarrflow-gpu')]['GBps'] / _best_peer(warm, c):.1f}×"] for c in codecs]
    header = ["codec", "ratio", *GPU_READERS.values(), "÷ best peer"]
    disk = res["ceilings"]["o_direct_read_GBps"]
    compressed = [c for c in codecs if "zstd" in c or "blosc" in c]
    cost = {r: span((warm[(c, r)]["core_s_per_GB"] for c in codecs), lambda x: f"{x:.2f}")
            for r in ("zarrflow-gpu", "tensorstore+copy", "zarr-python")}
    v = res["versions"]
    return {
        "gpu_name": res["gpu"], "gpu_cpus": str(res["cores_visible"]), "gpu_date": res["date"][:10],
        "gpu_gb": f"{res['decoded_bytes'] / 1e9:.2f}", "gpu_warm_runs": str(res["runs_warm"]),
        "gpu_cold_runs": str(res["runs_cold"]),
        "gpu_peers": (f"tensorstore {v['tensorstore']}, zarr-python {v['zarr']} (CPU, and "
                      f"`zarr.config.enable_gpu()`), zarr-python with zarrs {v['zarrs']}, "
                      f"kvikio-cu13 {v['kvikio-cu13']} `GDSStore`"),
        "gpu_pinned_h2d": rate(res["ceilings"]["pinned_h2d_GBps"]), "gpu_disk": rate(disk),
        "gpu_table": table(header, rows),
        "gpu_cold": ", ".join(f"{codec_name(c)} {cold[(c, 'zarrflow-gpu')]['GBps'] / _best_peer(cold, c):.2f}×"
                              for c in codecs),
        "gpu_cold_of_disk": span((cold[(c, "zarrflow-gpu")]["GBps"] / (disk * cold[(c, "zarrflow-gpu")]["ratio"])
                                  for c in compressed), lambda x: f"{100 * x:.0f}", "%"),
        "gpu_cost_zarrflow": cost["zarrflow-gpu"], "gpu_cost_tensorstore": cost["tensorstore+copy"],
        "gpu_cost_zarr": cost["zarr-python"],
    }


# --- the Loader alone --------------------------------------------------------------------------------
LOADER_STORES = {"wb2 v2 blosc-lz4, 6 ch": "6 ch WeatherBench2-style v2, Blosc-LZ4",
                 "stacked v3 zstd, 71 ch": "71 ch stacked v3, zstd"}
LOADER_FILES = ("bench_loader_h100_run2.json", "bench_loader_h100.json",
                "bench_loader_h200.json", "bench_loader_h200_run2.json")
CACHE = " + 30 GB GPU chunk cache"


def _gpu_kind(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100'."""
    return next((w for w in name.split() if w[:1] in "HABL" and w[1:].isdigit()), name)


def _loader_runs(results: Path) -> dict[str, list[dict]]:
    """GPU kind -> that kind's result files, oldest first."""
    kinds: dict[str, list[dict]] = {}
    for name in LOADER_FILES:
        res = load(results, name)
        kinds.setdefault(_gpu_kind(res["gpu"]), []).append(res)
    return {k: sorted(v, key=lambda r: r["date"]) for k, v in kinds.items()}


def _loader_cell(runs: list[dict], store: str, grid: str, loader: Callable[[str], bool]) -> str:
    found = []
    for res in runs:
        hits = [r for r in res["runs"] if r["store"] == store and r["grid"] == grid
                and r["dtype"] == "float32" and not r["step_s"] and loader(r["loader"])
                and "error" not in r]
        found += [rate(r["batch_GBps"]) for r in hits]
    return " / ".join(found) or "—"


def _default(name: str, cache: bool = False) -> bool:
    return name.startswith("zarrflow-gpu (default") and name.endswith(CACHE) == cache


def _two_workers(name: str) -> bool:
    return name == "zarrflow-gpu (2 workers)"


def loader_table(kinds: dict[str, list[dict]]) -> str:
    first = next(iter(kinds.values()))[0]["runs"]
    cells = list(dict.fromkeys((r["store"], r["grid"]) for r in first if r["store"] in LOADER_STORES))
    header = ["store", "grid"] + [f"{k} {col}" for k in kinds for col in ("default", "2 workers")]
    rows = []
    for store, grid in cells:
        full = grid == cells[0][1]
        rows.append([LOADER_STORES[store] if full else "same",
                     grid.replace("x", "×") + ("" if full else " window")] +
                    [_loader_cell(runs, store, grid, f) for runs in kinds.values()
                     for f in (_default, _two_workers)])
    full = cells[0][1]
    for store in LOADER_STORES:
        rows.append([f"{LOADER_STORES[store].split(',')[0]}, 30 GB GPU chunk cache", full.replace("x", "×")] +
                    [_loader_cell(runs, store, full, f) for runs in kinds.values()
                     for f in (lambda n: _default(n, cache=True), lambda n: False)])
    return table(header, rows, text_columns=2)


def _samples(kinds: dict[str, list[dict]], kind: str, loader: Callable[[str], bool]) -> list[float]:
    store = next(iter(LOADER_STORES))
    return [r["samples_per_s"] for res in kinds[kind] for r in res["runs"]
            if r["store"] == store and r["dtype"] == "float32" and not r["step_s"]
            and r["grid"] == "721x1440" and loader(r["loader"]) and "error" not in r]


def dataloader_sentence(kinds: dict[str, list[dict]]) -> str:
    """The PyTorch DataLoader baselines against zarrflow's default, per GPU kind."""
    parts = []
    for kind in kinds:
        ours = _samples(kinds, kind, _default)
        ts = _samples(kinds, kind, lambda n: n.startswith("DataLoader+tensorstore"))
        xr = _samples(kinds, kind, lambda n: n.startswith("DataLoader+xarray"))
        theirs = ts + xr
        ratio = span([min(ours) / max(theirs), max(ours) / min(theirs)], lambda x: f"{x:.0f}", "×")
        through = f"{span(ts, lambda x: f'{x:.1f}')} samples/s through tensorstore"
        if xr:
            through += f" and {span(xr, lambda x: f'{x:.1f}')} through xarray with tensorstore"
        parts.append(f"on the {kind} {through}, against {span(ours, lambda x: f'{x:.0f}')} for "
                     f"zarrflow's default ({ratio})")
    return "; ".join(parts)


def loader_values(results: Path) -> Values:
    kinds = _loader_runs(results)
    pairs = []
    for runs in kinds.values():
        if len(runs) == 2:
            a = {(r["store"], r["grid"], r["dtype"], r["step_s"], r["loader"]): r["batch_GBps"]
                 for r in runs[0]["runs"] if "zarrflow" in r["loader"]}
            pairs += [abs(a[k] - r["batch_GBps"]) / max(a[k], r["batch_GBps"])
                      for r in runs[1]["runs"]
                      if (k := (r["store"], r["grid"], r["dtype"], r["step_s"], r["loader"])) in a]
    cpus = {res["cpus"] for runs in kinds.values() for res in runs}
    return {"loader_table": loader_table(kinds), "loader_dataloader": dataloader_sentence(kinds),
            "loader_kinds": " and ".join(kinds), "loader_cpus": "/".join(map(str, sorted(cpus))),
            "loader_date": max(res["date"][:10] for runs in kinds.values() for res in runs),
            "run_to_run": percent(max(pairs))}


# --- the stage ceilings (optional: shown when their result files exist) --------------------------------
CEILINGS, LOADER_CEILINGS, SM_COST = "bench_ceilings.json", "bench_loader_ceilings.json", "bench_sm_cost.json"
CEILINGS_RUN2 = "bench_ceilings_run2.json"
LOADER_SHORT = {"wb2 v2 blosc-lz4, 6 ch": "Loader, 6 ch Blosc-LZ4",
                "stacked v3 zstd, 71 ch": "Loader, 71 ch zstd"}


def _gpu_result(results: Path, name: str) -> dict:
    res = load(results, name)
    if res.get("cpu_dry_run"):
        raise SystemExit(f"{name} is a CPU dry run, not a GPU result: take it out of docs/results")
    return res


def _opt(x: float | None, fmt: Callable[[float], str] = rate) -> str:
    return "—" if x is None else fmt(x)


def _of_ceiling(row: dict) -> str:
    """End to end ÷ ceiling (bold below its target) and the stage that sets the ceiling."""
    if row["of_ceiling"] is None:
        return "—"
    of = f"{row['of_ceiling']:.2f}"
    return (of if row["meets_target"] else f"**{of}**") + f" ({row['binding']})"


def _each_round(row: dict) -> list[dict]:
    """The row and, where the read ran a second round, that round's row."""
    return [row] + row.get("rounds", [])


def _rounds(row: dict, cell: Callable[[dict], str]) -> str:
    """A cell of each round of the row: "a / b"."""
    return " / ".join(cell(r) for r in _each_round(row))


def ceilings_table(rows: Sequence[dict]) -> str:
    header = ["read", "ratio", "staging × ratio", "H2D × ratio", "GPU decode", "end to end",
              "÷ ceiling (stage)", "target"]
    body = [[r["name"], f"{r['ratio']:.2f}", _rounds(r, lambda x: _opt(x["staging_decoded_GBps"])),
             _rounds(r, lambda x: _opt(x["H2D_decoded_GBps"])),
             _rounds(r, lambda x: _opt(x["decode_decoded_GBps"])),
             _rounds(r, lambda x: _opt(x["end_to_end_GBps"])), _rounds(r, _of_ceiling),
             f"{r['target']:.1f}"] for r in rows]
    return table(header, body)


def _loader_rows(results: Path) -> list[dict]:
    if not (results / LOADER_CEILINGS).exists():
        return []
    res = _gpu_result(results, LOADER_CEILINGS)
    return [dict(r, name=f"{LOADER_SHORT.get(r['store'], r['store'])} "
                         f"{r['loader'].removeprefix('zarrflow-gpu ')}")
            for r in res["ceiling_rows"] if r["loader"].startswith("zarrflow-gpu (default")]


def _read_rows(results: Path) -> list[dict]:
    """The whole-array reads' rows, each with the second round's row (CEILINGS_RUN2: the same
    reads again, right after, on the same machine; bench_ceilings.sh writes both) under "rounds"
    where there is one."""
    rows = _gpu_result(results, CEILINGS)["ceiling_rows"]
    if (results / CEILINGS_RUN2).exists():
        again = {r["name"]: r for r in _gpu_result(results, CEILINGS_RUN2)["ceiling_rows"]}
        rows = [dict(r, rounds=[again[r["name"]]]) if r["name"] in again else r for r in rows]
    return [dict(r, name=codec_name(r["name"])) for r in rows]


def _serial(row: dict) -> float:
    """Staging and decoding one after the other: 1 / (1/staging + 1/decode), decoded GB/s."""
    return 1 / (1 / row["staging_decoded_GBps"] + 1 / row["decode_decoded_GBps"])


def _one_after_the_other(rows: Sequence[dict]) -> str:
    """What nvCOMP's zstd reads, which stage the whole read and then decode it in one call,
    reach of the two stages run one after the other, per round."""
    zstd = [r for r in rows if "zstd" in r["name"] and r.get("decode_decoded_GBps")]
    said = [f"{r['name']} {_rounds(r, lambda x: rate(_serial(x)))} GB/s, reached to "
            + _rounds(r, lambda x: f"{x['end_to_end_GBps'] / _serial(x):.2f}") for r in zstd]
    return ": the two one after the other allow " + "; ".join(said) + "." if said else "."


def ceilings_values(results: Path) -> Values:
    """The whole-array reads' and the Loader's end-to-end rates against their stage ceilings."""
    if not (results / CEILINGS).exists():
        return {}
    res = _gpu_result(results, CEILINGS)
    reads = _read_rows(results)
    rows = reads + _loader_rows(results)
    short = [r["name"] for r in rows if any(x["meets_target"] is False for x in _each_round(r))]
    setup = (f"{res['gpu']}, {res['cores_visible']} CPUs, {res['threads']} threads, "
             f"{res['decoded_bytes'] / 1e9:.2f} GB per store, median of {res['runs_warm']}, "
             f"{res['date'][:10]}")
    two = (results / CEILINGS_RUN2).exists()
    if two:
        setup += " (reads: two rounds, one after the other, \"first / second\")"
    has_loader = (results / LOADER_CEILINGS).exists()
    if has_loader:
        loader = _gpu_result(results, LOADER_CEILINGS)
        # bench_ceilings.sh runs the Loader after the reads, within minutes
        after = datetime.fromisoformat(loader["date"]) - datetime.fromisoformat(res["date"])
        if not timedelta(0) <= after <= timedelta(minutes=20):
            setup += f"; Loader rows from another run, {loader['gpu']}, {loader['date'][:10]}"
    return {
        "ceil_setup": setup,
        "ceil_h2d": rate(res["ceilings"]["pinned_h2d_GBps"]),
        "ceil_table": ceilings_table(rows),
        "ceil_serial": _one_after_the_other(reads) if res.get("nvcomp") == "loaded" else ".",
        "ceil_run2_link": f", [second round](results/{CEILINGS_RUN2})" if two else "",
        "ceil_loader_link": f", [Loader](results/{LOADER_CEILINGS})" if has_loader else "",
        "ceil_short": ("Every read reaches its target." if not short else
                       f"Below its target (bold){' in a round' if two else ''}: "
                       + "; ".join(short) + "."),
    }


def sm_cost_values(results: Path) -> Values:
    """The GPU time reads take from a compute job beside them, per decoded GB."""
    if not (results / SM_COST).exists():
        return {}
    res = _gpu_result(results, SM_COST)
    done = [r for r in res["rows"] if "error" not in r]
    rows = [[codec_name(r["codec"]), r["decode_on"].split(" ")[0], rate(r["reads_alone_GBps"]),
             rate(r["reads_beside_job_GBps"]), f"{100 * r['job_slowdown']:.1f}%",
             f"{100 * r['alone_runs_differ']:.1f}%", _opt(r["unit_s_per_GB"], lambda x: f"{x:.2f}"),
             _opt(r["gpu_ms_per_GB"], lambda x: f"{x:.1f}")] for r in done]
    header = ["codec", "decoded on", "reads alone GB/s", "beside the job GB/s", "job slowed",
              "runs alone differ", "SM-s per GB", "GPU ms per GB"]
    return {"sm_table": table(header, rows, text_columns=2), "sm_gpu": res["gpu"],
            "sm_units": str(res["units"]), "sm_job": res["job"], "sm_gb": f"{res['decoded_bytes'] / 1e9:.2f}",
            "sm_cpus": str(res["cores_visible"]), "sm_date": res["date"][:10]}


# --- training ----------------------------------------------------------------------------------------
TRAIN_FILES = {"train_unet_6ch_h100.json": "6 ch WeatherBench2-style v2, Blosc-LZ4",
               "train_unet_71ch_h100.json": "71 ch stacked v3, uncompressed",
               "train_unet_6ch_2xh100_ddp.json": "6 ch, DDP (NCCL)",
               "train_unet_71ch_2xh100_ddp.json": "71 ch, DDP (NCCL)",
               "train_unet_71ch_zstd_h100.json": "71 ch stacked v3, zstd"}


def _shuffle(run: dict) -> tuple:
    return run.get("shuffle_block"), run.get("shuffle_buffer")


def training_rows(res: dict, label: str) -> list[list[str]]:
    rows = []
    for run in res["runs"]:
        if run["run"] == "synthetic" or not run["train"]:
            continue
        synthetic = [r["samples_per_s"] for r in res["runs"]
                     if r["run"] == "synthetic" and _shuffle(r) == _shuffle(run)]
        name = label
        if rows:
            name = f"same, `block={run['shuffle_block']}, buffer={run['shuffle_buffer']}`"
        rows.append([name, str(res["world_size"]), " / ".join(f"{s:.1f}" for s in synthetic),
                     f"{run['samples_per_s']:.1f}", f"{100 * run['data_wait_fraction']:.1f}%",
                     f"{run['real_over_synthetic']:.3f}"])
    return rows


def training_values(results: Path) -> Values:
    files = {name: load(results, name) for name in TRAIN_FILES}
    rows = [row for name, label in TRAIN_FILES.items() for row in training_rows(files[name], label)]
    devices = {f["device"] for f in files.values()}
    return {
        "train_table": table(["store", "GPUs", "synthetic samples/s", "zarrflow samples/s",
                              "waiting", "real/synthetic"], rows),
        "train_device": ", ".join(sorted(devices)),
        "train_batch": str(files["train_unet_6ch_h100.json"]["batch_size"]),
        "train_date": max(f["date"] for f in files.values()),
    }


def runs_named(res: dict, name: str) -> list[dict]:
    """A training result's runs called `name`, in the order they ran (a run may be listed twice)."""
    return [r for r in res["runs"] if r["run"] == name]


def runs_by_name(res: dict) -> dict[str, dict]:
    """A training result's runs by name (the last of a name listed twice)."""
    return {r["run"]: r for r in res["runs"]}


# --- the loader's stream priority at 71 compressed channels -------------------------------------
PRIORITY71 = "train_unet_71ch_zstd_priority_h100.json"


def _per_step_ms(run: dict, key: str) -> float:
    """Mean of an epoch field in seconds (compute_s, wait_s) per step, epochs after the first."""
    epochs = run["epochs"][1:]
    return 1000 * sum(e[key] for e in epochs) / sum(len(e["step_ms"]) for e in epochs)


def priority71_values(results: Path) -> Values:
    """Runs alternating the default (highest) stream priority and stream_priority="normal"."""
    res = load(results, PRIORITY71)
    by: dict[str, list[dict]] = {}
    for r in res["runs"]:
        by.setdefault(r["run"], []).append(r)

    def ratios(name: str) -> str:
        return " and ".join(f"{r['real_over_synthetic']:.3f}" for r in by[name])

    def per_step(name: str, key: str) -> float:
        return statistics.mean(_per_step_ms(r, key) for r in by[name])

    high = [*by["zarrflow-gpu"], *by["zarrflow-gpu@0"]]
    synthetic = statistics.mean(_per_step_ms(r, "compute_s") for r in by["synthetic"])
    bounds = [synthetic / _per_step_ms(r, "compute_s") for r in high]
    sentence = (f"{ratios('zarrflow-gpu')} of synthetic against {ratios('zarrflow-gpu-normal')} "
                f"(default share), {ratios('zarrflow-gpu@0')} against "
                f"{ratios('zarrflow-gpu-normal@0')} (all on the GPU); waits "
                f"{per_step('zarrflow-gpu', 'wait_s'):.0f} against "
                f"{per_step('zarrflow-gpu-normal', 'wait_s'):.0f} ms a step, model compute "
                f"{per_step('zarrflow-gpu', 'compute_s'):.0f} against "
                f"{per_step('zarrflow-gpu-normal', 'compute_s'):.0f} ms ({synthetic:.0f} "
                f"synthetic): the decoding alone bounds these runs at "
                f"{min(bounds):.2f}-{max(bounds):.2f}")
    return {"priority71_date": res["date"], "priority71_device": res["device"],
            "priority71_sentence": sentence}


# --- fixed host shares at 71 compressed channels, streams at the default priority -----------------
SHARES71 = "train_unet_71ch_zstd_shares_h100.json"


def shares71_values(results: Path) -> Values:
    """Fixed host shares against all on the GPU and the default: what the model gains in compute
    and what each worker's batch takes longer."""
    res = load(results, SHARES71)
    by = runs_by_name(res)
    fixed = sorted((n for n in by if n.startswith("zarrflow-gpu@") and n != "zarrflow-gpu@0"),
                   key=lambda n: float(n.split("@")[1]))

    def each(fmt: str, value) -> str:
        return ", ".join(fmt.format(value(by[n])) for n in fixed)

    def batch_s(r: dict) -> float:
        return r["loader_stats"]["read_s"] / r["loader_stats"]["batches"]

    gpu, workers = by["zarrflow-gpu@0"], by["zarrflow-gpu@0"]["loader_stats"]["workers"]
    sentence = (
        f"host shares {', '.join(n.split('@')[1] for n in fixed)} train at "
        f"{each('{:.3f}', lambda r: r['real_over_synthetic'])} of synthetic, against "
        f"{gpu['real_over_synthetic']:.3f} all on the GPU and "
        f"{by['zarrflow-gpu']['real_over_synthetic']:.3f} by default: the model's compute falls "
        f"({each('{:.0f}', lambda r: _per_step_ms(r, 'compute_s'))} ms a step against "
        f"{_per_step_ms(gpu, 'compute_s'):.0f}), but each worker's batch takes longer "
        f"({each('{:.2f}', batch_s)} s against {batch_s(gpu):.2f}; {workers} workers) and the "
        f"model waits ({each('{:.0f}', lambda r: _per_step_ms(r, 'wait_s'))} against "
        f"{_per_step_ms(gpu, 'wait_s'):.0f} ms)")
    return {"shares71_date": res["date"], "shares71_sentence": sentence}


# --- four GPUs of one node ---------------------------------------------------------------------------
NODE = {"ceil1": "node_ceiling_1xh100.json", "ceil4": "node_ceiling_4xh100.json",
        "loader1": "loader_6ch_1of4xh100.json", "loader4": "loader_6ch_4xh100.json",
        "ddp": "train_unet_6ch_4xh100_ddp_parts.json"}
NODE_PLOT_FILES = (*(NODE[k] for k in ("ceil1", "ceil4", "loader1", "loader4", "ddp")), SHARES71)
DDP_RUNS = {"zarrflow-gpu": "default", "zarrflow-gpu@0": "all chunks decoded on the GPU",
            "zarrflow-gpu@1": "all on the host",
            "synthetic+zarrflow-gpu": "synthetic batches, the default loader running beside"}


def loader_stored_GBps(res: dict) -> float:
    """Stored GB/s a loader-only run moved on all ranks: rank 0's stored bytes per sample."""
    st = res["runs"][0]["loader_stats"]
    return res["runs"][0]["samples_per_s"] * st["stored_bytes"] / st["samples"] / 1e9


def node_values(results: Path) -> Values:
    f = {k: load(results, name) for k, name in NODE.items()}
    l1, l4 = f["loader1"]["runs"][0]["samples_per_s"], f["loader4"]["runs"][0]["samples_per_s"]
    s1, s4 = loader_stored_GBps(f["loader1"]), loader_stored_GBps(f["loader4"])
    c1, c4 = f["ceil1"], f["ceil4"]
    rows = [["host staging, stored GB/s (every GPU at once)", rate(c1["staging_GBps"]),
             rate(c4["staging_GBps"]), f"{c4['staging_GBps'] / c1['staging_GBps']:.2f}×"],
            ["pinned H2D copies, GB/s", rate(c1["h2d_GBps"]), rate(c4["h2d_GBps"]),
             f"{c4['h2d_GBps'] / c1['h2d_GBps']:.2f}×"],
            ["Loader alone, samples/s (stored GB/s)", f"{l1:.0f} ({rate(s1)})",
             f"{l4:.0f} ({rate(s4)})", f"{l4 / l1:.2f}×"]]
    ddp = f["ddp"]
    runs = runs_by_name(ddp)
    synth = [r["samples_per_s"] for r in runs_named(ddp, "synthetic")]
    drows = [[label, f"{runs[n]['samples_per_s']:.1f}", f"{100 * runs[n]['data_wait_fraction']:.1f}%",
               f"{runs[n]['real_over_synthetic']:.3f}"] for n, label in DDP_RUNS.items()]
    cpus = [p["cpus"] for p in ddp["thread_placement"]]
    return {
        "node_table": table(["", "1 GPU", "4 GPUs", "4 ÷ 1"], rows),
        "node_ddp_table": table(["loader", "samples/s", "waiting", "real/synthetic"], drows),
        "node_date": ddp["date"], "node_device": ddp["device"],
        "node_of_ceiling": f"{s4 / c4['staging_GBps']:.2f}",
        "node_stored_gb": f"{c4['stored_bytes'] / 1e9:.1f}",
        "node_ddp_synthetic": " / ".join(f"{x:.1f}" for x in synth),
        "node_host_cost": f"{100 * (1 - runs['synthetic+zarrflow-gpu']['real_over_synthetic']):.1f}%",
        "node_max_wait": f"{100 * max(runs[n]['data_wait_fraction'] for n in DDP_RUNS):.1f}%",
        "node_ddp_cpus": ", ".join(cpus) if all(cpus) else "left to the scheduler",
    }


# --- loader workers under DDP on four GPUs ------------------------------------------------------
WORKERS4 = "train_unet_6ch_4xh100_workers.json"


def workers4_values(results: Path) -> Values:
    """Invocations alternating the default loader workers and --loader-workers 1, each a synthetic
    run then the real one."""
    res = load(results, WORKERS4)
    runs: dict[bool, list[dict]] = {True: [], False: []}  # by "the loader's default workers"
    for inv in res["invocations"]:
        real = runs_named(inv, "zarrflow-gpu")[0]
        runs[inv["loader_workers"] is None].append(real)
    default = runs[True][0]["loader_stats"]["workers"]

    def ratios(rs: list[dict]) -> str:
        return " and ".join(f"{r['real_over_synthetic']:.3f}" for r in rs)

    def median_step(rs: list[dict]) -> str:
        return f"{statistics.median(s for r in rs for e in r['epochs'][1:] for s in e['step_ms']):.0f}"

    synth = [r for inv in res["invocations"] for r in runs_named(inv, "synthetic")]
    sentence = (f"{ratios(runs[False])} against {ratios(runs[True])} with the default {default}, "
                f"median steps {median_step(runs[False])} and {median_step(runs[True])} ms "
                f"({median_step(synth)} synthetic)")
    return {"workers4_date": res["invocations"][0]["date"], "workers4_sentence": sentence}


# --- DDP at 71 uncompressed channels on four GPUs ------------------------------------------------
DDP71 = "train_unet_71ch_4xh100_ddp.json"


def ddp71_values(results: Path) -> Values:
    res = load(results, DDP71)
    runs = runs_by_name(res)
    synth, real = runs["synthetic"], runs["zarrflow-gpu"]
    pairs = list(zip(synth["epochs"][1:], real["epochs"][1:]))
    per_epoch = ", ".join(f"{r['samples_per_s'] / s['samples_per_s']:.3f}" for s, r in pairs)
    steps = " / ".join(f"{r['step_ms_median']:.0f}" for _, r in pairs)
    synth_steps = " / ".join(f"{s['step_ms_median']:.0f}" for s, _ in pairs)
    sentence = (f"{real['real_over_synthetic']:.3f} of synthetic over epochs 1–3 ({per_epoch}), "
                f"median steps {steps} ms against {synth_steps}: one slow step at an epoch's end "
                f"moves its figure by several percent")
    return {"ddp71_date": res["date"], "ddp71_steps": str(len(real["epochs"][1]["step_ms"])),
            "ddp71_wait": f"{100 * real['data_wait_fraction']:.1f}%", "ddp71_sentence": sentence}


# --- DDP on another node: four H200s ---------------------------------------------------------------
H200X4 = {"six": "train_unet_6ch_4xh200_ddp.json", "beside": "train_unet_6ch_4xh200_beside.json",
          "seventy": "train_unet_71ch_4xh200_ddp.json", "again": "train_unet_71ch_4xh200_ddp_run2.json",
          "one": "train_unet_71ch_4xh200_workers1.json"}


def h200x4_values(results: Path) -> Values:
    """DDP at 6 and 71 channels on a 4 x H200 node: the defaults, normal stream priority, the CPU
    and GPU loaders beside synthetic training, and 71 with one loader worker a rank."""
    res = {k: load(results, n) for k, n in H200X4.items()}

    def ratios(key: str, run: str) -> list[float]:
        return [r["real_over_synthetic"] for r in runs_named(res[key], run)]

    def real(key: str) -> dict:
        return runs_named(res[key], "zarrflow-gpu")[0]

    def stored_gbps(key: str, samples_per_s: float) -> float:  # the four ranks' loaders together
        st = real(key)["loader_stats"]
        return samples_per_s * st["stored_bytes"] / st["samples"] / 1e9

    def waits(keys: tuple[str, ...]) -> str:
        return ", ".join(f"{100 * real(k)['data_wait_fraction']:.1f}%" for k in keys)

    default = ", ".join(f"{x:.3f}" for x in ratios("six", "zarrflow-gpu") + ratios("beside", "zarrflow-gpu"))
    cost = {run: 100 * (1 - ratios("beside", f"synthetic+{run}")[0])
            for run in ("zarrflow-gpu", "zarrflow-cpu")}
    synth71 = statistics.mean(r["samples_per_s"] for r in runs_named(res["seventy"], "synthetic"))
    sentence = (
        f"6 channels {default} of synthetic with the defaults, "
        f"{ratios('six', 'zarrflow-gpu-normal')[0]:.3f} at normal stream priority; beside synthetic "
        f"training the GPU loader costs the model {cost['zarrflow-gpu']:.1f}%, the CPU loader (no "
        f"CUDA calls) {cost['zarrflow-cpu']:.1f}%. 71 uncompressed channels "
        f"{ratios('seventy', 'zarrflow-gpu')[0]:.3f} and {ratios('again', 'zarrflow-gpu')[0]:.3f} "
        f"(waits {waits(('seventy', 'again'))}): the four ranks read "
        f"{stored_gbps('seventy', real('seventy')['samples_per_s']):.0f} GB/s of stored float32 "
        f"where the model would take {stored_gbps('seventy', synth71):.0f}; with [one worker a rank]"
        f"(results/{H200X4['one']}) "
        f"{ratios('one', 'zarrflow-gpu')[0]:.3f} (waits {waits(('one',))})")
    return {"h200x4_date": res["six"]["date"], "h200x4_sentence": sentence}


# --- rechunking --------------------------------------------------------------------------------------
RECHUNK_TOOLS = ("zarrflow", "zarrflow --verify", "tensorstore")
RECHUNK_CASES = {"time-batch 4, zstd:3": "time batches of 4, zstd-3",
                 "spatial tiles 181x360 x 8 steps, blosc-lz4": "tiles 181×360 × 8 steps, Blosc-LZ4",
                 "field chunks, sharded 8 steps, zstd:1 + crc32c":
                     "sharded, 8 steps per shard, zstd-1 + crc32c"}


def rechunk_values(results: Path) -> Values:
    runs = sorted((load(results, n) for n in ("bench_rechunk_16cores.json", "bench_rechunk_2cores.json")),
                  key=lambda r: -r["cpus"])
    cases = list(runs[0]["cases"])
    header = ["case", *(f"{r['cpus']} cores: zarrflow / with `--verify` / tensorstore" for r in runs)]
    rows = [[RECHUNK_CASES.get(case, case), *(" / ".join(rate(r["cases"][case][t]["GBps"]) for t in RECHUNK_TOOLS) for r in runs)]
            for case in cases]
    slower = [r["cases"][c]["ratio tensorstore/zarrflow --verify (time)"] for r in runs for c in cases]
    return {"rechunk_table": table(header, rows), "rechunk_verify": span(slower, lambda x: f"{x:.2f}", "×"),
            "rechunk_date": max(r["date"] for r in runs),
            "rechunk_gb": f"{runs[0]['bytes'] / 1e9:.1f}"}


# --- remote stores -----------------------------------------------------------------------------------
REMOTE_READERS = {"zarrflow": "zarrflow", "zarrflow out=": "zarrflow (out=)", "tensorstore": "tensorstore",
                  "zarr-python+obstore": "zarr-python + obstore", "zarr-python+s3fs": "zarr-python + s3fs",
                  "curl -P 64": "curl, 64 parallel"}
REMOTE_READS = {"full": "whole", "partial": "window"}


def remote_values(results: Path) -> Values:
    res = load(results, "bench_remote.json")
    got = {(m["layout"], m["read"], m["reader"]): m["stored_GBps"] for m in res["measurements"]}
    cases = list(dict.fromkeys((m["layout"], m["read"]) for m in res["measurements"]
                               if m["read"] in REMOTE_READS))
    rows = [[layout, REMOTE_READS[read],
             *(rate(got[(layout, read, r)]) if (layout, read, r) in got else "—" for r in REMOTE_READERS)]
            for layout, read in cases]
    sweep = [(m["params"]["max_in_flight"], m["stored_GBps"]) for m in res["measurements"]
             if m["read"] == "sweep"]
    layouts = res["layouts"]
    return {
        "remote_table": table(["layout", "read", *REMOTE_READERS.values()], rows, text_columns=2),
        "remote_cores": str(res["cores_visible"]), "remote_fields": str(res["shape"][0]),
        "remote_mb": f"{res['decoded_bytes'] / 1e6:.0f}", "remote_shards": str(layouts["sharded"]["objects"]),
        "remote_per_shard": str(res["shape"][0] // layouts["sharded"]["objects"]),
        "remote_runs": str(res["runs"]), "remote_date": res["date"][:10],
        "remote_moto": res["versions"]["moto"],
        "remote_sweep_limits": ", ".join(str(n) for n, _ in sweep),
        "remote_sweep_rates": ", ".join(rate(g) for _, g in sweep),
        "remote_sharded_new": rate(got[("sharded", "full", "zarrflow")]),
        "remote_sharded_out": rate(got[("sharded", "full", "zarrflow out=")]),
    }


SECTIONS = (realism_values, read_values, numcodecs_values, gpu_values, loader_values,
            ceilings_values, sm_cost_values, training_values,
            priority71_values, shares71_values, node_values, workers4_values, ddp71_values,
            h200x4_values,
            rechunk_values, remote_values)


def all_values(results: Path) -> Values:
    values: Values = {}
    for section in SECTIONS:
        values.update(section(results))
    return values


# --- the README's summary ------------------------------------------------------------------------------
def summary_table(results: Path) -> str:
    """The headline figures, one row per section of the page."""
    gpu = load(results, "bench_gpu_h100.json")
    warm, codecs = _gpu_runs(gpu, "warm"), _gpu_codecs(gpu)
    ours = {c: warm[(c, "zarrflow-gpu")]["GBps"] for c in codecs}
    slow, fast = min(ours, key=ours.get), max(ours, key=ours.get)
    host = load(results, "bench_read_16cores.json")
    host_runs = {(r["codec"], r["reader"]): r["GBps"] for r in host["runs"]}
    host_codecs = list(dict.fromkeys(r["codec"] for r in host["runs"]))
    kinds = _loader_runs(results)
    h100 = next(k for k in kinds if k == _gpu_kind(gpu["gpu"]))
    loader = [float(x) for x in _loader_cell(kinds[h100], next(iter(LOADER_STORES)), "721x1440",
                                             _default).split(" / ")]
    dataloader = _samples(kinds, h100, lambda n: n.startswith("DataLoader"))
    zf_samples = _samples(kinds, h100, _default)
    train = load(results, next(iter(TRAIN_FILES)))
    real = next(r for r in train["runs"] if r["real_over_synthetic"])
    gpu_kind = _gpu_kind(gpu["gpu"])
    rows = [
        [f"2 GB of ERA5-like float32 read into GPU memory ({gpu_kind})",
         f"{rate(ours[slow])} ({codec_name(slow)}) to {rate(ours[fast])} GB/s ({codec_name(fast)})",
         f"{span([ours[c] / _best_peer(warm, c) for c in codecs], lambda x: f'{x:.1f}', '×')} the best "
         "of tensorstore, zarr-python (also with zarrs or `enable_gpu`) and kvikio"],
        [f"the same into host memory ({host['cores_visible']} cores)",
         f"{span([host_runs[(c, 'zarrflow')] for c in host_codecs])} GB/s",
         f"{span([host_runs[(c, 'zarrflow-new')] / host_runs[(c, 'tensorstore')] for c in host_codecs], lambda x: f'{x:.1f}', '×')} "
         "tensorstore (both returning new arrays)"],
        [f"`Loader` alone, 6-channel batches ({h100})", f"{span(loader)} GB/s",
         f"{span([min(zf_samples) / max(dataloader), max(zf_samples) / min(dataloader)], lambda x: f'{x:.0f}', '×')} "
         "a PyTorch `DataLoader` over tensorstore or xarray"],
        [f"U-Net training from a 6-channel Blosc-LZ4 store ({h100})",
         f"{real['real_over_synthetic']:.3f} of its speed on synthetic batches", "—"],
    ]
    return table(["what", "zarrflow", "against its peers"], rows, text_columns=3)
