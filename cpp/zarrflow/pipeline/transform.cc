// Host loops of the element transform (transform.h). Floating-point contraction is off in this
// file: a fused multiply-add would round x * scale + offset once where NumPy (xarray) and the GPU
// kernel round twice, and the bytes would differ. GCC also gets no-trapping-math (values are
// unchanged; floating-point exceptions are not observed here), without which it branches around
// the packed arithmetic of masked elements instead of selecting, and the loops do not vectorise.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off", "no-trapping-math")
#endif

#include "zarrflow/pipeline/transform.h"

#include <cmath>
#include <cstring>

namespace zarrflow {
namespace {

inline std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Branch-free so that the loops below vectorise. bfloat16: the upper half of the float, rounded
// to nearest even by adding 0x7fff plus the lowest kept bit (carries into the exponent round up
// to the next binade or to infinity, as they should).
inline std::uint16_t bf16(float y) {
  const std::uint32_t u = bits(y);
  const std::uint16_t r = std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return y != y ? std::uint16_t(0x7fff) : r;
}

#if defined(__FLT16_MANT_DIG__)  // the compiler has _Float16 (GCC; clang from 15 on x86-64)
inline std::uint16_t f16(float y) {
  const _Float16 h = static_cast<_Float16>(y);  // IEEE conversion: round to nearest even
  std::uint16_t r;
  std::memcpy(&r, &h, 2);
  return y != y ? std::uint16_t(0x7fff) : r;
}
#else
// The same conversion in integer arithmetic: round to nearest even, overflow to infinity.
inline std::uint16_t f16(float y) {
  const std::uint32_t u = bits(y), a = u & 0x7fffffffu;
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const auto round_shift = [](std::uint32_t v, int shift) {  // v >> shift, ties to even
    const std::uint32_t kept = v >> shift, rest = v & ((1u << shift) - 1u),
                        half = 1u << (shift - 1);
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  };
  if (a > 0x7f800000u) return 0x7fff;                   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;          // 65520 and above round to infinity
  if (a <= 0x33000000u) return sign;                    // 2^-25 and below round to zero
  if (a < 0x38800000u) {                                // below 2^-14: a subnormal half
    const int shift = 126 - static_cast<int>(a >> 23);  // the value in units of 2^-24
    return static_cast<std::uint16_t>(sign | round_shift((a & 0x7fffffu) | 0x800000u, shift));
  }
  return static_cast<std::uint16_t>(sign | round_shift(a - 0x38000000u, 13));  // rebias 127 → 15
}
#endif

inline float f32(float y) { return y; }

// On x86-64 with GCC, compiled for AVX-512 and AVX2 (with F16C) as well as the baseline, picked at
// load time: the loader's host threads convert up to ~8 G elements/s for a 71-channel batch
// stream. Elsewhere (aarch64, clang) the compiler's own vectorisation of the plain loops.
// The loops below are inlined into each clone (ZF_INLINE), so each is compiled for its target.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ZF_CLONES
#endif
#if defined(__GNUC__)
#define ZF_INLINE inline __attribute__((always_inline))
#else
#define ZF_INLINE inline
#endif

// float32 in, no masks, no packing: (x - mean) * inv_std and the cast, nothing else.
template <typename Out, typename Conv>
ZF_INLINE std::uint64_t run_plain(const float* __restrict in, Out* __restrict out, std::size_t n,
                                  float m, float k, Conv conv) {
  std::uint64_t nans = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = in[i];
    nans += x != x;
    out[i] = conv((x - m) * k);
  }
  return nans;
}

ZF_CLONES std::uint64_t plain_to_f32(const float* __restrict in, float* __restrict out,
                                     std::size_t n, float m, float k) {
  return run_plain(in, out, n, m, k, f32);
}
ZF_CLONES std::uint64_t plain_to_bf16(const float* __restrict in, std::uint16_t* __restrict out,
                                      std::size_t n, float m, float k) {
  return run_plain(in, out, n, m, k, bf16);
}
ZF_CLONES std::uint64_t plain_to_f16(const float* __restrict in, std::uint16_t* __restrict out,
                                     std::size_t n, float m, float k) {
  return run_plain(in, out, n, m, k, f16);
}

// Any source type: decode_element_as, then normalize_element and the cast. The transform is
// copied so that the compiler sees it cannot change under the stores.
template <bool kPacked, bool kMasked, typename T, typename Out, typename Conv>
ZF_INLINE std::uint64_t run_any(const std::byte* __restrict in, Out* __restrict out, std::size_t n,
                                const ElementTransform& transform, Conv conv) {
  const ElementTransform tf = transform;
  std::uint64_t nans = 0;
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, in + i * sizeof(T), sizeof(T));
    const float f = decode_element_as<kPacked, kMasked>(v, tf);
    nans += f != f;
    out[i] = conv(normalize_element(f, tf));
  }
  return nans;
}

