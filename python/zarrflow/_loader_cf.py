"""The loader's CF decoding of stored values, read from an array's attributes the way xarray's
``open_dataset(engine="zarr")`` reads them (``mask_and_scale=True``), without importing xarray.

What xarray masks: ``missing_value`` and ``_FillValue``. In Zarr v2 xarray takes the array's
``fill_value`` as ``_FillValue`` (``use_zarr_fill_value_as_mask``, on by default for v2); in v3
the ``fill_value`` is storage only and ``_FillValue`` is an attribute, base64 of a little-endian
float64 for floating-point arrays (as xarray writes it). NaN fill values mask nothing. Raw values
equal to one of them become NaN; packed arrays (``scale_factor``, ``add_offset``) decode as
``raw * scale_factor + add_offset`` in float64 — what xarray does for every packed Zarr variable,
whose JSON attributes it reads as float64. The arithmetic itself runs in C++ (core/normalize.h),
on the GPU or the host; ``CFDecoding.decode`` is its NumPy form for statistics.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_MASKED = 4  # raw values per array (core/normalize.h: kMaxMasks)


class CFAttributeError(ValueError):
    """An attribute the CF decoding cannot use (the loader reports it as a LoaderError)."""


@dataclass(frozen=True)
class CFDecoding:
    """How stored values of one array are decoded: NaN where the raw value is one of `masked`
    (raw values of the array's dtype), then ``raw * scale + offset`` when packed."""

    dtype: np.dtype
    scale: float | None
    offset: float | None
    masked: tuple  # NumPy scalars of `dtype`

    @property
    def packed(self) -> bool:
        return self.scale is not None or self.offset is not None

    def core_args(self) -> tuple[bool, float, float, list[int]]:
        """The C++ transform's form: (packed, scale, offset, masked values as the dtype's bits).
        An absent scale is 1.0, an absent offset -0.0 (x + -0.0 == x, signed zeros included)."""
        bits = np.dtype(f"u{self.dtype.itemsize}")
        return (self.packed, 1.0 if self.scale is None else self.scale,
                -0.0 if self.offset is None else self.offset,
                [int(np.asarray(v, self.dtype).view(bits)) for v in self.masked])

    def decode(self, raw: np.ndarray) -> np.ndarray:
        """float64 values of `raw`, NaN where masked (xarray's decoded values, in float64)."""
        x = np.asarray(raw).astype(np.float64)
        masked = np.zeros(x.shape, bool)
        for v in self.masked:
            masked |= raw == v
        if self.scale is not None:
            x *= self.scale
        if self.offset is not None:
            x += self.offset
        x[masked] = np.nan
        return x


def _number(name: str, value: Any) -> float:
    a = np.asarray(value)
    if a.size != 1 or a.dtype.kind not in "iuf":
        raise CFAttributeError(f"{name} {value!r} is not one number")
    return float(a.reshape(-1)[0])


def _fill_attribute(value: Any, dtype: np.dtype) -> Any:
    """A ``_FillValue`` attribute as a number: xarray's base64 of a little-endian float64 for
    floating-point arrays, "NaN"/"Infinity" spellings, or a plain number."""
    if isinstance(value, str) and dtype.kind not in "iu":
        if value in ("NaN", "Infinity", "-Infinity"):
            return float(value.replace("Infinity", "inf"))
        try:
            raw = base64.b64decode(value.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raw = b""
        if len(raw) != 8:
            raise CFAttributeError(f"_FillValue {value!r} is neither a number nor the base64 of "
                                   f"a float64")
        return struct.unpack("<d", raw)[0]
    return value


def _raw_value(value: Any, dtype: np.dtype, packed: bool):
    """`value` as a raw value of `dtype`, or None when no element can equal it: integers must
    hold it exactly; floats round it to their type as NumPy's comparison with a Python float
    does, except for packed data, which xarray compares in float64."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise CFAttributeError(f"fill value {value!r} is not a number") from None
    if math.isnan(x):
        return None
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if isinstance(value, (int, np.integer)):
            v = int(value)
        elif x.is_integer():
            v = int(x)
        else:
            return None
        return dtype.type(v) if info.min <= v <= info.max else None
    r = np.asarray(x).astype(dtype)
    if packed and float(r) != x:
        return None
    return r[()]


def cf_decoding(attrs: dict, dtype: np.dtype, zarr_format: int, fill_value: Any, *,
                mask_and_scale: bool = True,
                use_zarr_fill_value_as_mask: bool | None = None) -> CFDecoding | None:
    """The CF decoding of an array with these attributes, dtype, format and ``fill_value`` (None
    for a v2 null), as ``xr.open_dataset(engine="zarr", mask_and_scale=...,
    use_zarr_fill_value_as_mask=...)`` applies it; None when there is nothing to decode.
    Raises CFAttributeError for attributes it cannot use."""
    if not mask_and_scale:
        return None
    as_mask = (zarr_format == 2 if use_zarr_fill_value_as_mask is None
               else use_zarr_fill_value_as_mask)
    fills: list = []
    if as_mask and fill_value is not None:
        fills.append(fill_value)  # xarray: the fill_value replaces any _FillValue attribute
    elif attrs.get("_FillValue") is not None:
        fills.append(_fill_attribute(attrs["_FillValue"], dtype))
    if attrs.get("missing_value") is not None:
        fills.extend(np.ravel(np.asarray(attrs["missing_value"], dtype=object)).tolist())
    scale = _number("scale_factor", attrs["scale_factor"]) if "scale_factor" in attrs else None
    offset = _number("add_offset", attrs["add_offset"]) if "add_offset" in attrs else None
    packed = scale is not None or offset is not None
    masked: list = []
    for v in fills:
        if isinstance(v, str):
            v = _fill_attribute(v, dtype)
        r = _raw_value(v, dtype, packed)
        if r is not None and not any(r == m for m in masked):
            masked.append(r)
    if len(masked) > MAX_MASKED:
        raise CFAttributeError(f"{len(masked)} values to mask (_FillValue, missing_value); the "
                               f"loader masks at most {MAX_MASKED}")
    if not packed and not masked:
        return None
    return CFDecoding(np.dtype(dtype), scale, offset, tuple(masked))
