// A training batch's request table (pipeline/batch_request.h), built from what every batch of a
// loader shares and the samples of this one.
//
// A batch holds B samples of `steps` time steps of C channels, each a window of the grid:
// [B, steps, C, *window], C-order. Its table has one row per (sample, step, channel), channels
// fastest. What a channel's rows share is its template row (the array, the fixed indices of
// picked levels or channels, counts 1 but over the window, steps 1, destination strides over the
// window); a sample fills in the time column (its time plus the step's offset) and the spatial
// columns (its window's origin), and the row's place in the batch sets its destination offset
// (the row's index times the window's elements).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow {

struct BatchTemplate {
  std::size_t channels = 0;
  std::size_t columns = 0;                    // 3 + 4 x D
  std::vector<std::int64_t> rows;             // channels x columns: each channel's template row
  std::vector<std::int64_t> time_column;      // per channel: the column of its time index
  std::vector<std::int64_t> spatial_columns;  // channels x S: the columns of its window's origin
  std::vector<std::int64_t> step_offsets;     // per step: the time offset from the sample's time
  std::vector<std::int64_t> window;           // a sample's spatial shape
};

class BatchPlan {
 public:
  // Checks `t`: rows of 3 + 4 x D columns, time and spatial columns among the start columns.
  static Result<BatchPlan> create(BatchTemplate t);
  BatchPlan() = default;  // no channels: create() makes plans

  std::size_t channels() const { return t_.channels; }
  std::size_t steps() const { return t_.step_offsets.size(); }
  std::size_t spatial_dims() const { return spatial_dims_; }
  std::size_t columns() const { return t_.columns; }
  const std::vector<std::int64_t>& window() const { return t_.window; }
  std::int64_t inner() const { return inner_; }
  // Rows of a batch of `samples` samples, and its elements.
  std::size_t rows(std::size_t samples) const { return samples * steps() * channels(); }
  std::int64_t elements(std::size_t samples) const { return std::int64_t(rows(samples)) * inner_; }

  // The table of samples at `times` (B) with window origins `origins` (B x S, row-major): the
  // table the loader's workers read. Fails when `origins` does not hold S per sample.
  Result<std::vector<std::int64_t>> table(std::span<const std::int64_t> times,
                                          std::span<const std::int64_t> origins) const;

 private:
  BatchTemplate t_;
  std::size_t spatial_dims_ = 0;
  std::int64_t inner_ = 1;  // elements of one window
};

}  // namespace zarrflow
