// Byte and bit un-shuffle of one Blosc block, written once for CUDA (one thread block, or warp,
// per Blosc block) and for the host. Both are gathers: each lane produces whole output bytes, so
// lanes never read what other lanes write and need no barrier. src and dst must not overlap.
//
// Exactly as c-blosc 1.21 un-shuffles a block of `blocksize` bytes with element size `typesize`
// (blosc/shuffle-generic.h unshuffle_generic, blosc/shuffle.c blosc_internal_bitunshuffle):
//   byte: n = blocksize / typesize elements; shuffled byte j * n + i is byte j of element i. The
//         last blocksize % typesize bytes are stored unshuffled (copied through).
//   bit:  n = blocksize / typesize elements. Only when n is a multiple of 8 is the block
//         bit-transposed -- all n elements -- and the last blocksize % typesize bytes copied
//         through. When n is not a multiple of 8 the whole block was stored unchanged (c-blosc
//         1.21 does not transpose a multiple-of-8 prefix). The shuffled block is 8 * typesize
//         rows of n / 8 bytes; row j * 8 + k holds bit k of byte j of every element, element i
//         at bit i % 8 of byte i / 8 of the row.
// Whether a block is un-shuffled at all is the caller's decision (see blosc_plan.h: c-blosc skips
// byte un-shuffle for typesize 1 and bit un-shuffle for blocks shorter than typesize).
#pragma once

#include <cstddef>
#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/lane_copy.h"  // load_aligned_word, store_aligned_word

namespace zarrflow::gpu {

// Transposes the 8x8 bit matrix whose row r is byte r of x (column c = bit c): bit c of byte r
// moves to bit r of byte c. Three delta swaps (2x2 blocks of bits, then 2x2 of 2x2, then 4x4).
ZF_HD inline std::uint64_t transpose_bits_8x8(std::uint64_t x) {
  std::uint64_t t;
  t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  x ^= t ^ (t << 28);
  return x;
}

// Byte un-shuffle of groups of four elements of TS bytes: a lane reads one aligned word from
// each of the TS rows (byte j of elements 4g..4g+3) and writes the group's 4 * TS bytes as TS
// aligned words, where the byte-wise gather takes a load and a store per byte. Requires src and
// dst 4-byte aligned and n a multiple of 4 (so every row starts aligned).
template <int TS>
ZF_HD inline void byte_unshuffle_groups(const std::uint8_t* src, std::uint8_t* dst, std::size_t n,
                                        int lane, int nlanes) {
  const std::size_t groups = n / 4;
  for (std::size_t g = static_cast<std::size_t>(lane); g < groups;
       g += static_cast<std::size_t>(nlanes)) {
    std::uint32_t row[TS];
    for (int j = 0; j < TS; ++j) row[j] = load_aligned_word(src + j * n + 4 * g);
    for (int k = 0; k < TS; ++k) {  // output word k: bytes 4k..4k+3 of the group
      std::uint32_t w = 0;
      for (int b = 0; b < 4; ++b) {
        const int element = (4 * k + b) / TS;
        const int byte = (4 * k + b) % TS;
        w |= ((row[byte] >> (8 * element)) & 0xFFu) << (8 * b);
      }
      store_aligned_word(dst + 4 * TS * g + 4 * k, w);
    }
  }
}

// Byte un-shuffle of one block, lane `lane` of `nlanes`: by groups of four elements for typesizes
// 2, 4 and 8 when the rows are aligned (byte_unshuffle_groups), else byte by byte.
ZF_HD inline void byte_unshuffle(const std::uint8_t* src, std::uint8_t* dst, std::size_t typesize,
                                 std::size_t blocksize, int lane, int nlanes) {
  const std::size_t step = static_cast<std::size_t>(nlanes);
  const std::size_t n = typesize == 0 ? 0 : blocksize / typesize;
  const std::size_t body = n * typesize;
  const bool words =
      n % 4 == 0 &&
      ((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 3) == 0;
  if (words && (typesize == 2 || typesize == 4 || typesize == 8)) {
    if (typesize == 2) byte_unshuffle_groups<2>(src, dst, n, lane, nlanes);
    if (typesize == 4) byte_unshuffle_groups<4>(src, dst, n, lane, nlanes);
    if (typesize == 8) byte_unshuffle_groups<8>(src, dst, n, lane, nlanes);
    for (std::size_t o = body + static_cast<std::size_t>(lane); o < blocksize; o += step)
      dst[o] = src[o];
    return;
  }
  // Output byte o = i * typesize + j comes from j * n + i; advance (i, j) without dividing.
  const std::size_t di = step / (typesize == 0 ? 1 : typesize);
  const std::size_t dj = step - di * typesize;
  std::size_t o = static_cast<std::size_t>(lane);
  if (o < body) {
    std::size_t i = o / typesize;
    std::size_t j = o - i * typesize;
    for (; o < body; o += step) {
      dst[o] = src[j * n + i];
      i += di;
      j += dj;
      if (j >= typesize) {
        j -= typesize;
        ++i;
      }
    }
  }
  for (o = body + static_cast<std::size_t>(lane); o < blocksize; o += step) dst[o] = src[o];
}

// Bit un-shuffle of one block, lane `lane` of `nlanes`. Work item w = g * typesize + j gathers
// byte j of elements 8g..8g+7: one byte from each of rows 8j..8j+7, transposed. Byte loads and
// stores on purpose: gathering words (32 elements a lane) decoded slower on an H200
// (docs/design_measurements.md).
ZF_HD inline void bit_unshuffle(const std::uint8_t* src, std::uint8_t* dst, std::size_t typesize,
                                std::size_t blocksize, int lane, int nlanes) {
  const std::size_t step = static_cast<std::size_t>(nlanes);
  const std::size_t n = typesize == 0 ? 0 : blocksize / typesize;
  std::size_t o = static_cast<std::size_t>(lane);
  if (typesize == 0 || n % 8 != 0) {  // stored as is
    for (; o < blocksize; o += step) dst[o] = src[o];
    return;
  }
  const std::size_t row = n / 8;  // bytes per bit-row
  const std::size_t items = row * typesize;
  const std::size_t dg = step / typesize;
  const std::size_t dj = step - dg * typesize;
  std::size_t w = static_cast<std::size_t>(lane);
  if (w < items) {
    std::size_t g = w / typesize;
    std::size_t j = w - g * typesize;
    for (; w < items; w += step) {
      const std::uint8_t* in = src + j * 8 * row + g;
      std::uint64_t x = 0;
      for (int k = 0; k < 8; ++k) x |= static_cast<std::uint64_t>(in[k * row]) << (8 * k);
      x = transpose_bits_8x8(x);
      std::uint8_t* out = dst + g * 8 * typesize + j;
      for (int e = 0; e < 8; ++e) out[e * typesize] = static_cast<std::uint8_t>(x >> (8 * e));
      g += dg;
      j += dj;
      if (j >= typesize) {
        j -= typesize;
        ++g;
      }
    }
  }
  for (o = n * typesize + static_cast<std::size_t>(lane); o < blocksize; o += step) dst[o] = src[o];
}

}  // namespace zarrflow::gpu
