// LruCache: values by string key within a byte budget, least recently used evicted first.
// Thread-safe (one mutex; lookups are short). The caller states each value's size in bytes.
// Used by the compressed chunk caches (pipeline/gpu/chunk_cache.h) and the shard index cache
// (pipeline/shard_index_cache.h).
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace zarrflow {

struct LruStats {
  std::int64_t hits = 0, misses = 0, entries = 0, evictions = 0;
  std::uint64_t bytes = 0, budget = 0;
};

template <class V>
class LruCache {
 public:
  explicit LruCache(std::uint64_t budget_bytes) : budget_(budget_bytes) {}

  // The value, which becomes the most recently used; nullopt (a miss) when absent.
  std::optional<V> find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) {
      ++misses_;
      return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hits_;
    return it->second->value;
  }

  // Keeps `value` (of `size` bytes) unless the key is already there or it exceeds the whole
  // budget; evicts the least recently used entries to make room.
  void insert(const std::string& key, V value, std::uint64_t size) {
    std::lock_guard lock(mu_);
    if (size > budget_ || index_.count(key)) return;
    while (bytes_ + size > budget_ && !lru_.empty()) {
      bytes_ -= lru_.back().size;
      index_.erase(lru_.back().key);
      lru_.pop_back();
      ++evictions_;
    }
    lru_.push_front(Entry{key, std::move(value), size});
    index_[key] = lru_.begin();
    bytes_ += size;
  }

  void erase(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return;
    bytes_ -= it->second->size;
    lru_.erase(it->second);
    index_.erase(it);
  }

  void clear() {
    std::lock_guard lock(mu_);
    lru_.clear();
    index_.clear();
    bytes_ = 0;
  }

  LruStats stats() const {
    std::lock_guard lock(mu_);
    return {hits_, misses_, static_cast<std::int64_t>(index_.size()), evictions_, bytes_, budget_};
  }

 private:
  struct Entry {
    std::string key;
    V value;
    std::uint64_t size;
  };
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  std::uint64_t budget_;
  std::uint64_t bytes_ = 0;
  std::int64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace zarrflow
