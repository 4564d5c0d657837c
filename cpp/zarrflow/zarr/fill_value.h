// Fill values: the JSON forms of Zarr v2 and v3 turned into one element's native bytes.
//
// v3: numbers (rounded to the type), "NaN", "Infinity", "-Infinity", "0x…" bit patterns for
// floats, [re, im] pairs for complex, byte arrays for r<N>, true/false for bool.
// v2: the same numeric forms, null (→ zeros), base64 strings for raw (V) types.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/core/dtype.h"

namespace zarrflow {

Result<std::vector<std::byte>> parse_fill_value(const nlohmann::json& value, const DataType& dtype,
                                                int zarr_format);

}  // namespace zarrflow
