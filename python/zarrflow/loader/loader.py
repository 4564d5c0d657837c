"""The Loader: batches of (x, y) from a Zarr group, made ahead of the consumer.

Each batch is one call into the C++ core: every (sample, time step, channel) region goes into
one pipeline that reads, decodes and scatters straight into the batch, fetching and decoding a
chunk once even when several samples need it (x at t+1 is y at t). CF decoding, normalisation
and the cast to the batch's dtype happen as the chunks are copied in, in C++ on the host
threads or in the GPU's scatter kernel: there is one element transform, no second pass.

On a GPU the host threads decode as long as they keep up with the consumer and the GPU decoders
take over the rest (``host_decode_share="auto"``, the C++ ``DecodeBalance``): next to a model,
decode kernels slow its steps, while a loop that only reads wants every decoder it can get.
``workers`` C++ threads of a batch engine (``_core.BatchEngine``; each with its own CUDA stream)
keep ``prefetch`` batches ready, in order: one batch's host work (reading, checks) overlaps
another's GPU work, and the consumer only waits when the store is slower than training. The
workers never take the GIL: this module only hands the engine each epoch's samples and turns the
batches it takes into torch, CuPy, JAX or NumPy arrays.
"""

from __future__ import annotations

import atexit
import inspect
import os
import threading
import time
import warnings
import weakref
from typing import Any, Iterator, Sequence

import numpy as np

from .. import _core, _gpu
from .._names import unknown_name
from ..errors import NodeNotFoundError, StoreIOError
from ._counters import Stats
from ._errors import LoaderError, MissingChunkError
from ._memory_plan import fit as fit_memory, refusal as memory_refusal
from .options import LoaderOptions
from .sampler import Sampler
from .spec import DatasetSpec


SHARD_INDEX_BUDGET = 256 << 20  # host bytes of shard indexes a loader keeps (~10^6 shards)
# Workers when the caller names none: two overlap one batch's host work with another's GPU work;
# on a GPU a third fills the gaps they leave where the memory limit leaves every worker's reads
# room (_memory_plan; docs/design_measurements.md, "spare third worker only with 22 GB per
# worker").
DEFAULT_WORKERS = 2
GPU_SPARE_WORKERS = 1


# The loaders' batch engines. At interpreter exit they are closed — workers stopped and joined —
# before Python tears down the objects (thread pools, stores) their C++ reads are using.
_live: weakref.WeakSet = weakref.WeakSet()
_live_lock = threading.Lock()
# Engines inherited by a forked child: their workers are not in this process (and their locks
# may be held for good), so they are kept, never used, closed or freed.
_inherited: list = []
# The GPU memory plans of the process's loaders (see _memory_plan): a loader made later plans
# within what the earlier ones left under zarrflow's GPU memory limit.
_planned: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@atexit.register
def _stop_producers() -> None:
    with _live_lock:
        live = list(_live)
    for engine in live:
        engine.close()


class _Pass:
    """One epoch's batches handed to the engine: its id there, each batch's sample ids, times and
    window origins (what the consumer's batches carry), and how many the consumer took."""

    def __init__(self, pass_id: int, batches: list, times: list, origins: list):
        self.id, self.batches, self.times, self.origins = pass_id, batches, times, origins
        self.taken = 0


