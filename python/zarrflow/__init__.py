"""zarrflow: stream chunked, compressed Zarr datacubes into memory for ML training.

>>> import zarrflow
>>> ds = zarrflow.open("era5.zarr")          # a Group (or an Array), Zarr v2 or v3
>>> t2m = ds["2m_temperature"]
>>> x = t2m[0:4, ::2, ::2]                   # decoded in parallel straight into a NumPy array
"""

from . import errors
from ._api import Array, Group, open, open_array, open_group
from ._core import Tensor
from ._gpu import (
    build_info,
    cuda_available,
    cuda_status,
    gpu_memory_limit,
    memory_stats,
    nvcomp_status,
    release_memory,
    set_gpu_memory_limit,
)
from ._threads import set_num_threads, thread_info
from .loader import (
    DatasetSpec,
    Loader,
    LoaderError,
    LoaderOptions,
    MissingChunkError,
    Sampler,
    compute_stats,
    stored_stats,
)
from .errors import (
    ChecksumError,
    CorruptChunkError,
    InvalidArgumentError,
    MetadataError,
    NodeNotFoundError,
    PathEscapeError,
    StoreIOError,
    UnsupportedError,
    ZarrflowError,
    ZarrflowIndexError,
    ZarrflowMemoryError,
)

__version__ = "0.1.0"

__all__ = [
    "Array",
    "Group",
    "open",
    "open_array",
    "open_group",
    "set_num_threads",
    "thread_info",
    "Tensor",
    "Loader",
    "DatasetSpec",
    "Sampler",
    "LoaderOptions",
    "LoaderError",
    "MissingChunkError",
    "compute_stats",
    "stored_stats",
    "build_info",
    "cuda_available",
    "cuda_status",
    "nvcomp_status",
    "memory_stats",
    "release_memory",
    "set_gpu_memory_limit",
    "gpu_memory_limit",
    "errors",
    "ZarrflowError",
    "InvalidArgumentError",
    "MetadataError",
    "UnsupportedError",
    "CorruptChunkError",
    "ChecksumError",
    "NodeNotFoundError",
    "StoreIOError",
    "PathEscapeError",
    "ZarrflowIndexError",
    "ZarrflowMemoryError",
]
