// Scatter jobs (pipeline/gpu/scatter_job.h) as the host builds them for the GPU kernel.
#include <gtest/gtest.h>

#include <cstring>

#include "zarrflow/pipeline/gpu/scatter_job.h"

namespace zarrflow::gpu {
namespace {

std::byte* at(std::uintptr_t address) { return reinterpret_cast<std::byte*>(address); }

TEST(ScatterJob, WholeChunkIntoADenseDestinationIsOneRun) {
  const Shape chunk{4, 6};
  const StridedView dest{at(0x10000), chunk, c_strides(chunk, 4)};
  auto j = make_scatter(at(0x20000), chunk, Selection::full(chunk), dest, 4, 1, nullptr, nullptr);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->ndim, 1);
  EXPECT_EQ(j->shape[0], 24);
  EXPECT_EQ(j->src_strides[0], 4);
  EXPECT_EQ(j->dst_strides[0], 4);
  EXPECT_EQ(j->count, 24);
  EXPECT_EQ(j->src, reinterpret_cast<const std::uint8_t*>(0x20000));
  EXPECT_EQ(j->tf.out, OutType::kStored);
}

TEST(ScatterJob, SelectionStartsAndStepsMoveTheSourceAndScaleItsStrides) {
  const Shape chunk{4, 6};
  const Selection sel{{1, 2}, {2, 2}, {2, 3}};  // rows 1, 3; columns 2, 5
  const StridedView dest{at(0x10000), {2, 2}, {64, 8}};
  auto j = make_scatter(at(0x20000), chunk, sel, dest, 2, 2, nullptr, nullptr);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->src, reinterpret_cast<const std::uint8_t*>(0x20000 + (1 * 6 + 2) * 2));
  EXPECT_EQ(j->ndim, 2);
  EXPECT_EQ(j->src_strides[0], 6 * 2 * 2);
  EXPECT_EQ(j->src_strides[1], 2 * 3);
  EXPECT_EQ(j->dst_strides[0], 64);
  EXPECT_EQ(j->dst_strides[1], 8);
  EXPECT_EQ(j->count, 4);
  EXPECT_EQ(j->swap_unit, 2u);
}

TEST(ScatterJob, FillCopiesTheFillValueAndTheTransform) {
  const Shape block{3, 5};
  const std::vector<std::byte> fill{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  ElementTransform tf;
  tf.out = OutType::kBFloat16;
  tf.mean = 2.f;
  const StridedView dest{at(0x10000), block, c_strides(block, 2)};
  auto j = make_scatter(nullptr, block, Selection::full(block), dest, 4, 1, &fill, &tf);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->src, nullptr);
  EXPECT_EQ(std::memcmp(j->fill, fill.data(), fill.size()), 0);
  EXPECT_EQ(j->tf.out, OutType::kBFloat16);
  EXPECT_EQ(j->tf.mean, 2.f);
  EXPECT_EQ(j->count, 15);
}

TEST(ScatterJob, AnEmptySelectionCopiesNothing) {
  const Shape chunk{4, 6};
  const Selection sel{{0, 0}, {3, 0}, {1, 1}};
  const StridedView dest{at(0x10000), {3, 0}, {24, 4}};
  auto j = make_scatter(at(0x20000), chunk, sel, dest, 4, 1, nullptr, nullptr);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->count, 0);
}

TEST(ScatterJob, MoreThanTheKernelsDimensionsAfterMergingIsRefused) {
  // Nine axes of two elements, each stepping over the next: nothing merges.
  const Shape chunk(kMaxScatterDims + 1, 4);
  Selection sel{Shape(chunk.size(), 0), Shape(chunk.size(), 2), Shape(chunk.size(), 2)};
  const StridedView dest{at(0x10000), sel.count, c_strides(sel.count, 4)};
  EXPECT_FALSE(make_scatter(at(0x20000), chunk, sel, dest, 4, 1, nullptr, nullptr));
  sel.step.assign(chunk.size(), 1);
  sel.count.assign(chunk.size(), 4);  // the whole chunk: one run
  const StridedView dense{at(0x10000), chunk, c_strides(chunk, 4)};
  EXPECT_TRUE(make_scatter(at(0x20000), chunk, sel, dense, 4, 1, nullptr, nullptr));
}

}  // namespace
}  // namespace zarrflow::gpu
