#include "zarrflow/pipeline/batch_recipe.h"

#include <algorithm>
#include <string>

namespace zarrflow {

Shape batch_shape(const BatchRecipe& recipe, const BatchJob& job) {
  const BatchPlan& p = recipe.plan;
  Shape shape = {std::int64_t(job.times.size()), std::int64_t(p.steps()),
                 std::int64_t(p.channels())};
  shape.insert(shape.end(), p.window().begin(), p.window().end());
  return shape;
}

std::size_t batch_bytes(const BatchRecipe& recipe, const BatchJob& job) {
  const std::int64_t n = recipe.plan.elements(job.times.size());
  return std::size_t(std::max<std::int64_t>(n, 1)) * recipe.dtype.size;
}

Result<PlannedBatch> PlannedBatch::create(const BatchRecipe& recipe, const BatchJob& job,
                                          std::byte* data) {
  PlannedBatch b;
  for (const auto& a : recipe.arrays) b.arrays_.push_back(a.get());
  ZF_ASSIGN_OR_RETURN(b.table_, recipe.plan.table(job.times, job.origins));
  const std::size_t rows = recipe.plan.rows(job.times.size());
  BatchSource source;
  source.arrays = b.arrays_;
  source.table = RequestTable{b.table_.data(), rows, recipe.plan.columns()};
  if (recipe.mean_std) {
    // Rows run over channels fastest: row r takes channel r % C's pair.
    const std::vector<float>& pairs = *recipe.mean_std;
    const std::size_t c = recipe.plan.channels();
    if (pairs.size() != 2 * c)
      return invalid_argument("batch: need one (mean, std) pair per channel");
    b.mean_std_.resize(2 * rows);
    for (std::size_t r = 0; r < rows; ++r)
      std::copy_n(pairs.data() + 2 * (r % c), 2, b.mean_std_.data() + 2 * r);
    source.mean_std = std::span<const float>(b.mean_std_);
    source.decoding = &recipe.decoding;
  }
  const BatchTarget target{data, batch_shape(recipe, job), recipe.dtype};
  ZF_ASSIGN_OR_RETURN(b.requests_, batch_requests(source, target));
  return b;
}

Status check_missing(const BatchRecipe& recipe, const BatchJob& job,
                     const gpu::DeviceReadReport& report) {
  if (!recipe.missing_is_error || report.missing == 0) return {};
  std::string samples;
  for (std::int64_t s : job.samples) samples += (samples.empty() ? "" : ", ") + std::to_string(s);
  return Status(ErrorCode::kNotFound, std::to_string(report.missing) +
                                          " chunks of this batch are not stored (samples [" +
                                          samples + "])");
}

}  // namespace zarrflow
