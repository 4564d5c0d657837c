"""``zarrflow synth``: write ERA5-like Zarr stores with no network.

Two layouts, the two that Earth-science ML training reads today:

- ``wb2`` — WeatherBench2 style, Zarr v2: one array per variable, ``(time, level, latitude,
  longitude)`` for pressure-level variables and ``(time, latitude, longitude)`` for surface ones,
  one field per chunk, Blosc-LZ4 byte shuffle, coordinates as arrays, xarray's
  ``_ARRAY_DIMENSIONS``, consolidated metadata;
- ``stacked`` — the 2025 hackathon's layout, Zarr v3: one ``(time, channel, latitude, longitude)``
  array ``data`` with chunk ``(1, 1, H, W)``, zstd or no compression, optionally sharded by time
  step; channel labels (``name`` or ``name@level``) in its ``channels`` attribute, coordinates as
  arrays beside it.

Values come from :mod:`zarrflow.tools.synthetic` (smooth fields + weather + noise, 16-bit GRIB
packing), so compression ratios are close to real ERA5's; the tool reports them. The writer is
zarr-python, so every store is readable by zarr-python, tensorstore and xarray.

A store appears at its path only once complete: it is written under ``<path>.partial`` and renamed
at the end, so an interrupted run never leaves something that looks like a finished store.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from .. import errors
from ._codec_choice import CodecChoice
from .._api import open as zf_open
from ._progress import Progress
from ._staging import staging_path, swap_into_place
from .synthetic import FieldMaker, grid

UPPER = ("u_component_of_wind", "v_component_of_wind", "temperature", "geopotential",
         "specific_humidity")
SURFACE = ("2m_temperature", "10m_u_component_of_wind", "10m_v_component_of_wind",
           "mean_sea_level_pressure", "surface_pressure", "total_column_water_vapour")
WB2_LEVELS = (50, 100, 150, 200, 250, 300, 400, 500, 600, 700, 850, 925, 1000)

# Channel sets: "6" is t2m plus u/v/t/z/q at 500 hPa; "71" is the hackathon's combined store
# (6 surface variables + 5 pressure-level variables on WeatherBench2's 13 levels).
PRESETS = {
    "6": (SURFACE[:1], UPPER, (500,)),
    "71": (SURFACE, UPPER, WB2_LEVELS),
}
LAYOUTS = ("wb2", "stacked")


@dataclass(frozen=True)
class SynthSpec:
    """What :func:`synth` writes; the fields are ``zarrflow synth``'s options.

    Parameters
    ----------
    layout : {"stacked", "wb2"}, default "stacked"
        ``"stacked"``: Zarr v3, one ``(time, channel, latitude, longitude)`` array ``data``.
        ``"wb2"``: WeatherBench2-style Zarr v2, one array per variable.
    ntime : int, default 8
        Time steps.
    nlat, nlon : int, default 721 and 1440
        The grid (0.25°: 721 x 1440).
    surface : tuple of str, default ("2m_temperature",)
        Surface variables.
    upper : tuple of str, default u/v wind, temperature, geopotential, specific humidity
        Pressure-level variables.
    levels : tuple of int, default (500,)
        Their levels (hPa).
    codec : str, optional
        ``"none"``, ``"zstd[:level]"``, ``"gzip[:level]"`` or ``"blosc-<cname>[:level]"`` (byte
        shuffle). Default: Blosc-LZ4 for ``"wb2"``, zstd level 3 for ``"stacked"``.
    shard : bool, default False
        ``"stacked"`` only: shard ``data`` by time step.
    seed : int, default 0
        Seed of the random fields.
    """

    layout: str = "stacked"
    ntime: int = 8
    nlat: int = 721
    nlon: int = 1440
    surface: tuple[str, ...] = PRESETS["6"][0]
    upper: tuple[str, ...] = PRESETS["6"][1]
    levels: tuple[int, ...] = PRESETS["6"][2]
    codec: str | None = None
    shard: bool = False
    seed: int = 0

    def channels(self) -> list[tuple[str, int | None]]:
        """The channels written, in order.

        Returns
        -------
        list of (str, int or None)
            ``(variable, level)`` pairs; the level is None for surface variables.
        """
        upper = [(v, lev) for v in self.upper for lev in self.levels]
        return [(v, None) for v in self.surface] + upper

    def validate(self) -> None:
        """Check that the spec can be written.

        Raises
        ------
        InvalidArgumentError
            An unknown layout or codec, an empty or too small store, or ``shard`` with
            ``"wb2"``.
        """
        bad = errors.InvalidArgumentError
        if self.layout not in LAYOUTS:
            raise bad(f"synth: layout must be one of {LAYOUTS}, not {self.layout!r}")
        if self.ntime < 1 or self.nlat < 2 or self.nlon < 2:
            raise bad(f"synth: need ntime >= 1 and a grid of at least 2x2, got ntime={self.ntime}, "
                      f"grid={self.nlat}x{self.nlon}")
        if not self.channels():
            raise bad("synth: no variables to write")
        if self.upper and not self.levels:
            raise bad("synth: pressure-level variables need at least one level")
        if self.shard and self.layout != "stacked":
            raise bad("synth: --shard applies to the stacked (Zarr v3) layout only")
        CodecChoice.parse(self.resolved_codec(), "synth")

    def resolved_codec(self) -> str:
        """The codec written: ``codec``, or the layout's default.

        Returns
        -------
        str
        """
        return self.codec or ("blosc-lz4" if self.layout == "wb2" else "zstd:3")


@dataclass
class SynthReport:
    """What :func:`synth` wrote.

    Parameters
    ----------
    path : pathlib.Path
        The store.
    arrays : dict of str to (int, int)
        Per data array: (decoded bytes, stored bytes).
    seconds : float
        Wall time of the write.
    """

    path: Path
    arrays: dict[str, tuple[int, int]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def decoded(self) -> int:
        """Decoded bytes of all data arrays."""
        return sum(d for d, _ in self.arrays.values())

    @property
    def stored(self) -> int:
        """Stored (compressed) bytes of all data arrays."""
        return sum(s for _, s in self.arrays.values())

    def table(self) -> str:
        """The report as ``zarrflow synth`` prints it: MB decoded and stored, and the ratio.

        Returns
        -------
        str
        """
        lines = [f"{'array':<28} {'decoded MB':>11} {'stored MB':>10} {'ratio':>6}"]
        for name, (d, s) in self.arrays.items():
            lines.append(f"{name:<28} {d / 1e6:11.1f} {s / 1e6:10.1f} {d / max(s, 1):6.2f}")
        lines.append(f"{'all data':<28} {self.decoded / 1e6:11.1f} {self.stored / 1e6:10.1f} "
                     f"{self.decoded / max(self.stored, 1):6.2f}")
        return "\n".join(lines)


def _compressors(text: str, zarr_format: int) -> list | None:
    choice = CodecChoice.parse(text, "synth")
    if choice.kind == "none":
        return None
    if zarr_format == 2:
        import numcodecs

        return numcodecs.get_codec(choice.v2_compressor())
    return choice.v3_codecs(itemsize=4)


def _write_coords(root, spec: SynthSpec, zarr_format: int, with_level: bool) -> None:
    lat, lon = grid(spec.nlat, spec.nlon)
    time_attrs = {"units": "hours since 2020-01-01", "calendar": "proleptic_gregorian"}
    coords = [("time", np.arange(spec.ntime, dtype="int64") * 6, time_attrs),
              ("latitude", lat, {"units": "degrees_north"}),
              ("longitude", lon, {"units": "degrees_east"})]
    if with_level:
        coords.append(("level", np.array(spec.levels, "int64"), {"units": "hPa"}))
    for name, values, attrs in coords:
        # v2: null fill value, or xarray would mask the coordinate value equal to it (time 0, the
        # equator, the prime meridian); v3 fill values are never used as a mask by xarray.
        kw = {"dimension_names": [name]} if zarr_format == 3 else {"fill_value": None}
        a = root.create_array(name, shape=values.shape, dtype=values.dtype, chunks=values.shape,
                              compressors=None, **kw)
        a[...] = values
        a.attrs.update(attrs if zarr_format == 3 else attrs | {"_ARRAY_DIMENSIONS": [name]})


def _makers(spec: SynthSpec) -> list[FieldMaker]:
    # Seeds depend on the variable and level, not on the channel set, so "6" ⊂ "71" in values too.
    out = []
    for name, lev in spec.channels():
        key = sum(map(ord, name)) * 1009 + (lev or 0)
        out.append(FieldMaker(name, spec.nlat, spec.nlon, seed=spec.seed * 1_000_003 + key,
                              level=lev))
    return out


def _write_wb2(path: Path, spec: SynthSpec, progress: Progress) -> list[str]:
    import zarr

    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    _write_coords(root, spec, 2, with_level=bool(spec.upper))
    comp = _compressors(spec.resolved_codec(), 2)
    arrays = {}
    for name in spec.surface:
        a = root.create_array(name, shape=(spec.ntime, spec.nlat, spec.nlon), dtype="float32",
                              chunks=(1, spec.nlat, spec.nlon), compressors=comp, fill_value=np.nan)
        a.attrs["_ARRAY_DIMENSIONS"] = ["time", "latitude", "longitude"]
        arrays[name] = a
    for name in spec.upper:
        a = root.create_array(name, shape=(spec.ntime, len(spec.levels), spec.nlat, spec.nlon),
                              dtype="float32", chunks=(1, 1, spec.nlat, spec.nlon),
                              compressors=comp, fill_value=np.nan)
        a.attrs["_ARRAY_DIMENSIONS"] = ["time", "level", "latitude", "longitude"]
        arrays[name] = a
    makers = _makers(spec)
    field_bytes = spec.nlat * spec.nlon * 4
    for t, fields in _fields_by_step(makers, spec.ntime):
        for (name, lev), values in zip(spec.channels(), fields):
            if lev is None:
                arrays[name][t] = values
            else:
                arrays[name][t, spec.levels.index(lev)] = values
            progress.update(1, field_bytes)
    zarr.consolidate_metadata(str(path))
    return list(arrays)


def _fields_by_step(makers: list[FieldMaker], ntime: int):
    """(t, [field of each maker at t]) for t = 0, 1, ...: the makers of one step run on a thread
    pool (NumPy releases the GIL), each maker still sees its steps in order, so the values do not
    depend on the thread count; the next step is generated while this one is written."""
    from concurrent.futures import ThreadPoolExecutor

    from .._threads import default_threads

    threads = max(1, min(len(makers), default_threads()))
    with ThreadPoolExecutor(threads, thread_name_prefix="zarrflow-synth") as pool:
        def step(t: int) -> list:
            return [pool.submit(m.at, t) for m in makers]

        pending = step(0) if ntime else None
        for t in range(ntime):
            fields = [f.result() for f in pending]
            pending = step(t + 1) if t + 1 < ntime else None
            yield t, fields


def _write_stacked(path: Path, spec: SynthSpec, progress: Progress) -> list[str]:
    import zarr

    channels = spec.channels()
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    _write_coords(root, spec, 3, with_level=False)
    shape = (spec.ntime, len(channels), spec.nlat, spec.nlon)
    chunks = (1, 1, spec.nlat, spec.nlon)
    shards = (1, len(channels), spec.nlat, spec.nlon) if spec.shard else None
    data = root.create_array("data", shape=shape, dtype="float32", chunks=chunks, shards=shards,
                             compressors=_compressors(spec.resolved_codec(), 3), fill_value=np.nan,
                             dimension_names=["time", "channel", "latitude", "longitude"])
    data.attrs["channels"] = [n if lev is None else f"{n}@{lev}" for n, lev in channels]
    makers = _makers(spec)
    field_bytes = spec.nlat * spec.nlon * 4
    for t, fields in _fields_by_step(makers, spec.ntime):
        if spec.shard:  # a shard is written whole: one time step, all channels at once
            data[t] = np.stack(fields)
            progress.update(len(makers), field_bytes * len(makers))
        else:
            for c, field in enumerate(fields):
                data[t, c] = field
                progress.update(1, field_bytes)
    return ["data"]


def synth(path: str | os.PathLike, spec: SynthSpec = SynthSpec(), *, overwrite: bool = False,
          progress: bool = True, out: TextIO | None = None) -> SynthReport:
    """Write the ERA5-like store ``spec`` describes at ``path``.

    The store is written under ``<path>.partial`` and renamed when complete, so an interrupted
    call never leaves something that looks like a finished store.

    Parameters
    ----------
    path : str or os.PathLike
        Where to write the store.
    spec : SynthSpec, optional
        What to write. Default: ``SynthSpec()``, 8 time steps of 6 channels on the 0.25° grid
        in the stacked layout.
    overwrite : bool, default False
        Replace an existing store at ``path``.
    progress : bool, default True
        Show a progress bar.
    out : file, optional
        Where the progress bar goes (default: standard error).

    Returns
    -------
    SynthReport
        Decoded and stored bytes of each array.

    Raises
    ------
    InvalidArgumentError
        ``path`` exists and ``overwrite`` is False, or the spec cannot be written.
    UnsupportedError
        zarr-python, the writer, is not installed (``pip install 'zarrflow[tools]'``).
    StoreIOError
        Writing failed; nothing is left at ``path``.

    Examples
    --------
    >>> from zarrflow.tools.synth import SynthSpec, synth
    >>> report = synth("small.zarr", SynthSpec(ntime=4, nlat=73, nlon=144))
    >>> print(report.table())
    """
    import time

    spec.validate()
    try:
        import numcodecs  # noqa: F401  (the v2 codecs)
        import zarr  # noqa: F401
    except ImportError as e:
        raise errors.UnsupportedError(f"synth writes through zarr-python, which is not installed "
                                      f"({e}); pip install 'zarrflow[tools]'") from e
    path = Path(path)
    if path.exists() and not overwrite:
        raise errors.InvalidArgumentError(f"synth: {path} already exists (pass overwrite=True / "
                                          "--overwrite to replace it)")
    partial = staging_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
    except OSError as e:
        raise errors.StoreIOError(f"synth: cannot create {partial}: {e.strerror or e}") from e

    nfields = spec.ntime * len(spec.channels())
    bar = Progress(nfields, f"synth {path.name}", enabled=progress, out=out)
    t0 = time.perf_counter()
    try:
        writer = _write_wb2 if spec.layout == "wb2" else _write_stacked
        names = writer(partial, spec, bar)
    except OSError as e:
        shutil.rmtree(partial, ignore_errors=True)
        raise errors.StoreIOError(f"synth: writing {path} failed: {e.strerror or e}; "
                                  "nothing was left at that path") from e
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    finally:
        bar.close()
    report = SynthReport(path, seconds=time.perf_counter() - t0)
    written = zf_open(partial)
    for name in names:
        arr = written[name]
        report.arrays[name] = (arr.nbytes, arr.info()["stored_bytes"])
    swap_into_place(partial, path)
    return report


def spec_from_args(args) -> SynthSpec:
    surface, upper, levels = PRESETS[args.channels]
    if args.levels:
        try:
            levels = tuple(int(x) for x in args.levels.split(","))
        except ValueError:
            raise errors.InvalidArgumentError(f"synth: --levels wants hPa values like 500,850, "
                                              f"not {args.levels!r}") from None
    try:
        nlat, nlon = (int(x) for x in args.grid.lower().split("x"))
    except ValueError:
        raise errors.InvalidArgumentError(f"synth: --grid wants LATxLON like 721x1440, "
                                          f"not {args.grid!r}") from None
    return SynthSpec(layout=args.layout, ntime=args.ntime, nlat=nlat, nlon=nlon, surface=surface,
                     upper=upper, levels=levels, codec=args.codec, shard=args.shard, seed=args.seed)


def add_parser(sub) -> None:
    p = sub.add_parser("synth", help="write an ERA5-like Zarr store (no network needed)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="output store (refused if present unless --overwrite)")
    p.add_argument("--layout", choices=LAYOUTS, default="stacked",
                   help="wb2: Zarr v2, one array per variable; stacked: Zarr v3 "
                        "(time, channel, lat, lon)")
    p.add_argument("--channels", choices=sorted(PRESETS), default="6",
                   help="6: t2m + u/v/t/z/q at 500 hPa; 71: 6 surface + 5 variables x 13 levels")
    p.add_argument("--levels", help="override the pressure levels, e.g. 500,850")
    p.add_argument("--ntime", type=int, default=8, help="6-hourly time steps (default 8)")
    p.add_argument("--grid", default="721x1440", help="LATxLON points (default 721x1440 = 0.25°)")
    p.add_argument("--codec", help="none, zstd[:L], gzip[:L], blosc-<cname>[:L] "
                                   "(default blosc-lz4 for wb2, zstd:3 for stacked)")
    p.add_argument("--shard", action="store_true", help="stacked: one shard per time step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="replace an existing store")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args, out: TextIO = sys.stdout) -> None:
    spec = spec_from_args(args)
    report = synth(args.path, spec, overwrite=args.overwrite, progress=not args.quiet)
    print(f"wrote {report.path} ({spec.layout}, {spec.resolved_codec()}, {len(spec.channels())} "
          f"channels, {spec.ntime} steps, {spec.nlat}x{spec.nlon}) in {report.seconds:.1f} s",
          file=out)
    print(report.table(), file=out)
