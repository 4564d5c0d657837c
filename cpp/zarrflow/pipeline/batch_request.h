// A training batch's requests as the loader hands them over: a table of regions of arrays into
// one target tensor, checked and turned into ReadRequests (and, for normalised batches, one
// ElementTransform per request). Plain C++; the binding's read_batch calls it.
//
// The table is one row per region, int64:
//   [array index, ndim, destination offset (elements), start[D], count[D], step[D],
//    destination strides (elements)[D]]
// with D = (columns - 3) / 4 and the first `ndim` of each group used. A table, not a list of
// objects: the loader's workers build thousands of regions per batch, and parsing Python objects
// would hold the GIL the training thread needs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "zarrflow/pipeline/transform.h"
#include "zarrflow/zarr/array.h"

namespace zarrflow {

// A C-order table of int64 rows (the loader's NumPy array).
struct RequestTable {
  const std::int64_t* data = nullptr;
  std::size_t rows = 0, columns = 0;

  [[nodiscard]] const std::int64_t* row(std::size_t i) const { return data + i * columns; }
};

// The tensor a batch is read into (host or device memory; only its address is used here).
struct BatchTarget {
  std::byte* data = nullptr;
  Shape shape;
  DataType dtype;
};

// The table's requests into `target`. Every row must name one of `arrays` with its number of
// dimensions and write inside the target; without normalisation (`normalized` false) the arrays'
// elements must have the target's size, as they are copied as they are.
Result<std::vector<ReadRequest>> requests_from_table(std::span<const Array* const> arrays,
                                                     const RequestTable& table,
                                                     const BatchTarget& target, bool normalized);

// CF decoding of one array's elements (netCDF conventions): packed values are
// value * scale + offset; the raw values in `masks` (as the source type's bits: _FillValue,
// missing_value) become NaN.
struct CfDecoding {
  bool packed = false;
  double scale = 1.0, offset = 0.0;
  std::vector<std::uint64_t> masks;
};

// One ElementTransform per request of a normalised batch: the array's source type and CF
// decoding (`decoding`: none, or one per array), the request's (mean, std) row of `mean_std`,
// and the target's type (float32, bfloat16 or float16). The target receives
// cast((f - mean) / std), where f is the element CF-decoded.
Result<std::vector<ElementTransform>> batch_transforms(
    std::span<const Array* const> arrays, const RequestTable& table,
    std::span<const float> mean_std, const DataType& target,
    const std::optional<std::vector<CfDecoding>>& decoding);

// A batch's regions as the loader describes them: the table over `arrays` and, for a normalised
// batch, one (mean, std) pair per row and (optionally) the arrays' CF decoding.
struct BatchSource {
  std::span<const Array* const> arrays;
  RequestTable table;
  std::optional<std::span<const float>> mean_std;  // none: elements copied as stored
  const std::optional<std::vector<CfDecoding>>* decoding = nullptr;  // with mean_std only
};

struct BatchRequests {
  std::vector<ReadRequest> requests;
  std::vector<ElementTransform> transforms;  // empty, or one per request
};

// The requests (and transforms) of `source` into `target`: requests_from_table and
// batch_transforms together, as read_batch and the loader's workers read a batch.
Result<BatchRequests> batch_requests(const BatchSource& source, const BatchTarget& target);

}  // namespace zarrflow
