// Host batch reads: values, the element transform, and the counts the GPU reader reports too.
#include "zarrflow/pipeline/host_batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "zarrflow/pipeline/batch_recipe_test_util.h"
#include "zarrflow/pipeline/gpu/read_test_util.h"

namespace zarrflow {
namespace {

using gpu::read_test::Arrays;
using gpu::read_test::value;

TEST(HostBatch, CountsChunksMissingOnesAndStoredBytes) {
  Arrays a;
  const std::vector<ReadRequest> requests = {
      a.request(*a.raw, Selection::full({5, 7})),
      a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}}, 64)};
  HostBatchReport report;
  ASSERT_TRUE(read_batch_on_host(requests, {}, {}, &report).ok());
  EXPECT_EQ(report.chunks, 10);  // 9 of raw (one missing), 1 of zstd
  EXPECT_EQ(report.missing, 1);
  EXPECT_EQ(report.cpu_decoded, 9);
  const auto zstd_size = a.store->size("zstd/c/0/0");
  ASSERT_TRUE(zstd_size.ok() && *zstd_size);
  EXPECT_EQ(report.stored_bytes, 8 * 24 + **zstd_size);
  const auto* out = reinterpret_cast<const std::int32_t*>(a.dest);
  EXPECT_EQ(out[4 * 7 + 6], value(4, 6));
  EXPECT_EQ(out[2 * 7 + 3], 42);  // chunk (1, 1) is missing: the fill value
  EXPECT_EQ(out[64 + 5], value(1, 2));
}

// Inner chunks count one each, an empty one as missing; a missing shard is one missing chunk.
TEST(HostBatch, ShardsCountTheirInnerChunks) {
  Arrays a;
  for (const Selection& region : {Selection::full({4, 4}), Selection{{0, 0}, {3, 4}, {1, 1}}}) {
    HostBatchReport report;
    const std::vector<ReadRequest> requests = {a.request(*a.sharded, region)};
    ASSERT_TRUE(read_batch_on_host(requests, {}, {}, &report).ok());
    EXPECT_EQ(report.chunks, 4);
    EXPECT_EQ(report.missing, 1);
    EXPECT_EQ(report.stored_bytes, 3u * 16);
  }
  a.store->erase("sharded/c/0/0");
  HostBatchReport report;
  const std::vector<ReadRequest> requests = {
      a.request(*a.sharded, Selection{{0, 0}, {3, 4}, {1, 1}})};
  ASSERT_TRUE(read_batch_on_host(requests, {}, {}, &report).ok());
  EXPECT_EQ(report.chunks, 1);
  EXPECT_EQ(report.missing, 1);
  EXPECT_EQ(report.cpu_decoded, 0);
}

TEST(HostBatch, TransformedRequestsCountTheirNaNs) {
  Arrays a;
  ElementTransform tf{OutType::kFloat32, 100.f, 0.5f};
  tf.in = *in_type_of(a.raw->dtype());
  ASSERT_TRUE(add_mask(tf, std::uint64_t(std::uint32_t(value(0, 1)))));  // becomes NaN
  const Selection region{{0, 0}, {2, 3}, {1, 1}};
  const std::vector<ReadRequest> requests = {
      {a.raw.get(), region, {a.dest, region.count, c_strides(region.count, 4)}}};
  const std::vector<ElementTransform> tfs = {tf};
  HostBatchReport report;
  ASSERT_TRUE(read_batch_on_host(requests, tfs, {}, &report).ok());
  EXPECT_EQ(report.nans, 1u);
  EXPECT_EQ(report.chunks, 1);
  const auto* out = reinterpret_cast<const float*>(a.dest);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[3], (value(1, 0) - 100.f) * 0.5f);
  const std::vector<ElementTransform> two = {tf, tf};
  EXPECT_EQ(read_batch_on_host(requests, two, {}, &report).code(), ErrorCode::kInvalidArgument);
}

