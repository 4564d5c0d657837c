// Host batch reads: values, the element transform, and the counts the GPU reader reports too.
#include "zarrflow/pipeline/host_batch.h"

#include <gtest/gtest.h>

#include <cmath>

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
