"""xarray backend: ``xr.open_dataset(path, engine="zarrflow", device="cuda")``.

Variables stay lazy: xarray indexes them, and only the requested selection is read — by
zarrflow's parallel CPU reader (``device=None``, NumPy data) or by its GPU path (``device="cuda"``,
CuPy data decoded on the GPU: what cupy-xarray's kvikio engine set out to do).

How it decodes, and why it gives what ``engine="zarr"`` gives: zarrflow does not re-implement
CF decoding. :class:`ZarrflowStore` is an ``xarray.backends.AbstractDataStore`` whose variables
are built the way xarray's own ``ZarrStore.open_store_variable`` builds them from zarr-python
arrays (dimension names, attributes, the ``fill_value`` rule, the base64 ``_FillValue`` of Zarr v3
through xarray's ``FillValueCoder``); xarray's ``StoreBackendEntrypoint`` then runs
``conventions.decode_cf_variables`` on them — masking, ``scale_factor``/``add_offset``, times in
every calendar (cftime where needed), strings, the ``coordinates`` attribute — exactly as for
``engine="zarr"``. The fill-value rule: in Zarr v3 an array's ``fill_value`` describes storage
(what a missing chunk holds) and never masks data, only the ``_FillValue`` attribute does; in
Zarr v2 xarray stores ``_FillValue`` as the array's ``fill_value``, so there it masks
(``use_zarr_fill_value_as_mask`` overrides either default).

With ``device="cuda"``, numeric data variables are CuPy arrays decoded on the GPU, and
``scale_factor``/``add_offset`` apply there; dimension coordinates, times and text are read on
the host (xarray decodes them with pandas/cftime/NumPy). xarray masks fill values with NumPy, so
a GPU variable with a (non-NaN) ``_FillValue`` or ``missing_value`` needs
``mask_and_scale=False``; the engine says so at open.

Departures from ``engine="zarr"``: an array without dimension names gets ``dim_0``, ``dim_1``, ...
(``engine="zarr"`` refuses the whole store); ``consolidated=None`` uses consolidated metadata
when the group has some, without warning when it has none; ``use_zarr_fill_value_as_mask`` is
honoured as given (xarray's ``engine="zarr"`` honours it only through a ``ZarrStore``).
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np

from . import _gpu, errors
from ._api import Array, Group, open as zf_open

try:
    from xarray.backends import BackendArray, BackendEntrypoint
    from xarray.backends.common import AbstractDataStore
    from xarray.core import indexing
except ImportError:  # xarray is optional: the entry point only loads when xarray asks for it
    BackendArray = object
    BackendEntrypoint = object
    AbstractDataStore = object
    indexing = None

# xarray's name for the v2 attribute that lists an array's dimensions.
_DIMENSION_KEY = "_ARRAY_DIMENSIONS"


class ZarrflowBackendArray(BackendArray):
    """One array as xarray sees it: shape, dtype, and reads of outer (orthogonal) selections."""

    def __init__(self, array: Array, device: str | None, dtype: np.dtype):
        self.array = array
        self.device = device
        self.shape = array.shape
        self.dtype = dtype

    def __getitem__(self, key: Any) -> Any:
        # Host reads take integers, slices and 1-d integer arrays per dimension (Array.oindex);
        # GPU reads take slices, and xarray applies the rest on the result.
        support = (indexing.IndexingSupport.BASIC if self.device is not None
                   else indexing.IndexingSupport.OUTER)
        value = indexing.explicit_indexing_adapter(key, self.shape, support, self._getitem)
        if self.dtype.kind == "T" and isinstance(value, str):
            return np.asarray(value, dtype=self.dtype)  # keep a 0-d StringDType a NumPy array
        if self.dtype.kind in "SU" and not self.shape:
            # zarr-python returns a 0-d array's element as a NumPy scalar, so engine="zarr" gives
            # fixed-width text the element's own width (b"sea_ice" in "|S64" loads as "|S7").
            return np.asarray(np.asarray(value)[()])
        return value

    def _getitem(self, key: tuple) -> Any:
        if self.device is None:
            return self.array.oindex[key]
        # GPU: read the covering slices on the device, then drop the integer-indexed dims.
        region, drop = [], []
        for i, k in enumerate(key):
            if isinstance(k, slice):
                region.append(k)
            else:
                region.append(slice(int(k), int(k) + 1))
                drop.append(i)
        import cupy

        out = cupy.from_dlpack(self.array.read(tuple(region), device=self.device))
        return out.squeeze(axis=tuple(drop)) if drop else out


def _backend_dtype(arr: Array) -> np.dtype:
    """The dtype xarray should see: variable-length UTF-8 strings read as NumPy objects carry
    xarray's vlen-str marker (as in xarray's zarr backend), so its string coders know them."""
    dtype = arr.dtype
    if dtype.kind == "O" and _has_codec(arr, "vlen-utf8"):
        from xarray.coding.strings import create_vlen_dtype

        return create_vlen_dtype(str)
    return dtype


def _has_codec(arr: Array, name: str) -> bool:
    codecs = arr.codecs
    if isinstance(codecs, dict):  # v2: {"compressor": ..., "filters": [...], ...}
        found = list(codecs.get("filters") or []) + [codecs.get("compressor")]
        return any(isinstance(c, dict) and c.get("id") == name for c in found)
    return any(isinstance(c, dict) and c.get("name") == name for c in codecs)


def _dimensions(name: str, arr: Array) -> tuple[str, ...]:
    dims = arr.dims
    if not dims:
        return tuple(f"dim_{i}" for i in range(arr.ndim))
    return tuple(d if d is not None else f"{name}_dim_{i}" for i, d in enumerate(dims))


class ZarrflowStore(AbstractDataStore):
    """A zarrflow group through xarray's data-store interface.

    ``get_variables`` returns undecoded variables built as xarray's ``ZarrStore`` builds them
    (see the module docstring); ``xarray.backends.StoreBackendEntrypoint`` decodes them. Arrays
    named in ``drop_variables`` are never opened, so a variable zarrflow cannot read can be
    skipped.
    """

    def __init__(self, group: Group, *, device: str | None = None,
                 use_zarr_fill_value_as_mask: bool | None = None,
                 drop_variables: Iterable[str] = (), mask_and_scale: Any = True):
        self.group = group
        self.device = device
        self.mask_and_scale = mask_and_scale
        if use_zarr_fill_value_as_mask is None:
            # xarray's defaults: v2 stores keep _FillValue in fill_value; v3's is storage only.
            use_zarr_fill_value_as_mask = group.zarr_format == 2
        self.use_zarr_fill_value_as_mask = use_zarr_fill_value_as_mask
        self.drop_variables = frozenset(drop_variables)

    def arrays(self) -> list[tuple[str, Array]]:
        found = []
        for name in self.group.keys():
            if name in self.drop_variables:
                continue
            try:
                node = self.group[name]
            except errors.ZarrflowError as e:
                raise type(e)(f"{e} (to open the rest, pass drop_variables=[{name!r}])") from e
            if isinstance(node, Array):
                found.append((name, node))
        return found

    def open_store_variable(self, name: str, arr: Array) -> Any:
        from xarray import Variable
        from xarray.backends.zarr import FillValueCoder

        dims = _dimensions(name, arr)
        attrs = dict(arr.attrs)
        if arr.zarr_format == 2:
            attrs.pop(_DIMENSION_KEY, None)
            for k in [k for k in attrs if k.lower().startswith("_nc")]:
                del attrs[k]
        dtype = _backend_dtype(arr)
        device = self._device_for(name, dims, dtype, attrs, arr)
        data = indexing.LazilyIndexedArray(ZarrflowBackendArray(arr, device, dtype))
        encoding: dict[str, Any] = {"chunks": arr.chunks,
                                    "preferred_chunks": dict(zip(dims, arr.chunks)),
                                    "shards": arr.shards}
        if dtype.kind == "T":
            encoding["dtype"] = dtype
        fill = arr.fill_value
        if self.use_zarr_fill_value_as_mask:
            if fill is not None:
                attrs["_FillValue"] = fill
        else:
            if arr.zarr_format == 3:
                encoding["fill_value"] = fill
            if "_FillValue" in attrs:
                attrs["_FillValue"] = FillValueCoder.decode(attrs["_FillValue"], arr.dtype)
        self._check_device_decoding(name, device, attrs)
        return Variable(dims, data, attrs, encoding)

    def _device_for(self, name: str, dims: tuple, dtype: np.dtype, attrs: dict,
                    arr: Array) -> str | None:
        """Where a variable is read: dimension coordinates (pandas indexes), times, strings
        and other non-numeric data on the host — xarray decodes those with NumPy, pandas and
        cftime — everything else on ``self.device``."""
        if self.device is None or dims == (name,) or dtype.kind not in "biufc":
            return None
        from xarray.coding.variables import _is_time_like

        return None if _is_time_like(attrs.get("units")) else self.device

    def _check_device_decoding(self, name: str, device: str | None, attrs: dict) -> None:
        """xarray masks fill values with NumPy (np.array of the data), which CuPy refuses: say
        so at open, not at the first read."""
        if device is None:
            return
        mask = self.mask_and_scale
        if isinstance(mask, dict):
            mask = mask.get(name, True)
        if not mask:
            return
        fills = [v for k in ("_FillValue", "missing_value") if k in attrs
                 for v in np.ravel(attrs[k])
                 if not (isinstance(v, (float, np.floating)) and np.isnan(v))]
        if fills:
            raise errors.UnsupportedError(
                f"device={device!r}: variable {name!r} has fill values {fills} that xarray masks "
                f"with NumPy, which CuPy arrays refuse; pass mask_and_scale=False (and mask on "
                f"the GPU), or leave device out")

    def get_variables(self) -> dict:
        from xarray.core.utils import FrozenDict

        return FrozenDict((k, self.open_store_variable(k, v)) for k, v in self.arrays())

    def get_attrs(self) -> dict:
        return {k: v for k, v in self.group.attrs.items() if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> dict:
        sizes: dict[str, int] = {}
        for name, arr in self.arrays():
            for d, n in zip(_dimensions(name, arr), arr.shape):
                if sizes.setdefault(d, n) != n:
                    raise ValueError(f"found conflicting lengths for dimension {d} "
                                     f"({n} != {sizes[d]})")
        return sizes


def _check_device(device: str | None) -> str | None:
    """None for host reads; 'cuda[:N]' when a GPU and CuPy are there, else a clear error now
    rather than at the first ``.values``."""
    if device is None:
        return None
    kind, _ = _gpu.parse_device(device)
    if kind == "cpu":
        return None
    if not _gpu.cuda_available():
        raise errors.UnsupportedError(f"device={device!r}: no GPU can be used "
                                      f"({_gpu.cuda_status()}); leave device out to read into "
                                      "NumPy")
    try:
        import cupy  # noqa: F401
    except ImportError as e:
        raise errors.UnsupportedError(f"device={device!r} gives CuPy arrays, but CuPy cannot be "
                                      f"imported ({e}); install cupy, or leave device out") from e
    return device


def _open_group(path: Any, group: str | None, consolidated: bool | None, zarr_format: int | None,
                storage_options: dict | None, **sources: Any) -> Group:
    """``sources``: ``ref`` and ``virtual_chunk_containers`` (Icechunk repositories, reference
    sets), passed to zarrflow.open."""
    parts = [p for p in (group or "").split("/") if p]
    if consolidated is False:
        # Open the group itself, its members listed from the store, not from the metadata of a
        # parent (the root's .zmetadata / consolidated_metadata).
        root = os.fspath(path)
        if parts:
            root = root.rstrip("/") + "/" + "/".join(parts)
        node = zf_open(root, zarr_format=zarr_format, storage_options=storage_options,
                       use_consolidated=False, **sources)
    else:
        node = zf_open(path, zarr_format=zarr_format, storage_options=storage_options,
                       use_consolidated=consolidated, **sources)
        if parts:
            if not isinstance(node, Group):
                raise errors.NodeNotFoundError(f"'{os.fspath(path)}' is an array, not a group")
            node = node["/".join(parts)]
    if isinstance(node, Array):
        raise errors.NodeNotFoundError(
            f"engine='zarrflow' opens a group; '{os.fspath(path)}'"
            f"{' group ' + repr(group) if parts else ''} is an array")
    return node


class ZarrflowBackendEntrypoint(BackendEntrypoint):
    """The ``zarrflow`` xarray engine: ``xr.open_dataset(path, engine="zarrflow", ...)``.

    Registered under the ``xarray.backends`` entry point when zarrflow is installed; xarray
    makes it, users pass its keyword arguments to ``xr.open_dataset`` (see
    :meth:`open_dataset`).

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.open_dataset("wb2.zarr", engine="zarrflow")
    >>> t2m = ds["2m_temperature"].isel(time=0).values        # read by zarrflow's threads
    >>> gpu = xr.open_dataset("wb2.zarr", engine="zarrflow", device="cuda")  # CuPy data
    """

    description = ("Read Zarr v2/v3 stores with zarrflow (parallel C++ reader; GPU decode with "
                   "device='cuda')")
    url = "https://github.com/zarrflow/zarrflow"
    open_dataset_parameters = (
        "filename_or_obj", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "drop_variables", "use_cftime", "decode_timedelta", "group",
        "consolidated", "storage_options", "zarr_format", "use_zarr_fill_value_as_mask", "device",
        "ref", "virtual_chunk_containers")

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """Whether xarray may pick this engine without ``engine=``: paths ending in ``.zarr``.

        Parameters
        ----------
        filename_or_obj : str or os.PathLike
            What was passed to ``xr.open_dataset``.

        Returns
        -------
        bool
        """
        try:
            p = os.fspath(filename_or_obj)
        except TypeError:
            return False
        return os.path.splitext(str(p).rstrip("/"))[1] == ".zarr"

    def open_dataset(self, filename_or_obj: Any, *, mask_and_scale: Any = True,
                     decode_times: Any = True, concat_characters: Any = True,
                     decode_coords: Any = True, drop_variables: str | Iterable[str] | None = None,
                     use_cftime: Any = None, decode_timedelta: Any = None,
                     group: str | None = None, consolidated: bool | None = None,
                     storage_options: dict | None = None, zarr_format: int | None = None,
                     use_zarr_fill_value_as_mask: bool | None = None,
                     device: str | None = None, ref: str | None = None,
                     virtual_chunk_containers: Any = None) -> Any:
        """Open a Zarr group as an ``xarray.Dataset`` whose variables zarrflow reads lazily.

        The keyword arguments of ``engine="zarr"`` mean what they mean there, and values are
        CF-decoded by xarray exactly as for ``engine="zarr"``; ``device``, ``ref`` and
        ``virtual_chunk_containers`` are zarrflow's.

        Parameters
        ----------
        filename_or_obj : str or os.PathLike
            The store: a local path or a URL (``s3://``, ``gs://``, ``http(s)://``), an Icechunk
            repository or a Kerchunk reference set, as :func:`zarrflow.open` takes it.
        mask_and_scale : bool, default True
            Mask fill values and apply ``scale_factor`` / ``add_offset`` (xarray's decoding).
        decode_times : bool, default True
            Decode CF times (cftime where a calendar needs it).
        concat_characters : bool, default True
            Join character arrays into strings.
        decode_coords : bool or {"coordinates", "all"}, default True
            Turn the ``coordinates`` attribute's variables into coordinates.
        drop_variables : str or list of str, optional
            Variables not to open.
        use_cftime : bool, optional
            As in ``xr.open_dataset``.
        decode_timedelta : bool, optional
            As in ``xr.open_dataset``.
        group : str, optional
            The path of the group to open inside the store.
        consolidated : bool, optional
            None: consolidated metadata when the group has some; True: required; False: list
            the store.
        storage_options : dict, optional
            Remote stores' options, as :func:`zarrflow.open` takes them.
        zarr_format : {2, 3}, optional
            Read only this Zarr version. Default: detect it.
        use_zarr_fill_value_as_mask : bool, optional
            Mask an array's Zarr ``fill_value``. Default: yes for Zarr v2 (where xarray stores
            ``_FillValue`` there), no for Zarr v3.
        device : str, optional
            None: NumPy data read by zarrflow's host threads. ``"cuda"`` or ``"cuda:N"``:
            numeric data variables are CuPy arrays decoded on the GPU (needs CuPy); dimension
            coordinates, times and text stay on the host.
        ref : str, optional
            Icechunk repositories: the branch, tag or snapshot id to read.
        virtual_chunk_containers : dict or list of str, optional
            The URL prefixes virtual chunks may be read from, as for :func:`zarrflow.open`.

        Returns
        -------
        xarray.Dataset

        Raises
        ------
        NodeNotFoundError
            No group at the path (an array is refused too).
        UnsupportedError
            ``device`` given where no GPU or no CuPy can be used, or for a variable xarray
            would mask with NumPy (a non-NaN ``_FillValue`` or ``missing_value``: pass
            ``mask_and_scale=False``).
        """
        from xarray.backends.store import StoreBackendEntrypoint

        device = _check_device(device)
        if isinstance(drop_variables, str):
            drop_variables = [drop_variables]
        drop = list(drop_variables or ())
        node = _open_group(filename_or_obj, group, consolidated, zarr_format, storage_options,
                           ref=ref, virtual_chunk_containers=virtual_chunk_containers)
        store = ZarrflowStore(node, device=device, drop_variables=drop,
                              use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask,
                              mask_and_scale=mask_and_scale)
        return StoreBackendEntrypoint().open_dataset(
            store, mask_and_scale=mask_and_scale, decode_times=decode_times,
            concat_characters=concat_characters, decode_coords=decode_coords,
            drop_variables=drop, use_cftime=use_cftime, decode_timedelta=decode_timedelta)
