"""NumPy dtypes for Zarr data types, and reads of variable-length arrays.

zarrflow returns what zarr-python 3 returns, except that fixed-size elements always come back in
native byte order (big-endian stores are swapped on read; structured types keep their fields'
stored order, as zarr-python does):

* numbers and bool: their NumPy types; bfloat16 as ``ml_dtypes.bfloat16``; r<N> / raw_bytes as
  ``|V<n>``;
* fixed-length text (v2 ``<U5``, v3 ``fixed_length_utf32``): ``<U5``; fixed-length bytes (v2
  ``|S3``, v3 ``null_terminated_bytes``): ``|S3``;
* datetimes and timedeltas (v2 ``<M8[ns]``, v3 ``numpy.datetime64``): ``datetime64[ns]``, scale
  factors included (``datetime64[10s]``);
* structured types: the NumPy structured dtype of their fields;
* variable-length text (v3 ``string``, v2 ``|O`` with ``vlen-utf8``): NumPy's ``StringDType()``
  (``object`` on NumPy 1.x, whose elements are ``str``);
* variable-length bytes (v3 ``variable_length_bytes``, v2 ``vlen-bytes``): ``object`` arrays of
  ``bytes``;
* v2 ``vlen-array`` (numcodecs.VLenArray, which zarr-python 3 cannot read): ``object`` arrays of
  1-d arrays of the codec's dtype, as zarr-python 2 returned them; elements of missing chunks are
  the fill value as stored (``None`` for null).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .errors import UnsupportedError

_HAS_STRING_DTYPE = hasattr(np.dtypes, "StringDType")


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype for the core's spelling of an element type (``DataType::numpy_str``, or a
    structured field list as JSON)."""
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if name == "T":
        return np.dtypes.StringDType() if _HAS_STRING_DTYPE else np.dtype(object)
    if name.startswith("["):
        return np.dtype(_fields(json.loads(name)))
    return np.dtype(name)


def _fields(fields: list) -> list:
    """A JSON structured field list as numpy.dtype() takes it (tuples, nested lists recursed)."""
    out = []
    for f in fields:
        name, typ = f[0], f[1]
        typ = _fields(typ) if isinstance(typ, list) else typ
        if len(f) > 2:
            shape = f[2]
            out.append((name, typ, tuple(shape) if isinstance(shape, list) else (shape,)))
        else:
            out.append((name, typ))
    return out


def is_variable_length(dtype: np.dtype) -> bool:
    return dtype.kind in "OT"


def device_error(description: str, dtype: np.dtype) -> UnsupportedError | None:
    """Why an array (``description``: "array 'path'") of ``dtype`` cannot be read into a tensor
    (GPU, or DLPack host memory), or None when it can."""
    where = f"{description} has dtype {dtype}"
    if dtype.kind in "OTUS":
        return UnsupportedError(f"{where}: string/bytes/object data cannot be read into GPU "
                                f"memory; read on the host (arr[...] gives a NumPy array)")
    if dtype.kind in "Mm":
        return UnsupportedError(f"{where}: datetime64/timedelta64 data has no tensor type and "
                                f"cannot be read into GPU memory; read on the host (arr[...] "
                                f"gives a NumPy array)")
    if dtype.kind == "V" and dtype.names is not None:
        return UnsupportedError(f"{where}: structured data has no tensor type and cannot be read "
                                f"into GPU memory; read on the host (arr[...] gives a NumPy "
                                f"array)")
    return None


def fill_value(handle: Any, dtype: np.dtype) -> Any:
    """The fill value as zarr-python gives it: a NumPy scalar for fixed-size types, ``str`` /
    ``bytes`` for variable-length text / bytes, the JSON value for vlen-array; None for a v2
    null."""
    if handle.fill_value_is_null:
        return None
    raw = handle.fill_value_bytes
    if dtype.kind == "T" or (dtype.kind == "O" and handle.dtype == "T"):
        return raw.decode("utf-8")
    if dtype.kind == "O":
        if _vlen_array_dtype(handle) is not None:
            return json.loads(handle.metadata_json)[".zarray"]["fill_value"]
        return raw
    return np.frombuffer(raw, dtype=dtype)[0]


def _vlen_array_dtype(handle: Any) -> np.dtype | None:
    """The element dtype of a v2 vlen-array array, else None."""
    if handle.zarr_format != 2 or handle.dtype != "|O":
        return None
    codecs = json.loads(handle.codecs_json)
    for c in list(codecs.get("filters") or []) + [codecs.get("compressor")]:
        if isinstance(c, dict) and c.get("id") == "vlen-array":
            return np.dtype(c["dtype"])
    return None


def read_vlen(handle: Any, dtype: np.dtype, sel: Any, out: np.ndarray | None,
              executor: Any) -> np.ndarray:
    """Reads a selection (``_api._Selection``) of a variable-length array into a new array of
    ``dtype``, or into ``out``."""
    result = _read_region(handle, dtype, sel.start, sel.count, sel.step, executor)
    if any(sel.reverse):  # negative steps were read ascending
        result = result[tuple(slice(None, None, -1) if r else slice(None) for r in sel.reverse)]
    if out is None:
        return result
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a numpy.ndarray")
    if out.shape != result.shape:
        raise ValueError(f"out has shape {out.shape}, the region has shape {result.shape}")
    if out.dtype != dtype:
        raise ValueError(f"out has dtype {out.dtype}, the array has {dtype}")
    out[...] = result
    return out


def _read_region(handle: Any, dtype: np.dtype, start: list[int], count: list[int],
                 step: list[int], executor: Any) -> np.ndarray:
    shape = tuple(count)
    element = _vlen_array_dtype(handle)
    if element is None:
        items = handle.read_vlen_objects(start, count, step, executor)
        flat = np.array(items, dtype=dtype) if items else np.empty(0, dtype=dtype)
        return flat.reshape(shape)
    offsets, data, missing = handle.read_vlen(start, count, step, executor)
    fill = fill_value(handle, dtype)
    n = len(offsets) - 1

    def element_at(i: int) -> Any:
        if missing[i]:
            return fill
        size = (int(offsets[i + 1]) - int(offsets[i])) // element.itemsize
        if size == 0:
            return np.empty(0, dtype=element)
        return np.frombuffer(data, dtype=element, count=size, offset=int(offsets[i])).copy()

    # fromiter keeps each 1-d array one element (np.array would stack equal-length ones).
    return np.fromiter((element_at(i) for i in range(n)), dtype=object, count=n).reshape(shape)
