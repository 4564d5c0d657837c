"""Training batches from a Zarr group: named-dimension samples, stacked channels, prefetch.

A :class:`Loader` turns a group of ERA5-like arrays into batches of (x, y) pairs for forecasting:
x holds the channels at times t-h+1 … t, y the same channels at t+lead … t+lead+k-1. Channels are
declared in order — ``["2m_temperature", "u_component_of_wind@500", "data@z500", ...]`` — and
read from the store as they are (no rewrite): ``name`` is a (time, lat, lon) array, ``name@500``
picks level 500 of a (time, level, lat, lon) array by its coordinate, ``name@label`` picks a
channel of a stacked (time, channel, lat, lon) array by its label (``channels`` attribute or
coordinate). Every channel must share the grid.

Each batch is one call into the C++ core: every (sample, time step, channel) region goes into
one pipeline that reads, decodes and scatters straight into the batch, fetching and decoding a
chunk once even when several samples need it (x at t+1 is y at t). With ``device="cuda"`` the
host threads decode as long as they keep up with the consumer and the GPU decoders take over
the rest (``host_decode_share="auto"``, ``_balance.DecodeBalance``): next to a model, decode
kernels slow its steps, while a loop that only reads wants every decoder it can get. ``workers``
background threads (each with its own CUDA stream; by default 3 on a GPU when its memory limit
leaves room, else 2) keep ``prefetch`` batches ready, in order: one batch's host work (reading,
checks) overlaps another's GPU work, and the consumer only waits when the store is slower than
training.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import json
import numbers
import os
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from . import _core, _gpu
from ._api import Array, Group, open as zf_open
from ._balance import DecodeBalance
from ._cf import CFAttributeError, CFDecoding, cf_decoding
from ._memory_plan import fit as fit_memory, refusal as memory_refusal
from ._prefetch import Gate, OrderedPrefetch
from .errors import StoreIOError, ZarrflowError


class LoaderError(ZarrflowError, ValueError):
    """A dataset spec or loader setting that cannot work (unknown variable, window too large...)."""


class MissingChunkError(ZarrflowError, LookupError):
    """missing="error" and a batch touched chunks that are not stored."""


# --------------------------------------------------------------------------------------------
# Dataset spec: channels → (array, fixed indices), a common grid
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Channel:
    name: str            # as declared: "u_component_of_wind@500"
    array: Array
    fixed: dict          # dim index → index (level / channel picked)
    time_axis: int
    spatial_axes: tuple  # the remaining axes, in order
    cf: CFDecoding | None = None  # how stored values decode (masks, packing); None: as stored

    def key(self, t: int | slice, spatial: Sequence[slice] | None = None) -> tuple:
        """The index into `array` of this channel at time(s) `t` (and a spatial region)."""
        key: list = [slice(None)] * self.array.ndim
        key[self.time_axis] = t
        for axis, idx in self.fixed.items():
            key[axis] = idx
        for axis, s in zip(self.spatial_axes, spatial or ()):
            key[axis] = s
        return tuple(key)


@dataclass
class DatasetSpec:
    group: Group
    channels: list[Channel]
    time_dim: str
    spatial_dims: tuple[str, ...]
    spatial_shape: tuple[int, ...]
    ntime: int
    times: np.ndarray | None = None

    @classmethod
    def build(cls, group: Group | str | os.PathLike, variables: Sequence[str], *,
              time_dim: str = "time", level_dim: str = "level",
              channel_dim: str = "channel",
              storage_options: dict | None = None, mask_and_scale: bool = True,
              use_zarr_fill_value_as_mask: bool | None = None) -> "DatasetSpec":
        if not isinstance(group, Group):
            group = zf_open(group, storage_options=storage_options)
            if not isinstance(group, Group):
                raise LoaderError("the loader reads a Zarr group (arrays and coordinates)")
        if not variables:
            raise LoaderError("no variables selected")
        channels = [_resolve(group, v, time_dim, level_dim, channel_dim) for v in variables]
        first = channels[0]
        sdims = tuple(first.array.dims[a] for a in first.spatial_axes)
        sshape = tuple(first.array.shape[a] for a in first.spatial_axes)
        ntime = first.array.shape[first.time_axis]
        for ch in channels[1:]:
            dims = tuple(ch.array.dims[a] for a in ch.spatial_axes)
            shape = tuple(ch.array.shape[a] for a in ch.spatial_axes)
            if dims != sdims or shape != sshape:
                raise LoaderError(f"variables do not share a grid: {first.name} is {dict(zip(sdims, sshape))}, "
                                  f"{ch.name} is {dict(zip(dims, shape))}")
            if ch.array.shape[ch.time_axis] != ntime:
                raise LoaderError(f"variables differ in length along {time_dim!r}: {first.name} has "
                                  f"{ntime}, {ch.name} has {ch.array.shape[ch.time_axis]}")
        channels = [dataclasses.replace(ch, cf=_channel_decoding(
            ch, mask_and_scale, use_zarr_fill_value_as_mask)) for ch in channels]
        times = group[time_dim][...] if time_dim in group.keys() else None
        return cls(group, channels, time_dim, sdims, sshape, ntime, times)


LOADABLE = "int8..int64, uint8..uint64, float16/32/64 and bfloat16"


def _channel_decoding(ch: Channel, mask_and_scale: bool,
                      use_zarr_fill_value_as_mask: bool | None) -> CFDecoding | None:
    """The channel's CF decoding (see _cf), after checking that its array is numeric."""
    arr = ch.array
    try:
        dtype = arr.dtype
    except Exception:  # a data type NumPy has no name for
        dtype = None
    if dtype is None or not (dtype.kind in "iuf" or dtype.name == "bfloat16"):
        shown = dtype if dtype is not None else arr._h.dtype
        raise LoaderError(f"{ch.name}: {arr.path!r} holds {shown} values, which the loader "
                          f"cannot load (it reads {LOADABLE} arrays)")
    try:
        return cf_decoding(arr.attrs, dtype, arr.zarr_format, arr.fill_value,
                           mask_and_scale=mask_and_scale,
                           use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
    except CFAttributeError as e:
        raise LoaderError(f"{ch.name}: {arr.path!r}: {e}") from None


def _channel_labels(group: Group, arr: Array, channel_dim: str, n: int) -> list[str] | None:
    """Names along a channel axis of length `n`: the array's "channels" attribute (zarrflow's
    stacked stores), a coordinate array named like the dimension, or the group's "variables"
    attribute (anemoi datasets: `data` is (time, variable, ensemble, cell) and the root group
    lists the variables in order)."""
    labels = arr.attrs.get("channels")
    if labels is None and channel_dim in group.keys():
        labels = [str(x) for x in group[channel_dim][...]]
    if labels is None and isinstance(group.attrs.get("variables"), list):
        labels = [str(x) for x in group.attrs["variables"]]
        if len(labels) != n:  # not a list of this axis's names
            labels = None
    return labels


def _resolve(group: Group, spec: str, time_dim: str, level_dim: str, channel_dim: str) -> Channel:
    name, _, pick = spec.partition("@")
    if name not in group.keys():
        raise LoaderError(f"unknown variable {name!r} (the group has: {', '.join(group.keys())})")
    try:
        arr = group[name]
    except ZarrflowError as e:  # e.g. a data type zarrflow cannot read: say which variable
        raise LoaderError(f"{name!r} cannot be loaded: {e}") from None
    if not isinstance(arr, Array):
        raise LoaderError(f"{name!r} is a group, not an array")
    if arr.dims is None or any(d is None for d in arr.dims):
        raise LoaderError(f"{name!r} has no dimension names (dimension_names / _ARRAY_DIMENSIONS)")
    dims = list(arr.dims)
    if time_dim not in dims:
        raise LoaderError(f"{name!r} has no {time_dim!r} dimension (dims {tuple(dims)})")
    fixed: dict[int, int] = {}
    if pick:
        if level_dim in dims:
            axis = dims.index(level_dim)
            coord = group[level_dim][...] if level_dim in group.keys() else np.arange(arr.shape[axis])
            try:
                value = float(pick)
            except ValueError:
                raise LoaderError(f"{spec!r}: {pick!r} is not a {level_dim} value") from None
            hits = np.nonzero(np.asarray(coord, dtype=np.float64) == value)[0]
            if not len(hits):
                raise LoaderError(f"unknown {level_dim} {pick!r} for {name!r} (levels: {list(coord)})")
            fixed[axis] = int(hits[0])
        elif channel_dim in dims:
            axis = dims.index(channel_dim)
            labels = _channel_labels(group, arr, channel_dim, arr.shape[axis])
            if labels is not None and pick in labels:
                fixed[axis] = list(labels).index(pick)
            elif pick.isdigit() and int(pick) < arr.shape[axis]:
                fixed[axis] = int(pick)
            else:
                raise LoaderError(f"unknown {channel_dim} {pick!r} for {name!r} (labels: {labels})")
        else:
            hint = (" (an anemoi dataset: pass channel_dim='variable')" if "variable" in dims
                    else "")
            raise LoaderError(f"{spec!r}: {name!r} has neither a {level_dim!r} nor a "
                              f"{channel_dim!r} dimension to pick {pick!r} from (dims "
                              f"{tuple(dims)}){hint}")
    else:
        for d in (level_dim, channel_dim):
            if d in dims:
                raise LoaderError(f"{name!r} has a {d!r} dimension: say which one, e.g. {name}@…")
    t_axis = dims.index(time_dim)
    spatial = tuple(i for i in range(len(dims)) if i != t_axis and i not in fixed)
    return Channel(spec, arr, fixed, t_axis, spatial)


# --------------------------------------------------------------------------------------------
# Sampling: valid times, deterministic shuffles, DDP shards
# --------------------------------------------------------------------------------------------


def valid_times(ntime: int, input_steps: int, lead: int, target_steps: int) -> np.ndarray:
    """Times t with inputs t-h+1..t and targets t+lead..t+lead+k-1 inside [0, ntime)."""
    if input_steps < 1 or target_steps < 0 or lead < 1:
        raise LoaderError("need input_steps >= 1, lead >= 1 and target_steps >= 0")
    first, last = input_steps - 1, ntime - 1 - (lead + target_steps - 1 if target_steps else 0)
    if last < first:
        raise LoaderError(f"a window of {input_steps} input and {target_steps} target steps "
                          f"(lead {lead}) does not fit in {ntime} time steps")
    return np.arange(first, last + 1)


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
    stream = np.concatenate([blocks[i] for i in rng.permutation(len(blocks))]) if blocks else samples
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


# --------------------------------------------------------------------------------------------
# The loader
# --------------------------------------------------------------------------------------------


@dataclass
class Stats:
    batches: int = 0
    samples: int = 0
    batch_bytes: int = 0          # bytes of the batches assembled, in their output dtype
    stored_bytes: int = 0         # compressed bytes read
    chunks: int = 0
    deduplicated: int = 0         # chunk reads saved because samples shared a chunk
    cache_hits: int = 0           # chunks served from the GPU cache of compressed chunks
    host_cache_hits: int = 0      # chunks served from the pinned host cache
    missing: int = 0
    gpu_decoded: int = 0
    cpu_decoded: int = 0
    host_transformed: int = 0     # GPU reads: chunks the host threads normalised and cast
    nans: int = 0
    h2d_ms: float = 0.0           # GPU reads: copy-up of staged bytes (GPU time, summed)
    decode_ms: float = 0.0        # GPU reads: decode kernels (GPU time, summed)
    scatter_ms: float = 0.0       # GPU reads: scatter into the batch (GPU time, summed)
    # GPU reads run in internal batches (pieces bounded in bytes, double-buffered): how many,
    # how long the GPU stream sat idle between them, and the reading threads' wall time fetching
    # (reads, host decoding), enqueueing (tables, launches) and waiting for the GPU.
    internal_batches: int = 0
    gpu_idle_ms: float = 0.0
    plan_ms: float = 0.0          # host time before a read's first piece (leaf chunks, sizes)
    fetch_ms: float = 0.0
    enqueue_ms: float = 0.0
    gpu_wait_ms: float = 0.0
    limit_wait_ms: float = 0.0    # waits for GPU memory other reads held under zarrflow's limit
    read_s: float = 0.0           # time the workers spent reading + assembling (summed)
    wait_s: float = 0.0           # time the consumer waited for a batch
    depth_sum: int = 0            # batches ready when the consumer asked, summed over requests
    depth_n: int = 0
    # The last TIMELINE_LEN batches: who produced each, when, and how long the consumer waited.
    timeline: collections.deque = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_LEN))

    def add(self, delta: dict) -> None:
        """Counters of one batch, added when the consumer takes it (batches read ahead and then
        dropped, e.g. for a wrongly guessed next epoch, never count)."""
        for key, value in delta.items():
            setattr(self, key, getattr(self, key) + value)

    def as_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items()
             if k not in ("depth_sum", "depth_n", "timeline")}
        d["mean_queue_depth"] = self.depth_sum / self.depth_n if self.depth_n else 0.0
        d["batch_GBps"] = self.batch_bytes / 1e9 / self.read_s if self.read_s else 0.0
        return d


