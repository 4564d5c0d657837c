// Element data types, independent of how a format spells them.
//
// A DataType is what one element is in memory on this (little-endian) machine. Byte order on disk
// is a property of the codec chain (`bytes` codec, v2 typestr), not of the DataType.
// Parsers for the two spellings users meet live here: Zarr v3 names ("float32", "bfloat16",
// "r24", "string") and NumPy typestrs as written in Zarr v2 (".zarray" "dtype": "<f4", ">i8",
// "|b1", "<U5", "|S3", "<M8[ns]"). Types that carry a JSON configuration in Zarr v3
// (fixed_length_utf32, numpy.datetime64, structured, ...) are built with the constructors below
// from that configuration (zarr/dtype_json.h reads it).
//
// Fixed-size kinds (everything but the kVlen* ones) go through the strided read path. The
// variable-length kinds have size 0: their chunks are lists of byte strings, read by
// zarr/vlen_read.h, never into fixed-size elements.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zarrflow/core/status.h"

namespace zarrflow {

enum class DTypeKind : std::uint8_t {
  kBool,
  kInt,
  kUInt,
  kFloat,
  kBFloat16,
  kComplex,
  kRaw,         // r<N> / raw_bytes / "|V<n>": opaque bytes
  kString,      // fixed-length UTF-32 text (NumPy "U"): size / 4 code points, zero-padded
  kBytes,       // fixed-length bytes (NumPy "S"), zero-padded
  kDateTime,    // int64 count of scale × unit since 1970-01-01 (NumPy "M8"); INT64_MIN is NaT
  kTimeDelta,   // int64 count of scale × unit (NumPy "m8"); INT64_MIN is NaT
  kStructured,  // packed fields (NumPy structured); the field list is kept by the array metadata
  kVlenString,  // variable-length UTF-8 text (v3 "string"; v2 "|O" with vlen-utf8)
  kVlenBytes,   // variable-length bytes (v3 "variable_length_bytes"; v2 "|O" with vlen-bytes)
  kVlenArray,   // variable-length 1-d numeric arrays (v2 "|O" with vlen-array)
};

enum class Endian : std::uint8_t { kLittle, kBig, kNotApplicable };

// NumPy's datetime units, in NumPy's order. kGeneric is NumPy's unit-less "M8" / "m8".
enum class TimeUnit : std::uint8_t {
  kGeneric,
  kYear,
  kMonth,
  kWeek,
  kDay,
  kHour,
  kMinute,
  kSecond,
  kMillisecond,
  kMicrosecond,
  kNanosecond,
  kPicosecond,
  kFemtosecond,
  kAttosecond,
};

// NumPy's limit on an element's size (its itemsize is a C int).
constexpr std::uint64_t kMaxItemSize = 0x7fffffff;

struct DataType {
  DTypeKind kind = DTypeKind::kUInt;
  std::uint32_t size = 1;              // bytes per element; 0 for the variable-length kinds
  TimeUnit unit = TimeUnit::kGeneric;  // kDateTime / kTimeDelta only
  std::uint32_t scale = 1;             // kDateTime / kTimeDelta: ticks of scale × unit

  // Zarr v3 name: "float32", "bfloat16", "r16", "fixed_length_utf32", "numpy.datetime64", ...
  [[nodiscard]] std::string v3_name() const;
  // NumPy typestr in native (little-endian) order: "<f4", "|b1", "|V3" for r24, "<U5", "|S3",
  // "<M8[ns]", "<m8[10s]", "<M8" (generic). bfloat16 has no NumPy spelling and returns
  // "bfloat16" (the Python layer maps it to ml_dtypes); variable-length text returns "T" (NumPy's
  // StringDType), other variable-length data "|O"; structured types return "|V<size>" (their
  // fields come from the metadata).
  [[nodiscard]] std::string numpy_str() const;
  // Size of the scalar whose byte order a `bytes` codec swaps (complex: half the element; text:
  // one UTF-32 code unit; raw, bytes and structured: 1).
  [[nodiscard]] std::uint32_t swap_unit() const;
  [[nodiscard]] bool is_floating() const {
    return kind == DTypeKind::kFloat || kind == DTypeKind::kBFloat16 || kind == DTypeKind::kComplex;
  }
  // Numbers a tensor library can hold (bool, integers, floats, complex).
  [[nodiscard]] bool is_numeric() const { return kind <= DTypeKind::kComplex; }
  [[nodiscard]] bool is_time() const {
    return kind == DTypeKind::kDateTime || kind == DTypeKind::kTimeDelta;
  }
  // Elements without a fixed size (their chunks are lists of byte strings).
  [[nodiscard]] bool is_variable_length() const { return kind >= DTypeKind::kVlenString; }

  friend bool operator==(const DataType&, const DataType&) = default;
};

struct TypedEndian {
  DataType dtype;
  Endian endian = Endian::kNotApplicable;  // kNotApplicable for 1-byte types and raw
};

// "float32" → {kFloat, 4}; "string" → kVlenString; "variable_length_bytes" (or "bytes") →
// kVlenBytes. Unknown names → kUnimplemented naming the type.
Result<DataType> parse_v3_data_type(std::string_view name);

// "<f4" / ">i8" / "|u1" / "<c16" / "|V3" / "<U5" / "|S3" / "<M8[ns]" / ">m8[10s]" → type + byte
// order. "|O" needs its object codec and is resolved by the metadata layer; other kinds →
// kUnimplemented naming the typestr.
Result<TypedEndian> parse_numpy_typestr(std::string_view typestr);

// A fixed-length kind (kString, kBytes, kRaw, kStructured) of `length_bytes` bytes: positive, a
// multiple of 4 for text, at most kMaxItemSize (kInvalidMetadata / kUnimplemented otherwise).
Result<DataType> fixed_length_type(DTypeKind kind, std::uint64_t length_bytes);

// kDateTime / kTimeDelta with `unit` ("ns", "s", "generic", ... as NumPy and zarr-python spell
// them, "μs" included) and `scale` (the "10" of "M8[10s]", 1 ≤ scale < 2^31).
Result<DataType> time_type(DTypeKind kind, std::string_view unit, std::int64_t scale);

// "ns", "D", "generic", ...
std::string_view time_unit_name(TimeUnit unit);

}  // namespace zarrflow
