// What every batch of a loader is made of (the plan, the arrays, the element transform, the
// policy for missing chunks), and what the host and GPU batch makers share: one batch's table,
// its requests into the batch's memory, and the checks made once it is read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "zarrflow/pipeline/batch_engine.h"
#include "zarrflow/pipeline/batch_plan.h"
#include "zarrflow/pipeline/batch_request.h"

namespace zarrflow {

struct BatchRecipe {
  BatchPlan plan;
  std::vector<std::shared_ptr<const Array>> arrays;  // the plan's rows name them by index
  DataType dtype;                                    // the batch's elements
  // (mean, std) per channel: the batch receives cast((f - mean) / std) of each element f,
  // CF-decoded as `decoding` says (one entry per array). None: elements copied as stored.
  std::optional<std::vector<float>> mean_std;
  std::optional<std::vector<CfDecoding>> decoding;
  bool missing_is_error = false;  // a batch touching chunks that are not stored fails
};

// One batch of a recipe: its table and (mean, std) rows, and the requests into its memory.
class PlannedBatch {
 public:
  // Plans `job` into `data` (the batch's memory, of shape() and the recipe's dtype).
  static Result<PlannedBatch> create(const BatchRecipe& recipe, const BatchJob& job,
                                     std::byte* data);
  const BatchRequests& requests() const { return requests_; }

 private:
  PlannedBatch() = default;
  std::vector<const Array*> arrays_;
  std::vector<std::int64_t> table_;
  std::vector<float> mean_std_;
  BatchRequests requests_;
};

// [samples, steps, channels, *window]: the shape of `job`'s batch.
Shape batch_shape(const BatchRecipe& recipe, const BatchJob& job);
// Bytes of that batch (at least one element's, as every tensor).
std::size_t batch_bytes(const BatchRecipe& recipe, const BatchJob& job);

// Fails (kNotFound) when the recipe makes missing chunks an error and the batch had some.
Status check_missing(const BatchRecipe& recipe, const BatchJob& job,
                     const gpu::DeviceReadReport& report);

}  // namespace zarrflow
