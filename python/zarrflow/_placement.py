"""Where a rank's decoding threads run: on the CPUs next to its GPU, shared with the other local
ranks whose GPUs hang off the same NUMA node.

torchrun starts one process per GPU. Left alone, every rank's pool spreads over every socket: its
threads stage chunks into pinned memory across the link between sockets, and compete with the
other ranks' threads for the same cores. ``ZARRFLOW_THREAD_CPUS`` says what to do:

- ``auto`` (default): with more than one local rank (``LOCAL_WORLD_SIZE``), each keeps its pool
  on the CPUs of its GPU's NUMA node (``/sys/bus/pci/devices/<GPU>/local_cpulist``), divided
  among the local ranks whose GPUs share that node, whole cores to each (hyperthread siblings
  stay together). A process already bound to fewer CPUs than the machine has (Slurm, numactl,
  torchrun's NUMA binding) keeps its binding; one rank alone, or a GPU without NUMA information,
  leaves the threads to the scheduler.
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

ENV = "ZARRFLOW_THREAD_CPUS"


@dataclass(frozen=True)
class Placement:
    cpus: tuple[int, ...] | None  # None: wherever the scheduler puts the threads
    reason: str


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


def core_of(cpu: int, sys_root: Path) -> tuple[int, int]:
    """(package, core) of a CPU, so hyperthread siblings sort together; (0, cpu) if unknown."""
    topo = sys_root / f"devices/system/cpu/cpu{cpu}/topology"
    try:
        return (int((topo / "physical_package_id").read_text()), int((topo / "core_id").read_text()))
    except (OSError, ValueError):
        return (0, cpu)


def share_of(cpus: list[int], part: int, parts: int, sys_root: Path) -> list[int]:
    """Part ``part`` of ``parts`` of ``cpus``: whole cores, contiguous, as even as can be."""
    cores: dict[tuple[int, int], list[int]] = {}
    for c in sorted(cpus, key=lambda c: (core_of(c, sys_root), c)):
        cores.setdefault(core_of(c, sys_root), []).append(c)
    units = list(cores.values()) if len(cores) >= parts else [[c] for c in sorted(cpus)]
    if len(units) < parts:  # fewer CPUs than ranks: ranks share them
        return units[part % len(units)]
    lo, hi = part * len(units) // parts, (part + 1) * len(units) // parts
    return sorted(c for unit in units[lo:hi] for c in unit)


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


def choose(bus_ids: list[str], sys_root: Path = Path("/sys")) -> Placement:
    """The placement of this process's default pool, for GPUs with these CUDA PCI bus ids."""
    setting = os.environ.get(ENV, "auto").strip() or "auto"
    if setting == "none":
        return Placement(None, f"{ENV}=none")
    if setting != "auto":
        try:
            return Placement(tuple(parse_cpu_list(setting)), f"{ENV}={setting}")
        except ValueError:
            raise ValueError(f"{ENV} must be 'auto', 'none' or a CPU list such as 0-15,64-79, "
                             f"got {setting!r}") from None
    mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not mine:
        return Placement(None, "this system does not report CPU affinity")
    if len(mine) < (os.cpu_count() or len(mine)):
        return Placement(None, f"the process is bound to CPUs {format_cpu_list(mine)} already")
    ranks = max(1, _int_env("LOCAL_WORLD_SIZE", 1))
    if ranks == 1:
        return Placement(None, "one process on this node")
    if not bus_ids:
        return Placement(None, f"{ranks} local ranks, no GPU visible")
    rank = min(max(0, _int_env("LOCAL_RANK", 0)), ranks - 1)
    node_of = [gpu_local_cpus(bus_ids[r % len(bus_ids)], sys_root) for r in range(ranks)]
    gpu = current_gpu(rank, len(bus_ids))
    node = gpu_local_cpus(bus_ids[gpu], sys_root)
    if node is None:
        return Placement(None, f"GPU {gpu} has no NUMA information")
    node = [c for c in node if c in set(mine)]
    if not node:
        return Placement(None, f"GPU {gpu}'s NUMA node has none of this process's CPUs")
    peers = [r for r in range(ranks) if node_of[r] is not None and set(node_of[r]) & set(node)]
    part = peers.index(rank) if rank in peers else 0
    cpus = share_of(node, part, max(1, len(peers)), sys_root)
    return Placement(tuple(cpus), f"GPU {gpu}'s NUMA node (CPUs {format_cpu_list(node)}), "
                                  f"shared by {len(peers)} of {ranks} local ranks")