template <typename T, typename Out, typename Conv>
ZF_INLINE std::uint64_t run_any(const std::byte* in, Out* out, std::size_t n,
                                const ElementTransform& tf, Conv conv) {
  if (tf.packed) {
    return tf.masks ? run_any<true, true, T>(in, out, n, tf, conv)
                    : run_any<true, false, T>(in, out, n, tf, conv);
  }
  return tf.masks ? run_any<false, true, T>(in, out, n, tf, conv)
                  : run_any<false, false, T>(in, out, n, tf, conv);
}

template <typename T>
ZF_INLINE std::uint64_t convert_from(const void* in, void* out, std::size_t n,
                                     const ElementTransform& tf) {
  const auto* src = static_cast<const std::byte*>(in);
  switch (tf.out) {
    case OutType::kFloat32:
      return run_any<T>(src, static_cast<float*>(out), n, tf, f32);
    case OutType::kBFloat16:
      return run_any<T>(src, static_cast<std::uint16_t*>(out), n, tf, bf16);
    case OutType::kFloat16:
      return run_any<T>(src, static_cast<std::uint16_t*>(out), n, tf, f16);
    case OutType::kStored:
      break;
  }
  return 0;
}

// One function per source type, each compiled for the targets above.
#define ZF_CONVERT_FROM(T, NAME)                                         \
  ZF_CLONES std::uint64_t NAME(const void* in, void* out, std::size_t n, \
                               const ElementTransform& tf) {             \
    return convert_from<T>(in, out, n, tf);                              \
  }
ZF_CONVERT_FROM(float, from_f32)
ZF_CONVERT_FROM(double, from_f64)
ZF_CONVERT_FROM(Float16Bits, from_f16)
ZF_CONVERT_FROM(BFloat16Bits, from_bf16)
ZF_CONVERT_FROM(std::int8_t, from_i8)
ZF_CONVERT_FROM(std::int16_t, from_i16)
ZF_CONVERT_FROM(std::int32_t, from_i32)
ZF_CONVERT_FROM(std::int64_t, from_i64)
ZF_CONVERT_FROM(std::uint8_t, from_u8)
ZF_CONVERT_FROM(std::uint16_t, from_u16)
ZF_CONVERT_FROM(std::uint32_t, from_u32)
ZF_CONVERT_FROM(std::uint64_t, from_u64)
#undef ZF_CONVERT_FROM

}  // namespace

