"""The command line shared by the plot scripts: result JSON files in, one PNG out, matplotlib
without a display."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Callable


def results_cli(doc: str, more: Callable[[argparse.ArgumentParser], None] | None = None):
    """(parsed arguments with .results and .out, matplotlib.pyplot on the Agg backend)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    if more:
        more(ap)
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return args, plt
