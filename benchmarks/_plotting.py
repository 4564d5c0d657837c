"""What the plot scripts share: result JSON files in and one PNG out on the command line, and
matplotlib without a display."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def results_cli(doc: str, more: Callable[[argparse.ArgumentParser], None] | None = None):
    """The parsed arguments: .results (JSON files) and .out (the PNG), plus those ``more`` adds."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    if more:
        more(ap)
    return ap.parse_args()
