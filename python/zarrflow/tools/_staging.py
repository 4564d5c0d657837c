"""Writing a store so that it appears only when whole (used by synth).

The tools write under ``<dest>.partial`` and, once everything is written, rename it to
``<dest>``. A store that already sits at ``<dest>`` (the caller checked ``--overwrite``) is moved
aside first and deleted only after the new one is in place, so at no moment does ``<dest>`` hold
a half-written store, and the old one survives any failure before the swap.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def staging_path(dest: Path) -> Path:
    return dest.parent / (dest.name + ".partial")


def swap_into_place(staged: Path, dest: Path) -> None:
    old = dest.parent / (dest.name + ".old")
    if dest.exists():
        shutil.rmtree(old, ignore_errors=True)
        dest.rename(old)
    staged.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
