"""Per-channel normalisation statistics: computed over the data, or read from the store.

Both functions return ``{"channels": [...], "mean": [...], "std": [...]}``, the format a
:class:`~zarrflow.loader.DatasetSpec` takes as ``normalize`` (a dict, or the path of the JSON
file they save).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from ._errors import LoaderError
from .spec import ChannelSet, DatasetSpec


def compute_stats(store: Any, variables: Sequence[str] | None = None, *, every: int = 1,
                  path: str | None = None, **spec_kw: Any) -> dict:
    """Per-channel mean and standard deviation over the time steps, in float64.

    Statistics of the decoded values: masked values (NaN) are skipped, packed values unpacked,
    as the loader decodes them.

    Parameters
    ----------
    store : str, os.PathLike, Group or DatasetSpec
        The group, or a spec: its channels, over its ``time_range`` when it has one (statistics
        of the training split only).
    variables : list of str, optional
        The channels (as :class:`DatasetSpec` names them); not with a spec.
    every : int, default 1
        Use every ``every``-th time step (a faster estimate on long series).
    path : str, optional
        Also save the result as JSON there.
    **spec_kw
        ``time_dim``, ``level_dim``, ``channel_dim``, ``storage_options``, ``mask_and_scale``,
        ``use_zarr_fill_value_as_mask``, as for :class:`DatasetSpec`.

    Returns
    -------
    dict
        ``{"channels": [...], "mean": [...], "std": [...]}``; a channel without spread gets
        std 1.

    Raises
    ------
    LoaderError
        ``every`` below 1, no ``variables`` (or both a spec and variables or settings), or a
        channel the store does not have.

    Examples
    --------
    >>> stats = zarrflow.compute_stats("era5.zarr", ["data@2m_temperature"], path="stats.json")
    >>> spec = zarrflow.DatasetSpec("era5.zarr", ["data@2m_temperature"], normalize="stats.json")
    """
    if every < 1:
        raise LoaderError(f"every must be >= 1, got {every}")
    channels, steps = _channels_and_steps(store, variables, spec_kw)
    mean, std = [], []
    for ch in channels:
        total = sq = count = 0.0
        for t in range(steps.start, steps.stop, every):
            raw = ch.array[ch.key(t)]
            a = ch.cf.decode(raw) if ch.cf is not None else raw.astype(np.float64)
            a = a[~np.isnan(a)]
            total += a.sum()
            sq += (a * a).sum()
            count += a.size
        m = total / max(count, 1)
        mean.append(m)
        std.append(float(np.sqrt(max(sq / max(count, 1) - m * m, 0.0))) or 1.0)
    return _result([c.name for c in channels], mean, std, path)


def stored_stats(store: Any, variables: Sequence[str], *, channel_dim: str = "variable",
                 mean: str = "mean", std: str = "stdev", path: str | None = None,
                 **spec_kw: Any) -> dict:
    """Per-channel mean and standard deviation read from statistics the store already holds.

    anemoi datasets keep ``mean`` and ``stdev`` arrays along their ``variable`` dimension
    (computed over the dataset's statistics period), so normalising needs no pass over the data.

    Parameters
    ----------
    store : str, os.PathLike or Group
        The group.
    variables : list of str
        Channels picked along ``channel_dim`` (``"data@2t"``).
    channel_dim : str, default "variable"
        The dimension the statistics arrays run along.
    mean, std : str, default "mean" and "stdev"
        Names of the statistics arrays.
    path : str, optional
        Also save the result as JSON there.
    **spec_kw
        Further settings as for :class:`DatasetSpec` (``time_dim``, ``storage_options``...).

    Returns
    -------
    dict
        ``{"channels": [...], "mean": [...], "std": [...]}``, as :func:`compute_stats`.

    Raises
    ------
    LoaderError
        The arrays are missing, do not hold one value per channel, or a std is not positive.
    """
    chs = ChannelSet.build(store, variables, channel_dim=channel_dim, **spec_kw)
    g = chs.group
    for name in (mean, std):
        if name not in g.keys():
            raise LoaderError(f"the store has no {name!r} array of statistics (it has: "
                              f"{', '.join(g.keys())}); use compute_stats")
    means = np.asarray(g[mean][...], dtype=np.float64)
    stds = np.asarray(g[std][...], dtype=np.float64)
    out_mean, out_std = [], []
    for ch in chs.channels:
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
    return _result([c.name for c in chs.channels], out_mean, out_std, path)


def _channels_and_steps(store: Any, variables: Sequence[str] | None,
                        spec_kw: dict) -> tuple[list, range]:
    """The channels to compute statistics of and the time steps to use."""
    if isinstance(store, DatasetSpec):
        if variables is not None or spec_kw:
            raise LoaderError("compute_stats(spec) takes its variables and settings from the spec")
        lo, hi = store.time_range or (0, store.ntime)
        return store.channels, range(lo, hi)
    if variables is None:
        raise LoaderError("compute_stats needs the variables (or a DatasetSpec)")
    chs = ChannelSet.build(store, variables, **spec_kw)
    return chs.channels, range(chs.ntime)


def _result(names: list[str], mean: list, std: list, path: str | None) -> dict:
    """The normalisation file's content ({"channels", "mean", "std"}), saved to `path` if given."""
    stats = {"channels": names, "mean": mean, "std": std}
    if path:
        with open(path, "w") as f:
            json.dump(stats, f, indent=2)
    return stats
