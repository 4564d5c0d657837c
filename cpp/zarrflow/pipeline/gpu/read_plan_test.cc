// The GPU read's plan on the host: leaf chunks, duplicates, decoders, sizes and pieces.
#include "zarrflow/pipeline/gpu/read_plan.h"

#include <gtest/gtest.h>

#include "zarrflow/pipeline/gpu/read_test_util.h"

namespace zarrflow::gpu {
namespace {

using read_test::Arrays;

TEST(ReadPlan, OneItemPerChunkAndMissingChunksBecomeFills) {
  Arrays a;
  const auto items = a.plan({a.request(*a.raw, Selection::full({5, 7}))});
  ASSERT_EQ(items.size(), 9u);
  EXPECT_EQ(items[0].key, "raw/c/0/0");
  EXPECT_EQ(items[4].key, "raw/c/1/1");
  EXPECT_EQ(items[4].mode, Mode::kFill);  // missing
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i == 4) continue;
    EXPECT_EQ(items[i].mode, Mode::kGpu) << i;
    EXPECT_EQ(items[i].stored_size, 24u) << i;
    EXPECT_EQ(items[i].program->codec, GpuCodec::kNone) << i;
  }
  // Chunk (2, 2) is the edge: one row, one column of it; its destination is at (4, 6).
  EXPECT_EQ(items[8].sel.count, (Shape{1, 1}));
  EXPECT_EQ(items[8].dest.data, a.dest + (4 * 7 + 6) * 4);
}

TEST(ReadPlan, ShardsBecomeTheirInnerChunksAndEmptyOnesFills) {
  Arrays a;
  const auto items = a.plan({a.request(*a.sharded, Selection::full({4, 4}))});
  ASSERT_EQ(items.size(), 4u);
  int fills = 0;
  for (const auto& it : items) {
    if (it.mode == Mode::kFill) {
      ++fills;
      EXPECT_EQ(it.dest.data, a.dest + 2 * 4);  // inner chunk [0,1]: columns 2..3 of row 0
      continue;
    }
    ASSERT_TRUE(it.range);
    EXPECT_EQ(it.range->length, 16u);
    EXPECT_EQ(it.stored_size, 16u);  // from the index: no size query
    EXPECT_EQ(it.key, "sharded/c/0/0");
    EXPECT_EQ(it.inner.size(), 2u);
  }
  EXPECT_EQ(fills, 1);
  // A missing shard is one fill for all of it.
  a.store->erase("sharded/c/0/0");
  const auto none = a.plan({a.request(*a.sharded, Selection::full({4, 4}))});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].mode, Mode::kFill);
  EXPECT_EQ(none[0].sel.count, (Shape{4, 4}));
}

TEST(ReadPlan, RequestsAreCheckedBeforeAnythingIsRead) {
  Arrays a;
  const std::vector<ReadRequest> outside = {a.request(*a.raw, Selection{{4, 0}, {2, 1}, {1, 1}})};
  EXPECT_FALSE(check_requests(outside, {}).ok());
  const std::vector<ReadRequest> two = {a.request(*a.raw, Selection::full({5, 7})),
                                        a.request(*a.zstd, Selection::full({5, 7}))};
  const ElementTransform f32{OutType::kFloat32, 0.f, 1.f};  // reads float32: not int32
  const std::vector<ElementTransform> one_tf = {f32};
  Status s = check_requests(two, one_tf);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1 element transforms for 2 requests"), std::string::npos);
  const std::vector<ElementTransform> wrong_type = {f32, f32};
  s = check_requests(two, wrong_type);
  EXPECT_NE(s.message().find("raw'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("reads another type"), std::string::npos) << s.message();
  ElementTransform i32 = f32;
  i32.in = *in_type_of(a.raw->dtype());
  const std::vector<ElementTransform> right = {i32, i32};
  EXPECT_TRUE(check_requests(two, right).ok());
}

// x at t+1 is y at t: requests that overlap in chunks read each stored chunk once.
TEST(ReadPlan, DuplicatesFollowTheirFirstOccurrence) {
  Arrays a;
  const auto items = a.plan({a.request(*a.zstd, Selection{{0, 0}, {2, 7}, {1, 1}}),
                             a.request(*a.raw, Selection{{0, 0}, {2, 3}, {1, 1}}, 64),
                             a.request(*a.zstd, Selection{{0, 3}, {2, 3}, {1, 1}}, 128)});
  // zstd row 0 (3 chunks), its duplicate of chunk (0, 1) right behind, then raw chunk (0, 0):
  // the same key in another array is another stored chunk.
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[1].key, "zstd/c/0/1");
  EXPECT_EQ(items[2].key, "zstd/c/0/1");
  EXPECT_EQ(items[2].dup_of, 1);
  EXPECT_EQ(items[2].dest.data, a.dest + 128 * 4);
  EXPECT_EQ(items[3].key, "zstd/c/0/2");
  EXPECT_EQ(items[4].key, "raw/c/0/0");
  for (std::size_t i : {0u, 1u, 3u, 4u}) EXPECT_EQ(items[i].dup_of, -1) << i;
}

TEST(ReadPlan, DecodersFollowTheChainAndGpuDecode) {
  Arrays a;
  auto items = a.plan({a.request(*a.bz2, Selection{{0, 0}, {2, 3}, {1, 1}})});
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].mode, Mode::kCpu);
  EXPECT_EQ(items[0].cpu_reason, "codec 'bz2(level=1)' has no GPU decoder");
  PlanOptions off;
  off.decode = GpuDecode::kOff;
  items = a.plan({a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}})}, off);
  EXPECT_EQ(items[0].mode, Mode::kCpu);
  EXPECT_EQ(items[0].cpu_reason, "gpu_decode=off");
}

