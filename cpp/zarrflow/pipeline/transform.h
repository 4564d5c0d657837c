// The training loader's element transform: CF decoding of the stored value, per-channel
// normalisation, and the cast to the batch's dtype. For an element stored as v (any numeric type:
// int8..int64, uint8..uint64, float16/32/64, bfloat16; native byte order):
//
//   f = NaN                                        if v equals one of the masked raw values
//                                                  (_FillValue, missing_value)
//     = float32(float64(v) * scale + offset)       for packed sources (scale_factor, add_offset):
//                                                  a float64 product and a float64 sum, each
//                                                  rounded (never fused), then one rounding
//     = float32(v)                                 otherwise (64-bit integers via float64)
//   y = cast((f - mean) * inv_std)                 float32, then float32 / bfloat16 / float16,
//                                                  rounded to nearest even
//
// Why float64 for the packing arithmetic: Zarr attributes are JSON numbers, which xarray reads as
// float64, so xarray decodes every packed Zarr variable in float64 (its _choose_float_dtype), and
// 32/64-bit integer sources unpacked are float64 there too. Computing as xarray does and rounding
// once to float32 makes f exactly xarray's decoded value cast to float32; the normalisation is
// then the float32 one of float32 sources, unchanged. Masks compare raw values before decoding,
// as xarray's CFMaskCoder does (it runs before the scale/offset coder).
//
// One definition for both sides: decode_element and normalize_element are __host__ __device__;
// the GPU scatter kernel (pipeline/gpu/scatter.cu) applies them while copying chunks into a batch,
// the host loops below (transform.cc, compiled without floating-point contraction) to chunks the
// host decoded, so a batch's values do not depend on where each chunk was decoded. NaNs of f are
// counted; a 16-bit NaN is written as 0x7fff, the canonical NaN CUDA's conversions produce. A
// float32 NaN is written as each side's arithmetic leaves it: the GPU's one canonical NaN
// (0x7fffffff), the host's NaN operand (its payload kept; 0x7fc00000 for a masked value). So
// float32 batches compare by the bits of every other element and the places of their NaNs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "zarrflow/core/dtype.h"

#if defined(__CUDACC__)
#define ZF_NORM_HD __host__ __device__
#else
#define ZF_NORM_HD
#endif

namespace zarrflow {

// kStored: elements as stored (no transform).
enum class OutType : std::uint32_t { kStored = 0, kFloat32 = 1, kBFloat16 = 2, kFloat16 = 3 };

ZF_NORM_HD constexpr std::uint32_t out_type_size(OutType t) {
  return t == OutType::kBFloat16 || t == OutType::kFloat16 ? 2 : 4;
}

// The numeric source types the transform reads.
enum class InType : std::uint32_t {
  kFloat32 = 0,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
};

ZF_NORM_HD constexpr std::uint32_t in_type_size(InType t) {
  switch (t) {
    case InType::kInt8:
    case InType::kUInt8:
      return 1;
    case InType::kFloat16:
    case InType::kBFloat16:
    case InType::kInt16:
    case InType::kUInt16:
      return 2;
    case InType::kFloat32:
    case InType::kInt32:
    case InType::kUInt32:
      return 4;
    default:
      return 8;
  }
}

// The source type of a Zarr data type; nullopt for bool, complex and raw types.
std::optional<InType> in_type_of(const DataType& dt);

constexpr int kMaxMasks = 4;  // raw values masked per array (_FillValue + missing_value list)

struct ElementTransform {
  OutType out = OutType::kStored;
  float mean = 0.f, inv_std = 1.f;
  InType in = InType::kFloat32;
  std::uint32_t packed = 0;  // 1: decode as float64(v) * scale + offset
  std::uint32_t masks = 0;   // how many of mask[] are set (add_mask)
  double scale = 1.0;
  double offset = -0.0;  // x + -0.0 == x for every x, +0.0 included
  // Raw values to mask, as the source type's bits (zero-extended). Slots past `masks` repeat
  // mask[0], so a loop may compare all kMaxMasks of them.
  std::uint64_t mask[kMaxMasks] = {};
};

// Adds `bits` (a raw value of tf.in) to tf's masks; false when kMaxMasks are set already.
bool add_mask(ElementTransform& tf, std::uint64_t bits);

// Whether a and b write the same bits for every value: equal fields, the offset's sign included
// (-0.0, the default, leaves -0.0 as it is; +0.0 makes it +0.0).
bool same_transform(const ElementTransform& a, const ElementTransform& b);

// The transform reads float32 and neither masks nor unpacks: the loader's plain float32 path.
ZF_NORM_HD constexpr bool is_plain(const ElementTransform& tf) {
  return tf.in == InType::kFloat32 && tf.packed == 0 && tf.masks == 0;
}

// --- One element (host and device) ---------------------------------------------------------

// 16-bit float sources, as their bits.
struct Float16Bits {
  std::uint16_t bits;
};
struct BFloat16Bits {
  std::uint16_t bits;
};

namespace detail {

ZF_NORM_HD inline float float_from_bits(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// IEEE binary16 → float32, exact (payloads of NaNs kept, as NumPy's conversion keeps them).
ZF_NORM_HD inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant · 2^-24, exact in float32
    const float m = float(mant) * 5.9604644775390625e-8f;
    return sign ? -m : m;
  }
  if (exp == 31) return float_from_bits(sign | 0x7f800000u | (mant << 13));
  return float_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

ZF_NORM_HD inline double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);  // never contracted into an FMA
#else
  return a * b;
#endif
}
ZF_NORM_HD inline double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// The value of a raw element: float32 where that is exact or a single rounding (every type but
// the 64-bit integers), float64 for the packed arithmetic.
ZF_NORM_HD inline float to_float(float v) { return v; }
ZF_NORM_HD inline float to_float(double v) { return float(v); }
ZF_NORM_HD inline float to_float(Float16Bits v) { return half_to_float(v.bits); }
ZF_NORM_HD inline float to_float(BFloat16Bits v) {
  return float_from_bits(std::uint32_t(v.bits) << 16);
}
ZF_NORM_HD inline float to_float(std::int8_t v) { return float(v); }
ZF_NORM_HD inline float to_float(std::int16_t v) { return float(v); }
ZF_NORM_HD inline float to_float(std::int32_t v) { return float(v); }
ZF_NORM_HD inline float to_float(std::int64_t v) {
  return float(double(v));
}  // as xarray: via float64
ZF_NORM_HD inline float to_float(std::uint8_t v) { return float(v); }
ZF_NORM_HD inline float to_float(std::uint16_t v) { return float(v); }
ZF_NORM_HD inline float to_float(std::uint32_t v) { return float(v); }
ZF_NORM_HD inline float to_float(std::uint64_t v) { return float(double(v)); }

