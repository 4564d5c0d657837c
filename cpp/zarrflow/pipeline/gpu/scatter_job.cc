#include "zarrflow/pipeline/gpu/scatter_job.h"

#include <algorithm>
#include <cstring>

namespace zarrflow::gpu {

std::optional<ScatterJob> make_scatter(const std::byte* src, const Shape& chunk_shape,
                                       const Selection& sel, const StridedView& dest,
                                       std::uint32_t elem, std::uint32_t swap_unit,
                                       const std::vector<std::byte>* fill,
                                       const ElementTransform* tf) {
  ScatterJob j{};
  if (tf != nullptr) j.tf = *tf;
  Shape src_strides(sel.count.size(), 0);
  const std::byte* base = src;
  if (src != nullptr) {
    const Shape cs = c_strides(chunk_shape, elem);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      base += sel.start[i] * cs[i];
      src_strides[i] = cs[i] * sel.step[i];
    }
  }
  const MergedDims d = merge_dims(sel.count, src_strides, dest.strides);
  if (d.n > kMaxScatterDims) return std::nullopt;
  j.src = reinterpret_cast<const std::uint8_t*>(base);
  j.dst = reinterpret_cast<std::uint8_t*>(dest.data);
  j.ndim = d.n;
  j.elem = elem;
  j.swap_unit = swap_unit;
  j.count = 1;
  for (int i = 0; i < d.n; ++i) {
    j.shape[i] = d.shape[i];
    j.src_strides[i] = d.src[i];
    j.dst_strides[i] = d.dst[i];
    j.count *= d.shape[i];
  }
  if (fill != nullptr) std::memcpy(j.fill, fill->data(), std::min<std::size_t>(fill->size(), 32));
  for (auto c : sel.count)
    if (c == 0) j.count = 0;
  return j;
}

}  // namespace zarrflow::gpu
