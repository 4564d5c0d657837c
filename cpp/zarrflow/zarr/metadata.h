// Zarr array and group metadata (v2 and v3), parsed and validated into one model.
//
// Parsing is strict where the spec is: wrong JSON types, non-positive chunk sizes, shapes whose
// byte size overflows 64 bits, and unknown must-understand extensions are errors (kInvalidMetadata
// or kUnimplemented) whose message names the field; the caller prefixes the node path.
// v3: https://zarr-specs.readthedocs.io/en/latest/v3/core/index.html
// v2: https://zarr-specs.readthedocs.io/en/latest/v2/v2.0.html
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec_chain.h"
#include "zarrflow/core/dtype.h"
#include "zarrflow/core/strided.h"

namespace zarrflow {

// How chunk grid coordinates become store keys.
struct ChunkKeyEncoding {
  enum class Kind : std::uint8_t { kDefault, kV2 };
  Kind kind = Kind::kDefault;
  char separator = '/';

  // default: "c/1/2" ("c" for 0-d); v2: "1.2" ("0" for 0-d).
  [[nodiscard]] std::string key(const Shape& chunk) const;
  // Inverse of key(); nullopt when `key` is not a chunk key of an `ndim`-d array.
  [[nodiscard]] std::optional<Shape> parse(std::string_view key, std::size_t ndim) const;
};

struct ArrayMetadata {
  int zarr_format = 3;
  Shape shape;
  DataType dtype;
  std::string dtype_json;  // as written: "float32" or "<f4" (v3: the name; v2 structured: JSON)
  // Structured types: NumPy's field list (see ParsedDataType::fields); null otherwise.
  nlohmann::json dtype_fields;
  Shape chunk_shape;  // the stored grid (shards, for sharded arrays)
  ChunkKeyEncoding key_encoding;
  // One element, native byte order; variable-length text/bytes: the value's bytes (fill_value.h).
  std::vector<std::byte> fill_value;
  nlohmann::json fill_value_json;  // as written
  std::optional<std::vector<std::optional<std::string>>> dimension_names;
  nlohmann::json attributes = nlohmann::json::object();
  nlohmann::json codecs_json;  // v3 "codecs"; v2 {"compressor", "filters", "order", "dtype"}
  nlohmann::json raw;          // the whole document(s) as read

  // v2 only: dtype byte order, "C"/"F" order, compressor and filters (null when absent).
  Endian v2_endian = Endian::kNotApplicable;
  char v2_order = 'C';
};

struct GroupMetadata {
  int zarr_format = 3;
  nlohmann::json attributes = nlohmann::json::object();
  // Consolidated member metadata keyed by path relative to the group, when present:
  // v3: node documents as in their zarr.json; v2: {".zarray"/".zgroup"/".zattrs": doc}.
  std::optional<nlohmann::json> consolidated;
};

// zarr.json of an array (node_type "array").
Result<ArrayMetadata> parse_array_v3(const nlohmann::json& doc);
// .zarray plus the (possibly empty) .zattrs object.
Result<ArrayMetadata> parse_array_v2(const nlohmann::json& zarray, const nlohmann::json& zattrs);
// zarr.json of a group; .zgroup plus .zattrs (+ .zmetadata when present).
Result<GroupMetadata> parse_group_v3(const nlohmann::json& doc);
Result<GroupMetadata> parse_group_v2(const nlohmann::json& zgroup, const nlohmann::json& zattrs,
                                     const nlohmann::json* zmetadata);

// The codec chain for one stored chunk of `md` (for v2: order, dtype byte order, filters and
// compressor turned into v3-style codecs).
Result<CodecChain> build_codec_chain(const ArrayMetadata& md);

// The element type as Python's numpy.dtype() takes it: DataType::numpy_str(), or for structured
// types the JSON of their field list ('[["a", "<i4"], ["b", "|S2"]]').
std::string numpy_dtype_string(const ArrayMetadata& md);

// Parses a JSON document, kInvalidMetadata with the parser's message on failure.
Result<nlohmann::json> parse_json(std::string_view text);

}  // namespace zarrflow