// A request for a region an earlier request of the batch reads (same array, same transform) is
// copied from that one's destination; it counts what that one read, its stored chunks as
// deduplicated rather than decoded.
TEST(HostBatch, RequestsForTheSameRegionReadItOnce) {
  Arrays a;
  const Selection region{{1, 2}, {3, 4}, {1, 1}};  // four chunks of zstd, (1, 1) missing
  HostBatchReport one;
  ASSERT_TRUE(read_batch_on_host({{a.request(*a.zstd, region)}}, {}, {}, &one).ok());
  ASSERT_EQ(one.chunks, 4);
  ASSERT_EQ(one.missing, 1);
  const std::vector<ReadRequest> requests = {
      a.request(*a.zstd, region), a.request(*a.raw, region, 12), a.request(*a.zstd, region, 24)};
  HostBatchReport report;
  ASSERT_TRUE(read_batch_on_host(requests, {}, {}, &report).ok());
  EXPECT_EQ(report.chunks, 12);
  EXPECT_EQ(report.missing, 3);
  EXPECT_EQ(report.deduplicated, 3);  // the third request's stored chunks
  EXPECT_EQ(report.cpu_decoded, 6);
  EXPECT_EQ(report.stored_bytes, 2 * one.stored_bytes + 3u * 24);
  const auto* out = reinterpret_cast<const std::int32_t*>(a.dest);
  for (int k = 0; k < 12; ++k) {
    const std::int64_t i = 1 + k / 4, j = 2 + k % 4;
    const std::int32_t want = (i >= 2 && i < 4 && j >= 3 && j < 6) ? 42 : value(i, j);
    EXPECT_EQ(out[k], want) << k;
    EXPECT_EQ(out[12 + k], want) << k;
    EXPECT_EQ(out[24 + k], want) << k;
  }
}

// Through transforms: the same transform copies (NaNs counted per destination), another one
// reads again.
TEST(HostBatch, OnlyRequestsWithTheSameTransformShareAReadOnce) {
  Arrays a;
  ElementTransform tf{OutType::kFloat32, 100.f, 0.5f};
  tf.in = *in_type_of(a.raw->dtype());
  ASSERT_TRUE(add_mask(tf, std::uint64_t(std::uint32_t(value(0, 1)))));  // becomes NaN
  ElementTransform other = tf;
  other.mean = 0.f;
  const Selection region{{0, 0}, {2, 3}, {1, 1}};
  const auto at = [&](std::int64_t offset) {
    return ReadRequest{
        a.raw.get(), region, {a.dest + offset * 4, region.count, c_strides(region.count, 4)}};
  };
  const std::vector<ReadRequest> requests = {at(0), at(6), at(12)};
  const std::vector<ElementTransform> tfs = {tf, tf, other};
  HostBatchReport report;
  ASSERT_TRUE(read_batch_on_host(requests, tfs, {}, &report).ok());
  EXPECT_EQ(report.chunks, 3);
  EXPECT_EQ(report.deduplicated, 1);
  EXPECT_EQ(report.cpu_decoded, 2);
  EXPECT_EQ(report.nans, 3u);
  const auto* out = reinterpret_cast<const float*>(a.dest);
  EXPECT_EQ(out[6 + 3], (value(1, 0) - 100.f) * 0.5f);
  EXPECT_TRUE(std::isnan(out[6 + 1]));
  EXPECT_EQ(out[12 + 3], value(1, 0) * 0.5f);
}

// The loader's host batches: a recipe's job read into new host memory, as the CPU reads it.
TEST(HostBatchMaker, MakesTheRecipesBatchesAndCountsThem) {
  Arrays a;
  HostBatchMaker maker(batch_test::recipe(a), {});
  auto made = maker.make(batch_test::job(), 0, 0.0);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_EQ(made->shape, (Shape{2, 2, 2, 3}));
  EXPECT_EQ(made->device, -1);
  const auto* out = static_cast<const std::int32_t*>(made->data);
  EXPECT_EQ(std::vector<std::int32_t>(out, out + 24), batch_test::expected());
  EXPECT_EQ(made->report.missing, 4);  // chunk (1, 1): both steps of sample 1, both channels
  EXPECT_EQ(made->report.cpu_decoded, made->report.chunks - 4);
  EXPECT_GT(made->read_end, 0.0);
}

