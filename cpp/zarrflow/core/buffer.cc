#include "zarrflow/core/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

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

BufferPool::~BufferPool() {
  for (auto& [cap, p] : free_) std::free(p);
}

Buffer BufferPool::acquire(std::size_t size) {
  {
    std::lock_guard lock(mu_);
    // Best fit among cached buffers that are not more than 2x too large.
    std::size_t best = free_.size();
    for (std::size_t i = 0; i < free_.size(); ++i) {
      const std::size_t cap = free_[i].first;
      if (cap >= size && cap <= 2 * size + 4096 &&
          (best == free_.size() || cap < free_[best].first))
        best = i;
    }
    if (best != free_.size()) {
      Buffer b;
      b.alloc_ = b.data_ = free_[best].second;
      b.capacity_ = free_[best].first;
      b.size_ = size;
      b.pool_ = this;
      cached_bytes_ -= b.capacity_;
      free_[best] = free_.back();
      free_.pop_back();
      return b;
    }
  }
  Buffer b(size);
  b.pool_ = this;
  return b;
}

void BufferPool::release(std::byte* alloc, std::size_t capacity) {
  {
    std::lock_guard lock(mu_);
    if (cached_bytes_ + capacity <= max_cached_bytes_) {
      free_.emplace_back(capacity, alloc);
      cached_bytes_ += capacity;
      return;
    }
  }
  std::free(alloc);
}

std::size_t BufferPool::cached_bytes() const {
  std::lock_guard lock(mu_);
  return cached_bytes_;
}

}  // namespace zarrflow
