#include "zarrflow/core/strided.h"

#include <gtest/gtest.h>

#include <numeric>

#include "zarrflow/core/grid.h"

namespace zarrflow {
namespace {

TEST(CheckedProduct, DetectsOverflow) {
  Shape ok{1000, 1000, 1000};
  EXPECT_EQ(*checked_product(ok, 8), 8'000'000'000);
  Shape big{std::int64_t{1} << 62, 8};
  auto r = checked_product(big, 8);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
  Shape neg{-1};
  EXPECT_FALSE(checked_product(neg).ok());
}

TEST(CopyStrided, TransposedCopyWithByteSwap) {
  // src: 2x3 uint16 big-endian in C order; dst: the transpose (3x2) in native order.
  std::vector<std::uint16_t> src = {0x0100, 0x0200, 0x0300, 0x0400, 0x0500, 0x0600};
  std::vector<std::uint16_t> dst(6, 0);
  Shape shape{3, 2};        // iterate over dst
  Shape src_strides{2, 6};  // dst[i][j] = src[j][i]
  Shape dst_strides{4, 2};
  copy_strided(reinterpret_cast<const std::byte*>(src.data()), src_strides,
               reinterpret_cast<std::byte*>(dst.data()), dst_strides, shape, 2, 2);
  EXPECT_EQ(dst, (std::vector<std::uint16_t>{1, 4, 2, 5, 3, 6}));
}

TEST(CopyStrided, ContiguousRunsMergeIntoOneCopy) {
  std::vector<float> src(24), dst(24, -1);
  std::iota(src.begin(), src.end(), 0.f);
  Shape shape{2, 3, 4};
  auto s = c_strides(shape, 4);
  copy_strided(reinterpret_cast<const std::byte*>(src.data()), s,
               reinterpret_cast<std::byte*>(dst.data()), s, shape, 4);
  EXPECT_EQ(src, dst);
}

TEST(FillStrided, FillsOnlyTheView) {
  std::vector<std::int32_t> a(12, 0);
  StridedView v{reinterpret_cast<std::byte*>(a.data() + 1), {3, 2}, {16, 8}};
  const std::int32_t seven = 7;
  fill_strided(v, reinterpret_cast<const std::byte*>(&seven), 4);
  EXPECT_EQ(a, (std::vector<std::int32_t>{0, 7, 0, 7, 0, 7, 0, 7, 0, 7, 0, 7}));
}

TEST(Grid, SplitDimContiguous) {
  auto p = split_dim(5, 10, 1, 4);  // elements 5..14 over chunks of 4
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].chunk, 1);
  EXPECT_EQ(p[0].start_in_chunk, 1);
  EXPECT_EQ(p[0].count, 3);
  EXPECT_EQ(p[1].out_offset, 3);
  EXPECT_EQ(p[2].chunk, 3);
  EXPECT_EQ(p[2].count, 3);
}

TEST(Grid, SplitDimStridedSkipsChunks) {
  // Elements 1, 8, 15, 22 with chunk size 4: chunks 0, 2, 3, 5.
  auto p = split_dim(1, 4, 7, 4);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[1].chunk, 2);
  EXPECT_EQ(p[1].start_in_chunk, 0);
  EXPECT_EQ(p[2].chunk, 3);
  EXPECT_EQ(p[2].start_in_chunk, 3);
  EXPECT_EQ(p[3].out_offset, 3);
  // Every element is covered exactly once.
  std::int64_t total = 0;
  for (auto& x : p) total += x.count;
  EXPECT_EQ(total, 4);
}

TEST(Grid, ChunkBlocksCoverTheSelection) {
  Selection sel{{1, 0}, {5, 3}, {1, 2}};  // rows 1..5, cols 0,2,4
  auto blocks = chunk_blocks(sel, {2, 3});
  std::int64_t elems = 0;
  for (auto& b : blocks) elems += b.in_chunk.count[0] * b.in_chunk.count[1];
  EXPECT_EQ(elems, 15);
  EXPECT_EQ(blocks.front().chunk, (Shape{0, 0}));
  EXPECT_EQ(blocks.back().chunk, (Shape{2, 1}));
}

TEST(Grid, ZeroDimensionalHasOneBlock) {
  auto blocks = chunk_blocks(Selection{}, Shape{});
  EXPECT_EQ(blocks.size(), 1u);
}

}  // namespace
}  // namespace zarrflow
