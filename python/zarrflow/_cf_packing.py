"""CF packing as xarray decodes it (``mask_and_scale``), for ``rechunk --decode-cf`` and stacking.

Where xarray keeps ``_FillValue``: in Zarr v2 it is the array's ``fill_value``; in v3 an
attribute (base64 of a little-endian float64 for floating-point arrays), the v3 ``fill_value``
being storage only.

An array is CF-encoded when it carries ``scale_factor`` or ``add_offset`` (packed), an explicit
``_FillValue`` or ``missing_value`` attribute, or, in v2, is floating-point with a ``fill_value``
other than NaN (integer v2 arrays with only a ``fill_value``, such as coordinates, and float
arrays whose only missing value is NaN are left as they are). Decoding masks the raw values equal
to ``_FillValue`` or ``missing_value`` → NaN, then applies ``raw * scale_factor + add_offset``,
both in the float type xarray picks (float64 for packed data, whose attributes JSON holds as
float64), and casts the result to the requested type. ``_Unsigned = "true"`` reinterprets signed
integers as unsigned first. CF time variables (``units`` "... since ...") are never treated as
packed.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass

import numpy as np

# Attributes that describe the encoding and are dropped from a decoded array.
ENCODING_ATTRS = ("scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned")
# Given in packed units (CF), so meaningless once unpacked.
PACKED_RANGE_ATTRS = ("valid_min", "valid_max", "valid_range")

_SLAB = 1 << 20  # elements decoded per step, so float64 temporaries stay small


def _scalar(value) -> float | None:
    if value is None:
        return None
    a = np.asarray(value, dtype=np.float64).reshape(-1)
    if a.size != 1:
        raise ValueError(f"expected one number, got {value!r}")
    return float(a[0])


def _fill_attr(value, dtype: np.dtype) -> list[float]:
    """A ``_FillValue`` attribute as numbers (xarray stores float ones base64-encoded in v3)."""
    if value is None:
        return []
    if isinstance(value, str):
        if value in ("NaN", "Infinity", "-Infinity"):
            return [float(value.replace("Infinity", "inf"))]
        raw = base64.standard_b64decode(value)
        if len(raw) == 8:
            return [struct.unpack("<d", raw)[0]]
        raise ValueError(f"_FillValue {value!r} is neither a number nor base64 of a float64")
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value]
    return [float(value)]


@dataclass(frozen=True)
class Packing:
    scale: float | None
    offset: float | None
    missing: tuple[float, ...]  # raw values that mean "no data"
    unsigned: bool = False

    @property
    def packed(self) -> bool:
        return self.scale is not None or self.offset is not None

    def decode(self, raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """`raw` (the stored integers or floats) as physical values of type `dtype`, NaN where
        missing."""
        data = np.ascontiguousarray(raw)
        missing = self.missing
        if self.unsigned and data.dtype.kind == "i":
            udt = np.dtype(f"u{data.dtype.itemsize}")
            missing = tuple(float(np.array(m).astype(data.dtype).view(udt)) for m in missing)
            data = data.view(udt)
        work = self._work_dtype(data.dtype)
        out = np.empty(data.shape, dtype)
        src, dst = data.reshape(-1), out.reshape(-1)
        for i in range(0, src.size, _SLAB):
            x = src[i:i + _SLAB].astype(work)
            mask = np.zeros(x.shape, bool)
            for m in missing:  # a Python float, compared in the work type as xarray does
                mask |= np.isnan(x) if math.isnan(m) else x == m
            if self.scale is not None:
                x *= self.scale
            if self.offset is not None:
                x += self.offset
            x[mask] = np.nan
            dst[i:i + _SLAB] = x
        return out

    def _work_dtype(self, stored: np.dtype) -> np.dtype:
        """The float type xarray decodes into: float64 for packed data (its scale and offset are
        float64), else float32 up to 4-byte floats and 2-byte integers, float64 above."""
        if self.packed:
            return np.dtype(np.float64)
        small = stored.itemsize <= (4 if stored.kind == "f" else 2)
        return np.dtype(np.float32 if small else np.float64)


def packing_of(attrs: dict, dtype: np.dtype, zarr_format: int, fill_value) -> Packing | None:
    """How an array with these attributes is CF-encoded; None when it is not (or cannot be:
    non-numeric types, CF times)."""
    if dtype.kind not in "iuf":
        return None
    units = attrs.get("units")
    if isinstance(units, str) and " since " in units:
        return None
    scale, offset = _scalar(attrs.get("scale_factor")), _scalar(attrs.get("add_offset"))
    fill, miss = attrs.get("_FillValue"), attrs.get("missing_value")
    v2_fill = None
    if zarr_format == 2 and fill_value is not None and fill is None:
        v2_fill = float(fill_value)  # xarray reads a v2 fill_value as _FillValue
    float_mask = dtype.kind == "f" and v2_fill is not None and not math.isnan(v2_fill)
    if scale is None and offset is None and fill is None and miss is None and not float_mask:
        return None
    missing = _fill_attr(fill, dtype) + _fill_attr(miss, dtype)
    if v2_fill is not None:
        missing.append(v2_fill)
    if scale is None and offset is None and dtype.kind == "f" and all(map(math.isnan, missing)):
        return None  # NaN marks missing already: nothing to decode (xarray's default for floats)
    unsigned = str(attrs.get("_Unsigned", "")).lower() == "true"
    return Packing(scale, offset, tuple(dict.fromkeys(missing)), unsigned)


def decoded_attrs(attrs: dict, packing: Packing) -> dict:
    drop = ENCODING_ATTRS + (PACKED_RANGE_ATTRS if packing.packed else ())
    return {k: v for k, v in attrs.items() if k not in drop}


def _xarray_v3_fill(value: float, dtype: np.dtype):
    """``_FillValue`` as xarray writes it into a v3 attribute."""
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    return int(value)


def carry_fill(attrs: dict, dtype: np.dtype, fill_value, source_format: int,
               output_format: int) -> tuple[dict, object]:
    """(attributes, fill_value) for an array kept as it is but written in `output_format`, so
    that xarray masks the same values in the output as in the source:

    * v2 → v3: a v2 ``fill_value`` is xarray's ``_FillValue``; v3 keeps that in an attribute.
    * v3 → v2: a ``_FillValue`` attribute becomes the v2 ``fill_value``; without one, a zero fill
      becomes null (missing chunks still read as zeros), since xarray takes a v2 ``fill_value`` as
      a mask and would hide every real 0 (time 0, the equator).
    """
    if source_format == output_format or dtype.kind not in "iuf":
        return attrs, fill_value
    attrs = dict(attrs)
    if output_format == 3:
        if fill_value is not None and "_FillValue" not in attrs and not (
                dtype.kind == "f" and math.isnan(float(fill_value))):
            attrs["_FillValue"] = _xarray_v3_fill(fill_value, dtype)
        return attrs, fill_value
    if "_FillValue" in attrs:
        return attrs, _fill_attr(attrs.pop("_FillValue"), dtype)[0]
    if fill_value is not None and not np.asarray(fill_value).any():
        return attrs, None
    return attrs, fill_value
