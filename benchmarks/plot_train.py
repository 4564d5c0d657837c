"""Plot benchmarks/train_bench.py results: samples/s per run (bars) and data-wait share (labels).

    python benchmarks/plot_train.py docs/results/train_unet_6ch_h100.json \
        docs/results/train_unet_71ch_h100.json --out docs/results/train_unet_h100.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _plotting import pyplot, results_cli  # noqa: E402


def _color(run: str) -> str:
    return "#888" if run == "synthetic" else "#1f77b4" if run.startswith("zarrflow") else "#d62728"


def plot(results: list[dict], path: Path) -> None:
    """One panel per result file: a bar per run, labelled with samples/s and the wait share."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, res in zip(axes[0], results):
        names = [r["run"] for r in res["runs"]]
        bars = ax.bar(range(len(names)), [r["samples_per_s"] for r in res["runs"]],
                      color=[_color(n) for n in names])
        for b, r in zip(bars, res["runs"]):
            label = f"{r['samples_per_s']:.0f}/s"
            if r["train"] and r["run"] != "synthetic":
                label += f"\nwait {100 * r['data_wait_fraction']:.0f}%"
            ax.annotate(label, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                        va="bottom", fontsize=8)
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
        ax.set_ylabel("samples/s")
        training = any(r["train"] and r["run"] != "synthetic" for r in res["runs"])
        ax.set_title(f"{'training' if training else 'loader only'}: {res['channels']} ch "
                     f"{res['grid'][0]}x{res['grid'][1]}, batch {res['batch_size']}x{res['world_size']}, "
                     f"{res['device']}, {res['date']}", fontsize=8)
        ax.margins(y=0.2)
    fig.suptitle("U-Net/ResNet-18 t→t+1: samples/s by data source")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    args = results_cli(__doc__)
    plot([json.loads(p.read_text()) for p in args.results], args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
