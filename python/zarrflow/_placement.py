"""Where a rank's decoding threads run: on the CPUs of its GPU's NUMA node.

torchrun starts one process per GPU. On a machine of several NUMA nodes (sockets), a rank whose
threads spread over every node stages chunks into pinned memory across the link between them.
``ZARRFLOW_THREAD_CPUS`` says what to do:

- ``auto`` (default): with more than one local rank (``LOCAL_WORLD_SIZE``) and GPUs on different
  NUMA nodes, each rank keeps its pool on the CPUs of its GPU's node
  (``/sys/bus/pci/devices/<GPU>/local_cpulist``), shared with the local ranks whose GPUs are on
  the same node: one thread per CPU of the node divided by those ranks. Within a node the
  scheduler places them: disjoint per-rank CPU sets cost 5% of four loaders' throughput on a
  one-node machine (docs/performance.md). One NUMA node, one rank alone, a GPU without NUMA
  information, or a process already bound to fewer CPUs than the machine has (Slurm, numactl,
  torchrun's NUMA binding) leave the threads where they are.
- ``none``: the threads run wherever the scheduler puts them.
- a CPU list such as ``0-15,64-79``: the threads run there.

A rank's GPU is the one PyTorch made current when it has initialised CUDA, else the local rank
modulo the visible GPUs (torchrun's convention); other ranks' GPUs are taken by the convention.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ENV = "ZARRFLOW_THREAD_CPUS"


@dataclass(frozen=True)
class Placement:
    cpus: tuple[int, ...] | None  # None: wherever the scheduler puts the threads
    reason: str
    threads: int | None = None  # this rank's share of those CPUs; None: one per CPU


def parse_cpu_list(text: str) -> list[int]:
    """CPU numbers of a Linux CPU list (``0-3,8,10-11``), in order, without repeats."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"not a CPU list: {text!r}")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"not a CPU list: {text!r}")
        out.extend(c for c in range(first, last + 1) if c not in out)
    if not out:
        raise ValueError(f"not a CPU list: {text!r}")
    return out


def format_cpu_list(cpus) -> str:
    """The shortest Linux CPU list of ``cpus`` (``0-3,8``)."""
    cpus = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        runs.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(runs)


def sysfs_bus_id(cuda_bus_id: str) -> str:
    """CUDA's PCI bus id (``00000000:1B:00.0``) as sysfs names the device (``0000:1b:00.0``)."""
    domain, bus, rest = cuda_bus_id.strip().split(":")
    dev, fn = rest.split(".")
    return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(dev, 16):02x}.{int(fn, 16):x}"


def gpu_local_cpus(cuda_bus_id: str, sys_root: Path) -> list[int] | None:
    """The CPUs of the NUMA node the GPU hangs off, or None when sysfs does not say."""
    try:
        path = sys_root / "bus/pci/devices" / sysfs_bus_id(cuda_bus_id) / "local_cpulist"
        return parse_cpu_list(path.read_text())
    except (OSError, ValueError):
        return None


def current_gpu(local_rank: int, gpus: int) -> int:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - a torch without CUDA, or a broken one: use the convention
        pass
    return local_rank % gpus


def _int_env(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


def process_cpus() -> list[int]:
    """The CPUs this process may run on, sorted ([] where the system does not say)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def bound_already(cpus: list[int]) -> bool:
    """Whether the process may run on fewer CPUs than the machine has: Slurm, numactl or a
    launcher's NUMA binding placed it, and those CPUs are its share."""
    return 0 < len(cpus) < (os.cpu_count() or len(cpus))


def local_ranks() -> int:
    """Processes on this node (torchrun's LOCAL_WORLD_SIZE); 1 when unset or not a number."""
    return max(1, _int_env("LOCAL_WORLD_SIZE", 1))


def choose(gpus: Callable[[], list[str]], sys_root: Path = Path("/sys")) -> Placement:
    """The placement of this process's default pool. ``gpus`` gives the visible GPUs' CUDA PCI
    bus ids; it is called only with several local ranks, so that a process alone never
    initialises CUDA for it."""
    setting = os.environ.get(ENV, "auto").strip() or "auto"
    if setting == "none":
        return Placement(None, f"{ENV}=none")
    if setting != "auto":
        try:
            return Placement(tuple(parse_cpu_list(setting)), f"{ENV}={setting}")
        except ValueError:
            raise ValueError(f"{ENV} must be 'auto', 'none' or a CPU list such as 0-15,64-79, "
                             f"got {setting!r}") from None
    mine = process_cpus()
    if not mine:
        return Placement(None, "this system does not report CPU affinity")
    if bound_already(mine):
        return Placement(None, f"the process is bound to CPUs {format_cpu_list(mine)} already")
    ranks = local_ranks()
    if ranks == 1:
        return Placement(None, "one process on this node")
    bus_ids = gpus()
    if not bus_ids:
        return Placement(None, f"{ranks} local ranks, no GPU visible")
    rank = min(max(0, _int_env("LOCAL_RANK", 0)), ranks - 1)
    allowed = set(mine)
    node_of = [gpu_local_cpus(bus_ids[r % len(bus_ids)], sys_root) for r in range(ranks)]
    node_of = [None if n is None else tuple(c for c in n if c in allowed) or None for n in node_of]
    gpu = current_gpu(rank, len(bus_ids))
    node = gpu_local_cpus(bus_ids[gpu], sys_root)
    node = None if node is None else tuple(c for c in node if c in allowed) or None
    if node is None:
        return Placement(None, f"GPU {gpu} has no NUMA information")
    if set(node) == allowed:
        return Placement(None, f"one NUMA node (CPUs {format_cpu_list(node)}) for all GPUs")
    peers = sum(1 for n in node_of if n is not None and set(n) == set(node)) or 1
    return Placement(node, f"GPU {gpu}'s NUMA node (CPUs {format_cpu_list(node)}), shared with "
                           f"{peers - 1} other local rank(s)", max(1, len(node) // peers))
