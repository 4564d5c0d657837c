// The last stage of the GPU zstd decoder: running a frame's sequences (RFC 8878 §3.1.2),
// host and device code. In a kernel one thread block takes a frame:
//
//   1. one thread resolves the chain the blocks left symbolic (zstd_block.h): where each block's
//      output starts and the repeat offsets it starts with (resolve_zstd_blocks);
//   2. the block's sequences run a window at a time, one thread a sequence: a scan gives each its
//      output and literal positions (ZstdTask); every thread copies its literals, and its match
//      when the match reads only bytes before the window (independent_match), all at once; a
//      sequence that copies more than a few dozen bytes is copied by a whole warp instead;
//   3. the window's other matches -- those reading bytes the window writes -- run after, by one
//      warp in rounds: a round runs, a lane each (the whole warp for a long one), every match
//      whose source no earlier match still to run writes (the host tests run them in order,
//      copy_match).
//
// Matches copy with the periodic form of LZ77 (as lz4_block.h): byte k of a match at p with
// offset d is dst[p - d + k % d], so a match reads only bytes before p, never its own output,
// and its lanes need no ordering among themselves. Offsets in zstd frames of gridded data are
// mostly tens of kilobytes, longer than a window's output, so step 3 is usually short.
#pragma once

#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/zstd_block.h"
#include "zarrflow/codec/gpu/zstd_frame.h"

namespace zarrflow::gpu {

// Sets each block's out_pos and in_history, in order; 0, or kDecodeOverflow /
// kDecodeSizeMismatch when the blocks' outputs do not add up to dst_size.
ZF_HD inline int resolve_zstd_blocks(ZstdBlockPlan* blocks, std::uint32_t n,
                                     std::uint64_t dst_size) {
  std::uint32_t hist[3] = {1, 4, 8};
  std::uint64_t pos = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    ZstdBlockPlan& b = blocks[i];
    const std::uint64_t size = b.type == kZstdCompressed ? b.out_size : b.size;
    b.out_pos = std::uint32_t(pos);
    pos += size;
    if (pos > dst_size) return kDecodeOverflow;
    for (int k = 0; k < 3; ++k) b.in_history[k] = hist[k];
    if (b.type == kZstdCompressed) {
      std::uint32_t next[3];
      for (int k = 0; k < 3; ++k) next[k] = OffsetRef::resolve(b.history[k], b.in_history);
      for (int k = 0; k < 3; ++k) hist[k] = next[k];
    }
  }
  return pos == dst_size ? 0 : kDecodeSizeMismatch;
}

// One sequence placed: its literals go to dst[out, out + ll) from lit[lit, lit + ll), its match
// to dst[out + ll, out + ll + ml) from `off` bytes back.
struct ZstdTask {
  std::uint32_t out, lit, ll, ml, off;
};

// The match reads no byte at or after `window_start` (all of those are final before the window).
ZF_HD inline bool independent_match(const ZstdTask& t, std::uint32_t window_start) {
  const std::uint32_t p = t.out + t.ll;
  const std::uint32_t reach = t.off < t.ml ? t.off : t.ml;
  return p - t.off + reach <= window_start;
}

// The offset lies within what the frame has produced.
ZF_HD inline bool valid_offset(const ZstdTask& t) { return t.off != 0 && t.off <= t.out + t.ll; }

ZF_HD inline void copy_literals(const ZstdTask& t, const std::uint8_t* lit, std::uint8_t* dst,
                                int lane, int nlanes) {
  lane_copy(lit + t.lit, dst + t.out, t.ll, lane, nlanes);
}

// to[i] = from[i % period] for i < n, by one thread: 16 loads, then their 16 stores (the loads
// do not wait for the stores, which may not alias them: a match reads only bytes before it).
ZF_HD inline void copy_run(const std::uint8_t* from, std::uint8_t* to, std::uint32_t n,
                           std::uint32_t period) {
  std::uint32_t j = 0;  // i % period
  for (std::uint32_t i = 0; i < n; i += 16) {
    const std::uint32_t m = n - i < 16 ? n - i : 16;
    std::uint8_t b[16];
#pragma unroll
    for (std::uint32_t k = 0; k < 16; ++k) {
      if (k < m) {
        b[k] = from[j];
        if (++j == period) j = 0;
      }
    }
#pragma unroll
    for (std::uint32_t k = 0; k < 16; ++k)
      if (k < m) to[i + k] = b[k];
  }
}

// copy_run's bytes split over `nlanes` lanes, four a lane a round: a round's loads precede its
// stores (which they may not alias, as in copy_run), so a lane waits on memory once a round.
ZF_HD inline void lane_copy_run(const std::uint8_t* from, std::uint8_t* to, std::uint32_t n,
                                std::uint32_t period, int lane, int nlanes) {
  constexpr std::uint32_t kPerLane = 4;
  const std::uint32_t stride = std::uint32_t(nlanes), step = stride % period;
  std::uint32_t j = std::uint32_t(lane) % period;  // i % period
  for (std::uint32_t i = std::uint32_t(lane); i < n; i += kPerLane * stride) {
    std::uint8_t b[kPerLane];
#pragma unroll
    for (std::uint32_t k = 0; k < kPerLane; ++k) {
      if (i + k * stride < n) b[k] = from[j];
      j += step;
      if (j >= period) j -= period;
    }
#pragma unroll
    for (std::uint32_t k = 0; k < kPerLane; ++k)
      if (i + k * stride < n) to[i + k * stride] = b[k];
  }
}

