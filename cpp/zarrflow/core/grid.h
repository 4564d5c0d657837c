// Regular-grid index math: which chunks a strided selection touches, and which part of each.
//
// Used twice with the same meaning: by an array (region → chunks) and by a shard (region of the
// shard → inner chunks). A Selection picks, per dimension, `count` elements from `start`,
// `step` apart; a ChunkBlock is the part of it that falls into one chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zarrflow/core/strided.h"

namespace zarrflow {

struct Selection {
  Shape start, count, step;

  static Selection full(const Shape& shape);
  [[nodiscard]] bool is_full(const Shape& shape) const;
  [[nodiscard]] bool empty() const;
};

// The part of a 1-d selection that lies in chunk `chunk` of a regular grid.
struct DimPiece {
  std::int64_t chunk;           // chunk index along this dimension
  std::int64_t start_in_chunk;  // first selected element, relative to the chunk start
  std::int64_t count;           // selected elements in this chunk
  std::int64_t out_offset;      // index of the first one in the selection's output
};

// Splits `count` elements from `start`, `step` apart, over chunks of `chunk_size`.
std::vector<DimPiece> split_dim(std::int64_t start, std::int64_t count, std::int64_t step,
                                std::int64_t chunk_size);

struct ChunkBlock {
  Shape chunk;         // grid coordinates of the chunk
  Selection in_chunk;  // what to read from it (step carried over)
  Shape out_offset;    // where that lands in the output, per dimension
};

// Every chunk the selection touches (C order of chunk coordinates), with its part.
std::vector<ChunkBlock> chunk_blocks(const Selection& sel, const Shape& chunk_shape);

// "[0,3]": grid coordinates in error messages.
std::string format_coords(const Shape& c);

// The sub-view of `dest` (shaped like the whole selection) that receives `block`.
StridedView block_view(const StridedView& dest, const ChunkBlock& block);

}  // namespace zarrflow
