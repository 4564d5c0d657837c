// A batch recipe over the test arrays of gpu/read_test_util.h (5x7 int32, 2x3 chunks, chunk
// (1, 1) missing, fill value 42), for the host and GPU batch makers' tests: two channels (the
// uncompressed and the zstd array), axis 0 as time, windows of 3 along axis 1, two steps
// (offsets 0 and 1). Element (b, s, c, w) of a batch is value(times[b] + s, origins[b] + w).
#pragma once

#include <gtest/gtest.h>

#include "zarrflow/pipeline/batch_recipe.h"
#include "zarrflow/pipeline/gpu/read_test_util.h"

namespace zarrflow::batch_test {

inline BatchRecipe recipe(const gpu::read_test::Arrays& a) {
  BatchTemplate t;
  t.channels = 2;
  t.columns = 3 + 4 * 2;
  // array, ndim, offset, start (2), count (2), step (2), destination strides (2)
  t.rows = {0, 2, 0, 0, 0, 1, 3, 1, 1, 0, 1,  //
            1, 2, 0, 0, 0, 1, 3, 1, 1, 0, 1};
  t.time_column = {3, 3};
  t.spatial_columns = {4, 4};
  t.step_offsets = {0, 1};
  t.window = {3};
  auto plan = BatchPlan::create(t);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  BatchRecipe r;
  r.plan = std::move(plan).value();
  r.arrays = {a.raw, a.zstd};
  r.dtype = DataType{DTypeKind::kInt, 4};
  return r;
}

// Samples at times {0, 2} with windows at {1} and {4}: the second reads chunk (1, 1), missing.
inline BatchJob job() { return BatchJob{{7, 8}, {0, 2}, {1, 4}}; }

// The batch of job() as the CPU reads it, element by element.
inline std::vector<std::int32_t> expected() {
  std::vector<std::int32_t> out;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t s = 0; s < 2; ++s)
      for (int c = 0; c < 2; ++c)
        for (std::int64_t w = 0; w < 3; ++w) {
          const std::int64_t i = (b == 0 ? 0 : 2) + s, j = (b == 0 ? 1 : 4) + w;
          const bool missing = i >= 2 && i < 4 && j >= 3 && j < 6;
          out.push_back(missing ? 42 : gpu::read_test::value(i, j));
        }
  return out;
}

}  // namespace zarrflow::batch_test
