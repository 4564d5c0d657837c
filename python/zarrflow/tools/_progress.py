"""A small progress bar for long tools (synth, rechunk): done/total, rate, ETA, on stderr.

On a terminal it redraws one line; elsewhere (CI logs, files) it prints a line every ~10 % so logs
stay short. No dependency: tqdm would be the only reason to import it.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def human_bytes(n: float) -> str:
    """1536 → "1.5 KiB" (binary units, as `zarrflow inspect` prints sizes)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class Progress:
    """Counts work items and the bytes they stand for; ``update`` after each, ``close`` at the
    end."""

    def __init__(self, total: int, desc: str, *, enabled: bool = True, out: TextIO | None = None):
        self.total, self.desc, self.enabled = max(total, 0), desc, enabled
        self.out = out if out is not None else sys.stderr
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.done, self.nbytes = 0, 0
        self.t0 = time.perf_counter()
        self._last_draw, self._last_decile = 0.0, -1

    def update(self, items: int = 1, nbytes: int = 0) -> None:
        self.done += items
        self.nbytes += nbytes
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self._last_draw = now
                self.out.write("\r" + self.line())
                self.out.flush()
        else:
            decile = 10 * self.done // self.total if self.total else 10
            if decile != self._last_decile:
                self._last_decile = decile
                self.out.write(self.line() + "\n")
                self.out.flush()

    def line(self) -> str:
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        frac = self.done / self.total if self.total else 1.0
        width = 24
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        eta = (elapsed / frac - elapsed) if 0 < frac < 1 else 0.0
        return (f"{self.desc} [{bar}] {self.done}/{self.total} "
                f"{human_bytes(self.nbytes)} {human_bytes(self.nbytes / elapsed)}/s "
                f"{elapsed:.1f}s eta {eta:.0f}s")

    def close(self) -> None:
        if self.enabled and self.tty:
            self.out.write("\r" + self.line() + "\n")
            self.out.flush()
