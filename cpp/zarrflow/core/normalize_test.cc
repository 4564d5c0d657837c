#include "zarrflow/core/normalize.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace zarrflow {
namespace {

float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

TEST(NormalizeTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f808000)), 0x3f80);  // tie → even (down)
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f818000)), 0x3f82);  // tie → even (up)
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f808001)), 0x3f81);  // above the tie
  EXPECT_EQ(float_to_bf16_bits(from_bits(0x3f807fff)), 0x3f80);  // below the tie
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
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7c00);  // tie → even → infinity
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie → even (zero)
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie → even
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

}  // namespace
}  // namespace zarrflow
