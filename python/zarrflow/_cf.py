"""CF decoding of stored values (``mask_and_scale``), read from an array's attributes exactly as
``xr.open_dataset(engine="zarr")`` applies it to Zarr v2 and v3, without importing xarray. The
loader (``cf_decoding``) and ``rechunk --decode-cf`` / ``--stack`` (``unpack_decoding``) use it.

The rules (xarray's zarr backend, then its CFMaskCoder and CFScaleOffsetCoder):

* The ``_FillValue``. With ``use_zarr_fill_value_as_mask`` (default: on for v2, off for v3) it is
  the array's ``fill_value`` when that is not null, replacing any ``_FillValue`` attribute, and
  else the attribute as stored. Without it, the attribute, as xarray writes it: for
  floating-point arrays the base64 of a little-endian float64, for integers a number (truncated).
* The masked values: every number in ``_FillValue`` and ``missing_value`` (scalars or lists)
  except NaN. A raw value is masked when it equals one of them in value: NumPy compares the
  stored values, promoted to float, with the attributes' float64 / int64, so a float32 raw value
  equals 1e20 only if the float32 holds exactly that number. Strings mask nothing.
* ``_Unsigned`` ("true" on signed, "false" on unsigned integers) reinterprets the stored bits
  before masking; the ``_FillValue`` is reinterpreted with them, ``missing_value`` is not.
* Packed arrays (``scale_factor``, ``add_offset``) decode as ``raw * scale_factor + add_offset``
  in float64, NaN where masked: xarray picks float64 because JSON holds the attributes as float64
  (an integer ``scale_factor`` without ``add_offset``, which xarray applies in int64, is applied in
  float64 here: the same values below 2**53).
* Unpacked arrays with a non-NaN fill become float (float32 for floats of up to 4 bytes and
  integers of up to 2 bytes, else float64), NaN where masked. Arrays with only NaN fills are left
  as stored.

Integer raw values are compared exactly; xarray compares int64 and uint64 values beyond 2**53
after rounding them to float64, which can mask a neighbour of the fill value too.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import MetadataError

MAX_MASKED = 4  # raw values per array the loader masks (core/normalize.h: kMaxMasks)

# Attributes that describe the encoding and are dropped from a decoded array.
ENCODING_ATTRS = ("scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned")
# Given in packed units (CF), so meaningless once unpacked.
PACKED_RANGE_ATTRS = ("valid_min", "valid_max", "valid_range")

_SLAB = 1 << 20  # elements decoded per step, so float64 temporaries stay small


class CFAttributeError(ValueError):
    """An attribute the CF decoding cannot use (the caller names the array)."""


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"


@dataclass(frozen=True)
class CFDecoding:
    """How the stored values of one array decode: read as `read_as` (the stored type, or its
    ``_Unsigned`` twin), NaN where the raw value is one of `masked`, then
    ``raw * scale + offset`` when packed."""

    dtype: np.dtype  # as stored
    read_as: np.dtype
    scale: float | None
    offset: float | None
    masked: tuple  # NumPy scalars of `read_as`
    has_fill: bool  # a non-NaN _FillValue / missing_value, even one no raw value can equal

    @property
    def packed(self) -> bool:
        return self.scale is not None or self.offset is not None

    @property
    def decoded_dtype(self) -> np.dtype:
        """The type of xarray's decoded values."""
        if self.packed:
            return np.dtype(np.float64)
        if not self.has_fill or _is_float(self.read_as):
            return self.read_as
        return np.dtype(np.float32 if self.read_as.itemsize <= 2 else np.float64)

    def core_args(self) -> tuple[bool, float, float, list[int]]:
        """The C++ transform's form: (packed, scale, offset, masked values as the dtype's bits).
        An absent scale is 1.0, an absent offset -0.0 (x + -0.0 == x, signed zeros included)."""
        bits = np.dtype(f"u{self.dtype.itemsize}")
        return (self.packed, 1.0 if self.scale is None else self.scale,
                -0.0 if self.offset is None else self.offset,
                [int(np.asarray(v, self.dtype).view(bits)) for v in self.masked])

    def decode(self, raw: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
        """`raw` (stored values) decoded into `dtype`, NaN where masked. The arithmetic runs in
        float64, so casting xarray's decoded values to `dtype` gives the same bits."""
        data = np.ascontiguousarray(raw)
        if self.read_as != self.dtype:
            data = data.view(self.read_as)
        out = np.empty(data.shape, dtype)
        src, dst = data.reshape(-1), out.reshape(-1)
        for i in range(0, src.size, _SLAB):
            r = src[i:i + _SLAB]
            x = r.astype(np.float64)
            if self.scale is not None:
                x *= self.scale
            if self.offset is not None:
                x += self.offset
            for v in self.masked:
                x[r == v] = np.nan
            dst[i:i + _SLAB] = x
        return out


def _number(name: str, value: Any) -> float | None:
    if value is None:
        return None
    a = np.asarray(value)
    if a.size != 1 or a.dtype.kind not in "iuf":
        raise CFAttributeError(f"{name} {value!r} is not one number")
    return float(a.reshape(-1)[0])


def _encoded_fill_attribute(value: Any, dtype: np.dtype) -> list:
    """A ``_FillValue`` attribute as xarray's zarr backend decodes it when the Zarr fill_value is
    not the mask: base64 of a little-endian float64 for floats, a truncated number for integers.
    Plain numbers and "NaN"/"Infinity" spellings are accepted for floats too."""
    if isinstance(value, list):
        return [v for item in value for v in _encoded_fill_attribute(item, dtype)]
    if isinstance(value, str) and _is_float(dtype):
        if value in ("NaN", "Infinity", "-Infinity"):
            return [float(value.replace("Infinity", "inf"))]
        try:
            raw = base64.b64decode(value.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raw = b""
        if len(raw) != 8:
            raise CFAttributeError(f"_FillValue {value!r} is neither a number nor the base64 of "
                                   f"a float64")
        return [struct.unpack("<d", raw)[0]]
    if not isinstance(value, (int, float)):
        raise CFAttributeError(f"_FillValue {value!r} is not a number")
    return [value if _is_float(dtype) else int(value)]


def _is_nan(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return False
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def _values(value: Any) -> list:
    """An attribute's values as NumPy's ravel lists them, without NaN and None (pandas' null)."""
    return [v for v in np.ravel(np.asarray(value, dtype=object)) if not _is_nan(v)]


def _raw_value(value: Any, dtype: np.dtype):
    """The raw value of `dtype` equal to `value`, or None when none is (NaN, strings, numbers
    the type cannot hold exactly)."""
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return None
    if dtype.kind in "iu":
        if isinstance(value, (float, np.floating)):
            if not float(value).is_integer():
                return None
            value = int(value)
        try:
            v = int(value)
        except (TypeError, ValueError, OverflowError):
            return None
        info = np.iinfo(dtype)
        return dtype.type(v) if info.min <= v <= info.max else None
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if math.isnan(x):
        return None
    with np.errstate(over="ignore"):
        r = np.asarray(x).astype(dtype)
    return r[()] if float(r) == x else None


def _unsigned_twin(attrs: dict, dtype: np.dtype) -> np.dtype:
    flag = attrs.get("_Unsigned")
    if dtype.kind == "i" and flag == "true":
        return np.dtype(f"u{dtype.itemsize}")
    if dtype.kind == "u" and flag == "false":
        return np.dtype(f"i{dtype.itemsize}")
    return dtype


def xarray_decoding(attrs: dict, dtype: Any, zarr_format: int, fill_value: Any, *,
                    mask_and_scale: bool = True,
                    use_zarr_fill_value_as_mask: bool | None = None) -> CFDecoding | None:
    """The CF decoding xarray's zarr backend applies (``mask_and_scale``, and
    ``use_zarr_fill_value_as_mask`` as given to its ``ZarrStore``: ``xr.open_dataset(engine=
    "zarr")`` always uses the default) to a numeric array with these attributes, dtype, format
    and ``fill_value`` (a NumPy scalar of the dtype; None for a v2 null); None when it leaves the
    stored values as they are. Raises CFAttributeError for attributes it cannot use."""
    dtype = np.dtype(dtype)
    if not mask_and_scale or not (dtype.kind in "iu" or _is_float(dtype)):
        return None
    as_mask = (zarr_format == 2 if use_zarr_fill_value_as_mask is None
               else use_zarr_fill_value_as_mask)
    fill = attrs.get("_FillValue")
    if as_mask and fill_value is not None:
        fill = fill_value  # a value of the stored type
    elif not as_mask and fill is not None:
        fill = _encoded_fill_attribute(fill, dtype)
    read_as = _unsigned_twin(attrs, dtype)
    fills = _values(fill) if fill is not None else []
    if read_as != dtype:
        fills = [np.asarray(v, dtype).view(read_as)[()] if _raw_value(v, dtype) is not None
                 else v for v in fills]
    missing = attrs.get("missing_value")
    fills += _values(missing) if missing is not None else []
    scale = _number("scale_factor", attrs.get("scale_factor"))
    offset = _number("add_offset", attrs.get("add_offset"))
    masked: list = []
    for v in fills:
        r = _raw_value(v, read_as)
        if r is not None and not any(r == m for m in masked):
            masked.append(r)
    decoding = CFDecoding(dtype, read_as, scale, offset, tuple(masked), bool(fills))
    if not (decoding.packed or decoding.has_fill or read_as != dtype):
        return None
    return decoding


# --------------------------------------------------------------------------------------------
# The loader: the C++ transform masks at most MAX_MASKED values of the stored type
# --------------------------------------------------------------------------------------------


def cf_decoding(attrs: dict, dtype: Any, zarr_format: int, fill_value: Any, *,
                mask_and_scale: bool = True,
                use_zarr_fill_value_as_mask: bool | None = None) -> CFDecoding | None:
    """`xarray_decoding` for the loader; None when the stored values, read as float, are
    already the decoded ones."""
    d = xarray_decoding(attrs, dtype, zarr_format, fill_value, mask_and_scale=mask_and_scale,
                        use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
    if d is None:
        return None
    if d.read_as != d.dtype:
        raise CFAttributeError(f"_Unsigned {attrs['_Unsigned']!r} reinterprets the stored "
                               f"{d.dtype} values as {d.read_as}, which the loader does not do")
    if len(d.masked) > MAX_MASKED:
        raise CFAttributeError(f"{len(d.masked)} values to mask (_FillValue, missing_value); the "
                               f"loader masks at most {MAX_MASKED}")
    return d if d.packed or d.masked else None


# --------------------------------------------------------------------------------------------
# rechunk: unpacking into float, and copies kept encoded but written in the other format
# --------------------------------------------------------------------------------------------


def unpack_decoding(path: str, attrs: dict, dtype: Any, zarr_format: int,
                    fill_value: Any) -> CFDecoding | None:
    """How ``rechunk --decode-cf`` and ``--stack`` unpack array `path` into floats; None to copy
    it as stored: nothing to decode, only ``_Unsigned`` (the copy keeps the attribute), or a CF
    time (``units`` "... since ...", kept encoded for xarray's time decoding)."""
    units = attrs.get("units")
    if isinstance(units, str) and " since " in units:
        return None
    try:
        d = xarray_decoding(attrs, dtype, zarr_format, fill_value)
    except CFAttributeError as e:
        raise MetadataError(f"{path!r}: {e}") from None
    return d if d is not None and (d.packed or d.has_fill) else None


def decoded_attrs(attrs: dict, decoding: CFDecoding) -> dict:
    """The attributes of an unpacked copy: without the encoding's, nor packed-unit ranges."""
    drop = ENCODING_ATTRS + (PACKED_RANGE_ATTRS if decoding.packed else ())
    return {k: v for k, v in attrs.items() if k not in drop}


def carry_fill(path: str, attrs: dict, dtype: np.dtype, fill_value: Any, source_format: int,
               output_format: int) -> tuple[dict, Any]:
    """(attributes, fill_value) for array `path` copied as stored but written in
    `output_format`, so that xarray masks the same values in the copy as in the source:

    * v2 → v3: the v2 ``fill_value`` (xarray's ``_FillValue``) becomes a ``_FillValue``
      attribute as xarray writes it; the v3 ``fill_value`` stays the storage default.
    * v3 → v2: the ``_FillValue`` attribute becomes the v2 ``fill_value``. Without one the v2
      ``fill_value`` is null (missing chunks read as zeros; the copy stores every non-zero chunk)
      unless it is NaN, since xarray would take any other as a mask.

    A ``_FillValue`` no raw value can equal (a string, a number the type cannot hold) masks
    nothing, and is dropped.
    """
    if source_format == output_format or dtype.kind not in "iuf":
        return attrs, fill_value
    fill = attrs.get("_FillValue")
    if source_format == 2 and fill_value is not None:
        fill = fill_value
    elif source_format == 3 and fill is not None:
        try:
            fill = _encoded_fill_attribute(fill, dtype)
        except CFAttributeError as e:
            raise MetadataError(f"{path!r}: {e}") from None
    values = _values(fill) if fill is not None else []
    if len(values) > 1:
        raise MetadataError(f"{path!r}: _FillValue {attrs['_FillValue']!r} holds several values; "
                            f"rechunk carries one between Zarr formats")
    mask = values[0] if values and _raw_value(values[0], dtype) is not None else None
    attrs = {k: v for k, v in attrs.items() if k != "_FillValue"}
    if output_format == 3:
        if mask is not None:
            attrs["_FillValue"] = (
                base64.standard_b64encode(struct.pack("<d", float(mask))).decode()
                if dtype.kind == "f" else int(mask))
        return attrs, fill_value
    if mask is not None:
        return attrs, mask
    nan = fill_value is not None and dtype.kind == "f" and np.isnan(fill_value)
    return attrs, fill_value if nan else None
