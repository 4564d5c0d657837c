// Shard indexes kept across reads (codec/shard_indexes.h) within a byte budget, least recently
// used evicted first: a loader's, so that a 71-channel batch of 103-row inner chunks does not
// read its 2,272 shard indexes again every batch. Thread-safe; threads that miss the same index
// at the same time (x at t+1 and y at t are in one shard) read it once: the first one reads, the
// others wait for its result.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "zarrflow/codec/shard_indexes.h"
#include "zarrflow/core/lru_cache.h"

namespace zarrflow {

class ShardIndexCache final : public ShardIndexes {
 public:
  explicit ShardIndexCache(std::uint64_t budget_bytes) : lru_(budget_bytes) {}

  std::shared_ptr<const ShardIndex> find(const std::string& name) override {
    auto kept = lru_.find(name).value_or(nullptr);
    ++(kept ? hits_ : misses_);
    return kept;
  }
  void insert(const std::string& name, std::shared_ptr<const ShardIndex> index,
              std::uint64_t bytes) override {
    lru_.insert(name, std::move(index), bytes);
  }
  Result<std::shared_ptr<const ShardIndex>> find_or_load(const std::string& name,
                                                         const Load& load) override;
  void clear() { lru_.clear(); }
  // hits: lookups answered without reading (a read another thread was making counts too);
  // misses: indexes read.
  [[nodiscard]] LruStats stats() const {
    LruStats s = lru_.stats();
    s.hits = hits_.load();
    s.misses = misses_.load();
    return s;
  }

 private:
  // A read of one index in progress; the threads that want it too wait for `result`.
  struct Loading {
    std::optional<Result<std::shared_ptr<const ShardIndex>>> result;
  };

  LruCache<std::shared_ptr<const ShardIndex>> lru_;
  std::mutex mu_;
  std::condition_variable loaded_;
  std::map<std::string, std::shared_ptr<Loading>> loading_;
  std::atomic<std::int64_t> hits_{0}, misses_{0};
};

}  // namespace zarrflow
