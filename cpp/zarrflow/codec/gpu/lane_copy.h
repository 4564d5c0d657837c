// The copies of the GPU block decoders (lz4_block.h, blosclz_block.h, zstd_*.h), split over the
// lanes of a warp or thread block: lane i of n takes every n-th unit of the output. Written once
// for CUDA and for the host (hd.h).
//
// Long copies move 4-byte words: each lane writes whole aligned words of dst, building each from
// the one or two aligned words of src that hold its bytes (a funnel shift when src and dst are not
// aligned alike), so a warp moves 128 bytes per step with one store and at most two loads a lane,
// where a byte copy takes 32 bytes per step with a load and a store for each. A word that reaches
// outside the source range is read byte by byte: no copy reads a byte outside [src, src + n), so a
// copy may read right up to bytes other lanes are writing (an LZ77 match whose source ends where
// its output begins). The word copy stays inline: as a call it decoded faster alone but took more
// SM time from a model beside it (docs/design_measurements.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "zarrflow/codec/gpu/hd.h"

namespace zarrflow::gpu {

// Copies shorter than this many bytes per lane stay byte copies (no head, tail and shift setup).
constexpr std::size_t kWordCopyMinBytesPerLane = 8;

// The aligned 4-byte word at p, little-endian (the GPU's and the supported hosts' byte order).
ZF_HD inline std::uint32_t load_aligned_word(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const std::uint32_t*>(p);
#else
  std::uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
#endif
}

ZF_HD inline void store_aligned_word(std::uint8_t* p, std::uint32_t w) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<std::uint32_t*>(p) = w;
#else
  std::memcpy(p, &w, sizeof w);
#endif
}

// The 4 bytes src[at, at + 4) (at a multiple of 4 from an aligned address), of which only those
// inside src[0, n) are read (the others zero).
ZF_HD inline std::uint32_t load_word_within(const std::uint8_t* src, std::size_t n,
                                            std::ptrdiff_t at) {
  if (at >= 0 && static_cast<std::size_t>(at) + 4 <= n) return load_aligned_word(src + at);
  std::uint32_t w = 0;
  for (std::ptrdiff_t b = 0; b < 4; ++b)
    if (at + b >= 0 && static_cast<std::size_t>(at + b) < n)
      w |= static_cast<std::uint32_t>(src[at + b]) << (8 * b);
  return w;
}

// Bytes [shift, shift + 4) of the 8 bytes lo:hi (lo first), shift in 0..3.
ZF_HD inline std::uint32_t funnel_bytes(std::uint32_t lo, std::uint32_t hi, unsigned shift) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, 8 * shift);
#else
  return shift == 0 ? lo : (lo >> (8 * shift)) | (hi << (32 - 8 * shift));
#endif
}

// dst[0, n) = src[0, n), lane-split, byte by byte.
ZF_HD inline void lane_copy_bytes(const std::uint8_t* src, std::uint8_t* dst, std::size_t n,
                                  int lane, int nlanes) {
  for (std::size_t i = static_cast<std::size_t>(lane); i < n; i += static_cast<std::size_t>(nlanes))
    dst[i] = src[i];
}

// dst[0, n) = src[0, n), lane-split: the bytes before dst's first aligned word and after its last
// byte by byte, the words between as words. The ranges must not overlap.
ZF_HD inline void lane_copy(const std::uint8_t* src, std::uint8_t* dst, std::size_t n, int lane,
                            int nlanes) {
  const std::size_t step = static_cast<std::size_t>(nlanes);
  if (n < kWordCopyMinBytesPerLane * step) {
    lane_copy_bytes(src, dst, n, lane, nlanes);
    return;
  }
  const std::size_t head = (4 - (reinterpret_cast<std::uintptr_t>(dst) & 3)) & 3;
  const std::size_t words = (n - head) / 4;
  const std::size_t tail = head + 4 * words;
  for (std::size_t i = static_cast<std::size_t>(lane); i < head; i += step) dst[i] = src[i];
  for (std::size_t i = tail + static_cast<std::size_t>(lane); i < n; i += step) dst[i] = src[i];

  // Word w of the output takes src[head + 4w, head + 4w + 4): bytes shift.. of the aligned words
  // at src offsets first + 4w and first + 4w + 4.
  const unsigned shift = static_cast<unsigned>((reinterpret_cast<std::uintptr_t>(src) + head) & 3);
  const std::ptrdiff_t first =
      static_cast<std::ptrdiff_t>(head) - static_cast<std::ptrdiff_t>(shift);
  std::uint8_t* to = dst + head;
  for (std::size_t w = static_cast<std::size_t>(lane); w < words; w += step) {
    const std::ptrdiff_t at = first + static_cast<std::ptrdiff_t>(4 * w);
    const std::uint32_t lo = load_word_within(src, n, at);
    const std::uint32_t hi = shift == 0 ? 0 : load_word_within(src, n, at + 4);
    store_aligned_word(to + 4 * w, funnel_bytes(lo, hi, shift));
  }
}

// dst[0, n) = value, lane-split.
ZF_HD inline void lane_fill(std::uint8_t* dst, std::uint8_t value, std::size_t n, int lane,
                            int nlanes) {
  for (std::size_t i = static_cast<std::size_t>(lane); i < n; i += static_cast<std::size_t>(nlanes))
    dst[i] = value;
}

// The LZ77 match dst[op, op + len) = copy from `dist` bytes back, with the usual byte-by-byte
// meaning when dist < len (the last dist bytes repeat). Reads only dst[op - dist, op), so all
// bytes it reads must have been written (and made visible with a barrier) before the call.
// Requires 1 <= dist <= op.
ZF_HD inline void lane_match(std::uint8_t* dst, std::size_t op, std::size_t dist, std::size_t len,
                             int lane, int nlanes) {
  const std::uint8_t* from = dst + (op - dist);
  std::uint8_t* to = dst + op;
  if (dist >= len) {  // source and output do not overlap
    lane_copy(from, to, len, lane, nlanes);
    return;
  }
  // Byte k reads from[k % dist]; keep k % dist incrementally instead of dividing every byte.
  const std::size_t n = static_cast<std::size_t>(nlanes);
  std::size_t k = static_cast<std::size_t>(lane);
  const std::size_t step = n % dist;
  std::size_t s = k % dist;
  for (; k < len; k += n) {
    to[k] = from[s];
    s += step;
    if (s >= dist) s -= dist;
  }
}

}  // namespace zarrflow::gpu
