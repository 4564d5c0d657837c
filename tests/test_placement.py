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
        return _placement.choose(lambda: bus, root)
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


def test_ranks_share_the_node_of_their_gpu(node):
    got = [node(r) for r in range(4)]
    assert [_placement.format_cpu_list(p.cpus) for p in got] == [NODE0, NODE0, NODE1, NODE1]
    assert [p.threads for p in got] == [16, 16, 16, 16]  # 32 CPUs per node, two ranks each
    assert "GPU 2's NUMA node (CPUs 16-31,48-63), shared with 1 other local rank(s)" in got[2].reason


def test_two_ranks_on_two_nodes_take_a_node_each(node):
    # GPUs 0 and 2 visible (CUDA_VISIBLE_DEVICES=0,2): one rank per socket.
    two = [BUS[0], BUS[2]]
    assert [(_placement.format_cpu_list(p.cpus), p.threads) for p in (node(0, 2, two), node(1, 2, two))] \
        == [(NODE0, 32), (NODE1, 32)]


def test_more_ranks_than_cpus_get_a_thread_each(node, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 16}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    # Three ranks on GPU 0, whose node has one of the two CPUs this process may use.
    got = [node(r, 3, BUS[:1]) for r in range(3)]
    assert all(p.cpus == (0,) and p.threads == 1 for p in got)


def test_one_numa_node_for_every_gpu_is_left_to_the_scheduler(tmp_path, monkeypatch, node):
    root = fake_sys(tmp_path / "vm", {b: "0-63" for b in BUS})
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "3")
    placed = _placement.choose(lambda: BUS, root)
    assert placed.cpus is None and "one NUMA node (CPUs 0-63)" in placed.reason


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
    placed = _placement.choose(lambda: BUS[:2], root)
    assert placed.cpus is None and "GPU 1 has no NUMA information" in placed.reason
    placed = _placement.choose(lambda: [], root)
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
    monkeypatch.setattr(_threads, "_placed", _placement.Placement((0, 1, 2, 3), "test", 2))
    assert _threads.default_threads() == 2  # the rank's share of its node
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


def test_one_process_never_asks_for_the_gpus(node, monkeypatch):
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")

    def gpus():
        raise AssertionError("CUDA queried for a process alone")
    assert _placement.choose(gpus).cpus is None


def test_local_ranks_and_binding_as_the_thread_count_and_the_placement_read_them(monkeypatch):
    for value, ranks in (("", 1), ("four", 1), ("0", 1), ("4", 4)):
        monkeypatch.setenv("LOCAL_WORLD_SIZE", value)
        assert _placement.local_ranks() == ranks, value
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert _placement.bound_already([0, 1, 2, 3])
    assert not _placement.bound_already(list(range(8)))
    assert not _placement.bound_already([])  # the system does not say: not bound
