// One job of the GPU read's scatter kernel (scatter.h): a strided N-d copy of a decoded chunk's
// selection into its destination (edge clipping, transpose, byte swap), or a fill of a missing
// chunk's block with the fill value, optionally through an ElementTransform. Host code (builds
// and is tested everywhere); the kernel is in scatter.cu.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "zarrflow/core/grid.h"
#include "zarrflow/core/strided.h"
#include "zarrflow/pipeline/transform.h"

namespace zarrflow::gpu {

constexpr int kMaxScatterDims = 8;  // after merging contiguous dimensions (more → host path)

struct ScatterJob {
  const std::uint8_t* src;  // null: fill with `fill`
  std::uint8_t* dst;
  std::int64_t count;  // elements
  std::int32_t ndim;
  std::uint32_t elem;       // bytes per source element (<= 32)
  std::uint32_t swap_unit;  // > 1: reverse the bytes of each swap_unit-sized scalar
  // tf.out == kStored: bytes as decoded. Otherwise elements of type tf.in (elem bytes) are
  // written as cast(normalize_element(decode_element(v))) (pipeline/transform.h), NaNs counted:
  // the loader's CF decoding and normalisation fused into the copy, so a batch is written once,
  // in its training dtype.
  ElementTransform tf;
  std::int64_t shape[kMaxScatterDims];
  std::int64_t src_strides[kMaxScatterDims];  // bytes
  std::int64_t dst_strides[kMaxScatterDims];  // bytes
  std::uint8_t fill[32];
};

// Elements per tile: the scatter kernel runs one thread block per tile of one job.
constexpr std::int64_t kScatterTile = 4096;

// A scatter job copying `sel` of a C-order chunk of `chunk_shape` at `src` (device) into `dest`;
// src == nullptr fills with `fill`; `tf` (may be null) transforms the elements on the way.
// nullopt when the views need more than kMaxScatterDims.
std::optional<ScatterJob> make_scatter(const std::byte* src, const Shape& chunk_shape,
                                       const Selection& sel, const StridedView& dest,
                                       std::uint32_t elem, std::uint32_t swap_unit,
                                       const std::vector<std::byte>* fill,
                                       const ElementTransform* tf);

}  // namespace zarrflow::gpu