TIMELINE_LEN = 1024
SHARD_INDEX_BUDGET = 256 << 20  # host bytes of shard indexes a loader keeps (~10^6 shards)
# Workers when the caller names none: two overlap one batch's host work with another's GPU work;
# on a GPU a third fills the gaps they leave (6 channels on an H200: 39-40 -> 44-45 GB/s of
# batches) where the memory limit leaves every worker's reads room (_memory_plan,
# docs/performance.md).
DEFAULT_WORKERS = 2
GPU_SPARE_WORKERS = 1
_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


# Prefetches of live iterations (and of epochs read ahead). At interpreter exit they are closed
# — workers stopped and joined — before Python tears down the objects (thread pools, stores)
# their C++ reads are using.
_live: set = set()
_live_lock = threading.Lock()
# The GPU memory plans of the process's loaders (see _memory_plan): a loader made later plans
# within what the earlier ones left under zarrflow's GPU memory limit.
_planned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@atexit.register
def _stop_producers() -> None:
    with _live_lock:
        live = list(_live)
    for prefetch in live:
        prefetch.close()


class Loader:
    """Iterable of batches ``{"x", "y", "time"}`` from a Zarr group. See the module docstring.

    Parameters: ``store`` (path or Group), ``variables`` (channel list), ``batch_size``,
    ``input_steps`` h, ``lead``, ``target_steps`` k, ``layout`` ("BCHW" needs h == k == 1, or
    "BTCHW"), ``crop`` ({dim: (start, stop)} on the spatial dims), ``input_dims`` /
    ``input_overlap`` (xbatcher-style spatial windows: {dim: size} and {dim: overlap}; each
    (time, window) is a sample, and batches report each sample's window ``origin``), ``dtype`` (float32, bfloat16,
    float16), ``normalize`` (None, {"mean": [...], "std": [...]} per channel, or a path to a
    stats JSON from :func:`compute_stats`), ``device`` ("cuda", "cuda:N" or "cpu"), ``output``
    ("torch", "cupy", "jax", "numpy" or "zarrflow"), ``shuffle`` (False, True/"global",
    "block"), ``seed``, ``rank``/``world_size`` (default: torch.distributed when initialised),
    ``drop_last``, ``prefetch`` (batches ready ahead, default 2), ``workers`` (threads producing
    batches at once, each with its own CUDA stream; default None: 2, plus a third on the GPU
    where zarrflow's GPU memory limit leaves each of the three room for large read pieces beside
    the batches and caches (22 GB each, ``_memory_plan``); on the GPU both are lowered, with a
    warning, when the batches would not fit zarrflow's GPU memory limit beside the process's
    other loaders, the default's third worker first and silently: see
    ``zarrflow.set_gpu_memory_limit`` and ``loader.memory_plan``),
    ``missing`` ("fill" or "error"), ``gpu_decode``, ``host_decode_share`` (0..1: the fraction
    of GPU-decodable chunks the host threads decode instead, or "auto", the default: with
    ``gpu_decode="auto"`` and no
    chunk cache, the host decodes as long as it keeps up with the consumer, and chunks move to
    the GPU while the consumer waits or its steps slow down — see ``_balance.DecodeBalance``;
    otherwise 0), ``threads`` (I/O pool) and ``decode_threads`` (a separate pool for
    host checks and CPU-fallback decodes), ``progress`` (print a rate line every N batches),
    ``cache_gb`` / ``host_cache_gb`` (GPU / pinned host memory for compressed chunks kept
    across epochs; 0 = no cache; the GPU tier is asked first), ``time_range`` ((start, stop)
    time indices that every input and target step of a sample must lie in: train/validation
    splits without leakage across the boundary), ``storage_options`` (credentials, endpoint and
    transport settings when ``store`` is an s3://, gs:// or http(s):// URL), ``prime_next_epoch``
    (default True: when an epoch ends, its first ``prefetch`` batches of the next one are read in
    the background, so validation or checkpointing hides the start of the next epoch),
    ``mask_and_scale`` / ``use_zarr_fill_value_as_mask`` (as in ``xr.open_dataset``: see below).

    Arrays of any numeric type are read (int8..int64, uint8..uint64, float16/32/64, bfloat16),
    CF-decoded as ``xr.open_dataset(engine="zarr")`` decodes them: raw values equal to
    ``_FillValue`` or ``missing_value`` (in Zarr v2 the array's ``fill_value``, unless
    ``use_zarr_fill_value_as_mask=False``) become NaN, packed values (``scale_factor``,
    ``add_offset``) are unpacked in float64; ``mask_and_scale=False`` reads values as stored.
    Batches hold xarray's decoded values cast to float32, then normalised in float32 and cast to
    ``dtype``, in one pass as the chunks are copied in (ARCHITECTURE.md, "Element transform").

    The loader assumes that the store does not change while it reads it: it keeps the index of
    every shard it has read (host memory, up to ``SHARD_INDEX_BUDGET`` bytes), so that later
    batches read only the inner chunks; a chunk cache likewise keeps what it has read.
    """

    def __init__(self, store: Any, variables: Sequence[str], *, batch_size: int = 16,
                 input_steps: int = 1, lead: int = 1, target_steps: int = 1, layout: str = "BCHW",
                 crop: dict | None = None, input_dims: dict | None = None,
                 input_overlap: dict | None = None, dtype: str = "float32", normalize: Any = None,
                 device: str = "cuda", output: str = "torch", shuffle: Any = True, seed: int = 0,
                 rank: int | None = None, world_size: int | None = None, drop_last: bool = True,
                 prefetch: int = 2, workers: int | None = None, missing: str = "fill",
                 gpu_decode: str = "auto", host_decode_share: float | str = "auto",
                 threads: int | None = None, decode_threads: int | None = None,
                 time_dim: str = "time", level_dim: str = "level",
                 channel_dim: str = "channel", block: int = 8, buffer: int = 64,
                 progress: int = 0, cache_gb: float = 0.0, host_cache_gb: float = 0.0,
                 time_range: tuple[int, int] | None = None,
                 storage_options: dict | None = None, prime_next_epoch: bool = True,
                 mask_and_scale: bool = True, use_zarr_fill_value_as_mask: bool | None = None):
        self.spec = DatasetSpec.build(store, variables, time_dim=time_dim, level_dim=level_dim,
                                      channel_dim=channel_dim, storage_options=storage_options,
                                      mask_and_scale=mask_and_scale,
                                      use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        if batch_size < 1:
            raise LoaderError("batch_size must be >= 1")
        if layout not in ("BCHW", "BTCHW"):
            raise LoaderError(f"layout must be 'BCHW' or 'BTCHW', got {layout!r}")
        if layout == "BCHW" and (input_steps != 1 or target_steps > 1):
            raise LoaderError("layout 'BCHW' holds one time step: use 'BTCHW' for input_steps or "
                              "target_steps > 1")
        if dtype not in _DTYPES:
            raise LoaderError(f"dtype must be one of {list(_DTYPES)}, got {dtype!r}")
        if missing not in ("fill", "error"):
            raise LoaderError(f"missing must be 'fill' or 'error', got {missing!r}")
        if output not in ("torch", "cupy", "jax", "numpy", "zarrflow"):
            raise LoaderError(f"unknown output {output!r}")
        kind, self.device_id = _gpu.parse_device(device)
        self.on_gpu = kind == "cuda"
        if self.on_gpu:
            _gpu.configure()
            if not _gpu.cuda_available():
                raise LoaderError(f"device={device!r} but no GPU can be used: {_gpu.cuda_status()}")
        if output == "numpy" and self.on_gpu:
            raise LoaderError("output='numpy' needs device='cpu'")
        self.batch_size, self.h, self.lead, self.k = batch_size, input_steps, lead, target_steps
        self.layout, self.dtype, self.output, self.missing = layout, dtype, output, missing
        self.shuffle, self.seed, self.block, self.buffer = shuffle, seed, block, buffer
        self.drop_last, self.prefetch, self.gpu_decode = drop_last, max(1, prefetch), gpu_decode
        # Workers nobody asked for: the default's third one on a GPU, given up first for memory.
        self._spare_workers = 0
        if workers is None:
            workers = DEFAULT_WORKERS
            if kind == "cuda":
                workers, self._spare_workers = workers + GPU_SPARE_WORKERS, GPU_SPARE_WORKERS
        if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
            raise LoaderError(f"workers must be an integer >= 1 or None, got {workers!r}")
        self.workers = int(workers)
        # Who decodes what the GPU could: a fixed share, or one steered by the consumer's waits
        # and batch rate (only where there is a choice: a GPU loader with gpu_decode="auto").
        self._balance = None
        if host_decode_share == "auto":
            self.host_decode_share = 0.0
            # The chunk caches keep compressed bytes for the GPU decoders: with one, the GPU
            # decodes (cache hits skip storage, PCIe and the host entirely).
            if self.on_gpu and gpu_decode == "auto" and cache_gb <= 0 and host_cache_gb <= 0:
                self._balance = DecodeBalance()
        elif (isinstance(host_decode_share, numbers.Real) and not isinstance(host_decode_share, bool)
              and 0.0 <= host_decode_share <= 1.0):
            self.host_decode_share = float(host_decode_share)
        else:
            raise LoaderError(f"host_decode_share must be in [0, 1] or 'auto', got "
                              f"{host_decode_share!r}")
        self.progress = progress
        self.crop = self._crop(crop or {})
        self.patch_size, self.patch_origins = self._patches(input_dims or {}, input_overlap or {})
        self.times = valid_times(self.spec.ntime, input_steps, lead, target_steps)
        if time_range is not None:
            start, stop = time_range
            if not 0 <= start < stop <= self.spec.ntime:
                raise LoaderError(f"time_range {time_range} is not inside [0, {self.spec.ntime})")
            last = lead + target_steps - 1 if target_steps else 0
            self.times = self.times[(self.times - input_steps + 1 >= start)
                                    & (self.times + last < stop)]
            if not len(self.times):
                raise LoaderError(f"no sample fits in time_range {time_range} with "
                                  f"{input_steps} input and {target_steps} target steps")
        # A sample is (time, patch): id = time index * patches + patch index.
        self.samples = np.arange(len(self.times) * len(self.patch_origins))
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.norm = self._normalization(normalize)
        C = len(self.spec.channels)
        # What every batch applies as chunks are copied in (identity mean/std when only the type
        # or the decoding changes): float32 (mean, std) pairs per channel, and each channel's CF
        # decoding. Plain float32 arrays read into a float32 batch are copied as stored.
        plain = all(ch.array.dtype == np.float32 and ch.cf is None for ch in self.spec.channels)
        self._transform = self.norm is not None or self.dtype != "float32" or not plain
        self._mean_std = self.norm or ([0.0] * C, [1.0] * C)
        self._norm_pairs = np.array(self._mean_std, np.float32).T.copy()
        self._decoding = [ch.cf.core_args() if ch.cf is not None else (False, 1.0, -0.0, [])
                          for ch in self.spec.channels]
        from ._threads import make_executor

        # Separate pools: I/O (file reads, shard indexes) and host-side decode work (framing
        # checks, Blosc plans, CPU fallbacks). By default both are the process's shared pool.
        self._executor = make_executor(threads)
        self._decode_executor = make_executor(decode_threads) if decode_threads else None
        # Compressed chunks kept on the GPU (later epochs skip storage and PCIe) and in pinned host
        # memory (they skip storage and host checks).
        self.cache = _core.ChunkCache(int(cache_gb * 1e9)) if cache_gb > 0 and self.on_gpu else None
        self.host_cache = (_core.ChunkCache(int(host_cache_gb * 1e9))
                           if host_cache_gb > 0 and self.on_gpu else None)
        # Shard indexes, read once per shard rather than once per batch (see the docstring).
        self.shard_indexes = _core.ShardIndexCache(SHARD_INDEX_BUDGET)
        self._pid = os.getpid()
        self.epoch = 0
        self._resume = 0           # batches of self.epoch already consumed (state_dict)
        self.prime_next_epoch = prime_next_epoch
        self._primed = None        # (epoch, OrderedPrefetch): the next epoch, started early
        self._epoch_set = False    # set_epoch was called since the last pass began
        self._position = 0
        self.stats_ = Stats()
        self._t_origin = time.perf_counter()
        if len(self) == 0:
            raise LoaderError(f"no batches: {len(self.samples)} samples over {self.world_size} "
                              f"ranks with batch_size {batch_size} and drop_last={drop_last}")
        self._streams: list = []  # one CUDA stream per worker, made on first use
        self._request_templates: list | None = None
        self.memory_plan = self._fit_memory(cache_gb) if self.on_gpu else None
        # Batches started and not yet taken, and batches being made, over this pass and the next
        # one read ahead: the same bounds as within one pass.
        self._gate = Gate(self.prefetch + self.workers - 1, producers=self.workers)

    # --- configuration helpers -----------------------------------------------------------
    def _crop(self, crop: dict) -> list[tuple[int, int]]:
        crop = dict(crop)  # the caller's dict stays as it was
        out = []
        for d, n in zip(self.spec.spatial_dims, self.spec.spatial_shape):
            lo, hi = crop.pop(d, (0, n))
            if not 0 <= lo < hi <= n:
                raise LoaderError(f"crop {d}=({lo}, {hi}) is outside [0, {n}] or empty")
            out.append((int(lo), int(hi)))
        if crop:
            raise LoaderError(f"unknown crop dims {list(crop)} (spatial dims: {self.spec.spatial_dims})")
        return out

    def _patches(self, input_dims: dict, overlap: dict) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
        """xbatcher-style windows over the (cropped) spatial dims: `input_dims` sizes, stride =
        size - overlap. Without input_dims a sample is the whole crop."""
        input_dims, overlap = dict(input_dims), dict(overlap)
        extents = [hi - lo for lo, hi in self.crop]
        sizes, starts = [], []
        for d, n in zip(self.spec.spatial_dims, extents):
            size = int(input_dims.pop(d, n))
            ov = int(overlap.pop(d, 0))
            if size < 1 or size > n:
                raise LoaderError(f"window {d}={size} is larger than the dimension ({n}) or empty")
            if not 0 <= ov < size:
                raise LoaderError(f"overlap {d}={ov} must be in [0, {size})")
            stride = size - ov
            sizes.append(size)
            starts.append(list(range(0, n - size + 1, stride)))
        if input_dims or overlap:
            raise LoaderError(f"unknown window dims {sorted(set(input_dims) | set(overlap))} "
                              f"(spatial dims: {self.spec.spatial_dims})")
        origins = [tuple(o) for o in np.stack(np.meshgrid(*starts, indexing="ij"), -1).reshape(-1, len(sizes))]
        return tuple(sizes), origins

    def _normalization(self, normalize: Any) -> tuple[list[float], list[float]] | None:
        if normalize is None:
            return None
        if isinstance(normalize, (str, os.PathLike)):
            normalize = json.loads(open(normalize).read())
        names = [c.name for c in self.spec.channels]
        if "channels" in normalize:
            idx = [normalize["channels"].index(n) if n in normalize["channels"] else -1 for n in names]
            if min(idx) < 0:
                raise LoaderError(f"stats lack channels {[n for n, i in zip(names, idx) if i < 0]}")
            mean = [normalize["mean"][i] for i in idx]
            std = [normalize["std"][i] for i in idx]
        else:
            mean, std = list(normalize["mean"]), list(normalize["std"])
        if len(mean) != len(names) or len(std) != len(names):
            raise LoaderError(f"normalize needs {len(names)} means and stds")
        if any(s <= 0 for s in std):
            raise LoaderError("normalize std values must be positive")
        return [float(m) for m in mean], [float(s) for s in std]

    # --- sizes ------------------------------------------------------------------------------
    @property
    def channels(self) -> list[str]:
        return [c.name for c in self.spec.channels]

    @property
    def spatial_shape(self) -> tuple[int, ...]:
        return self.patch_size

    def __len__(self) -> int:
        n = len(shard(self.samples, self.rank, self.world_size, self.drop_last))
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    # --- epochs and resume ------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        self._epoch_set = True
        self.epoch = int(epoch)
        self._resume = 0

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "position": self._position, "seed": self.seed}

    def load_state_dict(self, state: dict) -> None:
        if state.get("seed", self.seed) != self.seed:
            raise LoaderError("state was saved with another seed")
        self.epoch, self._resume = int(state["epoch"]), int(state["position"])

    def batches(self, epoch: int | None = None) -> list[np.ndarray]:
        """The sample ids (time × window) of every batch of this rank for `epoch`."""
        e = self.epoch if epoch is None else epoch
        order = epoch_order(self.samples, seed=self.seed, epoch=e, shuffle=self.shuffle,
                            block=self.block, buffer=self.buffer)
        mine = shard(order, self.rank, self.world_size, self.drop_last)
        out = [mine[i:i + self.batch_size] for i in range(0, len(mine), self.batch_size)]
        if self.drop_last and out and len(out[-1]) < self.batch_size:
            out.pop()
        return out

    # --- reading ----------------------------------------------------------------------------
    def _sample(self, sample_id: int) -> tuple[int, tuple[int, ...]]:
        """(time index, spatial origin) of a sample id."""
        p = len(self.patch_origins)
        origin = self.patch_origins[sample_id % p]
        return int(self.times[sample_id // p]), tuple(lo + o for (lo, _), o in zip(self.crop, origin))

    def _templates(self) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """What every region of a channel shares, built once: (arrays, one request row per
        channel with the fixed indices, counts, steps and destination strides set, the column
        of each channel's time index, the columns of its spatial indices)."""
        if self._request_templates is None:
            chans = self.spec.channels
            D = max(ch.array.ndim for ch in chans)
            spatial_strides = [int(np.prod(self.patch_size[i + 1:], dtype=np.int64))
                               for i in range(len(self.patch_size))]
            rows = np.zeros((len(chans), 3 + 4 * D), np.int64)
            for c, ch in enumerate(chans):
                nd = ch.array.ndim
                rows[c, 0], rows[c, 1] = c, nd
                start, count, step, dstr = (slice(3 + g * D, 3 + g * D + nd) for g in range(4))
                rows[c, count], rows[c, step] = 1, 1
                for axis, idx in ch.fixed.items():
                    rows[c, start][axis] = idx
                for axis, size, st in zip(ch.spatial_axes, self.patch_size, spatial_strides):
                    rows[c, count][axis], rows[c, dstr][axis] = size, st
            time_col = np.array([3 + ch.time_axis for ch in chans], np.int64)
            space_cols = np.array([[3 + a for a in ch.spatial_axes] for ch in chans],
                                  np.int64).reshape(len(chans), len(self.patch_size))
            self._request_templates = ([ch.array._h for ch in chans], rows, time_col, space_cols)
        return self._request_templates

    def _where(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(time index, spatial origin) of each sample: arrays of shape (B,) and (B, dims)."""
        where = [self._sample(int(sid)) for sid in samples]
        return (np.array([t for t, _ in where], np.int64),
                np.array([o for _, o in where], np.int64).reshape(len(samples), -1))

    def _requests(self, times: np.ndarray, origins: np.ndarray,
                  steps: int) -> tuple[list, np.ndarray]:
        """One region per (sample, step, channel) into a [B, steps, C, *spatial] batch:
        (arrays, request table) for _core.read_batch, built with a few NumPy operations."""
        arrays, rows, time_col, space_cols = self._templates()
        C = len(arrays)
        B = len(times)
        inner = int(np.prod(self.spatial_shape))
        offsets = np.array([-(self.h - 1) + j for j in range(self.h)]
                           + [self.lead + j for j in range(self.k)], np.int64)
        table = np.tile(rows, (B * steps, 1))  # rows in (sample, step, channel) order
        n = len(table)
        idx = np.arange(n)
        table[:, 2] = idx * inner
        table[idx, np.tile(time_col, B * steps)] = np.repeat(
            (times[:, None] + offsets[None, :]).reshape(-1), C)
        per_row_origin = np.repeat(origins, steps * C, axis=0)
        for k in range(space_cols.shape[1]):
            table[idx, np.tile(space_cols[:, k], B * steps)] = per_row_origin[:, k]
        return arrays, table

    def _row_norms(self, rows: int) -> np.ndarray:
        """(mean, std) of every request row (rows run over channels fastest), float32."""
        return np.tile(self._norm_pairs, (rows // len(self._norm_pairs), 1))

    def _stream(self, worker: int):
        """Worker `worker`'s CUDA stream (its reads and normalisation are ordered on it)."""
        while len(self._streams) <= worker:
            self._streams.append(_core.Stream(self.device_id))
        return self._streams[worker].handle

    def _batch_bytes(self, samples: int) -> int:
        """Bytes of a batch of `samples` samples (x and y, in the output dtype)."""
        return (samples * (self.h + self.k) * len(self.spec.channels)
                * int(np.prod(self.spatial_shape)) * _numpy_dtype(self.dtype).itemsize)

    def _fit_memory(self, cache_gb: float):
        """Prefetch and workers fitted into zarrflow's GPU memory limit (see _memory_plan)."""
        batch = self._batch_bytes(self.batch_size)
        with _live_lock:
            others = sum(p.held for ld, p in _planned.items() if ld.device_id == self.device_id)
        plan = fit_memory(batch, self.prefetch, self.workers,
                          int(cache_gb * 1e9) if self.cache is not None else 0,
                          _gpu.gpu_memory_limit(self.device_id), others, self._spare_workers)
        if not plan.fits:
            raise LoaderError(memory_refusal(plan))
        if plan.reduced:
            warnings.warn(f"zarrflow: prefetch {plan.asked[0]} -> {plan.prefetch} and workers "
                          f"{plan.asked[1]} -> {plan.workers}, to fit zarrflow's GPU memory limit "
                          f"of {plan.limit / 1e9:.1f} GB ({plan.describe()}); "
                          f"zarrflow.set_gpu_memory_limit() sets it", RuntimeWarning,
                          stacklevel=3)
        self.prefetch, self.workers = plan.prefetch, plan.workers
        with _live_lock:
            _planned[self] = plan
        return plan

    def _memory_note(self) -> str:
        """Why a GPU loader may run out of memory, with its own figures (for the error)."""
        batch, in_flight = self.memory_plan.batch_bytes, self.memory_plan.in_flight
        mem = _gpu.memory_stats()
        free, total = _core.device_memory(self.device_id)
        gpu = f" of the GPU's {total / 1e9:.1f} GB ({free / 1e9:.1f} GB free now)"
        limit = mem.get("device_limit", 0)
        return (f"zarrflow: this loader's batches are {batch / 1e9:.2f} GB each and up to "
                f"{in_flight} are in flight (prefetch {self.prefetch} + {self.workers} workers + "
                f"the one in use), {in_flight * batch / 1e9:.1f} GB; zarrflow's GPU memory pool "
                f"holds {mem.get('device_in_use', 0) / 1e9:.1f} GB in use and "
                f"{mem.get('device_cached', 0) / 1e9:.1f} GB idle"
                + (f" under its limit of {limit / 1e9:.1f} GB" if limit else "") + f"{gpu}. Fewer "
                f"workers, a smaller prefetch, dtype='bfloat16', a smaller batch or a smaller "
                f"chunk cache need less; a model beside the loader needs zarrflow's limit "
                f"(zarrflow.set_gpu_memory_limit) to leave it room.")

    def _produce(self, samples: np.ndarray, worker: int = 0) -> dict:
        steps = self.h + self.k
        C = len(self.spec.channels)
        shape = [len(samples), steps, C, *self.spatial_shape]
        dev = "cuda" if self.on_gpu else "cpu"
        stream = self._stream(worker) if self.on_gpu else None
        # CF decoding, normalisation and cast happen as the chunks are copied into the batch (one
        # pass, no float32 copy of the batch), on the GPU or by the host threads.
        fused = self._transform
        share = self.decode_share
        # Whether zarrflow's pools grew while this batch was made (by this worker or another):
        # such a batch waited for the driver (pinned pages mapped and registered, cudaMalloc),
        # so its time says nothing about how fast the host threads decode.
        allocations = _pool_allocations() if self._balance is not None else None
        t0 = time.perf_counter()
        times, origins = self._where(samples)
        arrays, table = self._requests(times, origins, steps)
        try:
            raw = _core.empty_tensor(shape, self.dtype if fused else "float32", dev, self.device_id)
            report = _core.read_batch(arrays, table, raw, stream, self.gpu_decode,
                                      "auto", self._executor, self.cache, self.host_cache,
                                      self._decode_executor, share,
                                      self._row_norms(len(table)) if fused else None,
                                      shard_indexes=self.shard_indexes,
                                      decode=self._decoding if fused else None)
        except StoreIOError as e:
            if not self.on_gpu or "out of memory" not in str(e):
                raise
            raise StoreIOError(f"{e}\n{self._memory_note()}") from e
        t_read = time.perf_counter()
        if report:
            _gpu.say_once(report.get("notes", []))
            if self.missing == "error" and report["missing"]:
                raise MissingChunkError(f"{report['missing']} chunks of this batch are not stored "
                                        f"(samples {list(map(int, samples))})")
        out, nans = raw, int(report.get("nans", 0)) if report else 0
        if not self.on_gpu:
            out = _host_array(raw, self.dtype if fused else "float32")
            if not fused:
                nans = int(np.isnan(out).sum())
        t_end = time.perf_counter()
        delta = {"read_s": t_end - t0, "batches": 1, "samples": len(samples),
                 "batch_bytes": self._batch_bytes(len(samples)),
                 "nans": int(nans)}
        for key in ("chunks", "deduplicated", "missing", "gpu_decoded", "cpu_decoded", "stored_bytes",
                    "cache_hits", "host_cache_hits", "h2d_ms", "decode_ms", "scatter_ms",
                    "host_transformed", "internal_batches", "gpu_idle_ms", "plan_ms", "fetch_ms",
                    "enqueue_ms", "gpu_wait_ms", "limit_wait_ms"):
            if report and key in report:
                delta[key] = report[key]
        grew = allocations is not None and _pool_allocations() != allocations
        return {"raw": out, "times": times, "stats": delta, "origin": origins,
                "timing": (worker, t0, t_read, t_end, share, grew)}

    def _convert(self, item: dict) -> dict:
        t = item["raw"]
        if isinstance(t, np.ndarray) and self.output == "torch":  # CPU batch (normalised/cast)
            import torch

            full = (torch.from_numpy(t.view(np.int16)).view(torch.bfloat16)
                    if t.dtype.name == "bfloat16" else torch.from_numpy(t))
        elif isinstance(t, np.ndarray):
            full = t
        elif self.output == "torch":
            import torch

            full = torch.from_dlpack(t)
        elif self.output == "cupy":
            import cupy

            full = cupy.from_dlpack(t)
        elif self.output == "jax":
            import jax

            full = jax.dlpack.from_dlpack(t)
        elif self.output == "numpy":
            full = np.from_dlpack(t)
        else:
            return {"raw": t, "time": item["times"], "origin": item["origin"]}
        x, y = full[:, : self.h], full[:, self.h:]
        if self.layout == "BCHW":
            x = x[:, 0]
            y = y[:, 0] if self.k == 1 else y
        out = {"x": x, "time": item["times"], "origin": item["origin"]}
        if self.k:
            out["y"] = y
        return out

    def _prefetch(self, batches: list) -> OrderedPrefetch:
        # The workers reach the loader through a weak reference, so an idle read-ahead never
        # keeps a loader the caller dropped (and its batches and caches) alive; __del__ closes it.
        ref = weakref.ref(self)

        def produce(samples, worker):
            loader = ref()
            if loader is None:
                raise LoaderError("the loader was closed")
            return loader._produce(samples, worker)

        p = OrderedPrefetch(produce, batches, workers=self.workers, gate=self._gate,
                            name="zarrflow-loader")
        with _live_lock:
            _live.add(p)
        return p

    def close(self) -> None:
        """Stop reading ahead and drop the chunk caches (the loader can still be iterated, it
        then reads from storage again). Loaders made afterwards no longer plan around its GPU
        memory."""
        with _live_lock:
            _planned.pop(self, None)
        self._drop_primed()
        for cache in (self.cache, self.host_cache, self.shard_indexes):
            if cache is not None:
                cache.clear()

    def __del__(self) -> None:
        try:
            self._drop_primed()
        except Exception:  # interpreter shutdown (the atexit hook closed it) or a failed __init__
            pass

    def _drop_primed(self) -> None:
        primed, self._primed = self._primed, None
        if primed is not None:
            self._close(primed[1])

    def _close(self, p: OrderedPrefetch) -> None:
        p.close()
        with _live_lock:
            _live.discard(p)

    def __iter__(self) -> Iterator[dict]:
        if os.getpid() != self._pid and self.on_gpu:
            raise RuntimeError("this zarrflow Loader (device='cuda') was created in another "
                               "process: CUDA does not survive fork. Create the loader inside the "
                               "worker, or use it with num_workers=0 (it prefetches on its own).")
        epoch_now, advanced = self.epoch, self._epoch_set
        self._epoch_set = False
        batches = self.batches()[self._resume:]
        primed, self._primed = self._primed, None
        if primed is not None and (self._resume or not _same_batches(primed[1].items, batches)):
            self._close(primed[1])  # a wrong guess (or a resume): its batches are dropped
            primed = None
        self._position = self._resume
        self._resume = 0
        prefetch = primed[1] if primed is not None else self._prefetch(batches)
        first = self._position
        if self._balance is not None:
            self._balance.new_pass()
        t_start = time.perf_counter()
        total = self._position + len(batches)
        samples0, bytes0 = self.stats_.samples, self.stats_.batch_bytes  # this epoch's rate
        try:
            while True:
                t0 = time.perf_counter()
                ready = prefetch.ready()
                self.stats_.depth_sum += ready
                self.stats_.depth_n += 1
                try:
                    item = prefetch.get()
                except StopIteration:  # (the next pass was started above, with the last batch)
                    self.stats_.wait_s += time.perf_counter() - t0
                    return
                t1 = time.perf_counter()
                self.stats_.wait_s += t1 - t0
                self.stats_.add(item.pop("stats"))
                if self._primed is None and prefetch.all_started():
                    # The workers are free: start the next pass now (it waits for room under
                    # the shared depth), so its first batches are ready when it begins.
                    self._prime(epoch_now + 1 if advanced else epoch_now)
                worker, start, read_done, end, share, grew = item.pop("timing")
                self.stats_.timeline.append((epoch_now, self._position, worker, start, read_done,
                                             end, t0, t1, ready, share, grew))
                if self._balance is not None:
                    # The first batches of a pass nobody read ahead are always waited for, and
                    # a batch made while the pools grew waited for the driver, not the host's
                    # decoding: one such stall in a training process's first epoch used to move
                    # decoding to the GPU for good (H100, 6 channels: 0.955 of synthetic).
                    self._balance.observe(t0, t1, ready, share, settled=not grew and (
                        primed is not None or self._position - first >= self.workers))
                self._position += 1
                if self.progress and self._position % self.progress == 0:
                    dt = time.perf_counter() - t_start
                    print(f"zarrflow loader: {self._position}/{total} batches, "
                          f"{(self.stats_.samples - samples0) / dt:.1f} samples/s, "
                          f"{(self.stats_.batch_bytes - bytes0) / 1e9 / dt:.2f} GB/s", flush=True)
                yield self._convert(item)
        finally:
            self._close(prefetch)

    # --- reading ahead across epochs ---------------------------------------------------------
    def _prime(self, epoch: int) -> None:
        """Start producing `epoch`'s batches now. Called once every batch of the current pass
        has been started, so they are made while the caller trains on the last batches,
        validates, checkpoints or calls set_epoch, and the next pass does not start cold; the
        depth bound covers both passes together. Which epoch comes next is a guess (the next one
        if the caller called set_epoch before this pass, else the same one again); the next pass
        takes them if its batches are the same (always, without shuffling), otherwise a wrong
        guess only costs the reads and the batches are dropped. Batches are a pure function of
        (seed, epoch), so a right guess changes nothing but the wait."""
        if not self.prime_next_epoch or self._primed is not None:
            return
        batches = self.batches(epoch)
        if batches:
            self._primed = (epoch, self._prefetch(batches))

    def stats(self) -> dict:
        """Counters since the loader was made: bytes, chunks, cache of shared chunks, waits."""
        d = self.stats_.as_dict()
        d["host_decode_share"] = self.decode_share
        d["workers"], d["prefetch"] = self.workers, self.prefetch  # after the memory plan
        idx = self.shard_indexes.stats()  # counted since the loader was made
        d["shard_indexes_read"], d["shard_indexes_reused"] = idx["misses"], idx["hits"]
        if self._balance is not None:
            d["decode_moves_to_gpu"] = self._balance.to_gpu
            d["decode_moves_to_host"] = self._balance.to_host
        return d

    @property
    def decode_share(self) -> float:
        """The fraction of GPU-decodable chunks the next batch leaves to the host threads."""
        return self._balance.share if self._balance is not None else self.host_decode_share

    def timeline(self) -> list[dict]:
        """When each of the last batches taken (up to TIMELINE_LEN) was made and taken, to see
        why a consumer waited: `worker` produced batch `batch` of `epoch` from `start` to `end`
        (`read_end`: its chunks were in the batch buffer; the rest is normalising and casting),
        the consumer asked for it at `asked` and got it at `taken` (`wait` = taken - asked) with
        `ready` batches finished at that moment; `host_share` is the fraction of GPU-decodable
        chunks it left to the host threads (see ``decode_share``); `pools_grew`: zarrflow's
        memory pools allocated while it was made (the decode balance does not judge it; always
        False without one). Times in seconds since the loader was made."""
        keys = ("epoch", "batch", "worker", "start", "read_end", "end", "asked", "taken", "ready",
                "host_share", "pools_grew")
        out = []
        for rec in self.stats_.timeline:
            d = dict(zip(keys, rec))
            for k in ("start", "read_end", "end", "asked", "taken"):
                d[k] -= self._t_origin
            d["wait"] = d["taken"] - d["asked"]
            out.append(d)
        return out


def _pool_allocations() -> tuple[int, int]:
    mem = _gpu.memory_stats()
    return mem.get("device_allocations", 0), mem.get("pinned_allocations", 0)


def _same_batches(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _rank_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    if rank is not None and world_size is not None:
        return int(rank), int(world_size)
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return (dist.get_rank() if rank is None else rank,
                    dist.get_world_size() if world_size is None else world_size)
    except ImportError:
        pass
    return (rank or 0), (world_size or 1)


def _host_array(t: Any, dtype: str) -> np.ndarray:
    """A host batch (zarrflow Tensor) as a NumPy array, without a copy. NumPy's DLPack import
    has no bfloat16: those batches are viewed through their buffer (which keeps `t` alive)."""
    if dtype != "bfloat16":
        return np.from_dlpack(t)
    import ctypes

    shape = tuple(t.shape)
    buf = (ctypes.c_uint8 * (int(np.prod(shape, dtype=np.int64)) * 2)).from_address(t.data_ptr)
    buf.tensor = t
    return np.frombuffer(buf, _numpy_dtype(dtype)).reshape(shape)


def stored_stats(store: Any, variables: Sequence[str], *, channel_dim: str = "variable",
                 mean: str = "mean", std: str = "stdev", path: str | None = None,
                 **spec_kw: Any) -> dict:
    """Per-channel mean and std read from statistics the store already holds, for channels picked
    along `channel_dim`: anemoi datasets keep `mean` and `stdev` arrays along their "variable"
    dimension (computed over the dataset's statistics period), so normalising needs no pass over
    the data. Same result format as :func:`compute_stats` (saved as JSON to `path` when given)."""
    spec = DatasetSpec.build(store, variables, channel_dim=channel_dim, **spec_kw)
    g = spec.group
    for name in (mean, std):
        if name not in g.keys():
            raise LoaderError(f"the store has no {name!r} array of statistics (it has: "
                              f"{', '.join(g.keys())}); use compute_stats")
    means = np.asarray(g[mean][...], dtype=np.float64)
    stds = np.asarray(g[std][...], dtype=np.float64)
    out_mean, out_std = [], []
    for ch in spec.channels:
        dims = list(ch.array.dims)
        axis = dims.index(channel_dim) if channel_dim in dims else None
        if axis is None or axis not in ch.fixed:
            raise LoaderError(f"{ch.name!r} is not picked along {channel_dim!r}: its statistics "
                              f"are not in {mean!r} / {std!r}")
        n = ch.array.shape[axis]
        if means.shape != (n,) or stds.shape != (n,):
            raise LoaderError(f"{mean!r} {means.shape} and {std!r} {stds.shape} do not hold one "
                              f"value per {channel_dim} of {ch.array.path!r} ({n})")
        i = ch.fixed[axis]
        if not (np.isfinite(means[i]) and stds[i] > 0):
            raise LoaderError(f"{ch.name!r}: stored mean {means[i]} / std {stds[i]} cannot "
                              f"normalise (std must be positive)")
        out_mean.append(float(means[i]))
        out_std.append(float(stds[i]))
    return _stats(spec, out_mean, out_std, path)


def _stats(spec: DatasetSpec, mean: list, std: list, path: str | None) -> dict:
    """The normalisation file's content ({"channels", "mean", "std"}), saved to `path` if given."""
    stats = {"channels": [c.name for c in spec.channels], "mean": mean, "std": std}
    if path:
        with open(path, "w") as f:
            json.dump(stats, f, indent=2)
    return stats


def compute_stats(store: Any, variables: Sequence[str], *, every: int = 1, path: str | None = None,
                  **spec_kw: Any) -> dict:
    """Per-channel mean and std over the time steps (every `every`-th), in float64; NaNs skipped.
    Statistics of the decoded values (masked values skipped, packed values unpacked; see Loader).
    Saved as JSON to `path` when given; pass the dict or the path as Loader(normalize=...)."""
    spec = DatasetSpec.build(store, variables, **spec_kw)
    mean, std = [], []
    for ch in spec.channels:
        total = sq = count = 0.0
        for t in range(0, spec.ntime, every):
            raw = ch.array[ch.key(t)]
            a = ch.cf.decode(raw) if ch.cf is not None else raw.astype(np.float64)
            a = a[~np.isnan(a)]
            total += a.sum()
            sq += (a * a).sum()
            count += a.size
        m = total / max(count, 1)
        mean.append(m)
        std.append(float(np.sqrt(max(sq / max(count, 1) - m * m, 0.0))) or 1.0)
    return _stats(spec, mean, std, path)
