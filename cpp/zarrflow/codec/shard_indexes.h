// Shard indexes kept across reads, so that a reader that reads the same shards again (a loader,
// every epoch) need not open, read and check each shard's index every time. The sharding codec
// looks an index up here before reading it and keeps what it read; pipeline/shard_index_cache.h
// keeps them within a byte budget. Keys are the reader's name of the shard (store path and key);
// the store is assumed not to change while its indexes are kept: a shard rewritten meanwhile
// would be read through its old index. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow {

struct ShardIndex {
  bool found = false;                  // the shard exists (an absent one reads as fill values)
  std::uint64_t shard_size = 0;        // bytes, to check entries against
  std::vector<std::uint64_t> entries;  // (offset, nbytes) per inner chunk, C order; checksummed
};

// About the memory `index`, kept under `name`, takes.
inline std::uint64_t shard_index_bytes(const std::string& name, const ShardIndex& index) {
  return name.size() + 8 * index.entries.size() + 96;
}

class ShardIndexes {
 public:
  using Load = std::function<Result<std::shared_ptr<const ShardIndex>>()>;

  virtual ~ShardIndexes() = default;
  // The index kept under `name`, else the one `load` reads, which is then kept (errors are not).
  // Implementations may load each name once when several threads ask at the same time.
  virtual Result<std::shared_ptr<const ShardIndex>> find_or_load(const std::string& name,
                                                                 const Load& load) {
    if (auto hit = find(name)) return hit;
    auto loaded = load();
    if (loaded.ok()) insert(name, *loaded, shard_index_bytes(name, **loaded));
    return loaded;
  }
  // The index kept under `name`, or null.
  virtual std::shared_ptr<const ShardIndex> find(const std::string& name) = 0;
  // Keeps `index`, which takes about `bytes` of memory, under `name`.
  virtual void insert(const std::string& name, std::shared_ptr<const ShardIndex> index,
                      std::uint64_t bytes) = 0;
};

}  // namespace zarrflow
