// Fill values: the JSON forms of Zarr v2 and v3 turned into one element's native bytes.
//
// v3: numbers (rounded to the type), "NaN", "Infinity", "-Infinity", "0x…" bit patterns for
// floats, [re, im] pairs for complex, byte arrays (or base64, as zarr-python writes raw_bytes) for
// r<N>, true/false for bool.
// v2: the same numeric forms, null (→ the type's default, as zarr-python reads it: zeros, NaT for
// times, empty text), base64 strings for raw (V) types.
// Both, for the types zarr-python writes: strings for fixed UTF-32 text (truncated or padded to
// the element), base64 for fixed bytes (likewise), structured elements (exact size) and
// variable-length bytes, integers or "NaT" for datetime64/timedelta64, strings or numbers
// (str(value), as zarr-python does) for variable-length text.
// Fixed-size types give one element's bytes in native order; variable-length text and bytes give
// the value's bytes (UTF-8 for text), of any length; vlen-array gives none (the Python layer
// reads its JSON fill value).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/core/dtype.h"

namespace zarrflow {

Result<std::vector<std::byte>> parse_fill_value(const nlohmann::json& value, const DataType& dtype,
                                                int zarr_format);

}  // namespace zarrflow
