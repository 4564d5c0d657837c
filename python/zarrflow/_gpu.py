"""GPU availability, nvCOMP discovery and the one-time fallback messages of GPU reads.

nvCOMP is proprietary and never bundled: it is found in the user's environment — the
``nvidia-libnvcomp-cu12``/``-cu13`` wheel matching the CUDA major version zarrflow was built with
(``nvidia/libnvcomp/lib64/libnvcomp.so.*``; ``pip install zarrflow-cu13[nvcomp]``), a path in
``ZARRFLOW_NVCOMP_LIBRARY`` (read once, here), or the system library path. A library built for
another CUDA major version is passed over (see nvcomp_status()).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import threading
import warnings

from . import _core

_lock = threading.Lock()
_configured = False
_said: set[str] = set()
_reader = None


def reader():
    """The process's GPU reader (``_core.GpuReader``), made on first use.

    It owns zarrflow's pinned and device memory pools, which carry the GPU memory limit: every
    Array read and Loader of the process reads through this one, so that the limit covers all of
    them. Each holds it while it reads; memory it lent out (batches, cache entries) keeps it alive.
    None when zarrflow was built without CUDA.
    """
    global _reader
    if not hasattr(_core, "GpuReader"):
        return None
    with _lock:
        if _reader is None:
            r = _core.GpuReader()
            streams = read_streams_from_env()
            if streams is not None:
                r.set_read_streams(streams)
            _reader = r
        return _reader


MAX_READ_STREAMS = 16


def read_streams_from_env() -> int | None:
    """``ZARRFLOW_GPU_READ_STREAMS``: how many CUDA streams each GPU read spreads its pieces
    over (None when unset: the reader's default, 3)."""
    env = os.environ.get("ZARRFLOW_GPU_READ_STREAMS")
    if env is None or env.strip() == "":
        return None
    try:
        n = int(env)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_READ_STREAMS:
        raise ValueError("ZARRFLOW_GPU_READ_STREAMS must be an integer in "
                         f"[1, {MAX_READ_STREAMS}], got {env!r}")
    return n


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
    """Point the C++ side at nvCOMP, and tell it which zstd decoder to use
    (``ZARRFLOW_GPU_ZSTD``, read once, here), before the first GPU read (idempotent)."""
    global _configured
    with _lock:
        if not _configured:
            decoder = os.environ.get("ZARRFLOW_GPU_ZSTD", "auto")
            try:
                _core.set_zstd_decoder(decoder)
            except ValueError:
                raise ValueError("ZARRFLOW_GPU_ZSTD must be 'auto', 'zarrflow' or 'nvcomp', "
                                 f"got {decoder!r}") from None
            _core.set_nvcomp_library(_nvcomp_candidates())
            _configured = True


# The distributions that install the `zarrflow` package: one per build (docs/install.md).
DISTRIBUTIONS = ("zarrflow", "zarrflow-cu12", "zarrflow-cu13")


def _this_distribution() -> str | None:
    """The distribution this package was installed from, or None for a build from source."""
    try:
        from ._variant import DISTRIBUTION
    except ImportError:
        return None
    return DISTRIBUTION


def installed_distributions() -> list[str]:
    """Which of DISTRIBUTIONS pip has installed in this environment."""
    from importlib import metadata

    found = []
    for name in DISTRIBUTIONS:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found.append(name)
    return found


def _warn_if_several_installed() -> None:
    """The builds share the `zarrflow` package: with two installed, files of the one installed
    last overwrote the other's, and what runs is that mix. Said once, at import."""
    this = _this_distribution()
    if this is None:
        return
    others = [d for d in installed_distributions() if d != this]
    if others:
        warnings.warn(
            f"zarrflow: {', '.join(others)} and {this} are installed together; they provide the "
            f"same `zarrflow` package, and this one is {this}'s extension. Keep one: pip uninstall "
            f"{' '.join(DISTRIBUTIONS)}, then pip install the one for this machine "
            f"(docs/install.md)", RuntimeWarning, stacklevel=3)


def build_info() -> dict:
    """Which build of zarrflow this is and what it found here.

    Returns
    -------
    dict
        ``distribution``: ``"zarrflow"`` (the CPU wheel), ``"zarrflow-cu12"``,
        ``"zarrflow-cu13"``, or ``"source"`` for a build from the repository;
        ``cuda_runtime``: the CUDA runtime linked in (``"13.0"``; None without CUDA);
        ``cuda_archs``: the GPU code compiled in, as CMake lists it (``"80-real"``: SASS for
        sm_80; ``"120"``: SASS and PTX); ``driver_cuda``: the CUDA version the NVIDIA driver
        supports (None without a driver); ``cuda_status``: as :func:`cuda_status`.

    Examples
    --------
    >>> zarrflow.build_info()["distribution"]
    'zarrflow-cu13'
    """
    cuda = _core.cuda_build_info()
    text = lambda v: f"{v // 1000}.{v % 1000 // 10}" if v else None  # noqa: E731
    return {
        "distribution": _this_distribution() or "source",
        "cuda_runtime": text(cuda.get("runtime", 0)),
        "cuda_archs": cuda.get("archs", "").split(",") if cuda else [],
        "driver_cuda": text(cuda.get("driver", 0)),
        "cuda_status": _core.cuda_status(),
    }


def cuda_available() -> bool:
    """Whether GPU reads can run here.

    Returns
    -------
    bool
        True when zarrflow was built with CUDA and a driver and a GPU can be used;
        :func:`cuda_status` says why not otherwise.

    Examples
    --------
    >>> device = "cuda" if zarrflow.cuda_available() else "cpu"
    """
    return _core.cuda_status() == ""


def cuda_status() -> str:
    """Why GPU reads cannot run here.

    Returns
    -------
    str
        ``""`` when they can, else the reason: built without CUDA, no driver, a driver older
        than the CUDA runtime zarrflow was built with, no GPU, or no kernel image for the GPU's
        architecture (checked once per GPU by launching a probe kernel). ``zarrflow doctor``
        prints it with the rest of the set-up.
    """
    return _core.cuda_status()


def nvcomp_status() -> str:
    """Whether nvCOMP, which decodes zstd and deflate (gzip, zlib) on the GPU, is loaded.

    nvCOMP is found in the ``nvidia-libnvcomp-cu13`` wheel, at ``ZARRFLOW_NVCOMP_LIBRARY`` or on
    the system library path. Without it those codecs decode on the host threads.

    Returns
    -------
    str
        ``""`` when nvCOMP is loaded, else why not.
    """
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
    """GPU and pinned host memory held by zarrflow's pools.

    Returns
    -------
    dict
        Bytes in use, at the peak, idle (kept for reuse), the budget, and held from CUDA (in
        use and idle) now and at most (``*_held``, ``*_held_peak``: ``device_held_peak`` never
        passes ``device_limit``); and how many device and pinned allocations
        (``*_allocations``) and frees (``*_frees``) the pools made (a steady loader makes none
        after its first batches). Empty when zarrflow was built without CUDA.
    """
    r = reader()
    return {} if r is None else dict(r.pool_stats())


def release_memory() -> int:
    """Give the GPU and pinned memory zarrflow keeps for reuse back to the system.

    The pools keep what their loaders and reads released, up to their peak working set, so
    later batches allocate nothing; call this before another library needs that memory. Memory
    still in use (live batches, chunk caches) stays.

    Returns
    -------
    int
        The bytes freed.
    """
    r = reader()
    return 0 if r is None else int(r.trim())


# zarrflow's GPU memory (batches in flight, read pieces, chunk caches, idle buffers kept for reuse)
# is bounded by default to this share of the GPU: the rest is the model's. A 71-channel U-Net
# beside zarrflow's training and validation loaders ran the GPU out of memory with no limit and
# with 45% (docs/design_measurements.md, "GPU memory limit, 40%").
DEFAULT_LIMIT = 0.4
_limit_chosen = False


def _parse_limit(limit, total: int) -> int:
    """Bytes for a limit given as None/0/'none' (no limit), a fraction of the GPU (0 < f <= 1),
    a byte count (> 1) or a string such as '40GB', '0.5' or 'none'."""
    if isinstance(limit, str):
        text = limit.strip().upper()
        if text in ("", "NONE"):
            return 0
        m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:E[+-]?[0-9]+)?)\s*([KMGT]?)B?", text)
        if not m:
            raise ValueError(f"GPU memory limit {limit!r}: expected e.g. 0.4, '40GB' or 'none'")
        if m[2]:
            return int(float(m[1]) * {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m[2]])
        limit = float(m[1])
    if limit is None:
        return 0
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit < 0:
        raise ValueError(f"GPU memory limit must be a fraction, bytes or None, got {limit!r}")
    return int(limit * total) if limit <= 1 else int(limit)


