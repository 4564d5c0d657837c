// The GPU zstd decoder's stages (codec/gpu/zstd_*.h) run on the host in the order and with the
// window structure of its kernels (codec/gpu/zstd_kernels.cu): plan, blocks, resolve, windows of
// `window` sequences whose independent matches run before the others. For tests.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "zarrflow/codec/gpu/zstd_block.h"
#include "zarrflow/codec/gpu/zstd_execute.h"
#include "zarrflow/codec/gpu/zstd_frame.h"

namespace zarrflow::gpu::zstd_test {

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
    int r = decode_zstd_literals(src, b, lit.data() + b.lit_out, *tables, &shared, 0, 1,
                                 WarpSync{});
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
      for (std::uint32_t k = 0; k < b.size; ++k) dst[b.out_pos + k] = src[b.src + k];
      continue;
    }
    if (b.type == kZstdRle) {
      for (std::uint32_t k = 0; k < b.size; ++k) dst[b.out_pos + k] = src[b.src];
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
        copy_literals(tasks[t], blit, dst, 0, 1);
        ++run.matches;
        if (independent_match(tasks[t], start)) copy_match(tasks[t], dst, 0, 1);
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
  if (frame.has_checksum && std::uint32_t(xxh64(dst, dst_size)) != frame.checksum)
    run.status = -9;
  return run;
}

}  // namespace zarrflow::gpu::zstd_test