// host_share: every k-th compressed chunk the GPU could decode goes to the host threads, with no
// reason to report; uncompressed chunks stay, and duplicates go where their first occurrence went.
TEST(ReadPlan, HostShareSplitsCompressedChunksEvenly) {
  Arrays a;
  PlanOptions half;
  half.host_share = 0.5;
  const auto items = a.plan(
      {a.request(*a.zstd, Selection::full({5, 7})), a.request(*a.raw, Selection::full({5, 7}), 64),
       a.request(*a.zstd, Selection{{0, 0}, {2, 7}, {1, 1}}, 128)},
      half);
  int host = 0, gpu = 0;
  for (const auto& it : items) {
    if (it.mode == Mode::kFill) continue;
    if (it.arr == a.raw.get()) {
      EXPECT_EQ(it.mode, Mode::kGpu);
      continue;
    }
    if (it.dup_of >= 0) {
      EXPECT_EQ(it.mode, items[std::size_t(it.dup_of)].mode);
      continue;
    }
    EXPECT_TRUE(it.cpu_reason.empty());
    ++(it.mode == Mode::kCpu ? host : gpu);
  }
  EXPECT_EQ(host, 4);  // 8 stored zstd chunks
  EXPECT_EQ(gpu, 4);
}

TEST(ReadPlan, AChunkLargerThanItsCodecsCanProduceIsRefused) {
  Arrays a;
  // 24 bytes, and a reader's allowance beyond (stored_size_cap): about 64 KiB.
  ASSERT_TRUE(a.store->set("raw/c/0/0", read_test::Bytes(70000)).ok());
  std::vector<Item> items;
  ASSERT_TRUE(gather_items(a.request(*a.raw, Selection::full({5, 7})), nullptr, {}, items).ok());
  choose_decoders(items, a.programs, {});
  const Status s = measure_stored_sizes(items, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("raw': chunk 'c/0/0'"), std::string::npos) << s.message();
}

TEST(ReadPlan, NvcompPiecesAreAsLargeAsTheirMemoryAllows) {
  constexpr std::uint64_t GB = std::uint64_t{1} << 30, MB = std::uint64_t{1} << 20;
  const std::uint64_t h100 = 80 * GB;
  // Without a budget: an eighth of what is available, up to 1/24 of the GPU.
  EXPECT_EQ(nvcomp_piece_bytes(h100, 8 * GB, 0), 1 * GB);
  EXPECT_EQ(nvcomp_piece_bytes(h100, 70 * GB, 0), h100 / 24);
  // A loader worker's budget sizes them instead (what is free then does not matter).
  EXPECT_EQ(nvcomp_piece_bytes(h100, 1 * GB, 14 * GB), 2 * GB);
  EXPECT_EQ(nvcomp_piece_bytes(h100, 1 * GB, 7 * GB), 1 * GB);
  EXPECT_EQ(nvcomp_piece_bytes(h100, 1 * GB, 700 * GB), h100 / 24);
  // Never below 256 MB nor above 8 GB.
  EXPECT_EQ(nvcomp_piece_bytes(h100, 1 * MB, 0), 256 * MB);
  EXPECT_EQ(nvcomp_piece_bytes(h100, 1 * GB, 10 * MB), 256 * MB);
  EXPECT_EQ(nvcomp_piece_bytes(1024 * GB, 1024 * GB, 0), 8 * GB);
}

