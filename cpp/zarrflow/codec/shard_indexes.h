// Shard indexes kept across reads, so that a reader that reads the same shards again (a loader,
// every epoch) need not open, read and check each shard's index every time. The sharding codec
// looks an index up here before reading it and keeps what it read; pipeline/shard_index_cache.h
// keeps them within a byte budget. Keys are the reader's name of the shard (store path and key);
// the store is assumed not to change while its indexes are kept: a shard rewritten meanwhile
// would be read through its old index. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zarrflow {

struct ShardIndex {
  bool found = false;                  // the shard exists (an absent one reads as fill values)
  std::uint64_t shard_size = 0;        // bytes, to check entries against
  std::vector<std::uint64_t> entries;  // (offset, nbytes) per inner chunk, C order; checksummed
};

class ShardIndexes {
 public:
  virtual ~ShardIndexes() = default;
  // The index kept under `name`, or null.
  virtual std::shared_ptr<const ShardIndex> find(const std::string& name) = 0;
  // Keeps `index`, which takes about `bytes` of memory, under `name`.
  virtual void insert(const std::string& name, std::shared_ptr<const ShardIndex> index,
                      std::uint64_t bytes) = 0;
};

}  // namespace zarrflow
