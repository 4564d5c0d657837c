// Bit readers of the Zstandard format (RFC 8878), for the GPU zstd decoder (zstd_frame.h,
// zstd_block.h); host and device code.
//
//   ForwardBits   the forward little-endian bit field of an FSE table description (§4.1.1).
//   BackwardBits  a bitstream read from its end (Huffman streams, FSE weight streams, the
//                 sequences bitstream): the last byte's highest set bit marks where it starts.
//
// Both read only inside their byte range; bits beyond it read as zeros, and the caller decides
// whether that was allowed (BackwardBits::overflowed, ForwardBits::bytes_used).
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

class BackwardBits {
 public:
  // Starts after the end marker; ok() is false when the stream is empty or its last byte is 0.
  ZF_HD BackwardBits(const std::uint8_t* data, std::uint32_t size) : data_(data) {
    if (size == 0 || data[size - 1] == 0) {
      bad_ = true;
      return;
    }
    bits_left_ = std::int64_t(size) * 8 - 8 + highest_bit(data[size - 1]);
    fill();
  }

  [[nodiscard]] ZF_HD bool ok() const { return !bad_; }

  // The next n (<= 32) bits as an integer whose first-read bit is the highest, not consumed.
  // Past the start of the stream the bits read as zeros.
  ZF_HD std::uint32_t peek(int n) {
    if (n == 0) return 0;
    if (have_ < n) fill();
    return std::uint32_t((cache_ >> (have_ - n)) & ((std::uint64_t(1) << n) - 1));
  }
  ZF_HD void skip(int n) {
    have_ -= n;
    bits_left_ -= n;
  }
  ZF_HD std::uint32_t read(int n) {
    const std::uint32_t v = peek(n);
    skip(n);
    return v;
  }
  // More bits were taken than the stream holds.
  [[nodiscard]] ZF_HD bool overflowed() const { return bits_left_ < 0; }
  // Every bit of the stream was taken, none more.
  [[nodiscard]] ZF_HD bool finished() const { return bits_left_ == 0; }
  [[nodiscard]] ZF_HD std::int64_t bits_left() const { return bits_left_; }

 private:
  // Tops the cache up to at least 57 bits: the bits just below the read position, most recent
  // (highest in the stream) first.
  ZF_HD void fill() {
    while (have_ <= 56) {
      // bit index (from the stream's start) of the next bit below what the cache holds
      const std::int64_t next = bits_left_ - have_;
      if (next <= 0) {  // past the start: zeros
        cache_ <<= 8;
        have_ += 8;
        continue;
      }
      // Take the whole byte holding bit next-1 when the cache is byte-aligned with the stream,
      // otherwise the bits down to that byte's boundary.
      const std::int64_t top = next - 1;
      const int low = int(top & 7);  // bits of that byte at or below `top`, minus one
      const int take = low + 1;
      const std::uint32_t byte = data_[top >> 3] & ((1u << take) - 1);
      cache_ = (cache_ << take) | byte;
      have_ += take;
    }
  }

  const std::uint8_t* data_;
  std::uint64_t cache_ = 0;
  int have_ = 0;               // valid bits in cache_ (its low bits)
  std::int64_t bits_left_ = 0;  // unread bits of the stream (negative after an overflow)
  bool bad_ = false;
};

}  // namespace zarrflow::gpu
