"""Where the decoding threads run (zarrflow/_placement.py): each torchrun rank on the CPUs of its
GPU's NUMA node, shared with the ranks whose GPUs sit on the same node, on a fake sysfs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from zarrflow import _core, _placement, _threads

# Four GPUs on two NUMA nodes of 16 cores each, hyperthreads numbered 32 above their core (as
# Linux numbers them on two-socket Intel and AMD servers).
BUS = ["00000000:1B:00.0", "00000000:3D:00.0", "00000000:9A:00.0", "00000000:BC:00.0"]
NODE0 = "0-15,32-47"
NODE1 = "16-31,48-63"


def fake_sys(root: Path, nodes: dict[str, str | None]) -> Path:
    for bus, cpulist in nodes.items():
        dev = root / "bus/pci/devices" / _placement.sysfs_bus_id(bus)
        dev.mkdir(parents=True)
        if cpulist is not None:
            (dev / "local_cpulist").write_text(cpulist + "\n")
    for cpu in range(64):
        topo = root / f"devices/system/cpu/cpu{cpu}/topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(str(cpu % 32 // 16))
        (topo / "core_id").write_text(str(cpu % 16))
    return root


@pytest.fixture
def node(monkeypatch, tmp_path):
    """A 64-CPU machine whose process may use every CPU, with LOCAL_WORLD_SIZE ranks."""
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    for var in ("ZARRFLOW_THREAD_CPUS", "LOCAL_WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    root = fake_sys(tmp_path, {BUS[0]: NODE0, BUS[1]: NODE0, BUS[2]: NODE1, BUS[3]: NODE1})

    def rank(r: int, ranks: int = 4, bus=BUS) -> _placement.Placement:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", str(ranks))
        monkeypatch.setenv("LOCAL_RANK", str(r))
        return _placement.choose(bus, root)
    return rank


def test_cpu_lists_read_and_write():
    assert _placement.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert _placement.format_cpu_list([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    for bad in ("", "a", "3-1", "1-", ","):
        with pytest.raises(ValueError, match="CPU list"):
            _placement.parse_cpu_list(bad)


def test_cuda_bus_ids_become_sysfs_names():
    assert _placement.sysfs_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert _placement.sysfs_bus_id("0000:c1:00.1") == "0000:c1:00.1"


def test_four_ranks_split_two_nodes_by_whole_cores(node):
    got = [node(r).cpus for r in range(4)]
    assert _placement.format_cpu_list(got[0]) == "0-7,32-39"  # cores 0-7 and their siblings
    assert _placement.format_cpu_list(got[1]) == "8-15,40-47"
    assert _placement.format_cpu_list(got[2]) == "16-23,48-55"
    assert _placement.format_cpu_list(got[3]) == "24-31,56-63"
    assert "GPU 2's NUMA node (CPUs 16-31,48-63), shared by 2 of 4 local ranks" in node(2).reason


def test_two_ranks_on_two_nodes_take_a_node_each(node):
    # GPUs 0 and 2 visible (CUDA_VISIBLE_DEVICES=0,2): one rank per socket.
    two = [BUS[0], BUS[2]]
    assert _placement.format_cpu_list(node(0, 2, two).cpus) == NODE0
    assert _placement.format_cpu_list(node(1, 2, two).cpus) == NODE1


def test_more_ranks_than_cores_share_them(node, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 32}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # Three ranks on one GPU, two CPUs (one core) for them: each gets one, the third shares.
    got = [node(r, 3, BUS[:1]).cpus for r in range(3)]
    assert got == [(0,), (32,), (0,)]


def test_one_process_is_left_to_the_scheduler(node):
    placed = node(0, 1)
    assert placed.cpus is None and "one process" in placed.reason


def test_a_binding_the_launcher_made_is_kept(node, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    placed = node(0)
    assert placed.cpus is None and "bound to CPUs 0-7 already" in placed.reason


def test_a_gpu_without_numa_information_is_left_to_the_scheduler(tmp_path, monkeypatch, node):
    root = fake_sys(tmp_path / "other", {BUS[0]: None, BUS[1]: None})
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    placed = _placement.choose(BUS[:2], root)
    assert placed.cpus is None and "GPU 1 has no NUMA information" in placed.reason
    placed = _placement.choose([], root)
    assert placed.cpus is None and "no GPU visible" in placed.reason


def test_the_environment_decides_first(node, monkeypatch):
    monkeypatch.setenv("ZARRFLOW_THREAD_CPUS", "none")
    assert node(0).cpus is None
    monkeypatch.setenv("ZARRFLOW_THREAD_CPUS", "4-5,9")
    assert node(0).cpus == (4, 5, 9)
    monkeypatch.setenv("ZARRFLOW_THREAD_CPUS", "half")
    with pytest.raises(ValueError, match="ZARRFLOW_THREAD_CPUS"):
        node(0)


def test_the_default_pool_has_a_thread_per_placed_cpu(monkeypatch):
    monkeypatch.delenv("ZARRFLOW_NUM_THREADS", raising=False)
    monkeypatch.setattr(_threads, "_placed", _placement.Placement((0, 1, 2), "test"))
    assert _threads.default_threads() == 3
    monkeypatch.setenv("ZARRFLOW_NUM_THREADS", "5")  # the thread count override still wins
    assert _threads.default_threads() == 5


def allowed_cpus_of_threads() -> list[str]:
    out = []
    for task in Path("/proc/self/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out.append(line.split(":", 1)[1].strip())
    return out


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_an_executor_keeps_its_threads_on_its_cpus():
    cpu = max(os.sched_getaffinity(0))
    before = allowed_cpus_of_threads().count(str(cpu))
    ex = _core.Executor(2, 0, [cpu])
    assert ex.cpus == [cpu]
    deadline = time.monotonic() + 5
    while allowed_cpus_of_threads().count(str(cpu)) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the threads place themselves when they start
    assert allowed_cpus_of_threads().count(str(cpu)) >= before + 2
    assert ex.cpu_error == ""
    info = _threads.thread_info()
    assert info["threads"] >= 1 and "placement" in info
