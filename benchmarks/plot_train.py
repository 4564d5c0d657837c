"""Plot benchmarks/train_bench.py results: samples/s per run (bars) and data-wait share (labels).

    python benchmarks/plot_train.py docs/results/train_unet_6ch_h100.json \
        docs/results/train_unet_71ch_h100.json --out docs/results/train_unet_h100.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _plotting import results_cli  # noqa: E402


def main() -> int:
    args, plt = results_cli(__doc__)

    runs = [json.loads(p.read_text()) for p in args.results]
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 4), squeeze=False)
    for ax, res, path in zip(axes[0], runs, args.results):
        names = [r["run"] for r in res["runs"]]
        vals = [r["samples_per_s"] for r in res["runs"]]
        bars = ax.bar(range(len(names)), vals, color=["#888" if n == "synthetic" else
                                                      "#1f77b4" if n.startswith("zarrflow") else "#d62728"
                                                      for n in names])
        for b, r in zip(bars, res["runs"]):
            label = f"{r['samples_per_s']:.0f}/s"
            if r["train"] and r["run"] != "synthetic":
                label += f"\nwait {100 * r['data_wait_fraction']:.0f}%"
            ax.annotate(label, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                        va="bottom", fontsize=8)
        ax.set_xticks(range(len(names)), names, rotation=20, fontsize=8)
        ax.set_ylabel("samples/s")
        mode = "training" if any(r["train"] and r["run"] != "synthetic" for r in res["runs"]) else "loader only"
        store = Path(res["store"]).name if res.get("store") else path.stem
        ax.set_title(f"{store}\n{mode}: {res['channels']} ch {res['grid'][0]}x{res['grid'][1]}, batch "
                     f"{res['batch_size']}x{res['world_size']}, {res['device']}, {res['date']}", fontsize=8)
        ax.margins(y=0.2)
    fig.suptitle("U-Net/ResNet-18 t→t+1: samples/s by data source")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
