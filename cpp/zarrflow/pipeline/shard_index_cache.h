// Shard indexes kept across reads (codec/shard_indexes.h) within a byte budget, least recently
// used evicted first: a loader's, so that a 71-channel batch of 103-row inner chunks does not
// read its 2,272 shard indexes again every batch. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "zarrflow/codec/shard_indexes.h"
#include "zarrflow/core/lru_cache.h"

namespace zarrflow {

class ShardIndexCache final : public ShardIndexes {
 public:
  explicit ShardIndexCache(std::uint64_t budget_bytes) : lru_(budget_bytes) {}

  std::shared_ptr<const ShardIndex> find(const std::string& name) override {
    return lru_.find(name).value_or(nullptr);
  }
  void insert(const std::string& name, std::shared_ptr<const ShardIndex> index,
              std::uint64_t bytes) override {
    lru_.insert(name, std::move(index), bytes);
  }
  void clear() { lru_.clear(); }
  [[nodiscard]] LruStats stats() const { return lru_.stats(); }

 private:
  LruCache<std::shared_ptr<const ShardIndex>> lru_;
};

}  // namespace zarrflow
