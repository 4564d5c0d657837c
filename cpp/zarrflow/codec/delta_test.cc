#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "zarrflow/codec/filter_test_util.h"

namespace zarrflow {
namespace {

using namespace filter_test;

TEST(DeltaCodec, WrapsInInt8) {
  // cumsum of [100, 100, 100, -128] in int8: 100, 200→-56, 300→44, 172→-84.
  auto codec = make({{"id", "delta"}, {"dtype", "|i1"}, {"astype", "|i1"}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->name(), "delta");
  EXPECT_EQ(decode_all(*codec, pack<std::int8_t>({100, 100, 100, -128}), 4),
            pack<std::int8_t>({100, -56, 44, -84}));
  // numcodecs' docstring example: Delta(dtype='i2', astype='i1').
  auto narrow = make({{"id", "delta"}, {"dtype", "<i2"}, {"astype", "|i1"}});
  EXPECT_EQ(decode_all(*narrow, pack<std::int8_t>({100, 2, 2, 2}), 8),
            pack<std::int16_t>({100, 102, 104, 106}));
  EXPECT_EQ(narrow->describe(), "delta(dtype='<i2', astype='|i1')");
  EXPECT_EQ(narrow->encoded_size(8), 4);
  EXPECT_EQ(narrow->encoded_size(7), std::nullopt);
}

TEST(DeltaCodec, BigEndianOnBothSides) {
  auto codec = make({{"id", "delta"}, {"dtype", ">i4"}, {"astype", "<i2"}});
  EXPECT_EQ(decode_all(*codec, pack<std::int16_t>({1, 2, -5}), 12),
            pack<std::int32_t>({1, 3, -2}, /*big_endian=*/true));
  auto be = make({{"id", "delta"}, {"dtype", ">f8"}, {"astype", ">f8"}});
  EXPECT_EQ(decode_all(*be, pack<double>({0.5, 0.25}, true), 16), pack<double>({0.5, 0.75}, true));
}

TEST(DeltaCodec, AccumulatesInThePromotedType) {
  // float32 running sum: 1e8 + 1 == 1e8 in float32, so the sum never moves.
  auto f4 = make({{"id", "delta"}, {"dtype", "<f4"}});
  EXPECT_EQ(decode_all(*f4, pack<float>({1e8f, 1, 1, 1, 1, 1, 1, 1, 1}), 36),
            pack<float>({1e8f, 1e8f, 1e8f, 1e8f, 1e8f, 1e8f, 1e8f, 1e8f, 1e8f}));
  // float32 output of float64 input: summed in float64, each partial sum rounded to float32
  // (100000001..100000004 round to 1e8, 100000005..100000008 to 100000008).
  auto mixed = make({{"id", "delta"}, {"dtype", "<f4"}, {"astype", "<f8"}});
  EXPECT_EQ(decode_all(*mixed, pack<double>({1e8, 1, 1, 1, 1, 1, 1, 1, 1}), 36),
            pack<float>({1e8f, 1e8f, 1e8f, 1e8f, 1e8f, 100000008.f, 100000008.f, 100000008.f,
                         100000008.f}));
  // uint8 output of float64 input: float64 sums truncated, not truncated values summed.
  auto u1 = make({{"id", "delta"}, {"dtype", "|u1"}, {"astype", "<f8"}});
  EXPECT_EQ(decode_all(*u1, pack<double>({1.7, 1.7, 1.7, 1.7}), 4),
            pack<std::uint8_t>({1, 3, 5, 6}));
  // uint64 with int64 promotes to float64 (NumPy's rule), which loses the +1s at 2^60.
  auto u8 = make({{"id", "delta"}, {"dtype", "<u8"}, {"astype", "<i8"}});
  const std::int64_t big = std::int64_t{1} << 60;
  EXPECT_EQ(decode_all(*u8, pack<std::int64_t>({big, 1, 1}), 24),
            pack<std::uint64_t>(
                {std::uint64_t{1} << 60, std::uint64_t{1} << 60, std::uint64_t{1} << 60}));
}

// numcodecs.get_codec(config).decode(encoded): integer extremes and random integers, and floats
// including NaN, ±inf, -0, float16 boundaries, exact float16 midpoints, and values outside every
// integer range.
const Golden kGolden[] = {
    {R"({"id": "delta", "dtype": "<i4", "astype": "<i4"})",
     "00000080ffffff7f00000000bccdaf6562f90a145f56934642276a55ab2da7b94551378e99b2d7cc3427fac8d732a"
     "15f",
     "00000080ffffffffffffffffbbcdaf651dc7ba797c1d4ec0be44b81569725fcfaec3965d47766e2a7b9d68f352d00"
     "953"},
    {R"({"id": "delta", "dtype": "|i1", "astype": "|i1"})", "807f0069a691d9815d8672ff",
     "80ffff680e9f78f956dc4e4d"},
    {R"({"id": "delta", "dtype": "<i2", "astype": "|i1"})", "807f0052de9926a1793d8c4c",
     "80ffffffffff51002f00c8ffeeff8fff08004500d1ff1d00"},
    {R"({"id": "delta", "dtype": ">i4", "astype": ">i4"})",
     "800000007fffffff00000000cd93887ad7735285c746e6a2382f3ef0c13f221f7d8ec592f1f08551fa67f71e012a1"
     "31f",
     "80000000ffffffffffffffffcd938879a506dafe6c4dc1a0a47d009065bc22afe34ae841d53b6d92cfa364b0d0cd7"
     "7cf"},
    {R"({"id": "delta", "dtype": "<i4", "astype": ">i2"})",
     "80007fff00000db2a36b026b9b487ed98d634ec3643b4aeb",
     "0080ffffffffffffffffffffb10d00001cb1ffff87b3ffffcf4effffa8cdffff0b5bffffcea9ffff090e0000f4580"
     "000"},
    {R"({"id": "delta", "dtype": "<u8", "astype": "<i8"})",
     "0000000000000080ffffffffffffff7f000000000000000021a557d8e5a703a96dcb81db3f65cf1c1bdc5d1d8fc83"
     "f8b0bb4db71be572289851d3d24f4c0cf03fe4363f82f4759f78955f6ced681cb6a7179ced2c8f814213472ff70ce"
     "369d03",
     "00000000000000800000000000000000000000000000000000a457d8e5a703a90070d9b3250dd3c50000000000000"
     "080000000000000008000000000000000800000000000000080000000000000008000000000000000800000000000"
     "000080"},
    {R"({"id": "delta", "dtype": "<i8", "astype": "<u8"})",
     "0000000000000000ffffffffffffffff0000000000000000a79be118544441317c9311f85e0429b19f7ec0e156f65"
     "a3322e791b880ee995e3f0d307d2fbaf400693a179e0d027ed4e58be7a9ebc28a271d43a78855638144eb6603f7b2"
     "725de1",
     "000000000000000000000000000000800000000000000080000000000000008000000000000000800000000000000"
     "080000000000000008000000000000000800000000000000080000000000000008000000000000000800000000000"
     "000080"},
    {R"({"id": "delta", "dtype": "<u4", "astype": "<i4"})",
     "00000080ffffff7f00000000aad6de58116e3a351681c42374fec78a68b3e43dc92b38f987416c97ec9096bec7668"
     "80a",
     "00000080ffffffffffffffffa9d6de58ba44198ed0c5ddb144c4a53cac778a7a75a3c273fce42e0be875c5c9afdc4"
     "dd4"},
    {R"({"id": "delta", "dtype": "|u1", "astype": "<u2"})",
     "0000ffff0000fd81121bea9cee1810dfd5169faf26cd7b5c", "00fffffc0ef8e6f6cb6a900b"},
    {R"({"id": "delta", "dtype": "<i2", "astype": "<u2"})",
     "0000ffff00002299e8c7b41b9a1d2b0f180600a974d63b63",
     "0000ffffffff21990961bd7c579a82a99aaf9a580e2f4992"},
    {R"({"id": "delta", "dtype": "<f4", "astype": "<f4"})",
     "20bcbe4c0000803f0000803f0000803f0000803f9a99993e9a99993e3333333f9a99d9bf9a99d93f9a99d93f9a99d"
     "93f001000450000803f0000803f",
     "20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcb"
     "e4c20bdbe4c20bdbe4c20bdbe4c"},
    {R"({"id": "delta", "dtype": "<f4", "astype": "<f8"})",
     "0000000084d79741000000000000f03f000000000000f03f000000000000f03f000000000000f03f333333333333d"
     "33f333333333333d33f666666666666e63f333333333333fbbf333333333333fb3f333333333333fb3f3333333333"
     "33fb3f000000000002a040000000000000f03f000000000000f03f",
     "20bcbe4c20bcbe4c20bcbe4c20bcbe4c20bcbe4c21bcbe4c21bcbe4c21bcbe4c20bcbe4c21bcbe4c21bcbe4c21bcb"
     "e4c21bdbe4c21bdbe4c21bdbe4c"},
    {R"({"id": "delta", "dtype": "<f8", "astype": "<f4"})",
     "20bcbe4c0000803f0000803f0000803f0000803f9a99993e9a99993e3333333f9a99d9bf9a99d93f9a99d93f9a99d"
     "93f001000450000803f0000803f",
     "0000000084d797410000000484d797410000000884d797410000000c84d797410000001084d797413433331184d79"
     "7416866661284d797413433331584d797416466660e84d797413433331584d797410400001c84d79741d4cccc2284"
     "d79741d4cccc26a4d79741d4cccc2aa4d79741d4cccc2ea4d79741"},
    {R"({"id": "delta", "dtype": "<f2", "astype": "<f2"})",
     "007c003c003c003c003ccd34cd349a39cdbecd3ecd3ecd3e0068003c003c",
     "007c007c007c007c007c007c007c007c007c007c007c007c007c007c007c"},
    {R"({"id": "delta", "dtype": "<i2", "astype": "<f2"})",
     "007c003c003c003c003ccd34cd349a39cdbecd3ecd3ecd3e0068003c003c",
     "000000000000000000000000000000000000000000000000000000000000"},
    {R"({"id": "delta", "dtype": "|i1", "astype": "<f2"})",
     "007c003c003c003c003ccd34cd349a39cdbecd3ecd3ecd3e0068003c003c",
     "000000000000000000000000000000"},
    {R"({"id": "delta", "dtype": "<f2", "astype": "<f4"})",
     "20bcbe4c0000803f0000803f0000803f0000803f9a99993e9a99993e3333333f9a99d9bf9a99d93f9a99d93f9a99d"
     "93f001000450000803f0000803f",
     "007c007c007c007c007c007c007c007c007c007c007c007c007c007c007c"},
    {R"({"id": "delta", "dtype": "<f2", "astype": "|i1"})", "807f00190e0232d2acc944b9",
     "00d800bc00bc004ec0500051a055805100d1f0d5c0ce20d6"},
    {R"({"id": "delta", "dtype": "|u1", "astype": "<f8"})",
     "0000000084d79741000000000000f03f000000000000f03f000000000000f03f000000000000f03f333333333333d"
     "33f333333333333d33f666666666666e63f333333333333fbbf333333333333fb3f333333333333fb3f3333333333"
     "33fb3f000000000002a040000000000000f03f000000000000f03f",
     "000102030404040503050708090a0b"},
    {R"({"id": "delta", "dtype": "<i4", "astype": "<f8"})",
     "0000000084d79741000000000000f03f000000000000f03f000000000000f03f000000000000f03f333333333333d"
     "33f333333333333d33f666666666666e63f333333333333fbbf333333333333fb3f333333333333fb3f3333333333"
     "33fb3f000000000002a040000000000000f03f000000000000f03f",
     "00e1f50501e1f50502e1f50503e1f50504e1f50504e1f50504e1f50505e1f50503e1f50505e1f50507e1f50508e1f"
     "50509e9f5050ae9f5050be9f505"},
    {R"({"id": "delta", "dtype": ">f8", "astype": ">f4"})",
     "4cbebc203f8000003f8000003f8000003f8000003e99999a3e99999a3f333333bfd9999a3fd9999a3fd9999a3fd99"
     "99a450010003f8000003f800000",
     "4197d784000000004197d784040000004197d784080000004197d7840c0000004197d784100000004197d78411333"
     "3344197d784126666684197d784153333344197d7840e6666644197d784153333344197d7841c0000044197d78422"
     "ccccd44197d7a426ccccd44197d7a42accccd44197d7a42eccccd4"},
    {R"({"id": "delta", "dtype": "<u8", "astype": "<f8"})",
     "0000000084d79741000000000000f03f000000000000f03f000000000000f03f000000000000f03f333333333333d"
     "33f333333333333d33f666666666666e63f333333333333fbbf333333333333fb3f333333333333fb3f3333333333"
     "33fb3f000000000002a040000000000000f03f000000000000f03f",
     "00e1f5050000000001e1f5050000000002e1f5050000000003e1f5050000000004e1f5050000000004e1f50500000"
     "00004e1f5050000000005e1f5050000000003e1f5050000000005e1f5050000000007e1f5050000000008e1f50500"
     "00000009e9f505000000000ae9f505000000000be9f50500000000"},
    {R"({"id": "delta", "dtype": "<f8", "astype": "<i8"})",
     "0000000000000080ffffffffffffff7f0000000000000000bd0a6a6412b209171e2d827076f7e41ab8fa197271be5"
     "323442b128cdad72b2d0f8aeef42a0b9aa6d74fc78f2562b8f01097a55b551054bd27ed600de3200ae749307fd378"
     "99c198",
     "000000000000e0c3000000000000000000000000000000000b6a6412b209b7431c766ac454f7c8438cc191fe9950d"
     "5430c639afac74de0437603e47f2584c4433cce5725adc0b9431646a642a175c4c3d0ca8f684878d0c382752d05f1"
     "23e5c3"},
};

TEST(DeltaCodec, BitExactWithNumcodecs) { expect_golden(kGolden); }
TEST(DeltaCodec, SizeErrors) {
  Buffer scratch;
  auto delta = make({{"id", "delta"}, {"dtype", "<i4"}, {"astype", "<i2"}});
  const Bytes odd(5);
  auto r = delta->decode(odd, std::nullopt, scratch);
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("delta: 5 bytes is not a whole number of '<i2'"),
            std::string::npos)
      << r.status().message();
  const Bytes six(6);
  EXPECT_EQ(delta->decode(six, 6, scratch).status().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(delta->decode(six, 12, scratch).ok());
  Bytes out(11);
  EXPECT_EQ(delta->decode_into(six, out).code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(delta->decode(Bytes{}, std::nullopt, scratch).ok());
  EXPECT_TRUE(delta->decode(Bytes{}, 0, scratch).ok());
}

TEST(DeltaCodec, RandomInputNeverCrashes) {
  expect_random_input_safe({{"id", "delta"}, {"dtype", "<f2"}, {"astype", ">u8"}});
}

TEST(DeltaCodec, Configuration) {
  const ChunkSpec spec;
  const auto& v2 = CodecRegistry::v2();
  // Defaults and spellings numcodecs accepts.
  EXPECT_TRUE(v2.create("delta", {{"id", "delta"}, {"dtype", "int16"}}, spec).ok());
  EXPECT_TRUE(
      v2.create("delta", {{"id", "delta"}, {"dtype", "i4"}, {"astype", nullptr}}, spec).ok());
  EXPECT_TRUE(CodecRegistry::v3()
                  .create("numcodecs.delta", {{"dtype", "int32"}, {"astype", "int16"}}, spec)
                  .ok());
  auto code = [&](const json& cfg) { return v2.create("delta", cfg, spec).status().code(); };
  EXPECT_EQ(code({{"id", "delta"}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "delta"}, {"dtype", 4}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "delta"}, {"dtype", "<i3"}}), ErrorCode::kUnimplemented);
  EXPECT_EQ(code({{"id", "delta"}, {"dtype", "xyz"}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "delta"}, {"dtype", "<i4"}, {"level", 1}}), ErrorCode::kInvalidMetadata);
  auto unsupported = v2.create("delta", {{"id", "delta"}, {"dtype", "<c8"}}, spec);
  EXPECT_EQ(unsupported.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(unsupported.status().message().find("'<c8'"), std::string::npos)
      << unsupported.status().message();
  EXPECT_EQ(code({{"id", "delta"}, {"dtype", "|b1"}}), ErrorCode::kUnimplemented);
  EXPECT_EQ(code({{"id", "delta"}, {"dtype", "<M8[ns]"}}), ErrorCode::kUnimplemented);
}

}  // namespace
}  // namespace zarrflow
