"""The order of the samples: deterministic shuffles, DDP shards, epochs and resume.

:class:`Sampler` plays the part of PyTorch's ``DistributedSampler``: each epoch's order is a
function of ``(seed, epoch)`` only, every rank gets a disjoint share of equal length, and
``set_epoch`` / ``state_dict`` / ``load_state_dict`` work as in PyTorch.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from ._errors import LoaderError

SHUFFLES = (False, True, "global", "block")


def epoch_order(samples: np.ndarray, *, seed: int, epoch: int, shuffle: str | bool,
                block: int = 8, buffer: int = 64) -> np.ndarray:
    """The order of one epoch, a function of (seed, epoch) only.

    shuffle=True/"global": a permutation. shuffle="block": blocks of `block` neighbouring samples
    are permuted, then mixed through a `buffer`-sized shuffle buffer — reads stay chunk-friendly
    (neighbouring times share chunks) while batches still mix the whole epoch over time.
    """
    if not shuffle:
        return samples.copy()
    rng = np.random.default_rng([seed, epoch])
    if shuffle is True or shuffle == "global":
        return samples[rng.permutation(len(samples))]
    if shuffle != "block":
        raise LoaderError(f"shuffle must be False, True, 'global' or 'block', got {shuffle!r}")
    blocks = [samples[i:i + block] for i in range(0, len(samples), block)]
    stream = (np.concatenate([blocks[i] for i in rng.permutation(len(blocks))]) if blocks
              else samples)
    out, pool = [], []
    for s in stream:
        pool.append(s)
        if len(pool) >= buffer:
            out.append(pool.pop(int(rng.integers(len(pool)))))
    while pool:
        out.append(pool.pop(int(rng.integers(len(pool)))))
    return np.asarray(out, dtype=samples.dtype)


def shard(order: np.ndarray, rank: int, world_size: int, drop_last: bool) -> np.ndarray:
    """Rank `rank`'s disjoint share; every rank gets the same count (truncate or pad by wrap)."""
    if not 0 <= rank < world_size:
        raise LoaderError(f"rank {rank} is not in [0, {world_size})")
    n = len(order)
    if drop_last:
        order = order[: n // world_size * world_size]
    elif n % world_size:
        order = np.concatenate([order, order[: world_size - n % world_size]])
    return order[rank::world_size]


def rank_and_world_size(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """The given rank and world size; those not given come from torch.distributed when it is
    initialised, else 0 and 1."""
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return (dist.get_rank() if rank is None else int(rank),
                    dist.get_world_size() if world_size is None else int(world_size))
    except ImportError:
        pass
    return (int(rank or 0)), (int(world_size or 1))


class Sampler:
    """The order of a dataset's samples on this rank, epoch by epoch.

    Like PyTorch's ``DistributedSampler``: the order of an epoch is a function of ``seed`` and
    the epoch number only, so every rank computes the same permutation and takes every
    ``world_size``-th sample of it from position ``rank``. Ranks get equal counts: with
    ``drop_last=False`` (the default) the order is padded with its own first samples up to a
    multiple of ``world_size`` (a few samples are seen twice per epoch), with ``drop_last=True``
    the samples past the last multiple are left out, and the Loader also drops a last batch
    smaller than ``batch_size``.

    Parameters
    ----------
    dataset : DatasetSpec or int
        What is sampled (or the number of samples).
    shuffle : bool or {"global", "block"}, default True
        ``False``: in order. ``True`` or ``"global"``: a permutation of all samples.
        ``"block"``: blocks of ``block`` neighbouring samples are permuted, then mixed through
        a shuffle buffer of ``buffer`` samples: neighbouring times share chunks, so reads stay
        chunk-friendly while batches still mix the whole epoch.
    seed : int, default 0
        The seed of every epoch's order.
    rank, world_size : int, optional
        This process's rank and the number of ranks. Default: from ``torch.distributed`` when it
        is initialised, else 0 and 1.
    drop_last : bool, default False
        False: pad to equal shares (as ``DistributedSampler``) and keep a last, smaller batch
        (as ``DataLoader``). True: drop the samples left over after an equal split and the
        last incomplete batch.
    block : int, default 8
        Samples per block for ``shuffle="block"``.
    buffer : int, default 64
        Size of the shuffle buffer for ``shuffle="block"`` (1: blocks in permuted order).

    Attributes
    ----------
    epoch : int
        The epoch :meth:`indices` and iteration use (see :meth:`set_epoch`).

    Raises
    ------
    LoaderError
        An unknown ``shuffle``, ``block`` or ``buffer`` below 1, or a rank outside
        ``[0, world_size)``.

    Examples
    --------
    >>> sampler = zarrflow.Sampler(10, shuffle=False, rank=1, world_size=4)
    >>> list(sampler)       # 10 samples padded to 12: rank 1 takes 1, 5 and 9
    [1, 5, 9]
    >>> zarrflow.Sampler(10, shuffle=False, rank=1, world_size=4, drop_last=True).indices()
    array([1, 5])
    >>> sampler = zarrflow.Sampler(spec, shuffle="block", seed=1)
    >>> loader = zarrflow.Loader(spec, batch_size=4, sampler=sampler)
    >>> for epoch in range(10):
    ...     loader.set_epoch(epoch)       # the sampler's epoch: a new order
    ...     for batch in loader: ...
    """

    def __init__(self, dataset: Any, *, shuffle: bool | str = True, seed: int = 0,
                 rank: int | None = None, world_size: int | None = None,
                 drop_last: bool = False, block: int = 8, buffer: int = 64):
        self.num_samples = dataset if isinstance(dataset, int) else len(dataset)
        if isinstance(shuffle, (bool, np.bool_)):
            shuffle = bool(shuffle)
        if not any(shuffle is s or (isinstance(s, str) and shuffle == s) for s in SHUFFLES):
            raise LoaderError(f"shuffle must be False, True, 'global' or 'block', got {shuffle!r}")
        if block < 1 or buffer < 1:
            raise LoaderError(f"block and buffer must be >= 1, got {block} and {buffer}")
        self.shuffle, self.seed, self.block, self.buffer = shuffle, int(seed), block, buffer
        self.rank, self.world_size = rank_and_world_size(rank, world_size)
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise LoaderError(f"rank {self.rank} is not in [0, {self.world_size})")
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self.epoch_changes = 0  # set_epoch calls (the Loader watches them)

    def __len__(self) -> int:
        """Samples this rank gets per epoch."""
        n, w = self.num_samples, self.world_size
        return n // w if self.drop_last else -(-n // w)

    def __iter__(self) -> Iterator[int]:
        """This rank's sample ids for the current epoch."""
        return iter(self.indices().tolist())

    def __repr__(self) -> str:
        return (f"Sampler({self.num_samples} samples, shuffle={self.shuffle!r}, seed={self.seed}, "
                f"rank={self.rank}, world_size={self.world_size}, drop_last={self.drop_last}, "
                f"epoch={self.epoch})")

    def indices(self, epoch: int | None = None) -> np.ndarray:
        """This rank's sample ids for ``epoch`` (default: the current one), in order.

        Parameters
        ----------
        epoch : int, optional
            The epoch; default :attr:`epoch`.

        Returns
        -------
        numpy.ndarray
            Sample ids (int64), ``len(self)`` of them.
        """
        order = epoch_order(np.arange(self.num_samples), seed=self.seed,
                            epoch=self.epoch if epoch is None else int(epoch),
                            shuffle=self.shuffle, block=self.block, buffer=self.buffer)
        return shard(order, self.rank, self.world_size, self.drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s order from the next pass on (call it before each epoch, as with
        ``DistributedSampler``; the same epoch gives the same order on every rank).

        Parameters
        ----------
        epoch : int
            The epoch number.
        """
        self.epoch = int(epoch)
        self.epoch_changes += 1

    def state_dict(self) -> dict:
        """The sampler's state: ``{"epoch", "seed"}`` (JSON-serialisable).

        Returns
        -------
        dict
        """
        return {"epoch": self.epoch, "seed": self.seed}

    def load_state_dict(self, state: dict) -> None:
        """Continue with the epoch saved in ``state``.

        Parameters
        ----------
        state : dict
            From :meth:`state_dict` (or the Loader's).

        Raises
        ------
        LoaderError
            When ``state`` was saved with another seed (its order would differ).
        """
        if state.get("seed", self.seed) != self.seed:
            raise LoaderError("state was saved with another seed")
        self.epoch = int(state["epoch"])
