#include <gtest/gtest.h>

#include "zarrflow/codec/filter_test_util.h"

namespace zarrflow {
namespace {

using namespace filter_test;

// numcodecs.Quantize(digits=3, dtype, astype): encode(x) and decode(encode(x)) for x with 0.1,
// -3.75, 1e5, NaN, inf, -0, 65519.9 and 1e-8, across float widths and byte orders.
const Golden kGolden[] = {
    {R"({"id": "quantize", "digits": 3, "dtype": "<f8", "astype": "<f8"})",
     "000000000080b93f0000000000000ec000000000006af840000000000000f87f000000000000f07f0000000000"
     "000080000000d0fcfdef400000000000000000",
     "000000000080b93f0000000000000ec000000000006af840000000000000f87f000000000000f07f0000000000"
     "000080000000d0fcfdef400000000000000000"},
    {R"({"id": "quantize", "digits": 3, "dtype": "<f8", "astype": "<f4"})",
     "0000cc3d000070c00050c3470000c07f0000807f00000080e6ef7f4700000000",
     "000000000080b93f0000000000000ec000000000006af840000000000000f87f000000000000f07f0000000000"
     "000080000000c0fcfdef400000000000000000"},
    {R"({"id": "quantize", "digits": 3, "dtype": "<f4", "astype": "<f2"})",
     "602e80c3007c007e007c0080ff7b0000",
     "0000cc3d000070c00000807f0000c07f0000807f0000008000e07f4700000000"},
    {R"({"id": "quantize", "digits": 3, "dtype": "<f2", "astype": "<f8"})",
     "000000000080b93f0000000000000ec0000000000000f07f000000000000f87f000000000000f07f0000000000"
     "000080000000000000f07f0000000000000000",
     "602e80c3007c007e007c0080007c0000"},
    {R"({"id": "quantize", "digits": 3, "dtype": ">f8", "astype": "<f4"})",
     "0000cc3d000070c00050c3470000c07f0000807f00000080e6ef7f4700000000",
     "3fb9800000000000c00e00000000000040f86a00000000007ff80000000000007ff00000000000008000000000"
     "00000040effdfcc00000000000000000000000"},
    {R"({"id": "quantize", "digits": 3, "dtype": "<f4", "astype": ">f8"})",
     "3fb9800000000000c00e00000000000040f86a00000000007ff80000000000007ff00000000000008000000000"
     "00000040effdfcc00000000000000000000000",
     "0000cc3d000070c00050c3470000c07f0000807f00000080e6ef7f4700000000"},
};

TEST(QuantizeCodec, BitExactWithNumcodecs) { expect_golden(kGolden); }

TEST(QuantizeCodec, DescribeAndSizes) {
  auto codec = make({{"id", "quantize"}, {"digits", 2}, {"dtype", "<f8"}, {"astype", "<f4"}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "quantize(digits=2, dtype='<f8', astype='<f4')");
  EXPECT_EQ(codec->encoded_size(16), 8);
}

TEST(QuantizeCodec, RandomInputNeverCrashes) {
  expect_random_input_safe(
      {{"id", "quantize"}, {"digits", 1}, {"dtype", "<f2"}, {"astype", ">f8"}});
}

TEST(QuantizeCodec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  auto code = [&](const json& cfg) { return v2.create("quantize", cfg, {}).status().code(); };
  EXPECT_EQ(code({{"id", "quantize"}, {"dtype", "<f8"}}), ErrorCode::kInvalidMetadata);  // digits
  EXPECT_EQ(code({{"id", "quantize"}, {"digits", 2}, {"dtype", "<i4"}}),
            ErrorCode::kInvalidMetadata);  // numcodecs: only floating point data types
  EXPECT_TRUE(CodecRegistry::v3()
                  .create("numcodecs.quantize", {{"digits", 2}, {"dtype", "float64"}}, {})
                  .ok());
}

}  // namespace
}  // namespace zarrflow
