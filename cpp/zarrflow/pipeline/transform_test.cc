#include "zarrflow/pipeline/transform.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace zarrflow {
namespace {

float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

TEST(NormalizeTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f808000)), 0x3f80);              // tie → even (down)
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f818000)), 0x3f82);              // tie → even (up)
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f808001)), 0x3f81);              // above the tie
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f807fff)), 0x3f80);              // below the tie
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);  // → infinity
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x00018000)), 0x0002);  // subnormal tie → even
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x00008000)), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(std::nanf("")), 0x7fff);
  EXPECT_EQ(float_to_bf16_bits(-std::nanf("")), 0x7fff);
}

TEST(NormalizeTest, Float16RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16_bits(65504.0f), 0x7bff);  // largest half
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);               // tie → even → infinity
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie → even (zero)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp: tie → even
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie → even
  EXPECT_EQ(float_to_f16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(float_to_f16_bits(std::nanf("")), 0x7fff);
}

// The bulk conversion (vectorised, dispatched per CPU) gives the element-wise results, counts
// NaNs, and handles lengths that leave tails and outputs at any 2-byte offset.
TEST(NormalizeTest, BulkConversionMatchesElementWise) {
  std::vector<float> in(1037);
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = std::sin(float(i) * 0.37f) * 3000.0f + float(i % 7) * 1e-3f;
  in[5] = in[600] = in[1036] = std::nanf("");
  in[7] = std::numeric_limits<float>::infinity();
  const float mean = 12.5f, inv_std = 1.0f / 3.0f;
  for (OutType t : {OutType::kFloat32, OutType::kBFloat16, OutType::kFloat16}) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, in.size()}) {
      std::vector<std::uint32_t> out(n + 4, 0);
      auto* dst = reinterpret_cast<std::byte*>(out.data()) + 2;  // 2-byte aligned on purpose
      if (t == OutType::kFloat32) dst += 2;
      const std::uint64_t nans = normalize_cast(in.data(), dst, n, {t, mean, inv_std});
      std::uint64_t want_nans = 0;
      for (std::size_t i = 0; i < n; ++i) {
        want_nans += std::isnan(in[i]);
        const float y = (in[i] - mean) * inv_std;
        if (t == OutType::kFloat32) {
          float got;
          std::memcpy(&got, dst + 4 * i, 4);
          if (std::isnan(y)) {
            EXPECT_TRUE(std::isnan(got)) << i;
          } else {
            EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(y)) << i;
          }
        } else {
          std::uint16_t got;
          std::memcpy(&got, dst + 2 * i, 2);
          EXPECT_EQ(got, t == OutType::kBFloat16 ? float_to_bf16_bits(y) : float_to_f16_bits(y))
              << i << " type " << int(t);
        }
      }
      EXPECT_EQ(nans, want_nans);
    }
  }
}

// --- The element transform over every source type -----------------------------------------

// The transform's definition written out with explicit roundings (transform.h): the reference
// the bulk loops must reproduce bit for bit.
template <typename T>
double value_of(T v) {
  if constexpr (std::is_same_v<T, Float16Bits>) {
    return double(static_cast<float>(std::bit_cast<_Float16>(v.bits)));
  } else if constexpr (std::is_same_v<T, BFloat16Bits>) {
    return double(std::bit_cast<float>(std::uint32_t(v.bits) << 16));
  } else {
    return double(v);
  }
}

template <typename T>
float reference(T v, const ElementTransform& tf, const std::vector<double>& masked) {
  const double x = value_of(v);
  for (double m : masked)
    if (x == m) return std::nanf("");
  if (!tf.packed) return float(x);  // one rounding; 64-bit integers through float64, as xarray
  volatile double product = x * tf.scale;  // rounded on its own, as NumPy rounds it
  volatile double sum = product + tf.offset;
  return float(sum);
}

