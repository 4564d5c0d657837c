// Owned byte buffers and the pool that recycles them.
//
// Buffer: move-only, 64-byte aligned host memory with a size (bytes in use) and a capacity. A
// buffer taken from a BufferPool goes back to that pool when destroyed, so steady-state reads of
// same-sized chunks allocate nothing (and, for multi-MB chunks, take no page faults).
// Thread-safety: a Buffer is owned by one thread at a time; BufferPool is thread-safe and must
// outlive every buffer it handed out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "zarrflow/core/fork_safe_mutex.h"

namespace zarrflow {

using ByteSpan = std::span<std::byte>;
using ConstByteSpan = std::span<const std::byte>;

class BufferPool;

// Freed allocations kept for reuse, best fit among those at most 2x too large, within a byte
// budget. The memory itself is the owner's business (host, pinned or device): the cache only
// hands back pointers. Thread-safe, and a child forked while other threads used the cache
// finds it usable.
//
// Over budget, the allocations released longest ago go first, not the one just released: when
// the sizes a workload needs change (a larger batch, another store), the stale sizes leave once
// and the new working set stays. Refusing the newest instead would free and re-allocate it on
// every cycle — for device and pinned memory a cudaFree / cudaHostAlloc, which stall the GPU.
class AllocationCache {
 public:
  using Allocation = std::pair<std::byte*, std::size_t>;  // (allocation, capacity)
  explicit AllocationCache(std::size_t max_cached_bytes) : max_cached_(max_cached_bytes) {}
  // A cached allocation with capacity in [size, 2 * size + 4096], or {nullptr, 0}.
  Allocation take(std::size_t size);
  // Keeps the allocation, evicting the least recently released ones to stay within the budget;
  // returns what the caller must free (the allocation itself if it alone exceeds the budget).
  [[nodiscard]] std::vector<Allocation> put(std::byte* p, std::size_t capacity);
  // Empties the cache, returning every allocation for the caller to free.
  std::vector<Allocation> drain();
  // Evicts the least recently released allocations until at most `bytes` stay cached; returns
  // them for the caller to free.
  [[nodiscard]] std::vector<Allocation> shrink_to(std::size_t bytes);
  [[nodiscard]] std::size_t cached_bytes() const;
  // Raises the budget to at least `bytes` (never lowers it).
  void raise_budget(std::size_t bytes);
  [[nodiscard]] std::size_t budget() const;

 private:
  mutable ForkSafeMutex mu_;      // a leaf lock
  std::vector<Allocation> free_;  // oldest release first
  std::size_t cached_ = 0;
  std::size_t max_cached_;
};

class Buffer {
 public:
  Buffer() = default;
  // Uninitialised buffer of `size` bytes (throws std::bad_alloc like any container).
  explicit Buffer(std::size_t size);
  static Buffer copy_of(ConstByteSpan bytes);
  // Uninitialised buffer for one large value written once front to back (a decompressed
  // metadata file of tens of MB): 2 MiB-aligned and, on Linux, advised for transparent huge
  // pages, so that first writes take one page fault per 2 MiB instead of one per 4 KiB (for
  // 100 MB, ~50 faults instead of ~25,000, about a third of the time zstd needs to fill it).
  static Buffer huge_page_aligned(std::size_t size);

  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  [[nodiscard]] std::byte* data() { return data_; }
  [[nodiscard]] const std::byte* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] ByteSpan span() { return {data_, size_}; }
  [[nodiscard]] ConstByteSpan span() const { return {data_, size_}; }

  // Sets the size; grows capacity (keeping contents) when needed.
  void resize(std::size_t size);
  // Drops the first `n` bytes from view without moving memory (used to strip a read's padding).
  void trim_front(std::size_t n);

  void swap(Buffer& o) noexcept;

 private:
  friend class BufferPool;
  std::byte* alloc_ = nullptr;  // start of the allocation
  std::byte* data_ = nullptr;   // start of the visible bytes (alloc_ unless trim_front was used)
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;    // bytes from data_ to the end of the allocation
  BufferPool* pool_ = nullptr;  // where the allocation returns to, or null
};

// A free list of host buffers keyed by capacity. Buffers larger than `max_cached_bytes` in total
// are freed instead of cached, so the pool's footprint stays bounded.
class BufferPool {
 public:
  explicit BufferPool(std::size_t max_cached_bytes = std::size_t{1} << 30)
      : cache_(max_cached_bytes) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer with size() == size and capacity() >= size; contents are uninitialised.
  Buffer acquire(std::size_t size);

  [[nodiscard]] std::size_t cached_bytes() const { return cache_.cached_bytes(); }
  // Raises the budget of cached bytes to at least `bytes` (never lowers it).
  void raise_budget(std::size_t bytes) { cache_.raise_budget(bytes); }

 private:
  friend class Buffer;
  void release(std::byte* alloc, std::size_t capacity);

  AllocationCache cache_;
};

}  // namespace zarrflow
