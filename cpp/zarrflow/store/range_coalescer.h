// Merging nearby byte ranges of one value into fewer requests (inner chunks of a shard).
//
// Reading a shard's inner chunks one request each costs a round trip per chunk; reading the
// whole shard wastes bandwidth when only a few are wanted. Ranges whose gap is at most `max_gap`
// are merged as long as the merged request stays within `max_merged` bytes (a single range
// larger than that is never split). Each store says which limits (CoalesceOptions, store.h)
// suit its medium; the sharding codec groups its reads with them. Thread-safety: pure.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zarrflow/store/store.h"

namespace zarrflow {

struct MergedRange {
  std::uint64_t offset = 0, length = 0;
  std::vector<std::size_t> parts;  // indices into the input ranges it serves
};

// Absolute (non-suffix) ranges in; merged requests out, in offset order. Every input index
// appears in exactly one MergedRange; empty ranges are served by the request nearest them.
std::vector<MergedRange> coalesce_ranges(std::span<const ByteRange> ranges,
                                         const CoalesceOptions& options);

}  // namespace zarrflow
