// Reading arrays of variable-length elements (text, bytes, numcodecs arrays; codec/vlen.h).
//
// read_vlen(region) returns the region's elements in C order as one byte buffer plus offsets:
//   region → the chunks it touches → per chunk, in parallel (the store's I/O pool for remote
//   stores): missing → the fill value; sharded → the shard index, then only the inner chunks
//   needed (coalesced ranges, nested shards through windows); otherwise fetch the value, undo the
//   bytes→bytes codecs, split it into items (VlenCodec::split checks every length); a chunk read
//   whole is kept as decoded, a chunk read in part has its selected items copied to an arena and
//   is released. Array→array codecs (transpose, v2 "F" order) reorder which item lands where, as
//   they do for fixed-size elements.
//   Then one pass lays the items out contiguously.
// Memory: about twice the selected elements' bytes (kept chunks or arenas, then the result) plus
// 16 bytes per element.
// Errors name the array and the chunk key (and the inner chunk for shards).
#pragma once

#include <vector>

#include "zarrflow/zarr/array.h"

namespace zarrflow {

struct VlenData {
  // Element i is bytes[offsets[i], offsets[i + 1]); offsets has (elements + 1) entries.
  std::vector<std::int64_t> offsets;
  std::vector<std::byte> bytes;
  // 1 where the element lies in a chunk (or inner chunk) that is not stored: it holds the fill
  // value (the fill's bytes for text and bytes; nothing for vlen-array, whose fill the caller
  // decides from the metadata).
  std::vector<std::uint8_t> missing;
};

// Reads `region` (start/count/step per dimension, inside the array) of a variable-length array.
Result<VlenData> read_vlen(const Array& array, const Selection& region, const ReadOptions& options);

}  // namespace zarrflow
