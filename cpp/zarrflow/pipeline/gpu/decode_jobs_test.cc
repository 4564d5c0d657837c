// The GPU work of one piece as job tables, and their packing into one buffer.
#include "zarrflow/pipeline/gpu/decode_jobs.h"

#include <gtest/gtest.h>

#include "zarrflow/pipeline/gpu/host_work.h"
#include "zarrflow/pipeline/gpu/read_test_util.h"

namespace zarrflow::gpu {
namespace {

using read_test::all;
using read_test::Arrays;
using read_test::Bytes;

// A piece as the read has it before enqueueing: fetched, checked, host blocks laid out.
struct Piece {
  Piece(Arrays& a, const std::vector<ReadRequest>& requests, const PlanOptions& options = {})
      : items(a.plan(requests, options)), piece(all(items)) {
    EXPECT_TRUE(lay_out_staging(items, piece, {}).ok());
    staging.resize(1 << 16);
    std::atomic<std::int64_t> direct{0};
    GpuDecoders gpu;
    gpu.nvcomp = true;
    for (auto& it : items) {
      if (it.mode == Mode::kFill || it.dup_of >= 0) continue;
      EXPECT_TRUE(read_stored(it, staging.data() + it.staging_offset, IoPath::kAuto, direct).ok());
      if (it.mode == Mode::kGpu) EXPECT_TRUE(check_gpu_item(it, staging.data(), gpu).ok());
    }
    for (auto& it : items)
      if (it.dup_of >= 0 && it.mode != Mode::kFill)
        it.payload = items[std::size_t(it.dup_of)].payload;
    lay_out_host_blocks(items, piece);
    layout = place_outputs(items, piece, false);
  }

  Status build() { return build_decode_jobs(items, piece, layout, areas, jobs); }

  std::vector<Item> items;
  std::vector<std::size_t> piece;
  Bytes staging;
  OutputLayout layout;
  // Device buffers stand in as host memory: only the addresses matter here.
  alignas(256) std::byte d_staging[1 << 16] = {}, d_out[1 << 12] = {}, d_cpu[1 << 12] = {};
  DeviceAreas areas{d_staging, nullptr, d_cpu, d_out, nullptr};
  DecodeJobs jobs;
};

TEST(DecodeJobs, EachCodecToItsDecoderAndPartsToTheScatter) {
  Arrays a;
  PlanOptions options;
  Piece p(a,
          {a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}),       // whole: in place
           a.request(*a.zstd, Selection{{0, 3}, {1, 3}, {1, 1}}, 64),   // part: scatter
           a.request(*a.lz4, Selection{{0, 0}, {2, 3}, {1, 1}}, 128),   // own LZ4 kernel
           a.request(*a.raw, Selection{{2, 0}, {1, 3}, {1, 1}}, 192),   // uncompressed part
           a.request(*a.raw, Selection{{2, 3}, {1, 3}, {1, 1}}, 256)},  // missing: fill
          options);
  ASSERT_EQ(p.items.size(), 5u);
  ASSERT_TRUE(p.build().ok());
  const DecodeJobs& j = p.jobs;
  ASSERT_EQ(j.zstd.size(), 2u);
  EXPECT_EQ(j.zstd.dst[0], static_cast<void*>(a.dest));   // decoded into its destination
  EXPECT_EQ(j.zstd.dst[1], static_cast<void*>(p.d_out));  // into scratch, then scattered
  EXPECT_EQ(j.zstd.src[0], static_cast<const void*>(p.d_staging + p.items[0].staging_offset));
  EXPECT_EQ(j.zstd.capacity[0], 24u);
  EXPECT_EQ(j.zstd.total_out, 48u);
  ASSERT_EQ(j.streams.size(), 1u);
  EXPECT_EQ(j.streams[0].kind, std::uint32_t(kStreamLz4));
  EXPECT_EQ(j.streams[0].status, 2u);  // after the two zstd slots
  EXPECT_EQ(j.slot_items(), (std::vector<std::uint32_t>{0, 1, 2}));
  // Scatters: the zstd part, the uncompressed part (from its staged bytes), the fill.
  ASSERT_EQ(j.scatters.size(), 3u);
  EXPECT_EQ(j.scatters[0].src, reinterpret_cast<const std::uint8_t*>(p.d_out));
  EXPECT_EQ(j.scatters[1].src,
            reinterpret_cast<const std::uint8_t*>(p.d_staging + p.items[3].staging_offset));
  EXPECT_EQ(j.scatters[2].src, nullptr);
  EXPECT_EQ(j.gpu_decoded, 4);
  EXPECT_EQ(j.cpu_decoded, 0);
  EXPECT_EQ(p.items[0].d_decoded, a.dest);
}

