#include "zarrflow/codec/numeric_filter.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace zarrflow {
namespace {

TEST(NumericFilterFloat16, KnownValues) {
  EXPECT_EQ(double_to_half(1.0), 0x3C00);
  EXPECT_EQ(double_to_half(-2.0), 0xC000);
  EXPECT_EQ(double_to_half(0.1), 0x2E66);
  EXPECT_EQ(double_to_half(65504.0), 0x7BFF);
  EXPECT_EQ(double_to_half(65519.99), 0x7BFF);
  EXPECT_EQ(double_to_half(65520.0), 0x7C00);  // the midpoint to 65536 rounds (to even) to inf
  EXPECT_EQ(double_to_half(1e300), 0x7C00);
  EXPECT_EQ(double_to_half(-0.0), 0x8000);
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(double_to_half(std::ldexp(1.0, -25)), 0x0000);  // tie → even (0)
  EXPECT_EQ(double_to_half(std::nextafter(std::ldexp(1.0, -25), 1.0)), 0x0001);
  EXPECT_EQ(double_to_half(std::ldexp(3.0, -25)), 0x0002);     // 1.5 units → 2
  EXPECT_EQ(double_to_half(std::ldexp(1023.5, -24)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(double_to_half(std::numeric_limits<double>::denorm_min()), 0x0000);
  EXPECT_EQ(double_to_half(std::numeric_limits<double>::infinity()), 0x7C00);
  EXPECT_EQ(double_to_half(-std::numeric_limits<double>::infinity()), 0xFC00);
  EXPECT_EQ(double_to_half(std::numeric_limits<double>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(half_to_double(0x3555), 0.333251953125);
  EXPECT_EQ(half_to_double(0x0001), std::ldexp(1.0, -24));
  EXPECT_TRUE(std::isnan(half_to_double(0x7E00)));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(half_to_double(0xFE01)), 0xFFF8040000000000ull);
}

TEST(NumericFilterFloat16, ExhaustiveRoundTripAndMidpoints) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const double d = half_to_double(static_cast<std::uint16_t>(h));
    if (std::isnan(d)) {
      EXPECT_EQ(double_to_half(d), h);  // payload kept
      continue;
    }
    ASSERT_EQ(double_to_half(d), h) << h;
    // Between this half and the next one up in magnitude: the exact midpoint goes to the even
    // one, anything off the midpoint to the nearer one.
    const std::uint32_t mag = h & 0x7FFF;
    if (mag >= 0x7BFF) continue;  // the last finite value and inf
    const double next = half_to_double(static_cast<std::uint16_t>(h + 1));
    const double mid = (d + next) / 2;  // exact in double
    const std::uint32_t even = (h & 1) ? h + 1 : h;
    ASSERT_EQ(double_to_half(mid), even) << h;
    ASSERT_EQ(double_to_half(std::nextafter(mid, d)), h) << h;
    ASSERT_EQ(double_to_half(std::nextafter(mid, next)), h + 1) << h;
  }
}

}  // namespace
}  // namespace zarrflow