def set_gpu_memory_limit(limit, device: int = 0) -> int:
    """Bound the GPU memory zarrflow holds, so that a model has the rest.

    The limit covers batches in flight, the GPU read's working buffers, GPU chunk caches and
    idle buffers kept for reuse. Loaders made afterwards fit their prefetch and workers into it
    (and say so); a read that would pass it fails as out of memory. Without a call, the first
    GPU :class:`~zarrflow.Loader` (or :func:`gpu_memory_limit`) applies
    ``ZARRFLOW_GPU_MEMORY_LIMIT`` when set, else 40% of the GPU.

    Parameters
    ----------
    limit : float, int, str or None
        A fraction of the GPU's memory (``0.4``), bytes (``40e9``), a string (``"40GB"``,
        ``"0.5"``, ``"none"``) or None (no limit).
    device : int, default 0
        The GPU whose size a fraction refers to.

    Returns
    -------
    int
        The limit in bytes (0: none).

    Raises
    ------
    UnsupportedError
        No GPU can be used here.
    ValueError
        A limit that is none of the above.

    Examples
    --------
    >>> zarrflow.set_gpu_memory_limit("24GB")
    24000000000
    """
    global _limit_chosen
    if not cuda_available():
        from .errors import UnsupportedError

        raise UnsupportedError(f"no GPU memory to limit: {cuda_status()}")
    _free, total = _core.device_memory(device)
    nbytes = _parse_limit(limit, total)
    reader().set_limit(nbytes)
    _limit_chosen = True
    return nbytes


def gpu_memory_limit(device: int = 0) -> int:
    """zarrflow's GPU memory limit (see :func:`set_gpu_memory_limit`).

    Parameters
    ----------
    device : int, default 0
        The GPU the default limit is applied for, when none was set yet (see
        :func:`set_gpu_memory_limit`).

    Returns
    -------
    int
        The limit in bytes; 0 when there is none or no GPU can be used.
    """
    ensure_memory_limit(device)
    return int(memory_stats().get("device_limit", 0))


def ensure_memory_limit(device: int = 0) -> None:
    """Apply the default limit (or ZARRFLOW_GPU_MEMORY_LIMIT) once, unless one was set."""
    if _limit_chosen or not cuda_available():
        return
    set_gpu_memory_limit(os.environ.get("ZARRFLOW_GPU_MEMORY_LIMIT", DEFAULT_LIMIT), device)


_warn_if_several_installed()
