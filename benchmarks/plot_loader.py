"""Plot benchmarks/bench_loader.py results: GB/s of float32 batches by store, grid and number of
workers (loader only), with the 30 GB/s target and the GPU chunk-cache runs. Several result files
of one machine kind plot as the mean of their runs.

    python benchmarks/plot_loader.py docs/results/bench_loader_h100.json \
        docs/results/bench_loader_h100_run2.json --out docs/results/bench_loader_h100.png
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _plotting import pyplot, results_cli  # noqa: E402

TARGET_GBPS = 30.0


def _label(loader: str) -> str:
    return (loader.replace("zarrflow-gpu (", "").replace(")", "")
            .replace(" + 30 GB GPU chunk cache", " + GPU cache")
            .replace(" + 30 GB pinned host chunk cache", " + host cache"))


def _groups(results: list[dict]) -> dict[str, dict[str, list[float]]]:
    """"store\\ngrid" -> {"2 workers": [GB/s of each run], ...} (float32, no training step)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for res in results:
        for r in res["runs"]:
            if r["dtype"] != "float32" or r["step_s"] or "DataLoader" in r["loader"] \
                    or "error" in r:  # failed runs are in the table, not the plot
                continue
            store = r["store"].split(",")[0].replace("stacked v3 zstd", "71 ch zstd") \
                .replace("wb2 v2 blosc-lz4", "6 ch blosc-lz4")
            key = f"{store}\n{r['grid']}"
            groups.setdefault(key, {}).setdefault(_label(r["loader"]), []).append(r["batch_GBps"])
    return groups


def plot(results: list[dict], path: Path, target: float = TARGET_GBPS) -> None:
    """Grouped bars, one group per store and grid, one bar per loader setting (mean of the runs)."""
    plt = pyplot()
    groups = _groups(results)
    labels = sorted({lab for g in groups.values() for lab in g}, key=lambda s: ("cache" in s, s))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / max(1, len(labels))
    colors = plt.cm.viridis([i / max(1, len(labels) - 1) for i in range(len(labels))])
    for j, lab in enumerate(labels):
        xs, ys = [], []
        for i, g in enumerate(groups.values()):
            if lab in g:
                xs.append(i + (j - (len(labels) - 1) / 2) * width)
                ys.append(statistics.mean(g[lab]))
        bars = ax.bar(xs, ys, width, label=lab, color=colors[j])
        for b, y in zip(bars, ys):
            ax.annotate(f"{y:.0f}", (b.get_x() + b.get_width() / 2, y), ha="center", va="bottom",
                        fontsize=7)
    ax.axhline(target, color="#d62728", ls="--", lw=1)
    ax.annotate(f"target {target:.0f} GB/s", (len(groups) - 0.5, target), color="#d62728",
                ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)), list(groups), fontsize=8)
    ax.set_ylabel("GB/s of float32 batches (x + y)")
    machines = sorted({f"{res['gpu']}, {res['cpus']} CPUs" for res in results})
    dates = sorted({res["date"][:10] for res in results})
    ax.set_title("zarrflow.Loader into GPU memory, batch 16, t→t+1, warm page cache, mean of "
                 f"{len(results)} run(s)\n" + "; ".join(machines + dates), fontsize=9)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    args = results_cli(__doc__, lambda ap: ap.add_argument(
        "--target", type=float, default=TARGET_GBPS, help="GB/s line to draw"))
    plot([json.loads(p.read_text()) for p in args.results], args.out, args.target)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
