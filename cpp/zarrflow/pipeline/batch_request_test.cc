// A batch's request table checked and turned into requests and element transforms.
#include "zarrflow/pipeline/batch_request.h"

#include <gtest/gtest.h>

#include "zarrflow/pipeline/gpu/read_test_util.h"

namespace zarrflow {
namespace {

using gpu::read_test::Arrays;

// A row for a 2-d region: array, ndim, destination offset, start, count, step, strides.
std::vector<std::int64_t> row(std::int64_t array, std::int64_t offset, Shape start, Shape count,
                              Shape strides) {
  std::vector<std::int64_t> r = {array, 2, offset};
  for (const Shape* g : {&start, &count}) r.insert(r.end(), g->begin(), g->end());
  r.insert(r.end(), {1, 1});
  r.insert(r.end(), strides.begin(), strides.end());
  return r;
}

struct Table {
  explicit Table(std::vector<std::vector<std::int64_t>> rows) {
    for (const auto& r : rows) values.insert(values.end(), r.begin(), r.end());
    table = {values.data(), rows.size(), rows.empty() ? 11 : rows[0].size()};
  }
  std::vector<std::int64_t> values;
  RequestTable table;
};

TEST(BatchRequest, RowsBecomeRequestsIntoTheTarget) {
  Arrays a;
  const Array* arrays[] = {a.raw.get(), a.zstd.get()};
  const BatchTarget target{a.dest, {2, 2, 3}, DataType{DTypeKind::kInt, 4}};
  const Table t({row(0, 0, {0, 0}, {2, 3}, {3, 1}), row(1, 6, {1, 2}, {2, 3}, {3, 1})});
  auto requests = requests_from_table(arrays, t.table, target, false);
  ASSERT_TRUE(requests.ok()) << requests.status().to_string();
  ASSERT_EQ(requests->size(), 2u);
  EXPECT_EQ((*requests)[1].array, a.zstd.get());
  EXPECT_EQ((*requests)[1].region.start, (Shape{1, 2}));
  EXPECT_EQ((*requests)[1].dest.data, a.dest + 6 * 4);
  EXPECT_EQ((*requests)[1].dest.strides, (Shape{12, 4}));  // bytes
}

TEST(BatchRequest, BadTablesAreRefusedSayingWhy) {
  Arrays a;
  const Array* arrays[] = {a.raw.get()};
  const BatchTarget target{a.dest, {2, 3}, DataType{DTypeKind::kInt, 4}};
  const auto refused = [&](const Table& t, const BatchTarget& to, const std::string& why) {
    auto r = requests_from_table(arrays, t.table, to, false);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  Table short_row({row(0, 0, {0, 0}, {2, 3}, {3, 1})});
  short_row.table.columns = 10;
  refused(short_row, target, "3 + 4 x D columns, got 10");
  refused(Table({row(1, 0, {0, 0}, {2, 3}, {3, 1})}), target,
          "request 0 names array 1 with 2 dimensions");
  refused(Table({row(0, 1, {0, 0}, {2, 3}, {3, 1})}), target,
          "request 0 writes outside the 6-element target");
  refused(Table({row(0, -1, {0, 0}, {1, 1}, {3, 1})}), target, "writes outside");
  refused(Table({row(0, 0, {0, 0}, {2, 3}, {3, 1})}),
          BatchTarget{a.dest, {2, 3}, DataType{DTypeKind::kFloat, 2}},
          "has 4-byte elements, the batch 2");
}

TEST(BatchRequest, TransformsCarryEachRowsMeanAndStdAndTheArraysDecoding) {
  Arrays a;
  const Array* arrays[] = {a.raw.get(), a.zstd.get()};
  const Table t({row(0, 0, {0, 0}, {2, 3}, {3, 1}), row(1, 6, {0, 0}, {2, 3}, {3, 1})});
  const float mean_std[] = {1.f, 2.f, 3.f, 4.f};
  const DataType bf16{DTypeKind::kBFloat16, 2};
  std::vector<CfDecoding> cf(2);
  cf[1] = {true, 0.5, 10.0, {7, 9}};
  auto tfs = batch_transforms(arrays, t.table, mean_std, bf16, cf);
  ASSERT_TRUE(tfs.ok()) << tfs.status().to_string();
  ASSERT_EQ(tfs->size(), 2u);
  EXPECT_EQ((*tfs)[0].out, OutType::kBFloat16);
  EXPECT_EQ((*tfs)[0].in, *in_type_of(a.raw->dtype()));
  EXPECT_EQ((*tfs)[0].mean, 1.f);
  EXPECT_EQ((*tfs)[0].inv_std, 0.5f);
  EXPECT_EQ((*tfs)[0].packed, 0u);
  EXPECT_EQ((*tfs)[1].packed, 1u);
  EXPECT_EQ((*tfs)[1].scale, 0.5);
  EXPECT_EQ((*tfs)[1].masks, 2u);
  EXPECT_EQ((*tfs)[1].inv_std, 0.25f);
}

TEST(BatchRequest, BadNormalisationIsRefusedSayingWhy) {
  Arrays a;
  const Array* arrays[] = {a.raw.get()};
  const Table t({row(0, 0, {0, 0}, {2, 3}, {3, 1})});
  const DataType f32{DTypeKind::kFloat, 4};
  const auto refused = [&](std::span<const float> mean_std, const DataType& to,
                           const std::optional<std::vector<CfDecoding>>& cf,
                           const std::string& why) {
    auto r = batch_transforms(arrays, t.table, mean_std, to, cf);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  };
  const float ok[] = {0.f, 1.f}, zero_std[] = {0.f, 0.f}, three[] = {0.f, 1.f, 2.f};
  refused(zero_std, f32, std::nullopt, "std must be positive (request 0)");
  refused(three, f32, std::nullopt, "one (mean, std) row per request");
  refused(ok, DataType{DTypeKind::kInt, 2}, std::nullopt,
          "float32, bfloat16 or float16, not int16");
  refused(ok, f32, std::vector<CfDecoding>(2), "decode needs one entry per array");
  refused(ok, f32, std::vector<CfDecoding>{{false, 1.0, 0.0, {1, 2, 3, 4, 5}}},
          "more than 4 values to mask");
  EXPECT_TRUE(batch_transforms(arrays, t.table, ok, f32, std::nullopt).ok());
}

}  // namespace
}  // namespace zarrflow
