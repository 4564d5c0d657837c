// The request table of a batch from its template and samples.
#include "zarrflow/pipeline/batch_plan.h"

#include <gtest/gtest.h>

namespace zarrflow {
namespace {

// Two channels over 3-d arrays (time, lat, lon) with D = 4 columns per group: channel 0 reads
// array 0, channel 1 reads array 1 at fixed index 5 of its axis 1 (time, level, lat, lon).
// Windows of 2 x 3.
BatchTemplate two_channels() {
  BatchTemplate t;
  t.channels = 2;
  t.columns = 3 + 4 * 4;
  t.rows = {0,
            3,
            0,
            /*start*/ 0,
            0,
            0,
            0,
            /*count*/ 1,
            2,
            3,
            0,
            /*step*/ 1,
            1,
            1,
            0,
            /*strides*/ 0,
            3,
            1,
            0,
            1,
            4,
            0,
            /*start*/ 0,
            5,
            0,
            0,
            /*count*/ 1,
            1,
            2,
            3,
            /*step*/ 1,
            1,
            1,
            1,
            /*strides*/ 0,
            0,
            3,
            1};
  t.time_column = {3, 3};
  t.spatial_columns = {4, 5, 5, 6};
  t.step_offsets = {0, 1};
  t.window = {2, 3};
  return t;
}

TEST(BatchPlan, RowsRunOverChannelsThenStepsThenSamples) {
  auto plan = BatchPlan::create(two_channels());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->rows(2), 8u);
  EXPECT_EQ(plan->elements(2), 48);
  const std::int64_t times[] = {10, 20};
  const std::int64_t origins[] = {1, 2, 3, 4};  // (lat, lon) per sample
  auto table = plan->table(times, origins);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  ASSERT_EQ(table->size(), 8u * 19);
  const auto row = [&](std::size_t r) { return table->data() + r * 19; };
  // sample 1, step 1, channel 1: row 7
  const std::int64_t* r7 = row(7);
  EXPECT_EQ(r7[0], 1);
  EXPECT_EQ(r7[2], 7 * 6);
  EXPECT_EQ((std::vector<std::int64_t>(r7 + 3, r7 + 7)), (std::vector<std::int64_t>{21, 5, 3, 4}));
  EXPECT_EQ((std::vector<std::int64_t>(r7 + 7, r7 + 11)), (std::vector<std::int64_t>{1, 1, 2, 3}));
  // sample 0, step 0, channel 0: row 0 keeps the template but for time, origin and offset
  const std::int64_t* r0 = row(0);
  EXPECT_EQ((std::vector<std::int64_t>(r0, r0 + 7)),
            (std::vector<std::int64_t>{0, 3, 0, 10, 1, 2, 0}));
  EXPECT_EQ(row(2)[3], 11);  // sample 0, step 1, channel 0
}

TEST(BatchPlan, BadTemplatesAndSamplesAreRefused) {
  auto t = two_channels();
  t.rows.pop_back();
  EXPECT_FALSE(BatchPlan::create(t).ok());
  t = two_channels();
  t.time_column = {3, 7};  // a count column
  EXPECT_FALSE(BatchPlan::create(t).ok());
  t = two_channels();
  t.spatial_columns = {4, 5, 5};
  EXPECT_FALSE(BatchPlan::create(t).ok());
  t = two_channels();
  t.step_offsets.clear();
  EXPECT_FALSE(BatchPlan::create(t).ok());
  t = two_channels();
  t.window = {2};  // two spatial columns per channel
  EXPECT_FALSE(BatchPlan::create(t).ok());
  auto plan = BatchPlan::create(two_channels());
  ASSERT_TRUE(plan.ok());
  const std::int64_t times[] = {1, 2};
  const std::int64_t origins[] = {0, 0, 0};
  auto table = plan->table(times, origins);
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("3 origin values for 2 samples"), std::string::npos);
  EXPECT_TRUE(plan->table({}, {}).ok());  // no samples: no rows
}

}  // namespace
}  // namespace zarrflow