TEST(DecodeJobs, DuplicatesScatterFromTheFirstOccurrencesDecodedChunk) {
  Arrays a;
  Piece p(a, {a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}),
              a.request(*a.zstd, Selection{{0, 1}, {2, 2}, {1, 1}}, 64)});
  ASSERT_EQ(p.items.size(), 2u);
  ASSERT_EQ(p.items[1].dup_of, 0);
  ASSERT_TRUE(p.build().ok());
  EXPECT_EQ(p.jobs.zstd.size(), 1u);
  ASSERT_EQ(p.jobs.scatters.size(), 1u);
  EXPECT_EQ(p.jobs.scatters[0].src,
            reinterpret_cast<const std::uint8_t*>(p.items[0].d_decoded) + 4);  // column 1
  EXPECT_EQ(p.jobs.deduplicated, 1);
  EXPECT_EQ(p.jobs.gpu_decoded, 1);
}

TEST(DecodeJobs, HostDecodedBlocksAreCountedAndScatteredWhenStrided) {
  Arrays a;
  PlanOptions off;
  off.decode = GpuDecode::kOff;
  Piece p(a,
          {a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}),
           a.request(*a.zstd, Selection{{0, 0}, {2, 6}, {1, 1}}, 64)},
          off);
  ASSERT_EQ(p.items.size(), 3u);
  ASSERT_TRUE(p.build().ok());
  // The dense block is copied up as it is; the duplicate's strided block reuses it (same
  // selection) and is scattered, as is chunk (0, 1)'s.
  EXPECT_EQ(p.jobs.cpu_decoded, 2);
  EXPECT_EQ(p.jobs.deduplicated, 1);
  ASSERT_EQ(p.jobs.scatters.size(), 2u);
  EXPECT_EQ(p.jobs.scatters[0].src, reinterpret_cast<const std::uint8_t*>(p.d_cpu));
  EXPECT_EQ(p.jobs.slots(), 0u);
}

TEST(DecodeJobs, TablesArePackedAt16ByteBoundaries) {
  Arrays a;
  Piece p(a, {a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}),
              a.request(*a.zstd, Selection{{0, 3}, {1, 3}, {1, 1}}, 64),
              a.request(*a.raw, Selection{{2, 3}, {1, 3}, {1, 1}}, 128)});
  ASSERT_TRUE(p.build().ok());
  const JobTables t(p.jobs);
  for (std::size_t at : {t.zstd.src, t.zstd.src_bytes, t.zstd.capacity, t.zstd.dst, t.zstd.actual,
                         t.streams, t.scatters, t.tile_starts, t.status, t.nans, t.checksums})
    EXPECT_EQ(at % 16, 0u) << at;
  EXPECT_EQ(t.total_tiles, 2);  // two scatter jobs of under 4096 elements
  EXPECT_FALSE(t.any_transform);
  EXPECT_GE(t.size(), t.zstd.actual + 2 * sizeof(std::size_t));
  std::vector<std::byte> host(t.size(), std::byte{0xff});
  t.pack(host.data());
  const void* src0 = nullptr;
  std::memcpy(&src0, host.data() + t.zstd.src, sizeof src0);
  EXPECT_EQ(src0, p.jobs.zstd.src[0]);
  std::int64_t tiles[3];
  std::memcpy(tiles, host.data() + t.tile_starts, sizeof tiles);
  EXPECT_EQ(tiles[0], 0);
  EXPECT_EQ(tiles[2], 2);
  int status[2] = {-1, -1};
  std::memcpy(status, host.data() + t.status, sizeof status);
  EXPECT_EQ(status[0], 0);  // zeroed slots
  EXPECT_EQ(nans_offset(3), 16u);
}

}  // namespace
}  // namespace zarrflow::gpu