template <typename T>
std::uint64_t bits_of(T v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <typename T>
InType in_type() {
  if constexpr (std::is_same_v<T, float>) return InType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return InType::kFloat64;
  if constexpr (std::is_same_v<T, Float16Bits>) return InType::kFloat16;
  if constexpr (std::is_same_v<T, BFloat16Bits>) return InType::kBFloat16;
  if constexpr (std::is_same_v<T, std::int8_t>) return InType::kInt8;
  if constexpr (std::is_same_v<T, std::int16_t>) return InType::kInt16;
  if constexpr (std::is_same_v<T, std::int32_t>) return InType::kInt32;
  if constexpr (std::is_same_v<T, std::int64_t>) return InType::kInt64;
  if constexpr (std::is_same_v<T, std::uint8_t>) return InType::kUInt8;
  if constexpr (std::is_same_v<T, std::uint16_t>) return InType::kUInt16;
  if constexpr (std::is_same_v<T, std::uint32_t>) return InType::kUInt32;
  return InType::kUInt64;
}

// `n` values of T spread over its range (the extremes and zero included).
template <typename T>
std::vector<T> samples(std::size_t n) {
  std::vector<T> v(n);
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  for (std::size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::uint64_t r = state >> 7;
    if constexpr (std::is_same_v<T, float>) {
      v[i] = float(std::int64_t(r % 2000001) - 1000000) * 0.37f;
    } else if constexpr (std::is_same_v<T, double>) {
      v[i] = double(std::int64_t(r % 2000001) - 1000000) * 0.123456789;
    } else if constexpr (std::is_same_v<T, Float16Bits> || std::is_same_v<T, BFloat16Bits>) {
      v[i] = T{std::uint16_t(r)};  // every bit pattern: subnormals, infinities, NaNs
    } else {
      std::memcpy(&v[i], &r, sizeof(T));
    }
  }
  if constexpr (std::is_integral_v<T>) {
    v[0] = std::numeric_limits<T>::min();
    v[1] = std::numeric_limits<T>::max();
    v[2] = 0;
  }
  return v;
}

// Every OutType: the bulk conversion's outputs (at an odd 2-byte offset) against the reference.
template <typename T>
void check_transform(const ElementTransform& base, const std::vector<T>& in,
                     const std::vector<double>& masked) {
  for (OutType t : {OutType::kFloat32, OutType::kBFloat16, OutType::kFloat16}) {
    ElementTransform tf = base;
    tf.out = t;
    tf.in = in_type<T>();
    const std::size_t osize = out_type_size(t);
    std::vector<std::uint8_t> out(in.size() * osize + 8, 0);
    std::uint8_t* dst = out.data() + 2;
    const std::uint64_t nans = normalize_cast(in.data(), dst, in.size(), tf);
    std::uint64_t want_nans = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float f = reference(in[i], tf, masked);
      const float got_f = decode_element(in[i], tf);
      if (std::isnan(f)) {  // NaN payloads are not part of the definition
        ASSERT_TRUE(std::isnan(got_f)) << "element " << i << " of type " << int(tf.in);
      } else {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got_f), std::bit_cast<std::uint32_t>(f))
            << "element " << i << " of type " << int(tf.in);
      }
      want_nans += std::isnan(f);
      const float y = (f - tf.mean) * tf.inv_std;
      if (t == OutType::kFloat32) {
        float got;
        std::memcpy(&got, dst + 4 * i, 4);
        if (std::isnan(y)) {
          ASSERT_TRUE(std::isnan(got)) << i;
        } else {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(y))
              << "element " << i << " of type " << int(tf.in);
        }
      } else {
        std::uint16_t got;
        std::memcpy(&got, dst + 2 * i, 2);
        ASSERT_EQ(got, t == OutType::kBFloat16 ? float_to_bf16_bits(y) : float_to_f16_bits(y))
            << "element " << i << " of type " << int(tf.in) << " out " << int(t);
      }
    }
    EXPECT_EQ(nans, want_nans) << "type " << int(tf.in);
  }
}

template <typename T>
void check_type() {
  const auto in = samples<T>(1031);
  ElementTransform plain;
  plain.mean = 3.25f;
  plain.inv_std = 1.0f / 7.0f;
  check_transform(plain, in, {});

  ElementTransform packed = plain;  // ERA5-like packing of the raw values
  packed.packed = 1;
  packed.scale = 0.001225614912271656;
  packed.offset = 264.2162222145165;
  check_transform(packed, in, {});

  // Masks: two raw values of the sample (one of them twice in the list), as the source bits.
  ElementTransform masked = packed;
  ASSERT_TRUE(add_mask(masked, bits_of(in[5])));
  ASSERT_TRUE(add_mask(masked, bits_of(in[700])));
  ASSERT_TRUE(add_mask(masked, bits_of(in[5])));
  check_transform(masked, in, {value_of(in[5]), value_of(in[700])});
  ElementTransform masked_plain = plain;
  ASSERT_TRUE(add_mask(masked_plain, bits_of(in[9])));
  check_transform(masked_plain, in, {value_of(in[9])});
}