// The sequence's literals, and its match when `with_match`, by one thread.
ZF_HD inline void run_sequence(const ZstdTask& t, const std::uint8_t* lit, std::uint8_t* dst,
                               bool with_match) {
  copy_run(lit + t.lit, dst + t.out, t.ll, 0xFFFFFFFFu);
  if (with_match) {
    const std::uint32_t p = t.out + t.ll;
    copy_run(dst + (p - t.off), dst + p, t.ml, t.off);
  }
}

ZF_HD inline void copy_match(const ZstdTask& t, std::uint8_t* dst, int lane, int nlanes) {
  const std::uint32_t p = t.out + t.ll;
  std::uint8_t* to = dst + p;
  const std::uint8_t* from = dst + (p - t.off);
  if (t.off >= t.ml) {
    for (std::uint32_t i = lane; i < t.ml; i += nlanes) to[i] = from[i];
  } else {
    for (std::uint32_t i = lane; i < t.ml; i += nlanes) to[i] = from[i % t.off];
  }
}

// XXH64 with seed 0, the frame checksum's hash, in two parts: its four accumulators run over
// the 32-byte stripes independently (one lane each in a kernel), then one thread folds them in
// with the tail.
namespace xxh {
constexpr std::uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full,
                        P3 = 0x165667B19E3779F9ull, P4 = 0x85EBCA77C2B2AE63ull,
                        P5 = 0x27D4EB2F165667C5ull;
ZF_HD inline std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
ZF_HD inline std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= std::uint64_t(p[k]) << (8 * k);
  return v;
}
ZF_HD inline std::uint64_t round(std::uint64_t acc, std::uint64_t lane) {
  return rotl(acc + lane * P2, 31) * P1;
}
}  // namespace xxh

// Accumulator k's (0..3) value before the first stripe.
ZF_HD inline std::uint64_t xxh64_start(int k) {
  using namespace xxh;
  return k == 0 ? P1 + P2 : k == 1 ? P2 : k == 2 ? 0 : 0 - P1;
}

// Accumulator k (0..3), `v` after stripes [0, first), after stripes [first, last) of data.
ZF_HD inline std::uint64_t xxh64_stripes(std::uint64_t v, const std::uint8_t* data,
                                         std::uint64_t first, std::uint64_t last, int k) {
  using namespace xxh;
  const std::uint8_t* p = data + 8 * k;
#if defined(__CUDA_ARCH__)
  if ((reinterpret_cast<std::uintptr_t>(data) & 7) == 0) {  // whole words (GPUs are little-endian)
    const auto* w = reinterpret_cast<const std::uint64_t*>(p);
    for (std::uint64_t i = first; i < last; ++i) v = round(v, w[4 * i]);
    return v;
  }
#endif
  for (std::uint64_t i = first; i < last; ++i) v = round(v, load64(p + 32 * i));
  return v;
}

// Accumulator k (0..3) after every whole stripe of data[0, n).
ZF_HD inline std::uint64_t xxh64_accumulator(const std::uint8_t* data, std::uint64_t n, int k) {
  return xxh64_stripes(xxh64_start(k), data, 0, n / 32, k);
}

ZF_HD inline std::uint64_t xxh64_finish(const std::uint64_t* acc, const std::uint8_t* data,
                                        std::uint64_t n) {
  using namespace xxh;
  const auto merge = [](std::uint64_t h, std::uint64_t a) { return (h ^ round(0, a)) * P1 + P4; };
  std::uint64_t h;
  if (n >= 32) {
    h = rotl(acc[0], 1) + rotl(acc[1], 7) + rotl(acc[2], 12) + rotl(acc[3], 18);
    h = merge(merge(merge(merge(h, acc[0]), acc[1]), acc[2]), acc[3]);
  } else {
    h = P5;
  }
  h += n;
  std::uint64_t i = n & ~std::uint64_t(31);
  for (; i + 8 <= n; i += 8) h = rotl(h ^ round(0, load64(data + i)), 27) * P1 + P4;
  if (i + 4 <= n) {
    std::uint64_t v = 0;
    for (int k = 0; k < 4; ++k) v |= std::uint64_t(data[i + k]) << (8 * k);
    h = rotl(h ^ (v * P1), 23) * P2 + P3;
    i += 4;
  }
  for (; i < n; ++i) h = rotl(h ^ (data[i] * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

ZF_HD inline std::uint64_t xxh64(const std::uint8_t* data, std::uint64_t n) {
  std::uint64_t acc[4];
  for (int k = 0; k < 4; ++k) acc[k] = xxh64_accumulator(data, n, k);
  return xxh64_finish(acc, data, n);
}

}  // namespace zarrflow::gpu
