"""GPU availability, nvCOMP discovery and the one-time fallback messages of GPU reads.

nvCOMP is proprietary and never bundled: it is found in the user's environment — the
``nvidia-libnvcomp-cu13`` wheel (``nvidia/libnvcomp/lib64/libnvcomp.so.*``), a path in
``ZARRFLOW_NVCOMP_LIBRARY`` (read once, here), or the system library path.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import threading
import warnings

from . import _core

_lock = threading.Lock()
_configured = False
_said: set[str] = set()


def _nvcomp_candidates() -> list[str]:
    found: list[str] = []
    env = os.environ.get("ZARRFLOW_NVCOMP_LIBRARY")
    if env:
        found.append(env)
    for pkg in ("nvidia.libnvcomp", "nvidia.nvcomp"):
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        for root in (spec.submodule_search_locations or []) if spec else []:
            for sub in ("lib64", "lib"):
                found += sorted(glob.glob(os.path.join(root, sub, "libnvcomp.so*")), reverse=True)
    return found


def configure() -> None:
    """Point the C++ side at nvCOMP before the first GPU read (idempotent)."""
    global _configured
    with _lock:
        if not _configured:
            _core.set_nvcomp_library(_nvcomp_candidates())
            _configured = True


def cuda_available() -> bool:
    """True when zarrflow was built with CUDA and a GPU is usable."""
    return _core.cuda_status() == ""


def cuda_status() -> str:
    """'' when GPU reads work, else why not ('built without CUDA', 'no CUDA driver', ...)."""
    return _core.cuda_status()


def nvcomp_status() -> str:
    """'' when nvCOMP is loaded (zstd and deflate decode on the GPU), else why not."""
    configure()
    return _core.nvcomp_status()


def say_once(notes: list[str]) -> None:
    """Warn once per distinct reason that chunks were decoded on the CPU instead of the GPU."""
    for note in notes:
        with _lock:
            if note in _said:
                continue
            _said.add(note)
        warnings.warn(f"zarrflow: some chunks decode on the CPU: {note}", RuntimeWarning,
                      stacklevel=3)


def parse_device(device: str) -> tuple[str, int]:
    kind, _, index = str(device).partition(":")
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return kind, int(index) if index else 0


def memory_stats() -> dict:
    """Bytes of GPU and pinned host memory zarrflow's pools hold: in use, peak, idle (cached),
    budget; and how many device / pinned allocations (``*_allocations``) and frees
    (``*_frees``) they made — a steady loader makes none after its first batches."""
    if not hasattr(_core, "pool_stats"):
        return {}
    return dict(_core.pool_stats())


def release_memory() -> int:
    """Give the GPU and pinned memory zarrflow keeps for reuse (idle, up to the peak working
    set of its loaders and reads) back to the system, e.g. before another library needs it.
    Returns the bytes freed. Memory still in use (live batches, chunk caches) stays."""
    if not hasattr(_core, "pool_trim"):
        return 0
    return int(_core.pool_trim())