// Neighbouring samples: the second sample's first step is the first sample's second step, read
// once per channel.
TEST(HostBatchMaker, NeighbouringSamplesShareTheirCommonStep) {
  Arrays a;
  HostBatchMaker maker(batch_test::recipe(a), {});
  auto made = maker.make(BatchJob{{0, 1}, {0, 1}, {0, 0}}, 0, 0.0);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_EQ(made->report.chunks, 8);  // one chunk a (sample, step, channel)
  EXPECT_EQ(made->report.deduplicated, 2);
  EXPECT_EQ(made->report.cpu_decoded, 6);
  const auto* out = static_cast<const std::int32_t*>(made->data);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t s = 0; s < 2; ++s)
      for (int c = 0; c < 2; ++c)
        for (std::int64_t w = 0; w < 3; ++w)
          EXPECT_EQ(out[((b * 2 + s) * 2 + c) * 3 + w], value(b + s, w)) << b << s << c << w;
}

TEST(HostBatchMaker, NormalisesAndCountsNaNs) {
  Arrays a;
  BatchRecipe r = batch_test::recipe(a);
  r.dtype = DataType{DTypeKind::kFloat, 4};
  r.mean_std = std::vector<float>{100.f, 2.f, 0.f, 1.f};              // channel 0: (v - 100) / 2
  r.decoding = std::vector<CfDecoding>{{false, 1.0, 0.0, {42}}, {}};  // 42 (the fill) masked
  HostBatchMaker maker(std::move(r), {});
  auto made = maker.make(batch_test::job(), 0, 0.0);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  const auto* out = static_cast<const float*>(made->data);
  const std::vector<std::int32_t> want = batch_test::expected();
  EXPECT_EQ(out[0], (float(want[0]) - 100.f) * 0.5f);
  EXPECT_EQ(out[3], float(want[3]));
  EXPECT_EQ(made->report.nans, 4u);  // channel 0: two elements of the missing chunk per step
}

// A batch the consumer lets go returns its memory for the next one (up to `keep` batches' worth),
// even after the maker itself is gone; the reused memory holds the next batch's values.
TEST(HostBatchMaker, ReleasedBatchesLendTheirMemoryToTheNext) {
  Arrays a;
  auto maker = std::make_unique<HostBatchMaker>(batch_test::recipe(a), ReadOptions{}, 2);
  auto first = maker->make(batch_test::job(), 0, 0.0);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const void* memory = first->data;
  const std::size_t bytes = 24 * sizeof(std::int32_t);
  first = Result<MadeBatch>(MadeBatch{});  // the consumer let it go
  EXPECT_EQ(maker->kept_bytes(), bytes);
  auto second = maker->make(batch_test::job(), 0, 0.0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->data, memory);
  EXPECT_EQ(maker->kept_bytes(), 0u);
  const auto* out = static_cast<const std::int32_t*>(second->data);
  EXPECT_EQ(std::vector<std::int32_t>(out, out + 24), batch_test::expected());
  // Three let go at once: two batches' worth stay.
  std::vector<MadeBatch> held;
  for (int i = 0; i < 3; ++i)
    held.push_back(std::move(maker->make(batch_test::job(), 0, 0.0)).value());
  held.clear();
  EXPECT_EQ(maker->kept_bytes(), 2 * bytes);
  // A batch outliving its maker returns its memory to the pool it shares, which goes with it
  // (the sanitizer builds, scripts/sanitize.sh, would see a use after free or a leak).
  MadeBatch last = std::move(second).value();
  std::weak_ptr<void> memory_of_last = last.memory;
  maker.reset();
  EXPECT_FALSE(memory_of_last.expired());
  last = MadeBatch{};
  EXPECT_TRUE(memory_of_last.expired());
}

TEST(HostBatchMaker, MissingChunksFailWhenTheRecipeSaysSo) {
  Arrays a;
  BatchRecipe r = batch_test::recipe(a);
  r.missing_is_error = true;
  HostBatchMaker maker(std::move(r), {});
  auto made = maker.make(batch_test::job(), 0, 0.0);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(made.status().message(), "4 chunks of this batch are not stored (samples [7, 8])");
  EXPECT_TRUE(maker.make(BatchJob{{1}, {0}, {0}}, 0, 0.0).ok());  // one that has them all
}

}  // namespace
}  // namespace zarrflow
