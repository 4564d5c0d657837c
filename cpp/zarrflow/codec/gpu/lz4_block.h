// Cooperative decoder for one raw LZ4 block (the format numcodecs' LZ4 stores after its 4-byte
// size, and Blosc's lz4/lz4hc streams), written once for CUDA warps and for the host.
// Format: https://github.com/lz4/lz4/blob/dev/doc/lz4_Block_format.md
//
// Every lane of a warp runs the same token-parsing loop on the same bytes (so all lanes take the
// same branches and reach every barrier together) and the lanes split each copy: lane i writes
// bytes i, i + nlanes, ... A match is copied with the periodic form of LZ77, byte k of a match at
// output position op with offset d being dst[op - d + k % d]: every byte a lane reads lies before
// op, so one barrier before the match (making all earlier writes visible) is enough, even for
// overlapping matches (d < length) -- no rounds of d bytes and no barrier inside the copy.
//
// Every read of src and every read or write of dst is bounds-checked, whatever the input. The
// result is the number of bytes written (the caller compares it with the size it expects), or a
// negative DecodeStatus. Acceptance, compared with LZ4_decompress_safe (liblz4 1.9.4) into a
// buffer of dst_size bytes: whatever it decodes, this decodes to the same bytes, except a match
// offset of 0 (liblz4 writes zeros; here kDecodeOffsetZero). This decoder does not enforce the
// format's end-of-block rules (last 5 bytes literal, last match 12 bytes before the end), which
// valid encoders always follow; a block breaking them but otherwise well formed decodes here.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"

namespace zarrflow::gpu {

// dst[0, n) = src[0, n), lane-split. The ranges must not overlap.
ZF_HD inline void lane_copy(const std::uint8_t* src, std::uint8_t* dst, std::size_t n, int lane,
                            int nlanes) {
  for (std::size_t i = static_cast<std::size_t>(lane); i < n; i += static_cast<std::size_t>(nlanes))
    dst[i] = src[i];
}

// The LZ77 match dst[op, op + len) = copy from `dist` bytes back, with the usual byte-by-byte
// meaning when dist < len (the last dist bytes repeat). Reads only dst[op - dist, op), so all
// bytes it reads must have been written (and made visible with a barrier) before the call.
// Requires 1 <= dist <= op.
ZF_HD inline void lane_match(std::uint8_t* dst, std::size_t op, std::size_t dist, std::size_t len,
                             int lane, int nlanes) {
  const std::uint8_t* from = dst + (op - dist);
  std::uint8_t* to = dst + op;
  const std::size_t n = static_cast<std::size_t>(nlanes);
  std::size_t k = static_cast<std::size_t>(lane);
  if (dist >= len) {
    for (; k < len; k += n) to[k] = from[k];
    return;
  }
  // Byte k reads from[k % dist]; keep k % dist incrementally instead of dividing every byte.
  const std::size_t step = n % dist;
  std::size_t s = k % dist;
  for (; k < len; k += n) {
    to[k] = from[s];
    s += step;
    if (s >= dist) s -= dist;
  }
}

// Decodes the LZ4 block src[0, src_size) into dst[0, dst_size) as lane `lane` of `nlanes`.
// `sync` is called (identically on every lane) wherever lanes must wait for each other.
template <class Sync>
ZF_HD inline int lz4_decode_block_with(const std::uint8_t* src, std::size_t src_size,
                                       std::uint8_t* dst, std::size_t dst_size, int lane,
                                       int nlanes, Sync sync) {
  if (dst_size > static_cast<std::size_t>(INT_MAX)) return kDecodeTooLarge;
  std::size_t ip = 0;
  std::size_t op = 0;
  for (;;) {
    if (ip >= src_size) return kDecodeTruncated;  // a block ends with a literals-only sequence
    const unsigned token = src[ip++];

    std::size_t lit = token >> 4;
    if (lit == 15) {
      unsigned b;
      do {
        if (ip >= src_size) return kDecodeTruncated;
        b = src[ip++];
        lit += b;
      } while (b == 255);
    }
    if (lit > src_size - ip) return kDecodeTruncated;
    if (lit > dst_size - op) return kDecodeOverflow;
    lane_copy(src + ip, dst + op, lit, lane, nlanes);
    ip += lit;
    op += lit;
    if (ip == src_size) break;  // the last sequence has literals only
    if (op == dst_size) return kDecodeTrailingGarbage;

    if (src_size - ip < 2) return kDecodeTruncated;
    const std::size_t offset = src[ip] | static_cast<std::size_t>(src[ip + 1]) << 8;
    ip += 2;
    std::size_t len = token & 15;
    if (len == 15) {
      unsigned b;
      do {
        if (ip >= src_size) return kDecodeTruncated;
        b = src[ip++];
        len += b;
      } while (b == 255);
    }
    len += 4;
    if (offset == 0) return kDecodeOffsetZero;
    if (offset > op) return kDecodeOffsetBeforeStart;
    if (len > dst_size - op) return kDecodeOverflow;
    sync();  // the match may read bytes other lanes wrote
    lane_match(dst, op, offset, len, lane, nlanes);
    op += len;
  }
  sync();  // leave dst complete for every lane
  return static_cast<int>(op);
}

ZF_HD inline int lz4_decode_block(const std::uint8_t* src, std::size_t src_size, std::uint8_t* dst,
                                  std::size_t dst_size, int lane, int nlanes) {
  return lz4_decode_block_with(src, src_size, dst, dst_size, lane, nlanes, WarpSync{});
}

}  // namespace zarrflow::gpu
