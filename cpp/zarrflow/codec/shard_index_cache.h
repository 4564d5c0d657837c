// Shard indexes kept across reads, so that a loader reading the same shards every epoch does not
// open, read and check each shard's index again for every batch (a 71-channel batch of 103-row
// inner chunks reads 2,272 of them). Keyed by the reader's name of the shard (store path and key).
// The store is assumed not to change while a cache holds its indexes: a shard rewritten
// meanwhile would be read through its old index. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zarrflow/core/lru_cache.h"

namespace zarrflow {

struct ShardIndex {
  bool found = false;                  // the shard exists (an absent one reads as fill values)
  std::uint64_t shard_size = 0;        // bytes, to check entries against
  std::vector<std::uint64_t> entries;  // (offset, nbytes) per inner chunk, C order; checksummed
};

class ShardIndexCache : public LruCache<std::shared_ptr<const ShardIndex>> {
 public:
  using LruCache::LruCache;
};

}  // namespace zarrflow
