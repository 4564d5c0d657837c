// Shapes, overflow-checked index math, and strided copies.
//
// A StridedView is n-d memory described by a base pointer, a shape and byte strides (NumPy's
// model). Decoded chunks are copied into destinations through views: a transpose codec permutes
// strides, a big-endian `bytes` codec adds a byte swap, an edge chunk narrows the shape — and the
// single copy_strided call does all of it at once.
// Thread-safety: free functions on caller memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow {

using Shape = std::vector<std::int64_t>;

// Product of `dims` times `factor`, or kOutOfRange if it overflows int64 or a dim is negative.
Result<std::int64_t> checked_product(std::span<const std::int64_t> dims, std::int64_t factor = 1);

// Byte strides of a C-contiguous array of `shape` with `elem_size`-byte elements.
Shape c_strides(std::span<const std::int64_t> shape, std::int64_t elem_size);

struct StridedView {
  std::byte* data = nullptr;
  Shape shape;
  Shape strides;  // bytes; may be negative or zero only where the shape is 1

  [[nodiscard]] std::size_t ndim() const { return shape.size(); }
  // True when the view covers one dense C-order block of shape.product() * elem_size bytes.
  [[nodiscard]] bool is_c_contiguous(std::int64_t elem_size) const;
};

constexpr int kMaxDims = 32;  // the most dimensions zarrflow reads (checked at metadata parsing)

// A copy's dimensions after dropping size-1 axes and merging axes that are contiguous in both
// views: a dense (2, 721, 1440) copy becomes one run. Used by copy_strided, fill_strided and the
// GPU scatter kernel's job builder.
struct MergedDims {
  int n = 0;
  std::int64_t shape[kMaxDims];
  std::int64_t src[kMaxDims];
  std::int64_t dst[kMaxDims];
};
MergedDims merge_dims(std::span<const std::int64_t> shape,
                      std::span<const std::int64_t> src_strides,
                      std::span<const std::int64_t> dst_strides);

// Copies a `shape` box of elements from src to dst. `swap_unit` > 1 reverses the bytes of each
// swap_unit-sized scalar inside every element (big-endian data; complex types have two scalars).
void copy_strided(const std::byte* src, std::span<const std::int64_t> src_strides, std::byte* dst,
                  std::span<const std::int64_t> dst_strides, std::span<const std::int64_t> shape,
                  std::size_t elem_size, std::size_t swap_unit = 1);

// Writes the element `value` (elem_size bytes) into every element of the view.
void fill_strided(const StridedView& dst, const std::byte* value, std::size_t elem_size);

// Reverses the byte order of each `swap_unit`-byte scalar in `bytes` in place.
void byteswap_inplace(std::byte* bytes, std::size_t nbytes, std::size_t swap_unit);

}  // namespace zarrflow
