#include "zarrflow/core/strided.h"

#include <algorithm>
#include <cstring>

namespace zarrflow {

Result<std::int64_t> checked_product(std::span<const std::int64_t> dims, std::int64_t factor) {
  if (factor < 0) return out_of_range("negative factor");
  std::int64_t p = factor;
  for (std::int64_t d : dims) {
    if (d < 0) return out_of_range("negative dimension " + std::to_string(d));
    if (__builtin_mul_overflow(p, d, &p)) return out_of_range("size overflows 64 bits");
  }
  return p;
}

Shape c_strides(std::span<const std::int64_t> shape, std::int64_t elem_size) {
  Shape s(shape.size());
  std::int64_t acc = elem_size;
  for (std::size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<std::int64_t>(shape[i], 1);
  }
  return s;
}

bool StridedView::is_c_contiguous(std::int64_t elem_size) const {
  std::int64_t expect = elem_size;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) return true;
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

namespace {}  // namespace

MergedDims merge_dims(std::span<const std::int64_t> shape, std::span<const std::int64_t> ss,
                      std::span<const std::int64_t> ds) {
  MergedDims r;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (r.n > 0 && r.src[r.n - 1] == ss[i] * shape[i] && r.dst[r.n - 1] == ds[i] * shape[i]) {
      r.shape[r.n - 1] *= shape[i];
      r.src[r.n - 1] = ss[i];
      r.dst[r.n - 1] = ds[i];
      continue;
    }
    r.shape[r.n] = shape[i];
    r.src[r.n] = ss[i];
    r.dst[r.n] = ds[i];
    ++r.n;
  }
  return r;
}

namespace {

template <std::size_t U>
inline void swap_scalar(std::byte* p) {
  std::reverse(p, p + U);
}

void swap_elem(std::byte* p, std::size_t elem_size, std::size_t unit) {
  for (std::size_t o = 0; o < elem_size; o += unit) {
    switch (unit) {
      case 2: {
        std::uint16_t v;
        std::memcpy(&v, p + o, 2);
        v = __builtin_bswap16(v);
        std::memcpy(p + o, &v, 2);
        break;
      }
      case 4: {
        std::uint32_t v;
        std::memcpy(&v, p + o, 4);
        v = __builtin_bswap32(v);
        std::memcpy(p + o, &v, 4);
        break;
      }
      case 8: {
        std::uint64_t v;
        std::memcpy(&v, p + o, 8);
        v = __builtin_bswap64(v);
        std::memcpy(p + o, &v, 8);
        break;
      }
      default:
        std::reverse(p + o, p + o + unit);
    }
  }
}

struct CopyArgs {
  const MergedDims* d;
  std::size_t elem;
  std::size_t unit;
};

void copy_rec(const CopyArgs& a, int dim, const std::byte* src, std::byte* dst) {
  const MergedDims& d = *a.d;
  const std::int64_t n = d.shape[dim];
  if (dim == d.n - 1) {
    const std::int64_t ss = d.src[dim], ds = d.dst[dim];
    const auto elem = static_cast<std::int64_t>(a.elem);
    if (a.unit <= 1 && ss == elem && ds == elem) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * a.elem);
      return;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      std::memcpy(dst + i * ds, src + i * ss, a.elem);
      if (a.unit > 1) swap_elem(dst + i * ds, a.elem, a.unit);
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i)
    copy_rec(a, dim + 1, src + i * d.src[dim], dst + i * d.dst[dim]);
}

}  // namespace

void copy_strided(const std::byte* src, std::span<const std::int64_t> src_strides, std::byte* dst,
                  std::span<const std::int64_t> dst_strides, std::span<const std::int64_t> shape,
                  std::size_t elem_size, std::size_t swap_unit) {
  for (std::int64_t s : shape)
    if (s == 0) return;
  if (swap_unit >= elem_size && elem_size <= 1) swap_unit = 1;
  const MergedDims d = merge_dims(shape, src_strides, dst_strides);
  if (d.n == 0) {  // a single element
    std::memcpy(dst, src, elem_size);
    if (swap_unit > 1) swap_elem(dst, elem_size, swap_unit);
    return;
  }
  CopyArgs a{&d, elem_size, swap_unit};
  copy_rec(a, 0, src, dst);
}

void fill_strided(const StridedView& v, const std::byte* value, std::size_t elem_size) {
  for (std::int64_t s : v.shape)
    if (s == 0) return;
  // Fill the first element, then copy from it with zero source strides; an all-zero value (the
  // common case) becomes a memset of each contiguous run.
  bool zero = std::all_of(value, value + elem_size, [](std::byte b) { return b == std::byte{0}; });
  Shape zeros(v.shape.size(), 0);
  const MergedDims d = merge_dims(v.shape, zeros, v.strides);
  if (d.n == 0) {
    std::memcpy(v.data, value, elem_size);
    return;
  }
  const std::int64_t inner = d.shape[d.n - 1];
  const bool inner_dense = d.dst[d.n - 1] == static_cast<std::int64_t>(elem_size);
  // Iterate over all outer index combinations.
  std::vector<std::int64_t> idx(static_cast<std::size_t>(d.n), 0);
  for (;;) {
    std::byte* p = v.data;
    for (int k = 0; k < d.n - 1; ++k) p += idx[k] * d.dst[k];
    if (inner_dense && zero) {
      std::memset(p, 0, static_cast<std::size_t>(inner) * elem_size);
    } else {
      for (std::int64_t i = 0; i < inner; ++i)
        std::memcpy(p + i * d.dst[d.n - 1], value, elem_size);
    }
    int k = d.n - 2;
    for (; k >= 0; --k) {
      if (++idx[k] < d.shape[k]) break;
      idx[k] = 0;
    }
    if (k < 0) return;
  }
}

void byteswap_inplace(std::byte* bytes, std::size_t nbytes, std::size_t swap_unit) {
  if (swap_unit <= 1) return;
  for (std::size_t o = 0; o + swap_unit <= nbytes; o += swap_unit)
    swap_elem(bytes + o, swap_unit, swap_unit);
}

}  // namespace zarrflow
