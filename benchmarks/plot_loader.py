"""Plot benchmarks/bench_loader.py results: GB/s of float32 batches by store, grid and number of
workers (loader only), with the 30 GB/s target and the GPU chunk-cache runs.

    python benchmarks/plot_loader.py docs/results/bench_loader_h100.json \
        --out docs/results/bench_loader_h100.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _plotting import results_cli  # noqa: E402


def main() -> int:
    args, plt = results_cli(__doc__, lambda ap: ap.add_argument(
        "--target", type=float, default=30.0, help="GB/s line to draw"))

    groups: dict[str, dict[str, float]] = {}  # "store, grid" -> {"1 worker": GB/s, ...}
    meta = []
    for path in args.results:
        res = json.loads(path.read_text())
        meta.append(f"{res['gpu']}, {res['cpus']} CPUs, {res['date'][:10]}")
        chunked = "\n(chunks 640x1280)" if "seedchunks" in path.name else ""
        for r in res["runs"]:
            if r["dtype"] != "float32" or r["step_s"] or "DataLoader" in r["loader"] \
                    or "error" in r:  # failed runs are in the table, not the plot
                continue
            store = r["store"].split(",")[0].replace("stacked v3 zstd", "71 ch zstd") \
                .replace("wb2 v2 blosc-lz4", "6 ch blosc-lz4")
            key = f"{store}\n{r['grid']}{chunked}"
            label = (r["loader"].replace("zarrflow-gpu (", "").replace(")", "")
                     .replace(" + 30 GB GPU chunk cache", " + GPU cache")
                     .replace(" + 30 GB pinned host chunk cache", " + host cache"))
            groups.setdefault(key, {})[label] = r["batch_GBps"]
    labels = sorted({lab for g in groups.values() for lab in g},
                    key=lambda s: ("cache" in s, s))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / max(1, len(labels))
    colors = plt.cm.viridis([i / max(1, len(labels) - 1) for i in range(len(labels))])
    for j, lab in enumerate(labels):
        xs, ys = [], []
        for i, g in enumerate(groups.values()):
            if lab in g:
                xs.append(i + (j - (len(labels) - 1) / 2) * width)
                ys.append(g[lab])
        bars = ax.bar(xs, ys, width, label=lab, color=colors[j])
        for b, y in zip(bars, ys):
            ax.annotate(f"{y:.0f}", (b.get_x() + b.get_width() / 2, y), ha="center", va="bottom",
                        fontsize=7)
    ax.axhline(args.target, color="#d62728", ls="--", lw=1)
    ax.annotate(f"target {args.target:.0f} GB/s", (len(groups) - 0.5, args.target), color="#d62728",
                ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)), list(groups), fontsize=8)
    ax.set_ylabel("GB/s of float32 batches (x + y)")
    ax.set_title("zarrflow.Loader into GPU memory, batch 16, t→t+1, warm page cache\n"
                 + "; ".join(sorted(set(meta))), fontsize=9)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