TEST(ElementTransformTest, EverySourceTypeMatchesTheDefinition) {
  check_type<float>();
  check_type<double>();
  check_type<Float16Bits>();
  check_type<BFloat16Bits>();
  check_type<std::int8_t>();
  check_type<std::int16_t>();
  check_type<std::int32_t>();
  check_type<std::int64_t>();
  check_type<std::uint8_t>();
  check_type<std::uint16_t>();
  check_type<std::uint32_t>();
  check_type<std::uint64_t>();
}

TEST(ElementTransformTest, Float16ConversionIsExactForEveryValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float want = static_cast<float>(std::bit_cast<_Float16>(std::uint16_t(h)));
    const float got = detail::half_to_float(std::uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      // the payload is kept, as NumPy's float16 → float32 keeps it
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got) & 0x007fe000u, (h & 0x3ffu) << 13) << h;
    } else {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want)) << h;
    }
  }
}

TEST(ElementTransformTest, SixtyFourBitIntegersRoundThroughFloat64) {
  // 2^60 + 2^36 + 1: float64 rounds it to 2^60 + 2^36, a float32 tie that rounds to even (2^60);
  // a direct conversion to float32 would round up. xarray's int64 → float64 → float32 gives 2^60.
  const std::int64_t v = (std::int64_t{1} << 60) + (std::int64_t{1} << 36) + 1;
  ElementTransform tf;
  tf.in = InType::kInt64;
  EXPECT_EQ(decode_element(v, tf), std::ldexp(1.0f, 60));
  EXPECT_EQ(decode_element(std::uint64_t(v), tf), std::ldexp(1.0f, 60));
}

TEST(ElementTransformTest, PackingIsTwoRoundingsInFloat64) {
  // ERA5 temperature packing: -32767 is the fill value, the rest decode as xarray decodes them.
  ElementTransform tf;
  tf.in = InType::kInt16;
  tf.packed = 1;
  tf.scale = 0.001225614912271656;
  tf.offset = 264.2162222145165;
  ASSERT_TRUE(add_mask(tf, std::uint16_t(-32767)));
  EXPECT_TRUE(std::isnan(decode_element(std::int16_t(-32767), tf)));
  EXPECT_EQ(decode_element(std::int16_t(0), tf), float(264.2162222145165));
  EXPECT_EQ(decode_element(std::int16_t(1000), tf),
            float(1000 * 0.001225614912271656 + 264.2162222145165));
  // Only an offset, or only a scale: the other is the identity (-0.0 keeps the sign of zero).
  ElementTransform scale_only;
  scale_only.in = InType::kFloat32;
  scale_only.packed = 1;
  scale_only.scale = 2.0;
  EXPECT_EQ(std::bit_cast<std::uint32_t>(decode_element(-0.0f, scale_only)), 0x80000000u);
  EXPECT_EQ(decode_element(1.5f, scale_only), 3.0f);
}

TEST(ElementTransformTest, FloatMasksCompareValues) {
  ElementTransform tf;
  tf.in = InType::kFloat32;
  ASSERT_TRUE(add_mask(tf, std::bit_cast<std::uint32_t>(0.0f)));
  EXPECT_TRUE(std::isnan(decode_element(0.0f, tf)));
  EXPECT_TRUE(std::isnan(decode_element(-0.0f, tf)));  // NumPy: -0.0 == 0.0
  EXPECT_EQ(decode_element(1.0f, tf), 1.0f);
  ElementTransform nan_mask;
  nan_mask.in = InType::kFloat64;
  ASSERT_TRUE(add_mask(nan_mask, std::bit_cast<std::uint64_t>(std::nan(""))));
  EXPECT_EQ(decode_element(2.0, nan_mask), 2.0f);  // a NaN mask matches nothing
}