class Loader:
    """Batches ``{"x", "y", "time", "origin"}`` of a Zarr group, made ahead of the consumer.

    The PyTorch split: a :class:`DatasetSpec` says what a sample is (``Dataset``), a
    :class:`Sampler` their order on this rank (``DistributedSampler``), :class:`LoaderOptions`
    how batches are made (``DataLoader``'s settings). ``Loader(store, variables, **keywords)``
    builds all three from keywords: every parameter of the three classes is a keyword here.

    Parameters
    ----------
    dataset : DatasetSpec, or str, os.PathLike or Group
        What to read. A store (path, URL or group) takes ``variables`` and the
        :class:`DatasetSpec` keywords (``input_steps``, ``crop``, ``normalize``...).
    variables : list of str, optional
        With a store: the channels (see :class:`DatasetSpec`). With a DatasetSpec an integer
        here is the batch size, so ``Loader(spec, 32)`` works.
    batch_size : int, default 16
        Samples per batch; with ``drop_last=False`` the last batch of an epoch may hold fewer.
    sampler : Sampler, optional
        The order of the samples. Default: ``Sampler(dataset)`` with the Sampler keywords given
        here (``shuffle=True``, ``seed=0``, rank and world size from ``torch.distributed``,
        ``drop_last=False``).
    options : LoaderOptions, optional
        Device, output type, dtype, workers, caches... Default: ``LoaderOptions()`` with the
        keywords given here (``device="auto"``, ``output="auto"``).
    **keywords
        The parameters of the parts not given, with their defaults (each class documents them):

        - :class:`DatasetSpec` (with a store): ``input_steps=1``, ``lead=1``,
          ``target_steps=1``, ``crop``, ``input_dims``, ``input_overlap``, ``time_range``,
          ``normalize``, ``time_dim="time"``, ``level_dim="level"``,
          ``channel_dim="channel"``, ``mask_and_scale=True``,
          ``use_zarr_fill_value_as_mask``, ``storage_options``;
        - :class:`Sampler` (without ``sampler``): ``shuffle=True``, ``seed=0``, ``rank``,
          ``world_size``, ``drop_last=False``, ``block=8``, ``buffer=64``;
        - :class:`LoaderOptions` (without ``options``): ``device="auto"``,
          ``output="auto"``, ``dtype="float32"``, ``layout="auto"``, ``prefetch=2``,
          ``workers``, ``missing="fill"``, ``gpu_decode="auto"``,
          ``host_decode_share="auto"``, ``stream_priority="high"``, ``threads``,
          ``decode_threads``, ``cache_gb=0``, ``host_cache_gb=0``, ``progress=0``,
          ``prime_next_epoch=True``.

    Yields
    ------
    dict
        ``"x"``: ``(batch, channels, *grid)`` with layout ``"BCHW"``, ``(batch, input_steps,
        channels, *grid)`` with ``"BTCHW"``; ``"y"`` the targets likewise (absent with
        ``target_steps=0``); ``"time"``: each sample's time index ``t`` (NumPy int64);
        ``"origin"``: each sample's spatial origin in the array (NumPy int64, (batch, dims)).
        Values are CF-decoded as ``xr.open_dataset(engine="zarr")`` decodes them (masked values
        are NaN, packed values unpacked), normalised when the spec says so, in ``dtype``.

    Raises
    ------
    LoaderError
        A name, window or setting that cannot work, a GPU asked for where none can be used, an
        output type whose package is missing, or batches that do not fit zarrflow's GPU memory
        limit, all when the Loader is made.

    See Also
    --------
    DatasetSpec, Sampler, LoaderOptions, compute_stats, zarrflow.torch.Dataset

    Notes
    -----
    The loader assumes that the store does not change while it reads it: it keeps the index of
    every shard it has read (host memory, up to ``SHARD_INDEX_BUDGET`` bytes), so that later
    batches read only the inner chunks; a chunk cache likewise keeps what it has read.

    A Loader made in one process cannot read on the GPU in a forked child (CUDA does not
    survive fork): with PyTorch's ``DataLoader`` use ``num_workers=0``, the Loader prefetches on
    its own threads.

    Examples
    --------
    The keyword form, on the store ``zarrflow synth era5.zarr`` writes (8 time steps of 6
    channels on a 721 x 1440 grid):

    >>> loader = zarrflow.Loader("era5.zarr", ["data@2m_temperature", "data@geopotential@500"],
    ...                          batch_size=4, shuffle="block", seed=1)
    >>> len(loader)         # 7 samples: a batch of 4 and one of 3
    2
    >>> for epoch in range(2):
    ...     loader.set_epoch(epoch)
    ...     for batch in loader:
    ...         x, y = batch["x"], batch["y"]      # (4, 2, 721, 1440), then (3, 2, 721, 1440)

    The same loader from its parts, reading on the CPU into NumPy arrays:

    >>> spec = zarrflow.DatasetSpec("era5.zarr", ["data@2m_temperature", "data@geopotential@500"])
    >>> sampler = zarrflow.Sampler(spec, shuffle="block", seed=1)
    >>> options = zarrflow.LoaderOptions(device="cpu", output="numpy")
    >>> with zarrflow.Loader(spec, batch_size=4, sampler=sampler, options=options) as loader:
    ...     batch = next(iter(loader))
    >>> batch["x"].shape
    (4, 2, 721, 1440)
    """

    def __init__(self, dataset: DatasetSpec | Any, variables: Sequence[str] | int | None = None,
                 *, batch_size: int = 16, sampler: Sampler | None = None,
                 options: LoaderOptions | None = None, **keywords: Any):
        spec, batch_size, sampler, options = _parts(dataset, variables, batch_size, sampler,
                                                    options, keywords)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise LoaderError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if sampler.num_samples != len(spec):
            raise LoaderError(f"the sampler was made for {sampler.num_samples} samples, the "
                              f"dataset has {len(spec)}")
        self.spec, self.sampler, self.options = spec, sampler, options
        self.batch_size = int(batch_size)
        self.h, self.lead, self.k = spec.input_steps, spec.lead, spec.target_steps
        self.layout = options.resolve_layout(self.h, self.k)
        kind, self.device_id = options.resolve_device()
        self.on_gpu = kind == "cuda"
        self.device = f"cuda:{self.device_id}" if self.on_gpu else "cpu"
        self.output = options.resolve_output(self.on_gpu)
        self.dtype, self.missing = options.dtype, options.missing
        self.gpu_decode = options.gpu_decode
        self.stream_priority = options.stream_priority
        self.prefetch, self.progress = options.prefetch, options.progress
        cache_gb, host_cache_gb = options.cache_gb, options.host_cache_gb
        # Workers nobody asked for: the default's third one on a GPU, given up first for memory.
        self._spare_workers = 0
        workers = options.workers
        if workers is None:
            workers = DEFAULT_WORKERS
            if self.on_gpu:
                workers, self._spare_workers = workers + GPU_SPARE_WORKERS, GPU_SPARE_WORKERS
        self.workers = int(workers)
        # Who decodes what the GPU could: a fixed share, or one steered by the consumer's waits
        # and batch rate (only where there is a choice: a GPU loader with gpu_decode="auto").
        self._balance = None
        if options.host_decode_share == "auto":
            self.host_decode_share = 0.0
            # The chunk caches keep compressed bytes for the GPU decoders: with one, the GPU
            # decodes (cache hits skip storage, PCIe and the host entirely).
            if self.on_gpu and self.gpu_decode == "auto" and cache_gb <= 0 and host_cache_gb <= 0:
                self._balance = _core.DecodeBalance()
        else:
            self.host_decode_share = float(options.host_decode_share)
        C = len(spec.channels)
        # What every batch applies as chunks are copied in (identity mean/std when only the type
        # or the decoding changes): float32 (mean, std) pairs per channel, and each channel's CF
        # decoding. Plain float32 arrays read into a float32 batch are copied as stored.
        plain = all(ch.array.dtype == np.float32 and ch.cf is None for ch in spec.channels)
        self._transform = spec.normalize is not None or self.dtype != "float32" or not plain
        self._mean_std = spec.normalize or ([0.0] * C, [1.0] * C)
        self._norm_pairs = np.array(self._mean_std, np.float32).T.copy()
        self._decoding = [ch.cf.core_args() if ch.cf is not None else (False, 1.0, -0.0, [])
                          for ch in spec.channels]
        from .._threads import make_executor

        # Separate pools: I/O (file reads, shard indexes) and host-side decode work (framing
        # checks, Blosc plans, CPU fallbacks). By default both are the process's shared pool.
        self._executor = make_executor(options.threads)
        self._decode_executor = (make_executor(options.decode_threads)
                                 if options.decode_threads else None)
        # Compressed chunks kept on the GPU (later epochs skip storage and PCIe) and in pinned host
        # memory (they skip storage and host checks).
        # GPU batches are read by the process's GPU reader (its pools carry the memory limit);
        # the loader holds it while it reads.
        self._reader = _gpu.reader() if self.on_gpu else None
        self.cache = (_core.ChunkCache(int(cache_gb * 1e9), self._reader)
                      if cache_gb > 0 and self.on_gpu else None)
        self.host_cache = (_core.ChunkCache(int(host_cache_gb * 1e9), self._reader)
                           if host_cache_gb > 0 and self.on_gpu else None)
        # Shard indexes, read once per shard rather than once per batch (see the docstring).
        self.shard_indexes = _core.ShardIndexCache(SHARD_INDEX_BUDGET)
        self._pid = os.getpid()
        self._resume = 0           # batches of the epoch already consumed (load_state_dict)
        self._resume_changes = sampler.epoch_changes  # ... valid until the epoch changes
        self.prime_next_epoch = options.prime_next_epoch
        self._primed = None        # (epoch, _Pass): the next epoch, started early
        self._changes_seen = sampler.epoch_changes  # set_epoch calls before the last pass
        self._position = 0
        self.stats_ = Stats()
        self._t_origin = _core.engine_clock()  # the clock of the engine's times
        if len(self) == 0:
            raise LoaderError(f"no batches: {len(spec)} samples over {sampler.world_size} "
                              f"ranks with batch_size {batch_size} and "
                              f"drop_last={sampler.drop_last}")
        self._request_templates: list | None = None
        self._request_plan = None
        self.memory_plan = self._fit_memory(cache_gb) if self.on_gpu else None
        # The worker threads, made at the first pass (_engine_here).
        self._engine = None
        self._engine_pid = 0

    # --- what it reads --------------------------------------------------------------------------
    @property
    def channels(self) -> list[str]:
        """The channel names, in batch order."""
        return self.spec.variables

    @property
    def spatial_shape(self) -> tuple[int, ...]:
        """A sample's spatial shape (the window, or the cropped grid)."""
        return self.spec.window

    @property
    def patch_origins(self) -> list[tuple[int, ...]]:
        """Every spatial window's origin, relative to the crop."""
        return self.spec.window_origins

    @property
    def times(self) -> np.ndarray:
        """The time index ``t`` of every sample time, in order."""
        return self.spec.times

    @property
    def epoch(self) -> int:
        """The epoch the next pass reads (the sampler's)."""
        return self.sampler.epoch

    @property
    def rank(self) -> int:
        """This process's rank (the sampler's)."""
        return self.sampler.rank

    @property
    def world_size(self) -> int:
        """The number of ranks sharing each epoch (the sampler's)."""
        return self.sampler.world_size

    def __len__(self) -> int:
        """Batches per epoch on this rank."""
        n = len(self.sampler)
        return n // self.batch_size if self.sampler.drop_last else -(-n // self.batch_size)

    def __repr__(self) -> str:
        opts = self.options
        shown = {"device": self.device, "output": self.output, "dtype": self.dtype,
                 "layout": self.layout, "prefetch": self.prefetch, "workers": self.workers}
        changed = {f: getattr(opts, f) for f in LoaderOptions.fields()
                   if f not in shown and f not in ("device", "output", "layout")
                   and getattr(opts, f) != getattr(_DEFAULT_OPTIONS, f)}
        settings = ", ".join(f"{k}={v!r}" for k, v in {**shown, **changed}.items())
        return (f"Loader(batch_size={self.batch_size}, {len(self)} batches per epoch\n"
                f"  dataset={self.spec!r}\n"
                f"  sampler={self.sampler!r}\n"
                f"  options: {settings})")

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- epochs and resume ----------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Read epoch ``epoch``'s order in the next pass (the sampler's :meth:`Sampler.set_epoch`).

        Call it before every epoch, as with ``DistributedSampler``: the order is a function of
        the seed and the epoch only, the same on every rank. A pass without ``set_epoch``
        repeats the current epoch's order.

        Parameters
        ----------
        epoch : int
            The epoch number.
        """
        self.sampler.set_epoch(epoch)
        self._resume = 0

    def state_dict(self) -> dict:
        """Where the loader is: ``{"epoch", "position", "seed"}``, plus ``"snapshot_id"`` when it
        reads an Icechunk repository (the data version), JSON-serialisable.

        ``position`` counts the batches of the epoch taken so far. Save it with a checkpoint and
        give it to :meth:`load_state_dict` of a loader made with the same settings to go on
        with the next batch.

        Returns
        -------
        dict
        """
        state = {**self.sampler.state_dict(), "position": self._position}
        if self.spec.group.snapshot_id is not None:
            state["snapshot_id"] = self.spec.group.snapshot_id
        return state

    def load_state_dict(self, state: dict, *, allow_snapshot_change: bool = False) -> None:
        """Go on where ``state`` (from :meth:`state_dict`) was saved: the next pass starts with
        the batch after the last one taken then.

        Parameters
        ----------
        state : dict
            ``{"epoch", "position", "seed"}`` and, for an Icechunk repository, ``"snapshot_id"``.
        allow_snapshot_change : bool, default False
            Accept a state saved while reading another snapshot of the repository (the branch
            moved on). Without it, open the saved ``state["snapshot_id"]`` with ``ref=`` to resume
            on the same data.

        Raises
        ------
        LoaderError
            ``state`` was saved with another seed, or reading another snapshot.
        """
        saved, now = state.get("snapshot_id"), self.spec.group.snapshot_id
        if saved != now and not allow_snapshot_change:
            raise LoaderError(f"state was saved reading snapshot {saved}, this loader reads "
                              f"{now}; open ref={saved!r} to resume on the same data, or pass "
                              f"allow_snapshot_change=True")
        self.sampler.load_state_dict(state)
        self._resume = int(state["position"])
        self._resume_changes = self.sampler.epoch_changes

    def batches(self, epoch: int | None = None) -> list[np.ndarray]:
        """The sample ids of every batch of this rank for ``epoch`` (default: the current one).

        Parameters
        ----------
        epoch : int, optional
            The epoch whose order to give; default :attr:`epoch`.

        Returns
        -------
        list of numpy.ndarray
            One array of sample ids per batch (see :meth:`DatasetSpec.locate`).
        """
        mine = self.sampler.indices(epoch)
        out = [mine[i:i + self.batch_size] for i in range(0, len(mine), self.batch_size)]
        if self.sampler.drop_last and out and len(out[-1]) < self.batch_size:
            out.pop()
        return out

    # --- reading ----------------------------------------------------------------------------
    def _templates(self) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """What every region of a channel shares, built once: (arrays, one request row per
        channel with the fixed indices, counts, steps and destination strides set, the column
        of each channel's time index, the columns of its spatial indices)."""
        if self._request_templates is None:
            chans = self.spec.channels
            D = max(ch.array.ndim for ch in chans)
            spatial_strides = [int(np.prod(self.spatial_shape[i + 1:], dtype=np.int64))
                               for i in range(len(self.spatial_shape))]
            rows = np.zeros((len(chans), 3 + 4 * D), np.int64)
            for c, ch in enumerate(chans):
                nd = ch.array.ndim
                rows[c, 0], rows[c, 1] = c, nd
                start, count, step, dstr = (slice(3 + g * D, 3 + g * D + nd) for g in range(4))
                rows[c, count], rows[c, step] = 1, 1
                for axis, idx in ch.fixed.items():
                    rows[c, start][axis] = idx
                for axis, size, st in zip(ch.spatial_axes, self.spatial_shape, spatial_strides):
                    rows[c, count][axis], rows[c, dstr][axis] = size, st
            time_col = np.array([3 + ch.time_axis for ch in chans], np.int64)
            space_cols = np.array([[3 + a for a in ch.spatial_axes] for ch in chans],
                                  np.int64).reshape(len(chans), len(self.spatial_shape))
            self._request_templates = ([ch.array._h for ch in chans], rows, time_col, space_cols)
        return self._request_templates

    def _plan(self):
        """The C++ plan of every batch's request table (_core.BatchPlan), built once: one region
        per (sample, step, channel), channels fastest, into a [B, steps, C, *window] batch."""
        if self._request_plan is None:
            _, rows, time_col, space_cols = self._templates()
            offsets = np.array([-(self.h - 1) + j for j in range(self.h)]
                               + [self.lead + j for j in range(self.k)], np.int64)
            self._request_plan = _core.BatchPlan(rows, time_col, space_cols, offsets,
                                                 [int(n) for n in self.spatial_shape])
        return self._request_plan

    def _requests(self, times: np.ndarray, origins: np.ndarray) -> tuple[list, np.ndarray]:
        """(arrays, request table) of the samples at `times` with window `origins`, as the
        workers read them (see pipeline/batch_request.h for the table)."""
        table = self._plan().table(np.ascontiguousarray(times, np.int64),
                                   np.ascontiguousarray(origins, np.int64))
        return self._templates()[0], table

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

    def _engine_here(self):
        """This process's batch engine, made at the first pass: `workers` C++ threads that make
        batches with this loader's plan, transform, caches and pools."""
        if self._engine is not None and self._engine_pid != os.getpid():
            _inherited.append(self._engine)  # a forked child's copy: its workers are not here
            self._engine, self._primed = None, None
        if self._engine is None:
            fused = self._transform  # CF decoding, normalisation and cast as chunks are copied in
            self._engine = _core.BatchEngine(
                self._plan(), self._templates()[0], self.dtype if fused else "float32",
                "cuda" if self.on_gpu else "cpu", self.device_id, self.workers,
                self.prefetch + self.workers - 1,
                normalize=self._norm_pairs if fused else None,
                decode=self._decoding if fused else None, missing_error=self.missing == "error",
                host_share=self.host_decode_share, balance=self._balance,
                executor=self._executor, decode_executor=self._decode_executor,
                cache=self.cache, host_cache=self.host_cache, shard_indexes=self.shard_indexes,
                reader=self._reader, gpu_decode=self.gpu_decode,
                stream_priority=self.stream_priority,
                read_budget=self.memory_plan.read_budget if self.memory_plan else 0)
            self._engine_pid = os.getpid()
            with _live_lock:
                _live.add(self._engine)
        return self._engine

    def _submit(self, batches: list, read_ahead: bool) -> _Pass:
        """Hands `batches` (sample ids) to the engine as one pass."""
        engine = self._engine_here()
        sizes = [len(b) for b in batches]
        if not batches:
            none = np.zeros(0, np.int64)
            return _Pass(engine.submit(none, none, np.zeros((0, len(self.spatial_shape)),
                                                            np.int64), [], read_ahead), [], [], [])
        samples = np.concatenate(batches).astype(np.int64)
        times, origins = self.spec.locate(samples)
        times = np.ascontiguousarray(times, np.int64)
        origins = np.ascontiguousarray(origins, np.int64).reshape(len(samples), -1)
        pass_id = engine.submit(samples, times, origins, sizes, read_ahead)
        bounds = np.cumsum(sizes)[:-1]
        return _Pass(pass_id, batches, np.split(times, bounds), np.split(origins, bounds))

    def _take(self, engine, run: _Pass):
        """The pass's next batch from the engine (None after its last), its error said as the
        loader says it."""
        try:
            return engine.take(run.id)
        except RuntimeError:  # the binding's "pass dropped, or its batch engine closed"
            if engine is self._engine:  # this loader's engine: a real error
                raise
            raise RuntimeError("zarrflow: this Loader was closed while this pass was being "
                               "iterated; iterate the loader again for a new pass") from None
        except NodeNotFoundError as e:
            if self.missing != "error":
                raise
            raise MissingChunkError(str(e)) from None
        except StoreIOError as e:
            if not self.on_gpu or "out of memory" not in str(e):
                raise
            raise StoreIOError(f"{e}\n{self._memory_note()}") from e

    def _counters(self, report: dict, samples: int, start: float, end: float) -> dict:
        """A taken batch's counters for stats()."""
        delta = {"read_s": end - start, "batches": 1, "samples": samples,
                 "batch_bytes": self._batch_bytes(samples), "nans": int(report["nans"])}
        for key in _REPORT_COUNTERS:
            delta[key] = report[key]
        return delta

    def _convert(self, t: Any, times: np.ndarray, origins: np.ndarray) -> dict:
        """A batch the engine made (a zarrflow Tensor) as the loader's output type, split into
        x and y."""
        if not self.on_gpu:  # host memory: NumPy without a copy (normalised/cast, or float32)
            t = _host_array(t, self.dtype if self._transform else "float32")
        if isinstance(t, np.ndarray) and self.output == "torch":
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
            return {"raw": t, "time": times, "origin": origins}
        x, y = full[:, : self.h], full[:, self.h:]
        if self.layout == "BCHW":
            x = x[:, 0]
            y = y[:, 0] if self.k == 1 else y
        out = {"x": x, "time": times, "origin": origins}
        if self.k:
            out["y"] = y
        return out

    def close(self) -> None:
        """Stop the worker threads and drop the chunk caches.

        Each worker finishes the batch it is making and is joined, and the batches made but not
        taken (those read ahead for the next epoch) go back to zarrflow's memory pools before
        this returns: nothing of the loader comes back to them later, so
        :func:`zarrflow.release_memory` afterwards gives all of its idle memory back. The loader
        can still be iterated afterwards (new workers start, and it reads from storage again);
        a pass being iterated when it is closed raises at its next batch. Loaders made
        afterwards no longer plan around its GPU memory. ``with Loader(...) as loader:`` closes
        it at the end of the block.
        """
        with _live_lock:
            _planned.pop(self, None)
        engine, self._engine, self._primed = self._engine, None, None
        if engine is not None and self._engine_pid == os.getpid():
            engine.close()  # joined, and what its workers held is back in the pools
        elif engine is not None:
            _inherited.append(engine)  # a forked child's copy: its workers are not here
        # After the workers: none of them adds to a cache any more.
        for cache in (self.cache, self.host_cache, self.shard_indexes):
            if cache is not None:
                cache.clear()

    def __del__(self) -> None:
        try:
            if self._engine is not None and self._engine_pid == os.getpid():
                self._engine.close()  # its workers are joined; a later pass makes a new one
        except Exception:  # interpreter shutdown (the atexit hook closed it) or a failed __init__
            pass

    def __iter__(self) -> Iterator[dict]:
        """One pass over this rank's batches of the current epoch (see the class docstring for
        what a batch holds); after :meth:`load_state_dict`, the rest of the saved epoch."""
        if os.getpid() != self._pid and self.on_gpu:
            raise RuntimeError("this zarrflow Loader (device='cuda') was created in another "
                               "process: CUDA does not survive fork. Create the loader inside the "
                               "worker, or use it with num_workers=0 (it prefetches on its own).")
        changes = self.sampler.epoch_changes
        epoch_now, advanced = self.epoch, changes != self._changes_seen
        self._changes_seen = changes
        # A resume point holds until the epoch changes (Loader.set_epoch or Sampler.set_epoch).
        resume = self._resume if changes == self._resume_changes else 0
        self._resume = 0
        batches = self.batches()[resume:]
        engine = self._engine_here()
        primed, self._primed = self._primed, None
        if primed is not None and (resume or not _same_batches(primed[1].batches, batches)):
            engine.drop(primed[1].id)  # a wrong guess (or a resume): its batches are dropped
            primed = None
        self._position = resume
        run = primed[1] if primed is not None else self._submit(batches, read_ahead=False)
        t_start = time.perf_counter()
        total = self._position + len(batches)
        samples0, bytes0 = self.stats_.samples, self.stats_.batch_bytes  # this epoch's rate
        try:
            while True:
                got = self._take(engine, run)  # waits without the GIL
                self.stats_.depth_n += 1
                if got is None:  # (the next pass was started with this one's last batch)
                    return
                tensor, report, timing, all_started = got
                i = run.taken
                run.taken += 1
                self._record(epoch_now, timing, report, len(run.batches[i]))
                if self._primed is None and all_started:
                    # The workers are free: start the next pass now (it waits for room under
                    # the shared depth), so its first batches are ready when it begins.
                    self._prime(epoch_now + 1 if advanced else epoch_now)
                self._position += 1
                if self.progress and self._position % self.progress == 0:
                    dt = time.perf_counter() - t_start
                    print(f"zarrflow loader: {self._position}/{total} batches, "
                          f"{(self.stats_.samples - samples0) / dt:.1f} samples/s, "
                          f"{(self.stats_.batch_bytes - bytes0) / 1e9 / dt:.2f} GB/s", flush=True)
                yield self._convert(tensor, run.times[i], run.origins[i])
        finally:
            engine.drop(run.id)

    def _record(self, epoch: int, timing: tuple, report: dict, samples: int) -> None:
        """A taken batch in stats() and timeline()."""
        worker, start, read_end, end, asked, taken, ready, share, grew, judged = timing
        self.stats_.depth_sum += ready
        self.stats_.wait_s += taken - asked
        self.stats_.add(self._counters(report, samples, start, end))
        self.stats_.timeline.append((epoch, self._position, worker, start, read_end, end, asked,
                                     taken, ready, share, grew, judged))
        if report["notes"]:
            _gpu.say_once(report["notes"])

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
            self._primed = (epoch, self._submit(batches, read_ahead=True))

    def stats(self) -> dict:
        """Counters since the loader was made, for batches the consumer took.

        Returns
        -------
        dict
            ``batches``, ``samples``, ``batch_bytes`` (in the batches' dtype) and
            ``batch_GBps`` (per second of the workers' time); ``read_s`` (the workers' time,
            summed) and ``wait_s`` (the consumer's waits), ``mean_queue_depth`` (batches ready
            when the consumer asked); ``nans`` in the batches; ``workers`` and ``prefetch``
            after the memory plan, ``host_decode_share`` now; ``shard_indexes_read`` /
            ``shard_indexes_reused``. GPU loaders also count ``chunks``, ``stored_bytes``,
            ``deduplicated`` (reads saved because samples shared a chunk), ``missing``,
            ``gpu_decoded`` / ``cpu_decoded``, ``cache_hits`` / ``host_cache_hits``, the GPU
            time of copies made once a piece was read, decoding and scatter (``h2d_ms``,
            ``decode_ms``, ``scatter_ms``; copies made while reading overlap the reads), the
            reading threads' time (``plan_ms``, ``fetch_ms``, ``enqueue_ms``, ``gpu_wait_ms``,
            ``limit_wait_ms``), and with a decode balance its moves
            (``decode_moves_to_gpu`` / ``decode_moves_to_host``).
        """
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
        """The fraction of GPU-decodable chunks the next batch leaves to the host threads
        (``host_decode_share``, or where the decode balance has moved it)."""
        return self._balance.share if self._balance is not None else self.host_decode_share

    def timeline(self) -> list[dict]:
        """When each of the last batches taken (up to 1024) was made and taken: why a consumer
        waited.

        Returns
        -------
        list of dict
            One per batch, oldest first: ``worker`` made batch ``batch`` of ``epoch`` from
            ``start`` to ``end`` (``read_end``: its chunks were in the batch buffer); the
            consumer asked for it at ``asked`` and got it at ``taken`` (``wait`` = taken -
            asked) with ``ready`` batches finished at that moment; ``host_share`` is the
            fraction of GPU-decodable chunks it left to the host threads (see
            :attr:`decode_share`); ``pools_grew``: zarrflow's memory pools allocated while it
            was made (always False without a decode balance); ``judged``: the decode balance
            weighed its wait (False without one, for the first ``workers`` batches of a pass
            nobody read ahead, and for batches made while the pools grew). Times in seconds
            since the loader was made.
        """
        keys = ("epoch", "batch", "worker", "start", "read_end", "end", "asked", "taken", "ready",
                "host_share", "pools_grew", "judged")
        out = []
        for rec in self.stats_.timeline:
            d = dict(zip(keys, rec))
            for k in ("start", "read_end", "end", "asked", "taken"):
                d[k] -= self._t_origin
            d["wait"] = d["taken"] - d["asked"]
            out.append(d)
        return out


# The read report's counters that stats() sums (besides nans).
_REPORT_COUNTERS = ("chunks", "deduplicated", "missing", "gpu_decoded", "cpu_decoded",
                    "stored_bytes", "cache_hits", "host_cache_hits", "h2d_ms", "decode_ms",
                    "scatter_ms", "host_transformed", "internal_batches", "gpu_idle_ms", "plan_ms",
                    "fetch_ms", "enqueue_ms", "gpu_wait_ms", "limit_wait_ms")


def _same_batches(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


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


_DEFAULT_OPTIONS = LoaderOptions()


def _parameters(cls: type, skip: int) -> tuple[str, ...]:
    """Keyword parameters of `cls`'s constructor after the first `skip` positional ones."""
    params = list(inspect.signature(cls.__init__).parameters)[1 + skip:]
    return tuple(p for p in params if p not in ("args", "kwargs"))


_SPEC_KEYWORDS = _parameters(DatasetSpec, 2)
_SAMPLER_KEYWORDS = _parameters(Sampler, 1)
_OPTION_KEYWORDS = LoaderOptions.fields()


def _parts(dataset: Any, variables: Any, batch_size: int, sampler: Sampler | None,
           options: LoaderOptions | None,
           keywords: dict) -> tuple[DatasetSpec, int, Sampler, LoaderOptions]:
    """The Loader's (spec, batch size, sampler, options) from its arguments: the parts given,
    the others built from the keywords that belong to them."""
    groups = {"DatasetSpec": _SPEC_KEYWORDS, "Sampler": _SAMPLER_KEYWORDS,
              "LoaderOptions": _OPTION_KEYWORDS}
    split: dict[str, dict] = {name: {} for name in groups}
    for key, value in keywords.items():
        owner = next((name for name, keys in groups.items() if key in keys), None)
        if owner is None:
            known = [k for keys in groups.values() for k in keys] + ["batch_size", "sampler",
                                                                     "options"]
            raise TypeError(f"Loader: {unknown_name('keyword', key, known)}")
        split[owner][key] = value
    if isinstance(dataset, DatasetSpec):
        if isinstance(variables, (int, np.integer)) and not isinstance(variables, bool):
            batch_size, variables = int(variables), None
        if variables is not None:
            raise TypeError("Loader(spec, ...): the DatasetSpec names the variables")
        if split["DatasetSpec"]:
            raise TypeError(f"Loader(spec, ...): {sorted(split['DatasetSpec'])} belong to the "
                            f"DatasetSpec; set them there")
        spec = dataset
    else:
        if variables is None:
            raise TypeError("Loader(store, variables, ...) needs the variables (or pass a "
                            "DatasetSpec)")
        spec = DatasetSpec(dataset, variables, **split["DatasetSpec"])
    for name, given in (("Sampler", sampler), ("LoaderOptions", options)):
        if given is not None and split[name]:
            raise TypeError(f"Loader: {sorted(split[name])} belong to the {name} passed as "
                            f"{'sampler' if name == 'Sampler' else 'options'}; set them there")
    if options is None:
        options = LoaderOptions(**split["LoaderOptions"])
    if sampler is None:
        sampler = Sampler(spec, **split["Sampler"])
    return spec, batch_size, sampler, options
