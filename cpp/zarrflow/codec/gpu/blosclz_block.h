// Cooperative decoder for one blosclz stream as c-blosc 1.x writes it (Blosc's default inner
// codec, a FastLZ derivative), written once for CUDA warps and for the host. Lanes share the
// work as in lz4_block.h: identical parsing on every lane, copies split over the lanes
// (lane_copy.h), one barrier before each match.
//
// The format, as c-blosc 1.21's blosclz_decompress reads it (blosc/blosclz.c):
//   * The first byte is always a literal run: its low 5 bits hold count - 1 (the encoder sets
//     bit 5 as a marker, which the decoder masks off).
//   * Every later control byte c: c < 32 is a literal run of c + 1 bytes (1..32) that follow.
//     c >= 32 is a match: length code L = c >> 5 (1..7), distance high bits H = c & 31.
//       - L == 7: extra length bytes follow, each added, until one is not 255 (length 7 + sum).
//       - then the low distance byte D. The match copies (L - 1 + extras) + 3 bytes from
//         H * 256 + D + 1 bytes back ("near", up to 8191).
//       - H == 31 and D == 255 instead announce a "far" match: two more bytes give a big-endian
//         16-bit F and the distance is F + 8192 (up to 73727).
//   * There is no end marker: the stream ends when its bytes are used up. The encoder always
//     ends with literals. c-blosc's decoder stops *before copying* a match whose last byte is the
//     last input byte, so such a stream decodes short and Blosc rejects it; here it is reported
//     as kDecodeTruncated.
//   * c-blosc requires two bytes left before each extra length byte and before the distance
//     byte of a match, and two before a far distance; an empty stream is an error.
// Every check of c-blosc is made, in its order, with every read and write bounds-checked.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/lane_copy.h"

namespace zarrflow::gpu {

inline constexpr std::size_t kBlosclzFarBase = 8192;  // a far match's distance is F + 8192

// Decodes the blosclz stream src[0, src_size) into dst[0, dst_size) as lane `lane` of `nlanes`.
// Returns the bytes written or a negative DecodeStatus.
template <class Sync>
ZF_HD inline int blosclz_decode_block_with(const std::uint8_t* src, std::size_t src_size,
                                           std::uint8_t* dst, std::size_t dst_size, int lane,
                                           int nlanes, Sync sync) {
  if (dst_size > static_cast<std::size_t>(INT_MAX)) return kDecodeTooLarge;
  if (src_size == 0) return kDecodeTruncated;
  std::size_t ip = 1;
  std::size_t op = 0;
  unsigned ctrl = src[0] & 31u;
  for (;;) {
    if (ctrl >= 32) {
      std::size_t len = (ctrl >> 5) - 1;
      std::size_t dist = static_cast<std::size_t>(ctrl & 31u) << 8;
      unsigned code;
      if (len == 6) {
        do {
          if (ip + 1 >= src_size) return kDecodeTruncated;
          code = src[ip++];
          len += code;
        } while (code == 255);
      } else if (ip + 1 >= src_size) {
        return kDecodeTruncated;
      }
      code = src[ip++];
      len += 3;
      if (code == 255 && dist == (31u << 8)) {
        if (ip + 1 >= src_size) return kDecodeTruncated;
        dist = (static_cast<std::size_t>(src[ip]) << 8 | src[ip + 1]) + kBlosclzFarBase;
        ip += 2;
      } else {
        dist += code + 1;
      }
      if (len > dst_size - op) return kDecodeOverflow;
      if (dist > op) return kDecodeOffsetBeforeStart;
      if (ip >= src_size) return kDecodeTruncated;  // c-blosc drops this match: short output
      ctrl = src[ip++];
      sync();  // the match may read bytes other lanes wrote
      lane_match(dst, op, dist, len, lane, nlanes);
      op += len;
    } else {
      const std::size_t n = ctrl + 1;
      if (n > dst_size - op) return kDecodeOverflow;
      if (n > src_size - ip) return kDecodeTruncated;
      lane_copy(src + ip, dst + op, n, lane, nlanes);
      ip += n;
      op += n;
      if (ip >= src_size) break;
      ctrl = src[ip++];
    }
  }
  sync();  // leave dst complete for every lane
  return static_cast<int>(op);
}

ZF_HD inline int blosclz_decode_block(const std::uint8_t* src, std::size_t src_size,
                                      std::uint8_t* dst, std::size_t dst_size, int lane,
                                      int nlanes) {
  return blosclz_decode_block_with(src, src_size, dst, dst_size, lane, nlanes, WarpSync{});
}

}  // namespace zarrflow::gpu