TEST(ElementTransformTest, MasksAreBoundedAndPadded) {
  ElementTransform tf;
  for (int i = 0; i < kMaxMasks; ++i) {
    ASSERT_TRUE(add_mask(tf, std::uint64_t(10 + i)));
    for (int j = i + 1; j < kMaxMasks; ++j) EXPECT_EQ(tf.mask[j], 10u);  // repeats the first
  }
  EXPECT_FALSE(add_mask(tf, 99));
  EXPECT_EQ(tf.masks, std::uint32_t(kMaxMasks));
}

TEST(ElementTransformTest, SourceTypesOfZarrDataTypes) {
  EXPECT_EQ(in_type_of({DTypeKind::kInt, 2}), InType::kInt16);
  EXPECT_EQ(in_type_of({DTypeKind::kUInt, 8}), InType::kUInt64);
  EXPECT_EQ(in_type_of({DTypeKind::kFloat, 2}), InType::kFloat16);
  EXPECT_EQ(in_type_of({DTypeKind::kBFloat16, 2}), InType::kBFloat16);
  EXPECT_EQ(in_type_of({DTypeKind::kFloat, 8}), InType::kFloat64);
  EXPECT_FALSE(in_type_of({DTypeKind::kBool, 1}));
  EXPECT_FALSE(in_type_of({DTypeKind::kComplex, 8}));
  EXPECT_FALSE(in_type_of({DTypeKind::kRaw, 3}));
  for (InType t : {InType::kInt8, InType::kInt16, InType::kInt32, InType::kInt64, InType::kFloat16,
                   InType::kFloat32, InType::kFloat64, InType::kBFloat16})
    EXPECT_GE(in_type_size(t), 1u);
}

// A strided destination: every other element of each row, rows 3 apart, from int16 packed.
TEST(ElementTransformTest, StridedDestinationMatchesContiguous) {
  const std::int64_t shape[2] = {5, 7};
  std::vector<std::int16_t> in(35);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::int16_t(i * 97 - 1500);
  ElementTransform tf;
  tf.out = OutType::kBFloat16;
  tf.in = InType::kInt16;
  tf.packed = 1;
  tf.scale = 0.5;
  tf.offset = 10.0;
  ASSERT_TRUE(add_mask(tf, std::uint16_t(in[12])));
  std::vector<std::uint16_t> dense(35), strided(5 * 3 * 7 * 2, 0xabcd);
  const std::uint64_t n1 = normalize_cast(in.data(), dense.data(), 35, tf);
  const std::int64_t strides[2] = {3 * 7 * 2 * 2, 2 * 2};  // bytes
  const std::uint64_t n2 = normalize_cast_strided(in.data(), strided.data(), 2, shape, strides, tf);
  EXPECT_EQ(n1, 1u);
  EXPECT_EQ(n2, 1u);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 7; ++c) EXPECT_EQ(strided[r * 42 + 2 * c], dense[r * 7 + c]) << r << c;
  EXPECT_EQ(strided[1], 0xabcd);  // untouched between the outputs
  // Contiguous rows take the bulk path; zero-size shapes write nothing.
  const std::int64_t row_strides[2] = {7 * 2, 2};
  std::vector<std::uint16_t> rows(35);
  normalize_cast_strided(in.data(), rows.data(), 2, shape, row_strides, tf);
  EXPECT_EQ(rows, dense);
  const std::int64_t empty[2] = {0, 7};
  EXPECT_EQ(normalize_cast_strided(in.data(), rows.data(), 2, empty, row_strides, tf), 0u);
}

// Transforms that write the same bits for every value: equal fields, the offset's sign too.
TEST(ElementTransformTest, SameTransformComparesEveryFieldAndTheOffsetsSign) {
  ElementTransform a{OutType::kBFloat16, 2.f, 0.5f};
  ASSERT_TRUE(add_mask(a, 7));
  EXPECT_TRUE(same_transform(a, a));
  ElementTransform b = a;
  b.mean = 3.f;
  EXPECT_FALSE(same_transform(a, b));
  b = a;
  ASSERT_TRUE(add_mask(b, 9));
  EXPECT_FALSE(same_transform(a, b));
  b = a;
  b.offset = 0.0;  // a's is -0.0: -0.0 + 0.0 is +0.0
  EXPECT_FALSE(same_transform(a, b));
  EXPECT_TRUE(std::signbit(float(-0.0 + a.offset)) && !std::signbit(float(-0.0 + b.offset)));
}

}  // namespace
}  // namespace zarrflow
