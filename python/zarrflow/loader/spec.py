"""What a sample is: channels of a Zarr group on a common grid, time windows, spatial windows.

:class:`DatasetSpec` answers "what does the loader read" (PyTorch's ``Dataset``); the order of
the samples is the :class:`~zarrflow.loader.Sampler`'s, how they are read the
:class:`~zarrflow.loader.LoaderOptions`'.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._api import Array, Group, open as zf_open
from .._cf import CFAttributeError, CFDecoding, cf_decoding
from .._names import unknown_name
from ..errors import ZarrflowError
from ._errors import LoaderError

LOADABLE = "int8..int64, uint8..uint64, float16/32/64 and bfloat16"


@dataclass(frozen=True)
class Channel:
    """One channel of a sample: an array and the indices that pick it (a level, a label)."""

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
class ChannelSet:
    """Channels resolved in a group; they share one spatial grid and one time axis length."""

    group: Group
    channels: list[Channel]
    time_dim: str
    spatial_dims: tuple[str, ...]
    spatial_shape: tuple[int, ...]
    ntime: int

    @classmethod
    def build(cls, group: Group | str | os.PathLike, variables: Sequence[str] | str, *,
              time_dim: str = "time", level_dim: str = "level", channel_dim: str = "channel",
              storage_options: dict | None = None, mask_and_scale: bool = True,
              use_zarr_fill_value_as_mask: bool | None = None) -> "ChannelSet":
        if not isinstance(group, Group):
            group = zf_open(group, storage_options=storage_options)
            if not isinstance(group, Group):
                raise LoaderError("the loader reads a Zarr group (arrays and coordinates)")
        variables = [variables] if isinstance(variables, str) else list(variables)
        if not variables:
            raise LoaderError("no variables selected")
        channels = [resolve_channel(group, v, time_dim, level_dim, channel_dim)
                    for v in variables]
        first = channels[0]
        sdims = tuple(first.array.dims[a] for a in first.spatial_axes)
        sshape = tuple(first.array.shape[a] for a in first.spatial_axes)
        ntime = first.array.shape[first.time_axis]
        for ch in channels[1:]:
            dims = tuple(ch.array.dims[a] for a in ch.spatial_axes)
            shape = tuple(ch.array.shape[a] for a in ch.spatial_axes)
            if dims != sdims or shape != sshape:
                raise LoaderError(f"variables do not share a grid: {first.name} is "
                                  f"{dict(zip(sdims, sshape))}, {ch.name} is "
                                  f"{dict(zip(dims, shape))}")
            if ch.array.shape[ch.time_axis] != ntime:
                raise LoaderError(f"variables differ in length along {time_dim!r}: {first.name} "
                                  f"has {ntime}, {ch.name} has {ch.array.shape[ch.time_axis]}")
        channels = [dataclasses.replace(ch, cf=_channel_decoding(
            ch, mask_and_scale, use_zarr_fill_value_as_mask)) for ch in channels]
        return cls(group, channels, time_dim, sdims, sshape, ntime)


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


def resolve_channel(group: Group, spec: str, time_dim: str, level_dim: str,
                    channel_dim: str) -> Channel:
    """The channel a declared name picks: ``name``, ``name@<level>`` or ``name@<label>``."""
    name, _, pick = spec.partition("@")
    if name not in group.keys():
        raise LoaderError(unknown_name("variable", name, group.keys()))
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
            coord = (group[level_dim][...] if level_dim in group.keys()
                     else np.arange(arr.shape[axis]))
            try:
                value = float(pick)
            except ValueError:
                raise LoaderError(f"{spec!r}: {pick!r} is not a {level_dim} value") from None
            hits = np.nonzero(np.asarray(coord, dtype=np.float64) == value)[0]
            if not len(hits):
                raise LoaderError(
                    f"unknown {level_dim} {pick!r} for {name!r} (levels: {list(coord)})")
            fixed[axis] = int(hits[0])
        elif channel_dim in dims:
            axis = dims.index(channel_dim)
            labels = _channel_labels(group, arr, channel_dim, arr.shape[axis])
            if labels is not None and pick in labels:
                fixed[axis] = list(labels).index(pick)
            elif pick.isdigit() and int(pick) < arr.shape[axis]:
                fixed[axis] = int(pick)
            elif labels is not None:
                raise LoaderError(f"{name!r}: {unknown_name(channel_dim, pick, labels)}")
            else:
                raise LoaderError(f"unknown {channel_dim} {pick!r} for {name!r} (it has no labels: "
                                  f"pick by index, 0..{arr.shape[axis] - 1})")
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


def valid_times(ntime: int, input_steps: int, lead: int, target_steps: int) -> np.ndarray:
    """Times t with inputs t-h+1..t and targets t+lead..t+lead+k-1 inside [0, ntime)."""
    if input_steps < 1 or target_steps < 0 or lead < 1:
        raise LoaderError("need input_steps >= 1, lead >= 1 and target_steps >= 0")
    first, last = input_steps - 1, ntime - 1 - (lead + target_steps - 1 if target_steps else 0)
    if last < first:
        raise LoaderError(f"a window of {input_steps} input and {target_steps} target steps "
                          f"(lead {lead}) does not fit in {ntime} time steps")
    return np.arange(first, last + 1)


class DatasetSpec:
    """What the loader reads: the samples of a Zarr group.

    A sample is one time ``t`` and one spatial window: its input ``x`` holds every channel at
    the times ``t - input_steps + 1 … t``, its target ``y`` the same channels at
    ``t + lead … t + lead + target_steps - 1``. The store is opened and every name is checked
    when the spec is made, so a typo fails here, not in the first batch.

    Parameters
    ----------
    store : str, os.PathLike or Group
        The Zarr group: a local path, an ``s3://``, ``gs://`` or ``http(s)://`` URL, or a group
        opened with :func:`zarrflow.open`.
    variables : list of str or str
        The channels, in order. ``name`` is a (time, lat, lon) array; ``name@500`` picks level
        500 of a (time, level, lat, lon) array by its coordinate value; ``name@label`` picks a
        channel of a stacked (time, channel, lat, lon) array by its label (the array's
        ``channels`` attribute, a coordinate named like the dimension, or the group's
        ``variables`` attribute as anemoi datasets keep it) or by its index. Every channel must
        share the grid. A single string is one channel.
    input_steps : int, default 1
        Time steps in ``x`` (h), ending at ``t``.
    lead : int, default 1
        Steps from ``t`` to the first target step.
    target_steps : int, default 1
        Time steps in ``y`` (k); 0 for batches without ``y``.
    crop : dict of str to (int, int), optional
        ``{dim: (start, stop)}`` on the spatial dims: only this region is read.
    input_dims : dict of str to int, optional
        Spatial windows (as xbatcher's ``input_dims``): ``{dim: size}``. Each (time, window)
        is a sample and batches report each sample's window ``origin``. Default: one window,
        the whole (cropped) grid.
    input_overlap : dict of str to int, optional
        Overlap of neighbouring windows, ``{dim: overlap}`` (the stride is size - overlap).
    time_range : (int, int), optional
        ``(start, stop)`` time indices that every input and target step of a sample must lie
        in: train/validation splits without leakage across the boundary.
    normalize : dict, str or os.PathLike, optional
        Per-channel statistics: ``{"mean": [...], "std": [...]}`` in channel order, or with a
        ``"channels"`` list naming them in any order, or the path of such a JSON file (see
        :func:`zarrflow.compute_stats` and :func:`zarrflow.stored_stats`). Batches hold
        ``(value - mean) / std``, computed in float32 as the chunks are copied in.
    time_dim, level_dim, channel_dim : str
        Dimension names (defaults ``"time"``, ``"level"``, ``"channel"``); anemoi datasets
        need ``channel_dim="variable"``.
    mask_and_scale : bool, default True
        CF decoding as ``xr.open_dataset(engine="zarr")`` does it: raw values equal to
        ``_FillValue`` or ``missing_value`` become NaN and packed values (``scale_factor``,
        ``add_offset``) are unpacked in float64. False: values as stored.
    use_zarr_fill_value_as_mask : bool, optional
        As in xarray: in Zarr v2 the array's ``fill_value`` masks too unless this is False.
    storage_options : dict, optional
        Credentials, endpoint and transport settings for a remote ``store`` (see
        :func:`zarrflow.open`).

    Attributes
    ----------
    channels : list of Channel
        The resolved channels (``name``, ``array``, picked indices, CF decoding).
    spatial_dims, spatial_shape : tuple
        The grid's dimension names and full shape (before cropping).
    ntime : int
        Length of the time axis.
    times : numpy.ndarray
        The time index ``t`` (last input step) of every sample time, in order.
    window : tuple of int
        A sample's spatial shape.
    window_origins : list of tuple of int
        Every window's origin, relative to the crop.

    Raises
    ------
    LoaderError
        A name the store does not have (the message lists what it has), channels on different
        grids or time axes, a data type the loader cannot load, windows or time steps that do
        not fit, or invalid normalisation statistics.
    NodeNotFoundError
        No Zarr group at ``store``.

    Examples
    --------
    On the store ``zarrflow synth era5.zarr`` writes (8 time steps of 6 channels):

    >>> spec = zarrflow.DatasetSpec("era5.zarr", ["data@2m_temperature", "data@geopotential@500"])
    >>> len(spec)           # times 0..6 have a target at t + 1
    7
    >>> spec = zarrflow.DatasetSpec("era5.zarr", ["data@2m_temperature"], input_steps=2,
    ...                             target_steps=2, input_dims={"latitude": 360, "longitude": 720})
    >>> len(spec), spec.window
    (20, (360, 720))
    """

    def __init__(self, store: Any, variables: Sequence[str] | str, *, input_steps: int = 1,
                 lead: int = 1, target_steps: int = 1, crop: dict | None = None,
                 input_dims: dict | None = None, input_overlap: dict | None = None,
                 time_range: tuple[int, int] | None = None, normalize: Any = None,
                 time_dim: str = "time", level_dim: str = "level", channel_dim: str = "channel",
                 mask_and_scale: bool = True, use_zarr_fill_value_as_mask: bool | None = None,
                 storage_options: dict | None = None):
        resolved = ChannelSet.build(store, variables, time_dim=time_dim, level_dim=level_dim,
                                    channel_dim=channel_dim, storage_options=storage_options,
                                    mask_and_scale=mask_and_scale,
                                    use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        self.store = store
        self.group = resolved.group
        self.channels = resolved.channels
        self.time_dim = time_dim
        self.spatial_dims = resolved.spatial_dims
        self.spatial_shape = resolved.spatial_shape
        self.ntime = resolved.ntime
        self.input_steps, self.lead, self.target_steps = input_steps, lead, target_steps
        self.time_range = None if time_range is None else tuple(time_range)
        self.times = self._sample_times(self.time_range)
        self.crop = self._crop(crop or {})
        self.window, self.window_origins = self._windows(input_dims or {}, input_overlap or {})
        self.normalize = self._normalization(normalize)

    # --- what was asked for ---------------------------------------------------------------
    @property
    def variables(self) -> list[str]:
        """The channel names as declared."""
        return [c.name for c in self.channels]

    def __len__(self) -> int:
        """The number of samples: sample times x spatial windows."""
        return len(self.times) * len(self.window_origins)

    def __repr__(self) -> str:
        store = self.store if isinstance(self.store, (str, os.PathLike)) else self.group
        extra = "".join(f", {k}={v!r}" for k, v in (
            ("crop", dict(zip(self.spatial_dims, self.crop))
             if self.crop != [(0, n) for n in self.spatial_shape] else None),
            ("window", dict(zip(self.spatial_dims, self.window))
             if len(self.window_origins) > 1 else None),
            ("time_range", self.time_range),
            ("normalize", "per-channel mean/std" if self.normalize else None)) if v is not None)
        return (f"DatasetSpec({str(store)!r}, {self.variables!r}, input_steps={self.input_steps}, "
                f"lead={self.lead}, target_steps={self.target_steps}{extra}; {len(self)} samples "
                f"on a {dict(zip(self.spatial_dims, self.spatial_shape))} grid)")

    # --- where each sample is --------------------------------------------------------------
    def locate(self, samples: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Where each sample is: its time index and its spatial origin in the array.

        Parameters
        ----------
        samples : sequence of int
            Sample ids; they run over spatial windows fastest (id = time * windows + window).

        Returns
        -------
        times : numpy.ndarray
            Each sample's time index ``t`` (int64, shape ``(B,)``).
        origins : numpy.ndarray
            Each sample's spatial origin in the array (int64, shape ``(B, spatial dims)``).
        """
        samples = np.asarray(samples, np.int64)
        p = len(self.window_origins)
        origins = np.asarray(self.window_origins, np.int64).reshape(p, -1)
        starts = np.array([lo for lo, _ in self.crop], np.int64)
        return (self.times[samples // p].astype(np.int64),
                (origins[samples % p] + starts).reshape(len(samples), -1))

    # --- building it ------------------------------------------------------------------------
    def _sample_times(self, time_range: tuple[int, int] | None) -> np.ndarray:
        h, lead, k = self.input_steps, self.lead, self.target_steps
        times = valid_times(self.ntime, h, lead, k)
        if time_range is None:
            return times
        start, stop = time_range
        if not 0 <= start < stop <= self.ntime:
            raise LoaderError(f"time_range {time_range} is not inside [0, {self.ntime})")
        last = lead + k - 1 if k else 0
        times = times[(times - h + 1 >= start) & (times + last < stop)]
        if not len(times):
            raise LoaderError(f"no sample fits in time_range {time_range} with "
                              f"{h} input and {k} target steps")
        return times

    def _crop(self, crop: dict) -> list[tuple[int, int]]:
        crop = dict(crop)  # the caller's dict stays as it was
        out = []
        for d, n in zip(self.spatial_dims, self.spatial_shape):
            lo, hi = crop.pop(d, (0, n))
            if not 0 <= lo < hi <= n:
                raise LoaderError(f"crop {d}=({lo}, {hi}) is outside [0, {n}] or empty")
            out.append((int(lo), int(hi)))
        if crop:
            raise LoaderError(f"unknown crop dims {list(crop)} (spatial dims: {self.spatial_dims})")
        return out

    def _windows(self, input_dims: dict, overlap: dict) -> tuple[tuple[int, ...],
                                                                 list[tuple[int, ...]]]:
        """xbatcher-style windows over the (cropped) spatial dims: `input_dims` sizes, stride =
        size - overlap. Without input_dims a sample is the whole crop."""
        input_dims, overlap = dict(input_dims), dict(overlap)
        extents = [hi - lo for lo, hi in self.crop]
        sizes, starts = [], []
        for d, n in zip(self.spatial_dims, extents):
            size = int(input_dims.pop(d, n))
            ov = int(overlap.pop(d, 0))
            if size < 1 or size > n:
                raise LoaderError(f"window {d}={size} is larger than the dimension ({n}) or empty")
            if not 0 <= ov < size:
                raise LoaderError(f"overlap {d}={ov} must be in [0, {size})")
            sizes.append(size)
            starts.append(list(range(0, n - size + 1, size - ov)))
        if input_dims or overlap:
            raise LoaderError(f"unknown window dims {sorted(set(input_dims) | set(overlap))} "
                              f"(spatial dims: {self.spatial_dims})")
        grid = np.stack(np.meshgrid(*starts, indexing="ij"), -1).reshape(-1, len(sizes))
        return tuple(sizes), [tuple(int(v) for v in o) for o in grid]

    def _normalization(self, normalize: Any) -> tuple[list[float], list[float]] | None:
        if normalize is None:
            return None
        if isinstance(normalize, (str, os.PathLike)):
            with open(normalize) as f:
                normalize = json.load(f)
        names = self.variables
        if "channels" in normalize:
            known = list(normalize["channels"])
            lacking = [n for n in names if n not in known]
            if lacking:
                raise LoaderError(f"stats lack channels {lacking}")
            idx = [known.index(n) for n in names]
            mean = [normalize["mean"][i] for i in idx]
            std = [normalize["std"][i] for i in idx]
        else:
            mean, std = list(normalize["mean"]), list(normalize["std"])
        if len(mean) != len(names) or len(std) != len(names):
            raise LoaderError(f"normalize needs {len(names)} means and stds")
        if any(s <= 0 for s in std):
            raise LoaderError("normalize std values must be positive")
        return [float(m) for m in mean], [float(s) for s in std]
