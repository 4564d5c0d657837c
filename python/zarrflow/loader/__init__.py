"""Training batches from a Zarr group: the Loader and its three parts.

The parts follow PyTorch's split:

- :class:`DatasetSpec` (what a sample is, like a ``Dataset``): channels declared by name —
  ``"2m_temperature"``, ``"u_component_of_wind@500"`` (a level), ``"data@z500"`` (a label of a
  stacked array) — read from the store as they are, on a common grid; time windows (``x`` holds
  the times t-h+1 … t, ``y`` the times t+lead … t+lead+k-1), crops and spatial windows, a time
  range, normalisation statistics and CF decoding.
- :class:`Sampler` (their order, like ``DistributedSampler``): shuffles that are a function of
  (seed, epoch), equal disjoint shares per rank, ``set_epoch``, ``state_dict``.
- :class:`LoaderOptions` (how, like ``DataLoader``'s settings): device, output type, dtype,
  workers, prefetch, decoding and caches, each with a default that works on any machine.

:class:`Loader` makes the batches; ``Loader(store, variables, **keywords)`` builds the three
parts from keywords.
"""

from ._errors import LoaderError, MissingChunkError
from .loader import Loader
from .options import LoaderOptions
from .sampler import Sampler
from .spec import DatasetSpec
from .stats import compute_stats, stored_stats

__all__ = ["DatasetSpec", "Loader", "LoaderError", "LoaderOptions", "MissingChunkError",
           "Sampler", "compute_stats", "stored_stats"]
