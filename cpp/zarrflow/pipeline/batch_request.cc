#include "zarrflow/pipeline/batch_request.h"

#include <algorithm>

namespace zarrflow {
namespace {

std::int64_t elements_of(const Shape& shape) {
  std::int64_t n = 1;
  for (auto x : shape) n *= x;
  return std::max<std::int64_t>(n, 1);
}

// Row `i` as a request, its destination strides still in elements.
Result<ReadRequest> request_of_row(std::span<const Array* const> arrays, const RequestTable& table,
                                   std::size_t i, const BatchTarget& target,
                                   std::int64_t target_elems) {
  const std::size_t dims = (table.columns - 3) / 4;
  const std::int64_t* t = table.row(i);
  const std::int64_t a = t[0], nd = t[1];
  if (a < 0 || std::size_t(a) >= arrays.size() || nd < 0 || std::size_t(nd) > dims ||
      std::size_t(nd) != arrays[std::size_t(a)]->shape().size())
    return invalid_argument("read_batch: request " + std::to_string(i) + " names array " +
                            std::to_string(a) + " with " + std::to_string(nd) + " dimensions");
  ReadRequest r;
  r.array = arrays[std::size_t(a)];
  const auto group = [&](std::size_t g) { return Shape(t + 3 + g * dims, t + 3 + g * dims + nd); };
  r.region = {group(0), group(1), group(2)};
  r.dest.data = target.data + t[2] * std::int64_t(target.dtype.size);
  r.dest.shape = r.region.count;
  r.dest.strides = group(3);
  std::int64_t last = t[2];  // the region's last element in the target must lie inside it
  for (std::size_t d = 0; d < r.dest.shape.size(); ++d)
    last += (std::max<std::int64_t>(r.dest.shape[d], 1) - 1) * r.dest.strides[d];
  if (t[2] < 0 || last >= target_elems)
    return invalid_argument("read_batch: request " + std::to_string(i) + " writes outside the " +
                            std::to_string(target_elems) + "-element target");
  return r;
}

OutType out_type_of(const DataType& target) {
  if (target.kind == DTypeKind::kBFloat16) return OutType::kBFloat16;
  if (target.kind == DTypeKind::kFloat && target.size == 2) return OutType::kFloat16;
  if (target.kind == DTypeKind::kFloat && target.size == 4) return OutType::kFloat32;
  return OutType::kStored;
}

// The transform of `arr`'s elements into `type`, with its CF decoding (may be null).
Result<ElementTransform> array_transform(const Array& arr, OutType type, const CfDecoding* cf) {
  ElementTransform tf;
  const auto in = in_type_of(arr.dtype());
  if (!in)
    return invalid_argument(arr.describe() + " has data type " + arr.dtype().v3_name() +
                            ": batches read numeric types (int8..int64, uint8..uint64, "
                            "float16/32/64, bfloat16)");
  tf.out = type;
  tf.in = *in;
  if (cf == nullptr) return tf;
  tf.packed = cf->packed ? 1 : 0;
  tf.scale = cf->scale;
  tf.offset = cf->offset;
  for (std::uint64_t bits : cf->masks)
    if (!add_mask(tf, bits))
      return invalid_argument(arr.describe() + ": more than " + std::to_string(kMaxMasks) +
                              " values to mask");
  return tf;
}

}  // namespace

Result<std::vector<ReadRequest>> requests_from_table(std::span<const Array* const> arrays,
                                                     const RequestTable& table,
                                                     const BatchTarget& target, bool normalized) {
  if (!normalized) {
    for (const Array* arr : arrays)
      if (arr->dtype().size != target.dtype.size)
        return invalid_argument(arr->describe() + " has " + std::to_string(arr->dtype().size) +
                                "-byte elements, the batch " + std::to_string(target.dtype.size));
  }
  if (table.columns < 3 || (table.columns - 3) % 4 != 0)
    return invalid_argument("read_batch: a request row has 3 + 4 x D columns, got " +
                            std::to_string(table.columns));
  const std::int64_t target_elems = elements_of(target.shape);
  std::vector<ReadRequest> requests(table.rows);
  for (std::size_t i = 0; i < table.rows; ++i) {
    ZF_ASSIGN_OR_RETURN(requests[i], request_of_row(arrays, table, i, target, target_elems));
    for (auto& x : requests[i].dest.strides) x *= std::int64_t(target.dtype.size);
  }
  return requests;
}

Result<std::vector<ElementTransform>> batch_transforms(
    std::span<const Array* const> arrays, const RequestTable& table,
    std::span<const float> mean_std, const DataType& target,
    const std::optional<std::vector<CfDecoding>>& decoding) {
  if (mean_std.size() != 2 * table.rows)
    return invalid_argument("read_batch: normalize needs one (mean, std) row per request");
  const OutType type = out_type_of(target);
  if (type == OutType::kStored)
    return invalid_argument("read_batch: a normalised batch is float32, bfloat16 or float16, not " +
                            target.v3_name());
  if (decoding && decoding->size() != arrays.size())
    return invalid_argument("read_batch: decode needs one entry per array");
  std::vector<ElementTransform> per_array(arrays.size());
  for (std::size_t a = 0; a < arrays.size(); ++a) {
    ZF_ASSIGN_OR_RETURN(per_array[a],
                        array_transform(*arrays[a], type, decoding ? &(*decoding)[a] : nullptr));
  }
  std::vector<ElementTransform> out(table.rows);
  for (std::size_t i = 0; i < table.rows; ++i) {
    const float sd = mean_std[2 * i + 1];
    if (!(sd > 0.f))
      return invalid_argument("read_batch: std must be positive (request " + std::to_string(i) +
                              ")");
    out[i] = per_array[std::size_t(table.row(i)[0])];
    out[i].mean = mean_std[2 * i];
    out[i].inv_std = 1.f / sd;  // 1 / std in float32, on both paths
  }
  return out;
}

Result<BatchRequests> batch_requests(const BatchSource& source, const BatchTarget& target) {
  const bool decoded = source.decoding != nullptr && source.decoding->has_value();
  if (decoded && !source.mean_std) return invalid_argument("read_batch: decode needs normalize");
  BatchRequests out;
  ZF_ASSIGN_OR_RETURN(out.requests, requests_from_table(source.arrays, source.table, target,
                                                        source.mean_std.has_value()));
  if (source.mean_std) {
    static const std::optional<std::vector<CfDecoding>> kNone;
    ZF_ASSIGN_OR_RETURN(out.transforms,
                        batch_transforms(source.arrays, source.table, *source.mean_std,
                                         target.dtype, decoded ? *source.decoding : kNone));
  }
  return out;
}

}  // namespace zarrflow