// Staged bytes bind here: 8 chunks of 24 bytes in pieces of at most 100 bytes are 2 pieces
// (4 + 4), not 4 + 4 by luck but by equal shares of what remains.
TEST(ReadPlan, PiecesAreBoundedAndEven) {
  Arrays a;
  auto items = a.plan({a.request(*a.raw, Selection::full({5, 7}))});
  PiecePlanner planner(items, {100, 1 << 20});
  std::vector<std::vector<std::size_t>> pieces;
  std::vector<std::uint64_t> decoded;
  while (!planner.done()) {
    std::uint64_t d = 0;
    pieces.push_back(planner.next(&d));
    decoded.push_back(d);
  }
  ASSERT_EQ(pieces.size(), 2u);
  // 9 items (one a fill, staging nothing): 96 staged bytes each.
  EXPECT_EQ(pieces[0].size() + pieces[1].size(), 9u);
  std::uint64_t staged0 = 0;
  for (std::size_t i : pieces[0]) staged0 += items[i].stored_size;
  EXPECT_EQ(staged0, 96u);
  EXPECT_EQ(decoded[0] + decoded[1], 8u * 24);
  // One bound of 24 bytes: a piece per stored chunk, the fill in one of them.
  auto again = a.plan({a.request(*a.raw, Selection::full({5, 7}))});
  PiecePlanner small(again, {24, 1 << 20});
  int n = 0;
  while (!small.done()) {
    small.next(nullptr);
    ++n;
  }
  EXPECT_EQ(n, 8);
}

TEST(ReadPlan, ADuplicateLandsInItsFirstOccurrencesPiece) {
  Arrays a;
  auto items = a.plan({a.request(*a.zstd, Selection{{0, 0}, {2, 7}, {1, 1}}),
                       a.request(*a.zstd, Selection{{0, 0}, {2, 7}, {1, 1}}, 64)});
  ASSERT_EQ(items.size(), 6u);
  PiecePlanner planner(items, {1, 1});  // every stored chunk would be a piece of its own
  int pieces = 0;
  while (!planner.done()) {
    const auto piece = planner.next(nullptr);
    ASSERT_EQ(piece.size(), 2u);
    EXPECT_EQ(items[piece[1]].dup_of, std::int64_t(piece[0]));
    EXPECT_TRUE(items[piece[0]].shared);
    ++pieces;
  }
  EXPECT_EQ(pieces, 3);
}

TEST(ReadPlan, GpuCacheHitsCountHalfTheirDecodedBytes) {
  Arrays a;
  auto items = a.plan({a.request(*a.raw, Selection{{0, 0}, {2, 3}, {1, 1}})});
  EXPECT_EQ(counted_decoded(items[0]), 24u);
  // A stand-in for a cache entry (CachedChunk holds GPU memory): the plan only asks whether
  // the item has one, never looks inside.
  alignas(64) static const std::byte entry[64] = {};
  items[0].cached = std::shared_ptr<const CachedChunk>(std::shared_ptr<void>(),
                                                       reinterpret_cast<const CachedChunk*>(entry));
  EXPECT_EQ(counted_decoded(items[0]), 12u);
  items[0].mode = Mode::kFill;
  EXPECT_EQ(counted_decoded(items[0]), 0u);
}

TEST(ReadPlan, ProgramsAreAnalysedOncePerChain) {
  Arrays a;
  ChainPrograms programs;
  const ChainProgram* p = programs.of(&a.zstd->codecs());
  EXPECT_EQ(programs.of(&a.zstd->codecs()), p);
  EXPECT_EQ(p->codec, GpuCodec::kZstd);
  EXPECT_TRUE(programs.has(GpuCodec::kZstd));
  EXPECT_FALSE(programs.has(GpuCodec::kDeflate));
  ChainPrograms raw;
  raw.of(&a.raw->codecs());
  raw.of(&a.lz4->codecs());
  EXPECT_FALSE(raw.has(GpuCodec::kZstd));
}

TEST(ReadPlan, LanesFollowTheLatencyBoundDecoder) {
  EXPECT_EQ(read_lanes(3, /*nvcomp=*/false, /*zarrflow_zstd=*/false, 16), 3);
  EXPECT_EQ(read_lanes(3, true, false, 16), 1);
  EXPECT_EQ(read_lanes(3, false, true, 16), 6);
  EXPECT_EQ(read_lanes(12, false, true, 16), 16);  // bounded
  EXPECT_EQ(read_lanes(1, false, true, 16), 1);    // one keeps pieces from overlapping
}

}  // namespace
}  // namespace zarrflow::gpu
