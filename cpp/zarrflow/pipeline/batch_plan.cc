#include "zarrflow/pipeline/batch_plan.h"

#include <algorithm>
#include <string>

namespace zarrflow {
namespace {

// Whether every entry of `columns` names a start column of a row of `dims` dimensions.
bool start_columns(std::span<const std::int64_t> columns, std::size_t dims) {
  for (std::int64_t c : columns)
    if (c < 3 || c >= std::int64_t(3 + dims)) return false;
  return true;
}

}  // namespace

Result<BatchPlan> BatchPlan::create(BatchTemplate t) {
  const std::size_t c = t.channels;
  if (c == 0 || t.columns < 3 || (t.columns - 3) % 4 != 0 || t.rows.size() != c * t.columns)
    return invalid_argument(
        "batch plan: need one template row of 3 + 4 x D columns per channel, "
        "got " +
        std::to_string(t.rows.size()) + " values for " + std::to_string(c) + " channels of " +
        std::to_string(t.columns) + " columns");
  const std::size_t dims = (t.columns - 3) / 4;
  if (t.time_column.size() != c || !start_columns(t.time_column, dims))
    return invalid_argument("batch plan: need one time column (a start column) per channel");
  if (t.spatial_columns.size() % c != 0 || !start_columns(t.spatial_columns, dims))
    return invalid_argument(
        "batch plan: need the same number of spatial columns (start "
        "columns) per channel");
  if (t.step_offsets.empty()) return invalid_argument("batch plan: need at least one time step");
  BatchPlan plan;
  for (std::int64_t n : t.window) {
    if (n < 1) return invalid_argument("batch plan: window sizes must be positive");
    plan.inner_ *= n;
  }
  plan.spatial_dims_ = t.spatial_columns.size() / c;
  if (plan.spatial_dims_ != t.window.size())
    return invalid_argument("batch plan: one spatial column per window dimension");
  plan.t_ = std::move(t);
  return plan;
}

Result<std::vector<std::int64_t>> BatchPlan::table(std::span<const std::int64_t> times,
                                                   std::span<const std::int64_t> origins) const {
  const std::size_t b = times.size(), c = channels(), s = spatial_dims_, cols = t_.columns;
  if (origins.size() != b * s)
    return invalid_argument("batch plan: " + std::to_string(origins.size()) +
                            " origin values "
                            "for " +
                            std::to_string(b) + " samples of " + std::to_string(s) +
                            " spatial dimensions");
  std::vector<std::int64_t> out(rows(b) * cols);
  std::size_t r = 0;
  for (std::size_t i = 0; i < b; ++i) {
    for (std::int64_t offset : t_.step_offsets) {
      for (std::size_t ch = 0; ch < c; ++ch, ++r) {
        std::int64_t* row = out.data() + r * cols;
        std::copy_n(t_.rows.data() + ch * cols, cols, row);
        row[2] = std::int64_t(r) * inner_;
        row[t_.time_column[ch]] = times[i] + offset;
        for (std::size_t k = 0; k < s; ++k)
          row[t_.spatial_columns[ch * s + k]] = origins[i * s + k];
      }
    }
  }
  return out;
}

}  // namespace zarrflow
