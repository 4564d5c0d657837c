// For the GPU zstd decoder's tests: frames written by libzstd from data of several kinds, and
// the decoder's stages (codec/gpu/zstd_*.h) run on the host in the order and with the window
// structure of its kernels (codec/gpu/zstd_kernels.cu): plan, blocks, resolve, windows of
// `window` sequences whose independent matches run before the others.
#pragma once

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "zarrflow/codec/gpu/zstd_block.h"
#include "zarrflow/codec/gpu/zstd_execute.h"
#include "zarrflow/codec/gpu/zstd_frame.h"

namespace zarrflow::gpu::zstd_test {

using Bytes = std::vector<std::uint8_t>;

struct Params {
  int level = 3;
  bool checksum = false;
  bool content_size = true;
  int window_log = 0;
  int target_block = 0;  // ZSTD_c_targetCBlockSize: smaller compressed blocks
  bool stream = false;   // streaming, without a pledged size: no content size in the header
};

inline Bytes compress(const Bytes& data, const Params& p) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, p.level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, p.checksum);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, p.content_size);
  if (p.window_log) ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, p.window_log);
  if (p.target_block) ZSTD_CCtx_setParameter(c, ZSTD_c_targetCBlockSize, p.target_block);
  Bytes out(ZSTD_compressBound(data.size()) + 64);
  std::size_t n;
  if (p.stream) {
    ZSTD_inBuffer in{data.data(), data.size(), 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    const std::size_t r = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
    EXPECT_EQ(r, 0u);
    n = o.pos;
  } else {
    n = ZSTD_compress2(c, out.data(), out.size(), data.data(), data.size());
  }
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(n);
  return out;
}

// Data of several kinds, `n` bytes.
inline Bytes floats_like_era5(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.f, 0.3f);
  Bytes out(n - n % 4);
  const std::size_t cols = 1440;
  for (std::size_t i = 0; i < out.size() / 4; ++i) {
    const double lat = double(i / cols) * 0.25, lon = double(i % cols) * 0.25;
    // 16-bit packing of a smooth field plus weather, as GRIB stores ERA5
    float v = float(280 + 20 * std::cos(lat * 0.0349) + 5 * std::sin(lon * 0.05 + lat * 0.02)) +
              noise(rng);
    v = std::round(v * 64.f) / 64.f;
    std::memcpy(out.data() + 4 * i, &v, 4);
  }
  out.resize(n, 0);
  return out;
}

inline Bytes text_like(std::size_t n, unsigned seed) {
  static const char* words[] = {"temperature ", "wind ", "geopotential ", "humidity ",
                                "the ",         "of ",   "pressure ",     "level ",
                                "\n",           "0.25 ", "ERA5 "};
  std::mt19937 rng(seed);
  Bytes out;
  while (out.size() < n) {
    const char* w = words[rng() % 11];
    out.insert(out.end(), w, w + std::strlen(w));
  }
  out.resize(n);
  return out;
}

inline Bytes random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = std::uint8_t(rng());
  return out;
}

// Blosc's byte shuffle of `data` (typesize 4): long runs of equal bytes, and long literals.
inline Bytes byte_shuffled(const Bytes& data) {
  const std::size_t n = data.size() / 4;
  Bytes out(data.size());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t b = 0; b < 4; ++b) out[b * n + i] = data[4 * i + b];
  return out;
}

inline Bytes mixed(std::size_t n, unsigned seed) {  // zeros, random, text and floats in turn
  Bytes out;
  unsigned k = 0;
  while (out.size() < n) {
    const std::size_t part = 20000 + (seed * 7919 + k * 104729) % 150000;
    Bytes piece = k % 4 == 0   ? Bytes(part, 0)
                  : k % 4 == 1 ? random_bytes(part, seed + k)
                  : k % 4 == 2 ? text_like(part, seed + k)
                               : floats_like_era5(part, seed + k);
    out.insert(out.end(), piece.begin(), piece.end());
    ++k;
  }
  out.resize(n);
  return out;
}

struct HostRun {
  int status = 0;
  std::uint32_t dependent_matches = 0, matches = 0;  // step 3's share
};

inline HostRun decode_on_host(const std::uint8_t* src, std::uint32_t size, std::uint8_t* dst,
                              std::uint64_t dst_size, std::uint32_t window = 256) {
  HostRun run;
  const ZstdFrameRoom room = zstd_frame_room(size, dst_size);
  std::vector<ZstdBlockPlan> blocks(room.blocks);
  ZstdFramePlan frame;
  if ((run.status = plan_zstd_frame(src, size, dst_size, room, blocks.data(), &frame)) < 0)
    return run;
  std::vector<std::uint8_t> lit(dst_size + 1);
  std::vector<std::uint64_t> seq(frame.sequences + 1);
  auto tables = std::make_unique<ZstdBlockTables>();
  int shared = 0;
  for (std::uint32_t i = 0; i < frame.blocks; ++i) {
    ZstdBlockPlan& b = blocks[i];
    if (b.type != kZstdCompressed) continue;
    int r =
        decode_zstd_literals(src, b, lit.data() + b.lit_out, *tables, &shared, 0, 1, WarpSync{});
    if (r == 0) r = decode_zstd_sequences(src, b, frame.block_max, *tables, seq.data() + b.seq_out);
    if (r < 0) {
      run.status = r;
      return run;
    }
  }
  if ((run.status = resolve_zstd_blocks(blocks.data(), frame.blocks, dst_size)) < 0) return run;
  std::vector<ZstdTask> tasks(window);
  for (std::uint32_t i = 0; i < frame.blocks; ++i) {
    const ZstdBlockPlan& b = blocks[i];
    if (b.type == kZstdRaw) {
      lane_copy(src + b.src, dst + b.out_pos, b.size, 0, 1);
      continue;
    }
    if (b.type == kZstdRle) {
      lane_fill(dst + b.out_pos, src[b.src], b.size, 0, 1);
      continue;
    }
    const std::uint8_t* blit = lit.data() + b.lit_out;
    std::uint32_t out = b.out_pos, at = 0;
    for (std::uint32_t w = 0; w < b.nseq; w += window) {
      const std::uint32_t n = b.nseq - w < window ? b.nseq - w : window;
      const std::uint32_t start = out;
      for (std::uint32_t t = 0; t < n; ++t) {
        const std::uint64_t s = seq[b.seq_out + w + t];
        ZstdTask& k = tasks[t];
        k = ZstdTask{out, at, sequence_ll(s), sequence_ml(s),
                     OffsetRef::resolve(sequence_off(s), b.in_history)};
        out += k.ll + k.ml;
        at += k.ll;
        if (!valid_offset(k)) {
          run.status = kDecodeOffsetBeforeStart;
          return run;
        }
      }
      for (std::uint32_t t = 0; t < n; ++t) {
        ++run.matches;
        run_sequence(tasks[t], blit, dst, independent_match(tasks[t], start));
      }
      for (std::uint32_t t = 0; t < n; ++t) {
        if (independent_match(tasks[t], start)) continue;
        ++run.dependent_matches;
        copy_match(tasks[t], dst, 0, 1);
      }
    }
    const ZstdTask rest{out, at, b.lit_size - at, 0, 1};
    copy_literals(rest, blit, dst, 0, 1);
  }
  if (frame.has_checksum && std::uint32_t(xxh64(dst, dst_size)) != frame.checksum) run.status = -9;
  return run;
}

}  // namespace zarrflow::gpu::zstd_test
