#include "zarrflow/core/buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace zarrflow {
namespace {

constexpr std::size_t kAlign = 64;

std::byte* aligned_alloc_bytes(std::size_t n) {
  if (n == 0) n = kAlign;
  const std::size_t rounded = (n + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return static_cast<std::byte*>(p);
}

}  // namespace

Buffer::Buffer(std::size_t size)
    : alloc_(aligned_alloc_bytes(size)), data_(alloc_), size_(size), capacity_(size) {}

Buffer Buffer::huge_page_aligned(std::size_t size) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  const std::size_t rounded =
      std::max<std::size_t>((size + kHugePage - 1) / kHugePage, 1) * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p == nullptr) throw std::bad_alloc();
#ifdef __linux__
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the memory is used as it is
#endif
  Buffer b;
  b.alloc_ = b.data_ = static_cast<std::byte*>(p);
  b.size_ = size;
  b.capacity_ = rounded;
  return b;
}

Buffer Buffer::copy_of(ConstByteSpan bytes) {
  Buffer b(bytes.size());
  if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
  return b;
}

Buffer::~Buffer() {
  if (alloc_ == nullptr) return;
  if (pool_ != nullptr) {
    pool_->release(alloc_, capacity_ + static_cast<std::size_t>(data_ - alloc_));
  } else {
    std::free(alloc_);
  }
}

void Buffer::swap(Buffer& o) noexcept {
  std::swap(alloc_, o.alloc_);
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  std::swap(capacity_, o.capacity_);
  std::swap(pool_, o.pool_);
}

void Buffer::resize(std::size_t size) {
  if (size <= capacity_) {
    size_ = size;
    return;
  }
  Buffer bigger(std::max(size, capacity_ * 2));
  if (size_ > 0) std::memcpy(bigger.data_, data_, size_);
  bigger.size_ = size;
  swap(bigger);
}

void Buffer::trim_front(std::size_t n) {
  if (n > size_) n = size_;
  data_ += n;
  size_ -= n;
  capacity_ -= n;
}

AllocationCache::Allocation AllocationCache::take(std::size_t size) {
  std::lock_guard lock(mu_);
  std::size_t best = free_.size();
  for (std::size_t i = 0; i < free_.size(); ++i) {
    const std::size_t cap = free_[i].second;
    if (cap >= size && cap <= 2 * size + 4096 && (best == free_.size() || cap < free_[best].second))
      best = i;
  }
  if (best == free_.size()) return {nullptr, 0};
  auto found = free_[best];
  cached_ -= found.second;
  free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));  // keeps the release order
  return found;
}

std::vector<AllocationCache::Allocation> AllocationCache::put(std::byte* p, std::size_t capacity) {
  std::lock_guard lock(mu_);
  if (capacity > max_cached_) return {{p, capacity}};
  std::size_t evict = 0, freed = 0;
  while (cached_ - freed + capacity > max_cached_) freed += free_[evict++].second;
  std::vector<Allocation> out(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(evict));
  free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(evict));
  cached_ -= freed;
  free_.emplace_back(p, capacity);
  cached_ += capacity;
  return out;
}

std::vector<AllocationCache::Allocation> AllocationCache::drain() {
  std::lock_guard lock(mu_);
  cached_ = 0;
  return std::exchange(free_, {});
}

std::vector<AllocationCache::Allocation> AllocationCache::shrink_to(std::size_t bytes) {
  std::lock_guard lock(mu_);
  std::size_t evict = 0;
  while (cached_ > bytes) cached_ -= free_[evict++].second;
  std::vector<Allocation> out(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(evict));
  free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(evict));
  return out;
}

void AllocationCache::raise_budget(std::size_t bytes) {
  std::lock_guard lock(mu_);
  max_cached_ = std::max(max_cached_, bytes);
}

std::size_t AllocationCache::budget() const {
  std::lock_guard lock(mu_);
  return max_cached_;
}

std::size_t AllocationCache::cached_bytes() const {
  std::lock_guard lock(mu_);
  return cached_;
}

BufferPool::~BufferPool() {
  for (auto& [p, cap] : cache_.drain()) std::free(p);
}

Buffer BufferPool::acquire(std::size_t size) {
  auto [p, cap] = cache_.take(size);
  if (p != nullptr) {
    Buffer b;
    b.alloc_ = b.data_ = p;
    b.capacity_ = cap;
    b.size_ = size;
    b.pool_ = this;
    return b;
  }
  Buffer b(size);
  b.pool_ = this;
  return b;
}

void BufferPool::release(std::byte* alloc, std::size_t capacity) {
  for (auto& [p, cap] : cache_.put(alloc, capacity)) std::free(p);
}

}  // namespace zarrflow
