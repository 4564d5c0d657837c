"""PyTorch adapter: an IterableDataset over a zarrflow Loader::

    ds = zarrflow.torch.Dataset("era5.zarr", ["2m_temperature", "u_component_of_wind@500"],
                                batch_size=16)
    for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0): ...

The loader batches, prefetches and decodes on its own, so DataLoader needs no worker processes
(batch_size=None, num_workers=0). Rank and world size come from torch.distributed when it is
initialised. set_epoch / state_dict / load_state_dict give deterministic shuffles and mid-epoch
resume.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import torch.utils.data

from .loader import Loader


class Dataset(torch.utils.data.IterableDataset):
    """A :class:`zarrflow.Loader` as a PyTorch ``IterableDataset`` of whole batches.

    Parameters
    ----------
    dataset : DatasetSpec, or str, os.PathLike or Group
        As for :class:`zarrflow.Loader`.
    variables : list of str, optional
        As for :class:`zarrflow.Loader` (with a store).
    **kwargs
        Every other :class:`zarrflow.Loader` argument (``batch_size``, ``sampler``,
        ``options`` or their keywords). Batches are torch tensors.

    Attributes
    ----------
    loader : zarrflow.Loader
        The loader that makes the batches.

    Examples
    --------
    >>> ds = zarrflow.torch.Dataset("era5.zarr", ["data@2m_temperature"], batch_size=16)
    >>> dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0)
    """

    def __init__(self, dataset: Any, variables: Sequence[str] | None = None, **kwargs: Any):
        super().__init__()
        if "options" not in kwargs:
            kwargs.setdefault("output", "torch")
        self.loader = Loader(dataset, variables, **kwargs)

    def __iter__(self) -> Iterator[dict]:
        """One pass over the loader's batches (see :meth:`zarrflow.Loader.__iter__`).

        Raises
        ------
        RuntimeError
            Iterated in a ``DataLoader`` worker process (use ``num_workers=0``).
        """
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 0:
            raise RuntimeError("zarrflow.torch.Dataset prefetches and decodes by itself: use "
                               "DataLoader(ds, batch_size=None, num_workers=0)")
        return iter(self.loader)

    def __len__(self) -> int:
        """Batches per epoch on this rank."""
        return len(self.loader)

    def set_epoch(self, epoch: int) -> None:
        """Use epoch ``epoch``'s order from the next pass on (:meth:`zarrflow.Loader.set_epoch`).

        Parameters
        ----------
        epoch : int
            The epoch number.
        """
        self.loader.set_epoch(epoch)

    def state_dict(self) -> dict:
        """Where the loader is (:meth:`zarrflow.Loader.state_dict`).

        Returns
        -------
        dict
        """
        return self.loader.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Go on where ``state`` was saved (:meth:`zarrflow.Loader.load_state_dict`).

        Parameters
        ----------
        state : dict
            From :meth:`state_dict`.
        """
        self.loader.load_state_dict(state)

    def stats(self) -> dict:
        """The loader's counters (:meth:`zarrflow.Loader.stats`).

        Returns
        -------
        dict
        """
        return self.loader.stats()
