// Variable-length elements (text, bytes, numcodecs arrays) handed to Python: zarr/vlen_read.h
// reads them (array.cc calls it without the GIL), these functions turn the result into Python
// objects, and python/zarrflow/_dtypes.py makes the NumPy array.
#pragma once

#include <nanobind/nanobind.h>

#include "zarrflow/zarr/vlen_read.h"

namespace zarrflow::py {

// The elements in order: str when `text` (stored text was validated as UTF-8), else bytes.
nanobind::list vlen_objects(const VlenData& data, bool text);

// (offsets: int64 ndarray of elements + 1, data: bytes, missing: uint8 ndarray of elements).
nanobind::tuple vlen_buffers(VlenData data);

}  // namespace zarrflow::py
