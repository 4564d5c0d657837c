// Cooperative decoder for one raw LZ4 block (the format numcodecs' LZ4 stores after its 4-byte
// size, and Blosc's lz4/lz4hc streams), written once for CUDA warps and for the host.
// Format: https://github.com/lz4/lz4/blob/dev/doc/lz4_Block_format.md
//
// Every lane of a warp runs the same token-parsing loop on the same bytes (so all lanes take the
// same branches and reach every barrier together) and the lanes split each copy (lane_copy.h).
// A match is copied with the periodic form of LZ77, byte k of a match at output position op with
// offset d being dst[op - d + k % d]: every byte a lane reads lies before op, so one barrier
// before the match (making all earlier writes visible) is enough, even for overlapping matches
// (d < length) -- no rounds of d bytes and no barrier inside the copy.
//
// Acceptance is exactly that of LZ4_decompress_safe(src, dst, src_size, dst_size) in liblz4 1.9.4
// and 1.10 as built for x86-64 (and for aarch64 by gcc), which the CPU codecs call (numcodecs LZ4
// directly, c-blosc for its lz4/lz4hc streams): the same blocks decode, to the same bytes and the
// same count, and the same blocks fail. The GPU path must never return data for a chunk the CPU
// path rejects. liblz4 does not check the format's end-of-block rules as such; it checks limits
// that depend on how far the input and output positions are from their ends, in two modes:
//   * dst_size == 0: only the one-byte block {0x00} is accepted.
//   * "fast" mode, from the start while dst_size >= 64: literals of a token below 15 are copied
//     unchecked while at least 17 input bytes follow the token; longer ones while they end at
//     least 32 bytes before both ends; a match is copied unchecked (but for its offset) while it
//     ends more than 64 bytes before the end of the output. Anything else switches to safe mode
//     for good, at that point of the sequence.
//   * safe mode has a shortcut: literals of a token below 15, with more than 16 input bytes after
//     the token and at least 32 bytes of output left, are copied unchecked, and so is the match
//     that follows when its length code is below 15 and its offset is 8 or more.
//   * Everywhere else, literals that reach within 12 bytes of the end of the output or within 8
//     bytes of the end of the input must be the last sequence: they end the input exactly. A
//     match must end at least 5 bytes before the end of the output.
//   * Each length extension byte must leave at least 15 input bytes after it in a literal length,
//     at least 4 in a match length.
//   * A match offset beyond the output written so far fails; an offset of 0 is accepted and
//     writes zeros (liblz4's copy reads the bytes it is writing, which it zeroes first).
// Blocks that keep the format's end-of-block rules meet all of these. Every read of src and every
// read or write of dst is also bounds-checked on its own. The result is the number of bytes written
// (the caller compares it with the size it expects), or a negative DecodeStatus.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/lane_copy.h"

namespace zarrflow::gpu {

// Decodes the LZ4 block src[0, src_size) into dst[0, dst_size) as lane `lane` of `nlanes`.
// `sync` is called (identically on every lane) wherever lanes must wait for each other.
template <class Sync>
ZF_HD inline int lz4_decode_block_with(const std::uint8_t* src, std::size_t src_size,
                                       std::uint8_t* dst, std::size_t dst_size, int lane,
                                       int nlanes, Sync sync) {
  if (dst_size > static_cast<std::size_t>(INT_MAX) || src_size > static_cast<std::size_t>(INT_MAX))
    return kDecodeTooLarge;
  if (src_size == 0) return kDecodeTruncated;
  if (dst_size == 0) {                        // only the empty block {0x00}
    if (src[0] != 0) return kDecodeOverflow;  // literals or a match
    return src_size == 1 ? 0 : kDecodeTrailingGarbage;
  }
  std::size_t ip = 0;
  std::size_t op = 0;
  bool fast = dst_size >= 64;  // liblz4's fast mode (see above); once off, it stays off
  for (;;) {
    if (ip >= src_size) return kDecodeTruncated;  // (the limits below always leave a token)
    const unsigned token = src[ip++];
    std::size_t lit = token >> 4;
    std::size_t len = token & 15;
    const bool shortcut = !fast && lit != 15 && ip + 16 < src_size && op + 32 <= dst_size;
    bool checked;  // whether these literals get the last-sequence test
    if (lit == 15) {
      if (ip + 15 >= src_size) return kDecodeTruncated;
      unsigned b;
      do {
        b = src[ip++];
        lit += b;
        if (ip + 15 > src_size) return kDecodeTruncated;
      } while (b == 255);
      checked = !fast || op + lit + 32 > dst_size || ip + lit + 32 > src_size;
    } else {
      checked = fast ? ip + 17 > src_size : !shortcut;
    }
    if (checked) {
      fast = false;
      if (op + lit + 12 > dst_size || ip + lit + 8 > src_size) {  // the last sequence
        if (lit > src_size - ip) return kDecodeTruncated;
        if (lit > dst_size - op) return kDecodeOverflow;
        if (ip + lit != src_size) return kDecodeTrailingGarbage;
        lane_copy(src + ip, dst + op, lit, lane, nlanes);
        op += lit;
        break;
      }
    }
    // (Never taken: every path above leaves room for the literals, the offset and a token.)
    if (lit + 2 > src_size - ip || lit > dst_size - op) return kDecodeTruncated;
    lane_copy(src + ip, dst + op, lit, lane, nlanes);
    ip += lit;
    op += lit;

    const std::size_t offset = src[ip] | static_cast<std::size_t>(src[ip + 1]) << 8;
    ip += 2;
    // The shortcut's match: at most 18 bytes, which fit (op <= dst_size - 18 here), unchecked.
    const bool quick = shortcut && len != 15 && offset >= 8 && offset <= op;
    if (len == 15) {
      unsigned b;
      do {
        if (ip >= src_size) return kDecodeTruncated;  // (never: the check below is stricter)
        b = src[ip++];
        len += b;
        if (ip + 4 > src_size) return kDecodeTruncated;
      } while (b == 255);
    }
    len += 4;
    if (offset > op) return kDecodeOffsetBeforeStart;
    if (!quick) {
      if (fast && op + len + 64 >= dst_size) fast = false;
      if (!fast && op + len + 5 > dst_size)
        return len > dst_size - op ? kDecodeOverflow : kDecodeEndOfBlock;
    }
    sync();  // the match may read bytes other lanes wrote
    if (offset == 0) {
      lane_fill(dst + op, 0, len, lane, nlanes);
    } else {
      lane_match(dst, op, offset, len, lane, nlanes);
    }
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