std::optional<InType> in_type_of(const DataType& dt) {
  switch (dt.kind) {
    case DTypeKind::kFloat:
      if (dt.size == 4) return InType::kFloat32;
      if (dt.size == 8) return InType::kFloat64;
      if (dt.size == 2) return InType::kFloat16;
      break;
    case DTypeKind::kBFloat16:
      return InType::kBFloat16;
    case DTypeKind::kInt:
      if (dt.size == 1) return InType::kInt8;
      if (dt.size == 2) return InType::kInt16;
      if (dt.size == 4) return InType::kInt32;
      if (dt.size == 8) return InType::kInt64;
      break;
    case DTypeKind::kUInt:
      if (dt.size == 1) return InType::kUInt8;
      if (dt.size == 2) return InType::kUInt16;
      if (dt.size == 4) return InType::kUInt32;
      if (dt.size == 8) return InType::kUInt64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool add_mask(ElementTransform& tf, std::uint64_t bits) {
  if (tf.masks >= std::uint32_t(kMaxMasks)) return false;
  tf.mask[tf.masks++] = bits;
  for (int i = int(tf.masks); i < kMaxMasks; ++i) tf.mask[i] = tf.mask[0];
  return true;
}

bool same_transform(const ElementTransform& a, const ElementTransform& b) {
  return a.out == b.out && a.mean == b.mean && a.inv_std == b.inv_std && a.in == b.in &&
         a.packed == b.packed && a.masks == b.masks && a.scale == b.scale &&
         std::signbit(a.offset) == std::signbit(b.offset) && a.offset == b.offset &&
         std::equal(std::begin(a.mask), std::end(a.mask), std::begin(b.mask));
}

std::uint16_t float_to_bf16_bits(float x) { return bf16(x); }
std::uint16_t float_to_f16_bits(float x) { return f16(x); }

std::uint64_t normalize_cast(const void* in, void* out, std::size_t n, const ElementTransform& tf) {
  if (tf.out == OutType::kStored) return 0;
  if (is_plain(tf)) {
    const auto* src = static_cast<const float*>(in);
    switch (tf.out) {
      case OutType::kFloat32:
        return plain_to_f32(src, static_cast<float*>(out), n, tf.mean, tf.inv_std);
      case OutType::kBFloat16:
        return plain_to_bf16(src, static_cast<std::uint16_t*>(out), n, tf.mean, tf.inv_std);
      default:
        return plain_to_f16(src, static_cast<std::uint16_t*>(out), n, tf.mean, tf.inv_std);
    }
  }
  switch (tf.in) {
    case InType::kFloat32:
      return from_f32(in, out, n, tf);
    case InType::kFloat64:
      return from_f64(in, out, n, tf);
    case InType::kFloat16:
      return from_f16(in, out, n, tf);
    case InType::kBFloat16:
      return from_bf16(in, out, n, tf);
    case InType::kInt8:
      return from_i8(in, out, n, tf);
    case InType::kInt16:
      return from_i16(in, out, n, tf);
    case InType::kInt32:
      return from_i32(in, out, n, tf);
    case InType::kInt64:
      return from_i64(in, out, n, tf);
    case InType::kUInt8:
      return from_u8(in, out, n, tf);
    case InType::kUInt16:
      return from_u16(in, out, n, tf);
    case InType::kUInt32:
      return from_u32(in, out, n, tf);
    case InType::kUInt64:
      return from_u64(in, out, n, tf);
  }
  return 0;
}

std::uint64_t normalize_cast_strided(const void* in, void* out, int ndim, const std::int64_t* shape,
                                     const std::int64_t* out_strides, const ElementTransform& tf) {
  const auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  if (ndim == 0) return normalize_cast(src, dst, 1, tf);
  std::int64_t rows = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] <= 0) return 0;
    if (d + 1 < ndim) rows *= shape[d];
  }
  const std::int64_t row_len = shape[ndim - 1], inner_stride = out_strides[ndim - 1];
  const std::size_t in_elem = in_type_size(tf.in);
  const bool contiguous = inner_stride == std::int64_t(out_type_size(tf.out));
  std::uint64_t nans = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t rem = r, at = 0;  // the row's first output, from its index over the outer dims
    for (int d = ndim - 2; d >= 0; --d) {
      at += (rem % shape[d]) * out_strides[d];
      rem /= shape[d];
    }
    const std::byte* row_in = src + std::size_t(r * row_len) * in_elem;
    if (contiguous) {
      nans += normalize_cast(row_in, dst + at, std::size_t(row_len), tf);
    } else {
      for (std::int64_t j = 0; j < row_len; ++j)
        nans +=
            normalize_cast(row_in + std::size_t(j) * in_elem, dst + at + j * inner_stride, 1, tf);
    }
  }
  return nans;
}

}  // namespace zarrflow
