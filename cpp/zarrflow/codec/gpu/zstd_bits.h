// Bit readers of the Zstandard format (RFC 8878), for the GPU zstd decoder (zstd_frame.h,
// zstd_block.h); host and device code.
//
//   ForwardBits   the forward little-endian bit field of an FSE table description (§4.1.1).
//   BackwardBits  a bitstream read from its end (Huffman streams, FSE weight streams, the
//                 sequences bitstream): the last byte's highest set bit marks where it starts.
//
// Past their byte range both give bits that mean nothing (BackwardBits loads whole aligned words
// on the GPU, see its word()); the caller decides whether reading past it was allowed
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

// A bitstream read from its end, as RFC 8878 §4.1 has it: the next bits to read are kept
// left-justified in a 64-bit buffer, refilled 32 bits at a time from aligned 8-byte words, the
// next of which is loaded while the current one is read. Reads and refills are a few shifts and
// no branches. Only words that hold a byte of the stream are loaded; where the stream has no
// more bits, zeros follow (and, on the GPU, the bytes before it in its first word), which the
// count of bits taken against the stream's size tells (overflowed, finished).
class BackwardBits {
 public:
  // Starts after the end marker with at least 33 bits buffered; ok() is false when the stream is
  // empty or its last byte is 0.
  ZF_HD BackwardBits(const std::uint8_t* data, std::uint32_t size)
      : start_(data), end_(data + size) {
    if (size == 0 || data[size - 1] == 0) {
      bad_ = true;
      return;
    }
    const int marker = highest_bit(data[size - 1]);
    stream_bits_ = 8 * (size - 1) + std::uint32_t(marker);
    first_ = address(data) & ~std::uintptr_t(7);
    next_ = address(data + size - 1) & ~std::uintptr_t(7);  // the word of the stream's last byte
    // Its bits below the marker (with any bytes before the stream in the same word).
    const std::uint32_t top = 8 * std::uint32_t(address(data + size - 1) - next_) + marker;
    const std::uint64_t w = word(next_);
    bits_ = top == 0 ? 0 : w << (64 - top);
    count_ = fed_ = top;
    ahead_ = next_ >= first_ + 8 ? word(next_ - 8) : 0;
    reload();
  }

  [[nodiscard]] ZF_HD bool ok() const { return !bad_; }

  // The next n (<= 32) bits as an integer whose first-read bit is the highest, not consumed.
  ZF_HD std::uint32_t peek(int n) const { return std::uint32_t((bits_ >> 32) >> (32 - n)); }
  ZF_HD void skip(int n) {
    bits_ <<= n;
    count_ -= std::uint32_t(n);
  }
  ZF_HD std::uint32_t read(int n) {
    const std::uint32_t v = peek(n);
    skip(n);
    return v;
  }
  // Refills the buffer to at least 33 bits when it holds 32 or fewer.
  ZF_HD void reload() {
    if (count_ > 32) return;
    refill32();
    if (count_ == 32) refill32();  // it was empty
  }
  // Reloads only when fewer than `bits` (<= 33) are buffered.
  ZF_HD void reload_for(int bits) {
    if (count_ < std::uint32_t(bits)) reload();
  }
  // More bits were taken than the stream holds.
  [[nodiscard]] ZF_HD bool overflowed() {
    reload();
    return taken() > stream_bits_;
  }
  // Every bit of the stream was taken, none more.
  [[nodiscard]] ZF_HD bool finished() const { return taken() == stream_bits_; }

 private:
  ZF_HD std::uint32_t taken() const { return fed_ - count_; }
  // Moves the source word's next 32 bits below the buffered ones (count_ <= 32).
  ZF_HD void refill32() {
    if (pending_bits_ == 0) {  // the word loaded ahead becomes the source; the next one is loaded
      pending_ = ahead_;
      ahead_ = next_ >= first_ + 16 ? word(next_ - 16) : 0;
      pending_bits_ = 64;
      next_ -= 8;
    }
    bits_ |= (pending_ >> 32) << (32 - count_);
    pending_ <<= 32;
    pending_bits_ -= 32;
    count_ += 32;
    fed_ += 32;
  }
  ZF_HD static std::uintptr_t address(const std::uint8_t* p) {
    return reinterpret_cast<std::uintptr_t>(p);
  }
  // The aligned word at address a, which holds at least one byte of the stream. On the host the
  // bytes outside the stream read as 0 (never past its buffer); on the GPU the word is loaded
  // whole, which stays within the buffer because device buffers are aligned to 8 bytes or more.
  ZF_HD std::uint64_t word(std::uintptr_t a) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // A miss brings the 256 bytes around the word into L2, so that most loads wait on L2 only.
    unsigned long long v;
    asm("ld.global.nc.L2::256B.u64 %0, [%1];" : "=l"(v) : "l"(a));
    return v;
#elif defined(__CUDA_ARCH__)
    return __ldg(reinterpret_cast<const unsigned long long*>(a));
#else
    std::uint64_t v = 0;
    for (int k = 0; k < 8; ++k) {
      const std::uintptr_t b = a + std::uintptr_t(k);
      if (b >= address(start_) && b < address(end_))
        v |= std::uint64_t(*reinterpret_cast<const std::uint8_t*>(b)) << (8 * k);
    }
    return v;
#endif
  }

  const std::uint8_t* start_;
  const std::uint8_t* end_;
  std::uint64_t bits_ = 0;     // the next bits, left-justified
  std::uint64_t pending_ = 0;  // bits of the current source word not yet in bits_, left-justified
  std::uint64_t ahead_ = 0;    // the word below the source word
  std::uintptr_t first_ = 0, next_ = 0;  // aligned addresses: the stream's first word, the source
  std::uint32_t count_ = 0, pending_bits_ = 0;
  std::uint32_t fed_ = 0;  // bits moved into bits_ so far
  std::uint32_t stream_bits_ = 0;
  bool bad_ = false;
};

}  // namespace zarrflow::gpu
