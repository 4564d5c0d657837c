// Compressed chunks kept across GPU reads (CUDA builds only): DeviceReadOptions::cache and
// ::host_cache.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/codec/gpu/framing.h"
#include "zarrflow/core/gpu/device_memory.h"
#include "zarrflow/core/lru_cache.h"

namespace zarrflow::gpu {

// A stored chunk kept in memory (GPU or pinned host): its bytes as read, and what host
// validation found in them.
struct CachedChunk {
  GpuBuffer bytes;
  std::uint64_t stored_size = 0;
  Payload payload;
  std::optional<BloscPlan> blosc;
};

// Compressed chunks kept across reads, least recently used evicted first, within a byte budget.
// Two tiers use it: in GPU memory (a hit skips storage, host work and PCIe: it goes straight to
// the decoders) and in pinned host memory (a hit skips storage and host validation). Entries
// are keyed by the store's name for the value (full path plus byte range); the store is assumed
// not to change while its chunks are cached. Thread-safe.
class ChunkCache {
 public:
  explicit ChunkCache(std::uint64_t budget_bytes) : lru_(budget_bytes) {}
  std::shared_ptr<const CachedChunk> find(const std::string& key) {
    return lru_.find(key).value_or(nullptr);
  }
  void insert(const std::string& key, std::shared_ptr<const CachedChunk> chunk) {
    const std::uint64_t size = chunk->bytes.capacity();
    lru_.insert(key, std::move(chunk), size);
  }
  void erase(const std::string& key) { lru_.erase(key); }
  void clear() { lru_.clear(); }
  using Stats = LruStats;
  Stats stats() const { return lru_.stats(); }

 private:
  LruCache<std::shared_ptr<const CachedChunk>> lru_;
};

}  // namespace zarrflow::gpu
