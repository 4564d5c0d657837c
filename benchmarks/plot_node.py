"""Plot the four-GPU and who-decodes results of docs/performance.md: the node's staging ceiling
against the Loader on 1 and 4 GPUs (stored GB/s), DDP real/synthetic per loader mode, and the
71-channel U-Net's real/synthetic with fixed host shares against the default.

    python benchmarks/plot_node.py docs/results/node_ceiling_1xh100.json \
        docs/results/node_ceiling_4xh100.json docs/results/loader_6ch_1of4xh100.json \
        docs/results/loader_6ch_4xh100.json docs/results/train_unet_6ch_4xh100_ddp_parts.json \
        docs/results/train_unet_71ch_zstd_shares_h100.json --out docs/results/node_and_split_h100.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _plotting import pyplot, results_cli  # noqa: E402
from performance_tables import loader_stored_GBps  # noqa: E402


def _bars(ax, labels, values, colors, fmt) -> None:
    bars = ax.bar(range(len(values)), values, color=colors)
    for b, v in zip(bars, values):
        ax.annotate(fmt(v), (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=20, fontsize=8)
    ax.margins(y=0.2)


def _ratios(res: dict) -> tuple[list[str], list[float]]:
    runs = [r for r in res["runs"] if r["run"] != "synthetic"]
    return [r["run"] for r in runs], [r["real_over_synthetic"] for r in runs]


def plot(ceil1: dict, ceil4: dict, loader1: dict, loader4: dict, ddp: dict, shares: dict,
         path: Path) -> None:
    plt = pyplot()
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.2))
    _bars(a, ["staging ceiling, 1 GPU", "Loader, 1 GPU", "staging ceiling, 4 GPUs", "Loader, 4 GPUs"],
          [ceil1["staging_GBps"], loader_stored_GBps(loader1), ceil4["staging_GBps"],
           loader_stored_GBps(loader4)], ["#888", "#1f77b4", "#888", "#1f77b4"], lambda v: f"{v:.1f}")
    a.set_ylabel("stored GB/s")
    a.set_title(f"host staging vs Loader, 6 ch, {ceil4['device']} x{ceil4['gpus']}, {ceil4['date']}",
                fontsize=8)
    labels, values = _ratios(ddp)
    _bars(b, labels, values, "#1f77b4", lambda v: f"{v:.3f}")
    b.set_ylabel("real / synthetic")
    b.set_title(f"DDP U-Net, 6 ch, {ddp['world_size']} GPUs, {ddp['date']}", fontsize=8)
    fixed = sorted((r for r in shares["runs"] if "@" in r["run"]),
                   key=lambda r: float(r["run"].split("@")[1]))
    default = [r for r in shares["runs"] if r["run"] == "zarrflow-gpu"]
    _bars(c, [f"host share {r['run'].split('@')[1]}" for r in fixed] + ["default"],
          [r["real_over_synthetic"] for r in fixed + default],
          ["#1f77b4"] * len(fixed) + ["#888"] * len(default), lambda v: f"{v:.3f}")
    c.set_ylabel("real / synthetic")
    c.set_title(f"U-Net, 71 ch zstd, who decodes, {shares['device']}, {shares['date']}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    args = results_cli(__doc__)
    if len(args.results) != 6:
        raise SystemExit("give the six result files named in the usage")
    plot(*[json.loads(p.read_text()) for p in args.results], args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
