"""The default decode thread count: the environment's override, and the node's cores shared
between the ranks torchrun starts on it."""

import os

import pytest

from zarrflow import _threads


@pytest.fixture
def cores(monkeypatch):
    """Pretend the machine has `machine` cores and the process may run on `mine` of them."""
    def set_(machine: int, mine: int):
        monkeypatch.setattr(os, "cpu_count", lambda: machine)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(mine)), raising=False)
    monkeypatch.delenv("ZARRFLOW_NUM_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    # No GPU to place threads by (tests/test_placement.py covers placement), chosen afresh.
    monkeypatch.setattr(_threads, "_gpu_bus_ids", lambda: [])
    monkeypatch.setattr(_threads, "_placed", None)
    return set_


def test_one_process_gets_every_core(cores):
    cores(32, 32)
    assert _threads.default_threads() == 32


def test_ranks_on_a_node_share_its_cores(cores, monkeypatch):
    cores(32, 32)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert _threads.default_threads() == 16
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    assert _threads.default_threads() == 4
    cores(4, 4)
    assert _threads.default_threads() == 1  # never none


def test_a_process_bound_to_its_share_is_not_divided_again(cores, monkeypatch):
    cores(32, 16)  # e.g. Slurm or torchrun's NUMA binding gave this rank half the node
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert _threads.default_threads() == 16


@pytest.mark.parametrize("value", ["", "x", "0", "-3"])
def test_odd_local_world_sizes_divide_by_one(cores, monkeypatch, value):
    cores(8, 8)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", value)
    assert _threads.default_threads() == 8


def test_the_environment_override_wins(cores, monkeypatch):
    cores(32, 32)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("ZARRFLOW_NUM_THREADS", "5")
    assert _threads.default_threads() == 5
    monkeypatch.setenv("ZARRFLOW_NUM_THREADS", "0")
    with pytest.raises(ValueError, match="ZARRFLOW_NUM_THREADS"):
        _threads.default_threads()
