// Bit readers of the Zstandard format (RFC 8878), for the GPU zstd decoder (zstd_frame.h,
// zstd_block.h); host and device code.
//
//   ForwardBits   the forward little-endian bit field of an FSE table description (§4.1.1).
//   BackwardBits  a bitstream read from its end (Huffman streams, FSE weight streams, the
//                 sequences bitstream): the last byte's highest set bit marks where it starts.
//
// Both read only inside their byte range; the caller decides whether reading past it was allowed
// (BackwardBits::overflowed, ForwardBits::bytes_used).
#pragma once

#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"

namespace zarrflow::gpu {

// Index of the highest set bit of v (v > 0).
ZF_HD inline int highest_bit(std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return 31 - __clz(v);
#else
  return 31 - __builtin_clz(v);
#endif
}

class ForwardBits {
 public:
  ZF_HD ForwardBits(const std::uint8_t* data, std::uint32_t size) : data_(data), size_(size) {}

  // The next n (<= 25) bits, not consumed.
  ZF_HD std::uint32_t peek(int n) const {
    const std::uint32_t byte = pos_ >> 3;
    std::uint32_t v = 0;
    for (std::uint32_t k = 0; k < 4; ++k)
      if (byte + k < size_) v |= std::uint32_t(data_[byte + k]) << (8 * k);
    return (v >> (pos_ & 7)) & ((1u << n) - 1);
  }
  ZF_HD void skip(int n) { pos_ += std::uint32_t(n); }
  ZF_HD std::uint32_t read(int n) {
    const std::uint32_t v = peek(n);
    skip(n);
    return v;
  }
  // Whole bytes the fields read so far take.
  ZF_HD std::uint32_t bytes_used() const { return (pos_ + 7) >> 3; }

 private:
  const std::uint8_t* data_;
  std::uint32_t size_;
  std::uint32_t pos_ = 0;
};

// Reads as libzstd's BIT_DStream does: a 64-bit container loaded from the 8 bytes below the
// read position and the count of its bits consumed from the top; reload() moves the window down.
// Between reloads at most 57 bits may be read (reload leaves at most 7 consumed).
class BackwardBits {
 public:
  // Starts after the end marker; ok() is false when the stream is empty or its last byte is 0.
  ZF_HD BackwardBits(const std::uint8_t* data, std::uint32_t size) : start_(data) {
    if (size == 0 || data[size - 1] == 0) {
      bad_ = true;
      return;
    }
    const std::uint32_t marker = 8 - std::uint32_t(highest_bit(data[size - 1]));
    if (size >= 8) {
      ptr_ = data + size - 8;
      container_ = load(ptr_);
      consumed_ = marker;
    } else {  // the container holds the stream in its low bytes; the rest counts as consumed
      ptr_ = data;
      for (std::uint32_t k = 0; k < size; ++k) container_ |= std::uint64_t(data[k]) << (8 * k);
      consumed_ = marker + (8 - size) * 8;
    }
  }

  [[nodiscard]] ZF_HD bool ok() const { return !bad_; }

  // The next n (<= 32) bits as an integer whose first-read bit is the highest, not consumed.
  // Past the start of the stream the bits are not defined (overflowed() tells).
  ZF_HD std::uint32_t peek(int n) const {
    return std::uint32_t(((container_ << (consumed_ & 63)) >> 1) >> ((63 - n) & 63));
  }
  ZF_HD void skip(int n) { consumed_ += std::uint32_t(n); }
  ZF_HD std::uint32_t read(int n) {
    const std::uint32_t v = peek(n);
    skip(n);
    return v;
  }
  // Refills the container so that at least 57 bits can be read, where the stream has them.
  ZF_HD void reload() {
    if (consumed_ > 64) return;  // read past the start already
    if (ptr_ >= start_ + 8) {
      ptr_ -= consumed_ >> 3;
      consumed_ &= 7;
      container_ = load(ptr_);
      return;
    }
    if (ptr_ == start_) return;
    std::uint32_t back = consumed_ >> 3;
    if (std::uint32_t(ptr_ - start_) < back) back = std::uint32_t(ptr_ - start_);
    ptr_ -= back;
    consumed_ -= back * 8;
    container_ = load(ptr_);
  }
  // Reloads only when fewer than `bits` (<= 57) are left in the container.
  ZF_HD void reload_for(int bits) {
    if (consumed_ + std::uint32_t(bits) > 64) reload();
  }
  // More bits were taken than the stream holds (after a reload).
  [[nodiscard]] ZF_HD bool overflowed() {
    reload();
    return consumed_ > 64;
  }
  // Every bit of the stream was taken, none more.
  [[nodiscard]] ZF_HD bool finished() {
    reload();
    return ptr_ == start_ && consumed_ == 64;
  }

 private:
  ZF_HD static std::uint64_t load(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= std::uint64_t(p[k]) << (8 * k);
    return v;
  }

  const std::uint8_t* start_;
  const std::uint8_t* ptr_ = nullptr;
  std::uint64_t container_ = 0;
  std::uint32_t consumed_ = 0;
  bool bad_ = false;
};

}  // namespace zarrflow::gpu
