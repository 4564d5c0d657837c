// Metadata documents (zarr.json, .zarray, .zattrs, .zgroup, .zmetadata) parsed under limits.
//
// A document comes from the store and is untrusted: its size bounds the DOM nlohmann builds
// (several times the text), and its nesting bounds the recursion of nlohmann's copy, comparison
// and dump (a 200 KB file nesting 100,000 levels overflows the stack). Both are checked before
// any DOM exists: the size by the caller's store read (Store::get's max_size) and again here,
// the depth by a linear scan of the text that allocates nothing.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zarrflow/core/status.h"

namespace zarrflow {

struct JsonLimits {
  // Bytes of one document. Zarr metadata is kilobytes; consolidated metadata of stores with
  // thousands of arrays reaches megabytes. 64 MiB leaves room for those and keeps the DOM of one
  // document under about 600 MB: nlohmann's tree takes 1.5x the text for arrays of numbers and
  // 9x for small objects (measured on 130 MB documents).
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  // Nesting of arrays and objects. Zarr's own structure nests below 10 levels (sharding inside
  // sharding, codec configurations); attributes rarely reach 5. 256 leaves them room and bounds
  // nlohmann's recursion to well under a 1 MiB stack.
  std::size_t max_depth = 256;
};

// The deepest nesting of arrays/objects in `text` (brackets inside strings do not count),
// stopping early once it exceeds `stop_above`; sets `*at` to the byte offset where the deepest
// counted level opened.
std::size_t json_nesting_depth(std::string_view text, std::size_t stop_above, std::size_t* at);

// Parses `text` as one JSON document: kInvalidMetadata when it is larger than limits.max_bytes,
// nests deeper than limits.max_depth, or is malformed (with the parser's position);
// kResourceExhausted when memory runs out building it. The caller names the file.
Result<nlohmann::json> parse_json_document(std::string_view text, const JsonLimits& limits);

}  // namespace zarrflow
