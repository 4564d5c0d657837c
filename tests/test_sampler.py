"""Sampler: each epoch's order is a function of (seed, epoch), ranks get disjoint shares of equal
length (padded as DistributedSampler pads them, or truncated with drop_last), set_epoch and
state_dict work as in PyTorch."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrflow
from zarrflow.loader import LoaderError, Sampler
from zarrflow.loader.sampler import epoch_order, shard


def test_sampling_is_deterministic_and_ddp_shards_are_disjoint():
    samples = np.arange(103)
    a = epoch_order(samples, seed=1, epoch=2, shuffle=True)
    assert np.array_equal(a, epoch_order(samples, seed=1, epoch=2, shuffle=True))
    assert not np.array_equal(a, epoch_order(samples, seed=1, epoch=3, shuffle=True))
    assert sorted(a) == list(samples)
    for drop_last in (True, False):
        parts = [shard(a, r, 4, drop_last) for r in range(4)]
        assert len({len(p) for p in parts}) == 1  # equal counts: no rank waits on another
        union = np.concatenate(parts)
        if drop_last:
            assert len(set(union)) == len(union) == 100  # disjoint
        else:
            assert set(union) == set(samples) and len(union) == 104  # padded by wrap-around
    blocky = epoch_order(samples, seed=1, epoch=0, shuffle="block", block=8, buffer=16)
    assert sorted(blocky) == list(samples)
    # neighbours stay near each other: most consecutive picks are within a block's reach
    assert np.median(np.abs(np.diff(blocky))) < 40



@pytest.mark.parametrize("n, world", [(103, 4), (7, 2), (8, 4), (3, 5)])
def test_ranks_share_every_epoch_as_distributed_sampler_does(n, world):
    """drop_last=False: every sample on some rank, ranks padded to ceil(n / world) with the
    order's first samples; drop_last=True: disjoint shares of floor(n / world)."""
    for shuffle in (False, True, "block"):
        padded = [Sampler(n, shuffle=shuffle, seed=4, rank=r, world_size=world)
                  for r in range(world)]
        dropped = [Sampler(n, shuffle=shuffle, seed=4, rank=r, world_size=world, drop_last=True)
                   for r in range(world)]
        mine = [list(s) for s in padded]
        assert all(len(m) == len(s) == -(-n // world) for m, s in zip(mine, padded))
        assert sorted(set().union(*mine)) == list(range(n))
        order = epoch_order(np.arange(n), seed=4, epoch=0, shuffle=shuffle)
        extra = [int(i) for i in order[: world * len(mine[0]) - n]]  # the padding, in order
        assert sorted(sum(mine, [])) == sorted(list(range(n)) + extra)
        kept = [list(s) for s in dropped]
        assert all(len(k) == len(s) == n // world for k, s in zip(kept, dropped))
        flat = sum(kept, [])
        assert len(set(flat)) == len(flat) == n // world * world


def test_set_epoch_changes_the_order_and_the_same_epoch_repeats_it():
    s = Sampler(50, shuffle=True, seed=9)
    first = s.indices()
    assert np.array_equal(first, s.indices())  # no set_epoch: the same order again
    s.set_epoch(1)
    assert s.epoch == 1 and not np.array_equal(first, s.indices())
    assert np.array_equal(s.indices(epoch=0), first)
    other = Sampler(50, shuffle=True, seed=10)
    assert not np.array_equal(other.indices(), first)  # another seed, another order
    assert list(Sampler(5, shuffle=False)) == [0, 1, 2, 3, 4]


def test_state_dict_round_trips_and_refuses_another_seed():
    s = Sampler(20, seed=3)
    s.set_epoch(7)
    state = json.loads(json.dumps(s.state_dict()))
    assert state == {"epoch": 7, "seed": 3}
    fresh = Sampler(20, seed=3)
    fresh.load_state_dict(state)
    assert fresh.epoch == 7 and np.array_equal(fresh.indices(), s.indices())
    with pytest.raises(LoaderError, match="another seed"):
        Sampler(20, seed=4).load_state_dict(state)


@pytest.mark.parametrize("kwargs, match", [
    (dict(shuffle="random"), "shuffle must be False, True, 'global' or 'block'"),
    (dict(shuffle=1), "shuffle must be"),
    (dict(rank=2, world_size=2), r"rank 2 is not in \[0, 2\)"),
    (dict(rank=-1, world_size=2), r"rank -1 is not in \[0, 2\)"),
    (dict(block=0), "block and buffer must be >= 1"),
])
def test_bad_sampler_settings_fail_when_made(kwargs, match):
    with pytest.raises(LoaderError, match=match):
        Sampler(10, **kwargs)


def test_rank_and_world_size_come_from_torch_distributed_when_initialised(monkeypatch):
    import sys
    import types

    dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                 get_rank=lambda: 2, get_world_size=lambda: 3)
    torch = types.ModuleType("torch")
    torch.distributed = dist
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.distributed", dist)
    s = Sampler(10)
    assert (s.rank, s.world_size) == (2, 3)
    assert (Sampler(10, rank=0).rank, Sampler(10, rank=0).world_size) == (0, 3)
    assert (Sampler(10, rank=1, world_size=2).rank, Sampler(10, rank=1, world_size=2).world_size) \
        == (1, 2)


def test_repr_says_what_it_samples():
    assert repr(zarrflow.Sampler(10, shuffle="block", seed=2, rank=1, world_size=2)) == (
        "Sampler(10 samples, shuffle='block', seed=2, rank=1, world_size=2, drop_last=False, "
        "epoch=0)")
