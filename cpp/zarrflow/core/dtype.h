// Element data types, independent of how a format spells them.
//
// A DataType is what one element is in memory on this (little-endian) machine. Byte order on disk
// is a property of the codec chain (`bytes` codec, v2 typestr), not of the DataType.
// Parsers for the two spellings users meet live here: Zarr v3 names ("float32", "bfloat16",
// "r24") and NumPy typestrs as written in Zarr v2 (".zarray" "dtype": "<f4", ">i8", "|b1").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zarrflow/core/status.h"

namespace zarrflow {

enum class DTypeKind : std::uint8_t { kBool, kInt, kUInt, kFloat, kBFloat16, kComplex, kRaw };

enum class Endian : std::uint8_t { kLittle, kBig, kNotApplicable };

struct DataType {
  DTypeKind kind = DTypeKind::kUInt;
  std::uint32_t size = 1;  // bytes per element

  // Zarr v3 name: "float32", "bfloat16", "r16", ...
  [[nodiscard]] std::string v3_name() const;
  // NumPy typestr in native (little-endian) order: "<f4", "|b1", "|V3" for r24; bfloat16 has no
  // NumPy spelling and returns "bfloat16" (the Python layer maps it to ml_dtypes).
  [[nodiscard]] std::string numpy_str() const;
  // Size of the scalar whose byte order a `bytes` codec swaps (complex: half the element; raw: 1).
  [[nodiscard]] std::uint32_t swap_unit() const;
  [[nodiscard]] bool is_floating() const {
    return kind == DTypeKind::kFloat || kind == DTypeKind::kBFloat16 || kind == DTypeKind::kComplex;
  }

  friend bool operator==(const DataType&, const DataType&) = default;
};

struct TypedEndian {
  DataType dtype;
  Endian endian = Endian::kNotApplicable;  // kNotApplicable for 1-byte types and raw
};

// "float32" → {kFloat, 4}. Unknown names → kUnimplemented naming the type.
Result<DataType> parse_v3_data_type(std::string_view name);

// "<f4" / ">i8" / "|u1" / "<c16" / "|V3" → type + byte order. Unsupported kinds (strings, objects,
// datetimes, structured) → kUnimplemented naming the typestr.
Result<TypedEndian> parse_numpy_typestr(std::string_view typestr);

}  // namespace zarrflow
