"""The default executor (thread pool + scratch buffers) that reads use unless given another.

Its size comes from ZARRFLOW_NUM_THREADS when set (read once, here at the Python edge), else the
number of CPUs this process may run on, shared with the other ranks on its node: torchrun starts
one process per GPU (LOCAL_WORLD_SIZE of them), each would otherwise start a thread per core, and
two ranks on 32 cores would run 64 decoding threads. When the process is already bound to fewer
CPUs than the machine has (Slurm, numactl, torchrun's NUMA binding), its CPUs are its own share
and are not divided again. With several ranks on a machine of several NUMA nodes, each rank's
pool runs on its GPU's node, shared with the ranks on that node (_placement.py,
ZARRFLOW_THREAD_CPUS). The pools' threads run 5 nice levels below the process
(ZARRFLOW_THREAD_NICE sets another amount, 0 = none): decoding then yields its cores to a training
thread that wants one at the same moment, and costs nothing when nothing else wants them
(docs/design_measurements.md, "decode threads 5 nice levels down").

Where the operating system refuses threads (a container's pids limit, ``ulimit -u``, ``ulimit -v``
on HPC login nodes), a pool runs with the threads it got (none at all: reads run on the calling
thread) and a RuntimeWarning says how many started and why.
"""

from __future__ import annotations

import os
import threading
import warnings

from . import _core, _placement

DEFAULT_NICE = 5
_lock = threading.Lock()
_default: _core.Executor | None = None
_placed: _placement.Placement | None = None


def _cpu_count() -> int:
    return len(_placement.process_cpus()) or os.cpu_count() or 1


def _gpu_bus_ids() -> list[str]:
    try:
        return list(_core.gpu_pci_bus_ids())
    except Exception:  # noqa: BLE001 - no CUDA build, no driver: no GPU to place threads by
        return []


def placement() -> _placement.Placement:
    """Where the default pool's threads run (chosen once per process)."""
    global _placed
    if _placed is None:
        _placed = _placement.choose(_gpu_bus_ids)
    return _placed


def default_threads() -> int:
    env = os.environ.get("ZARRFLOW_NUM_THREADS")
    if env:
        n = int(env)
        if n < 1:
            raise ValueError(f"ZARRFLOW_NUM_THREADS must be >= 1, got {env!r}")
        return n
    placed = placement()
    if placed.cpus:
        return placed.threads or len(placed.cpus)
    mine = _placement.process_cpus()
    if _placement.bound_already(mine):
        return len(mine)  # that subset is this rank's share
    return max(1, _cpu_count() // _placement.local_ranks())


def default_nice() -> int:
    env = os.environ.get("ZARRFLOW_THREAD_NICE")
    if not env:
        return DEFAULT_NICE
    n = int(env)
    if not 0 <= n <= 19:
        raise ValueError(f"ZARRFLOW_THREAD_NICE must be in [0, 19], got {env!r}")
    return n


def new_executor(threads: int, nice: int, cpus=None) -> _core.Executor:
    """A pool of ``threads`` threads (on ``cpus`` when given), or of those the operating system
    allowed (with a warning)."""
    ex = _core.Executor(threads, nice, list(cpus or ()))
    if ex.threads < ex.requested_threads:
        warnings.warn(
            f"zarrflow: started {ex.threads} of {ex.requested_threads} decoding threads "
            f"({ex.start_error}); reads run on those and the calling thread",
            RuntimeWarning, stacklevel=3)
    if ex.cpu_error:
        warnings.warn(f"zarrflow: decoding threads not kept on CPUs "
                      f"{_placement.format_cpu_list(ex.cpus)} ({ex.cpu_error})",
                      RuntimeWarning, stacklevel=3)
    return ex


def default_executor() -> _core.Executor:
    global _default
    with _lock:
        if _default is None:
            _default = new_executor(default_threads(), default_nice(), placement().cpus)
        return _default


def set_num_threads(n: int) -> None:
    """Replace the default thread pool with one of ``n`` threads.

    Reads of nodes opened without ``threads=`` (and loaders without ``threads``) run on the
    default pool. Its size otherwise comes from ``ZARRFLOW_NUM_THREADS``, else the CPUs this
    process may run on, divided among the ranks on the node (``LOCAL_WORLD_SIZE``).

    Parameters
    ----------
    n : int
        Threads of the new pool.

    Raises
    ------
    ValueError
        ``n`` is below 1.

    Examples
    --------
    >>> zarrflow.set_num_threads(8)
    """
    global _default
    if n < 1:
        raise ValueError(f"need at least one thread, got {n}")
    with _lock:
        _default = new_executor(n, default_nice(), placement().cpus)


def make_executor(threads: int | None) -> _core.Executor:
    return default_executor() if threads is None else new_executor(int(threads), default_nice())


def thread_info() -> dict:
    """The default thread pool: its threads, their niceness, and the CPUs they run on.

    Returns
    -------
    dict
        ``threads`` (running), ``nice``, ``cpus`` (a Linux CPU list such as ``"0-15"``, or
        ``None`` when the scheduler places them) and ``placement`` (why those CPUs, or why
        none: ``ZARRFLOW_THREAD_CPUS``, the GPU's NUMA node shared by N local ranks, a binding
        the launcher made).

    Examples
    --------
    >>> zarrflow.thread_info()["threads"] >= 1
    True
    """
    ex = default_executor()
    placed = placement()
    return {"threads": ex.threads, "nice": ex.nice,
            "cpus": _placement.format_cpu_list(ex.cpus) if ex.cpus else None,
            "placement": placed.reason + (f"; not applied: {ex.cpu_error}" if ex.cpu_error else "")}