template <typename T>
ZF_NORM_HD inline double to_double(T v) {
  return double(v);
}
template <>
ZF_NORM_HD inline double to_double(Float16Bits v) {
  return double(half_to_float(v.bits));
}
template <>
ZF_NORM_HD inline double to_double(BFloat16Bits v) {
  return double(to_float(v));
}

// Mask comparison: integers by value (their bits), floats by value (so 0.0 also masks -0.0 and
// a NaN masks nothing, as NumPy's == compares).
template <typename T>
ZF_NORM_HD inline T from_mask_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));  // little-endian: the low bytes
  return v;
}
template <typename T>
ZF_NORM_HD inline bool equals_raw(T v, std::uint64_t bits) {
  return v == from_mask_bits<T>(bits);
}
template <>
ZF_NORM_HD inline bool equals_raw(Float16Bits v, std::uint64_t bits) {
  return half_to_float(v.bits) == half_to_float(std::uint16_t(bits));
}
template <>
ZF_NORM_HD inline bool equals_raw(BFloat16Bits v, std::uint64_t bits) {
  return to_float(v) == to_float(BFloat16Bits{std::uint16_t(bits)});
}

}  // namespace detail

// f of one raw element (see the top of this file), for a transform whose `packed` and `masks`
// (whether any) are known at compile time: the host's loops are instantiated per case, so
// that they vectorise without branches.
template <bool kPacked, bool kMasked, typename T>
ZF_NORM_HD inline float decode_element_as(T v, const ElementTransform& tf) {
  float f;
  if constexpr (kPacked) {
    f = float(detail::dadd(detail::dmul(detail::to_double(v), tf.scale), tf.offset));
  } else {
    f = detail::to_float(v);
  }
  if constexpr (kMasked) {
    bool hit = false;
    for (int i = 0; i < kMaxMasks; ++i) hit |= detail::equals_raw(v, tf.mask[i]);
    f = hit ? detail::float_from_bits(0x7fc00000u) : f;
  }
  return f;
}

// f of one raw element, for any transform.
template <typename T>
ZF_NORM_HD inline float decode_element(T v, const ElementTransform& tf) {
  if (tf.packed) {
    return tf.masks ? decode_element_as<true, true>(v, tf) : decode_element_as<true, false>(v, tf);
  }
  return tf.masks ? decode_element_as<false, true>(v, tf) : decode_element_as<false, false>(v, tf);
}

// (f - mean) * inv_std in float32.
ZF_NORM_HD inline float normalize_element(float f, const ElementTransform& tf) {
  return (f - tf.mean) * tf.inv_std;
}

// --- Host bulk conversions -----------------------------------------------------------------

// `n` elements of type tf.in at `in` → `n` outputs of `tf.out` at `out` (not overlapping `in`;
// any alignment). Returns the number of NaN decoded values (NaN inputs and masked elements).
// tf.out must not be kStored.
std::uint64_t normalize_cast(const void* in, void* out, std::size_t n, const ElementTransform& tf);

// The same from `n` = prod(shape) C-ordered elements at `in` into a strided destination
// (`out_strides` in bytes, `ndim` >= 0 dimensions): rows whose outputs are contiguous go
// through normalize_cast, others element by element.
std::uint64_t normalize_cast_strided(const void* in, void* out, int ndim, const std::int64_t* shape,
                                     const std::int64_t* out_strides, const ElementTransform& tf);

// The 16-bit conversions on their own (round to nearest even; NaN → 0x7fff).
std::uint16_t float_to_bf16_bits(float x);
std::uint16_t float_to_f16_bits(float x);

}  // namespace zarrflow
