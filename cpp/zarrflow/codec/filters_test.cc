#include "zarrflow/codec/filters.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec_test_util.h"
#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using Bytes = std::vector<std::byte>;
using json = nlohmann::json;
using codec_test::from_hex;

std::string to_hex(ConstByteSpan b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    s += d[static_cast<unsigned>(x) >> 4];
    s += d[static_cast<unsigned>(x) & 15];
  }
  return s;
}

template <typename T>
Bytes pack(std::initializer_list<T> values, bool big_endian = false) {
  Bytes out(values.size() * sizeof(T));
  std::byte* p = out.data();
  for (T v : values) {
    std::memcpy(p, &v, sizeof(T));
    if (big_endian) std::reverse(p, p + sizeof(T));
    p += sizeof(T);
  }
  return out;
}

std::shared_ptr<const BytesToBytesCodec> make(std::string_view name, const json& cfg,
                                              const CodecRegistry& reg = CodecRegistry::v2()) {
  auto c = reg.create(name, cfg, ChunkSpec{});
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const BytesToBytesCodec>(*c);
}

// A v2 filter from its numcodecs configuration (which names itself with "id").
std::shared_ptr<const BytesToBytesCodec> make(const json& cfg) {
  return make(cfg.at("id").get<std::string>(), cfg);
}

// Decodes through all three entry points and checks they agree; returns the bytes.
Bytes decode_all(const BytesToBytesCodec& codec, const Bytes& enc, std::size_t expected_size) {
  Buffer scratch;
  auto a = codec.decode(enc, std::nullopt, scratch);
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  if (!a.ok()) return {};
  Bytes result(a->begin(), a->end());
  EXPECT_EQ(result.size(), expected_size);
  Buffer scratch2;
  auto b = codec.decode(enc, expected_size, scratch2);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  if (b.ok()) {
    EXPECT_EQ(Bytes(b->begin(), b->end()), result);
  }
  Bytes out(expected_size);
  EXPECT_TRUE(codec.decode_into(enc, out).ok());
  EXPECT_EQ(out, result);
  return result;
}

// ---- float16 ---------------------------------------------------------------------------------

TEST(FiltersCodecFloat16, KnownValues) {
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

TEST(FiltersCodecFloat16, ExhaustiveRoundTripAndMidpoints) {
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

// ---- hand-worked cases -----------------------------------------------------------------------

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

TEST(FixedScaleOffsetCodec, DocstringExampleAndRounding) {
  // numcodecs' docstring: offset=1000, scale=10, dtype='f8', astype='u1'.
  auto codec = make({{"id", "fixedscaleoffset"},
                     {"offset", 1000},
                     {"scale", 10},
                     {"dtype", "<f8"},
                     {"astype", "|u1"}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(),
            "fixedscaleoffset(scale=10, offset=1000, dtype='<f8', astype='|u1')");
  EXPECT_EQ(decode_all(*codec, pack<std::uint8_t>({0, 1, 2, 255}), 32),
            pack<double>({1000.0, 1.0 / 10 + 1000, 2.0 / 10 + 1000, 255.0 / 10 + 1000}));
  // float→int truncates toward zero: 1/0.3 + 1 = 4.33 → 4, -7/0.3 + 1 = -22.3 → -22.
  auto to_int = make({{"id", "fixedscaleoffset"},
                      {"offset", 1},
                      {"scale", 0.3},
                      {"dtype", "<i4"},
                      {"astype", "<i2"}});
  EXPECT_EQ(decode_all(*to_int, pack<std::int16_t>({1, 2, -7}), 12),
            pack<std::int32_t>({4, 7, -22}));
  // float32 astype: computed in float32 (NEP 50), then widened.
  auto f4 = make({{"id", "fixedscaleoffset"},
                  {"offset", 0.1},
                  {"scale", 3},
                  {"dtype", "<f8"},
                  {"astype", "<f4"}});
  volatile float one = 1.0f, seven = 7.0f;  // keep the arithmetic in float32 at run time
  EXPECT_EQ(decode_all(*f4, pack<float>({1, 7}), 16),
            pack<double>({static_cast<double>(one / 3.0f + 0.1f),
                          static_cast<double>(seven / 3.0f + 0.1f)}));
}

TEST(AsTypeCodec, RoundsAndTruncates) {
  auto f8_to_f4 = make({{"id", "astype"}, {"encode_dtype", "<f8"}, {"decode_dtype", "<f4"}});
  ASSERT_TRUE(f8_to_f4);
  // 1 + 2^-24 is a float32 tie: rounds to even (1); 1 + 3·2^-24 rounds up to 1 + 2^-22.
  EXPECT_EQ(
      decode_all(*f8_to_f4,
                 pack<double>({0.1, 1 + std::ldexp(1.0, -24), 1 + 3 * std::ldexp(1.0, -24), 1e39}),
                 16),
      pack<float>({0.1f, 1.0f, 1 + std::ldexp(1.0f, -22), std::numeric_limits<float>::infinity()}));
  auto f8_to_i1 = make({{"id", "astype"}, {"encode_dtype", "<f8"}, {"decode_dtype", "|i1"}});
  EXPECT_EQ(decode_all(*f8_to_i1, pack<double>({2.9, -2.9, 300.7, 1e10, NAN}), 5),
            pack<std::int8_t>({2, -2, 44, 0, 0}));
  auto i4_to_u1 = make({{"id", "astype"}, {"encode_dtype", "<i4"}, {"decode_dtype", "|u1"}});
  EXPECT_EQ(decode_all(*i4_to_u1, pack<std::int32_t>({-1, 256, 511}), 3),
            pack<std::uint8_t>({255, 0, 255}));
}

TEST(ShuffleCodec, Unshuffles) {
  auto codec = make({{"id", "shuffle"}, {"elementsize", 4}});
  ASSERT_TRUE(codec);
  // Elements 0x03020100 and 0x13121110, shuffled: all byte 0s, then all byte 1s, ...
  EXPECT_EQ(to_hex(decode_all(*codec, from_hex("0010011102120313"), 8)), "0001020310111213");
  EXPECT_EQ(codec->encoded_size(8), 8);
  auto v3 = make("numcodecs.shuffle", {{"elementsize", 2}}, CodecRegistry::v3());
  ASSERT_TRUE(v3);
  EXPECT_EQ(to_hex(decode_all(*v3, from_hex("00010203"), 4)), "00020103");
  EXPECT_EQ(v3->describe(), "shuffle(elementsize=2)");
}

TEST(ShuffleCodec, EmptyChunk) {
  // Empty buffers have null data: nothing may be offset from it (UBSan, found by
  // shuffle_decode_fuzzer).
  for (int es : {2, 8, 53}) {
    auto codec = make({{"id", "shuffle"}, {"elementsize", es}});
    ASSERT_TRUE(codec);
    EXPECT_TRUE(decode_all(*codec, {}, 0).empty());
  }
}

// ---- golden bytes from numcodecs ---------------------------------------------------------------

struct Golden {
  const char* config;
  const char* encoded;
  const char* decoded;
};

// numcodecs.get_codec(config).decode(encoded) with numcodecs 0.16.6 and NumPy 2.4.6 on x86-64:
// integer extremes and random integers, and floats including NaN, ±inf, -0, float16 boundaries,
// exact float16 midpoints, and values outside every integer range.
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
    {R"({"id": "fixedscaleoffset", "offset": 1000, "scale": 10, "dtype": "<f8", "astype": "|u1"})",
     "00ff0026819af6674394c3f7",
     "0000000000408f4000000000000690400000000000408f4066666666665e8f403333333333a78f403333333333bb8"
     "f4066666666660290406666666666928f409a99999999758f406666666666b68f400000000000dc8f40cdcccccccc"
     "029040"},
    {R"({"id": "fixedscaleoffset", "offset": 0.1, "scale": 3, "dtype": "<f8", "astype": "<f4"})",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf",
     "000000201111c13f00000060b005cb3f000000803bd41046000000607777e7bf000000400454d540000000600654d"
     "540000000a09999b93f000000000000f87f000000000000f07f000000000000f0ff0000000065cdcd410000000065"
     "cdcdc1000000803021c743000000a09999b93f000000001151554000000060666645c0000000605555c5430000006"
     "05555d543000000009a99b93f000000c0cc5885400000008005ca7f41000000a09999d9bf"},
    {R"({"id": "fixedscaleoffset", "offset": 0.1, "scale": 3, "dtype": "<f4", "astype": "<f2"})",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be",
     "0080083e0020583e0000807f00c03bbf00a0aa460000807f00c0cc3d0000c07f0000807f000080ff0000807f00008"
     "0ff0000807f00c0cc3d00a0aa4200402bc20000807f0000807f00c0cc3d00a02a440000807f00c0ccbe"},
    {R"({"id": "fixedscaleoffset", "offset": 1, "scale": 0.3, "dtype": "<i4", "astype": "<i2"})",
     "0080ff7f00000ab7cafbf1813c4df82b8a34a68399d4e8cc",
     "5755feffa8aa010001000000cd0cfffff8f1ffffcf5bfeff730101009192000022af00008061feff556fffffb155f"
     "fff"},
    {R"({"id": "fixedscaleoffset", "offset": -5.5, "scale": 7, "dtype": ">f8", "astype": ">i2"})",
     "80007fff00005fc3f58397c567b429865faa087412f8a1b1",
     "c0b24ea49249249240b2438000000000c01600000000000040ab514924924925c078512492492492c0add2b6db6db"
     "6db40ad9624924924924097a4492492492540ab4a24924924924072fa4924924925408581b6db6db6dbc0aafd0000"
     "000000"},
    {R"({"id": "fixedscaleoffset", "offset": 2.5, "scale": 0.001, "dtype": "<i2", "astype": "<u4"})",
     "00000000ffffffff00000000931fe8f16e795b9b331767e712dbe8f5331dd9917f01e64710dd3c25f4d21690a0494"
     "531",
     "020000000200000000000000000000000000000000000000"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 1e-10, "dtype": "<i4", "astype": "<i4"})",
     "00000080ffffff7f00000000c944650d1d28968c44b038ae93438ee0788d516279a13178130b3e24bd2f5d15e57bd"
     "711",
     "000000800000008000000000000000800000008000000080000000800000008000000080000000800000008000000"
     "080"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 1e-10, "dtype": "<u4", "astype": "<i4"})",
     "00000080ffffff7f00000000885d34e959a49bb6402a4fbdcc489f36511fbe89e5d72b7834e04f6028ca4911e02ab"
     "df7",
     "000000800000000000000000000000800000008000000080000000000000008000000000000000000000000000000"
     "080"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 1e-10, "dtype": "<u8", "astype": "<i8"})",
     "0000000000000080ffffffffffffff7f0000000000000000f6e81a0e584d738660f56bb8b58847df7066c1cd7109c"
     "5879a933ee857db759ff223726ad906977749f7c61bd8016328c9a356ba91d79fed24ee3a14ebd41306d8faef6e9e"
     "6c705f",
     "000000000000008000000000000000000000000000000000000000000000008000000000000000800000000000000"
     "080000000000000008000000000000000000000000000000000000000000000008000000000000000000000000000"
     "000000"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 1e-10, "dtype": "|i1", "astype": "<i8"})",
     "0000000000000080ffffffffffffff7f00000000000000000d5a23ddb465fcda489b43e76ea3e304969be487a440e"
     "743ea5204cabbf9bf68e648caff7704aca6d227a069c392f46eb361c24ef366538178b479933822c340cf6b3cbeb4"
     "af7e4f",
     "000000000000000000000000"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 1e-10, "dtype": "<u2", "astype": "<i8"})",
     "0000000000000080ffffffffffffff7f000000000000000096226df8d446a783fcb2bdddd8e1e2209a633f7c34990"
     "34b463dc4f3ea335403e56f64168344d1396b410c3bade3f6b90f4a62312e48d2b2ddc3f3e848e3f5dcb7e22d1bad"
     "8dedad",
     "000000000000000000000000000000000000000000000000"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 0, "dtype": "<i8", "astype": "<i4"})",
     "00000080ffffff7f000000002c42b8727265d75dd7eec5123eb4867c6bb30ed71a9637a332a382c5e6a7dc962ddcb"
     "873",
     "000000000000008000000000000000800000000000000080000000000000008000000000000000800000000000000"
     "080000000000000008000000000000000800000000000000080000000000000008000000000000000800000000000"
     "000080"},
    {R"({"id": "fixedscaleoffset", "offset": 0, "scale": 0, "dtype": "<u8", "astype": "<f8"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000000000000000000000000000000000000000000000000000008000000000000000000000000000000"
     "000000000000000000000000000000000800000000000000000000000000000008000000000000000000000000000"
     "000080000000000000000000000000000000800000000000000000000000000000008000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000080"},
    {R"({"id": "fixedscaleoffset", "offset": 100000.0, "scale": 1, "dtype": "<i4", "astype": "<f2"})",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be",
     "000000800000008000000080000000800000008000000080000000800000008000000080000000800000008000000"
     "08000000080000000800000008000000080000000800000008000000080000000800000008000000080"},
    {R"({"id": "fixedscaleoffset", "offset": 0.5, "scale": 2, "dtype": "|u1", "astype": "<f8"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "00000000f8f8000000000001000080c1000000018400"},
    {R"({"id": "fixedscaleoffset", "offset": 3, "scale": 7, "dtype": "<f2", "astype": "<f8"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "07421842007c4941927092700042007e007c00fc007c00fc007c0042f050b1cb007c007c00429f5c007c9241"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<f4"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf"},
    {R"({"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"})",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf",
     "000000a09999b93f000000605555d53f00000040593e294600000000000004c0000000c0fcfdef400000000000fee"
     "f40000000e08e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c100000060e458e14300000000000000800000000000f06f4000000060661660c0000000000000e0430000000"
     "00000f043000000202b1b703e000000000002a0400000002084d79741000000000000f8bf"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<f2"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be"},
    {R"({"id": "astype", "encode_dtype": "<f2", "decode_dtype": "<f8"})",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be",
     "000000000098b93f000000000054d53f000000000000f07f00000000000004c00000000000fcef40000000000000f"
     "07f0000000000000000000000000000f87f000000000000f07f000000000000f0ff000000000000f07f0000000000"
     "00f0ff000000000000f07f00000000000000800000000000f06f4000000000001860c0000000000000f07f0000000"
     "00000f07f000000000000703e000000000000a040000000000000f07f000000000000f8bf"},
    {R"({"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f2"})",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "|i1"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000feeff00000000000000000ff800000000107ff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "|u1"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000feeff00000000000000000ff800000000107ff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<i2"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000feffeffff0ff00000000000000000000000000000000ff0080ff000000000000010807e1ffff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<u2"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000feffeffff0ff00000000000000000000000000000000ff0080ff000000000000010807e1ffff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<i4"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000000000000080feffffffefff0000f0ff0000000000000000008000000080000000800000008000000"
     "0800000008000000000ff00000080ffffff0000008000000080000000000108000007e1f505ffffffff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<u4"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000000000000000feffffffefff0000f0ff000000000000000000800000000000000080005ed0b200000"
     "0800000000000000000ff00000080ffffff0000000000000000000000000108000007e1f505ffffffff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<i8"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000000000000000000000000000000000000080feffffffffffffffefff000000000000f0ff000000000"
     "0000000000000000000000000000000008000000000000000800000000000000080005ed0b20000000000a22f4dff"
     "ffffff00000000000000800000000000000000ff0000000000000080ffffffffffffff00000000000000800000000"
     "0000000800000000000000000010800000000000007e1f50500000000ffffffffffffffff"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<u8"})",
     "9a9999999999b93f555555555555d53fea8ca039593e294600000000000004c0cdccccccfcfdef400000000000fee"
     "f403a8c30e28e79453e000000000000f87f000000000000f07f000000000000f0ff000000c00b5ae641000000c00b"
     "5ae6c1003d9160e458e14300000000000000800000000000f06f4066666666661660c0000000000000e0430000000"
     "00000f0432b69a4292b1b703e000000000002a0400000001c84d79741000000000000f8bf",
     "000000000000000000000000000000000000000000000000feffffffffffffffefff000000000000f0ff000000000"
     "0000000000000000000000000000000008000000000000000000000000000000080005ed0b20000000000a22f4dff"
     "ffffff0000e8890423c78a0000000000000000ff0000000000000080ffffffffffffff00000000000000800000000"
     "0000000000000000000000000010800000000000007e1f50500000000ffffffffffffffff"},
    {R"({"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<u4"})",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf",
     "000000000000000000000000feffffffefff0000f0ff000000000000000000800000000000000080005ed0b200000"
     "0800000000000000000ff00000080ffffff0000000000000000000000000108000008e1f505ffffffff"},
    {R"({"id": "astype", "encode_dtype": "<f2", "decode_dtype": "<i8"})",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be",
     "000000000000000000000000000000000000000000000080feffffffffffffffe0ff0000000000000000000000000"
     "080000000000000000000000000000000800000000000000080000000000000008000000000000000800000000000"
     "00008000000000000000800000000000000000ff0000000000000080ffffffffffffff00000000000000800000000"
     "000000080000000000000000000080000000000000000000000000080ffffffffffffffff"},
    {R"({"id": "astype", "encode_dtype": ">f8", "decode_dtype": "<f4"})",
     "3fb999999999999a3fd555555555555546293e5939a08ceac00400000000000040effdfccccccccd40effe0000000"
     "0003e45798ee2308c3a7ff80000000000007ff0000000000000fff000000000000041e65a0bc0000000c1e65a0bc0"
     "00000043e158e460913d008000000000000000406ff00000000000c06016666666666643e000000000000043f0000"
     "0000000003e701b2b29a4692b40a00200000000004197d7841c000000bff8000000000000",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf"},
    {R"({"id": "astype", "encode_dtype": "<f4", "decode_dtype": ">i2"})",
     "cdcccc3dabaaaa3ecaf24971000020c0e6ef7f4700f07f4777cc2b320000c07f0000807f000080ff5ed0324f5ed03"
     "2cf23c70a5f0000008000807f4333b300c30000005f0000805f59d980330010004521bcbe4c0000c0bf",
     "000000000000fffeffeffff00000000000000000000000000000000000ffff800000000000000801e108ffff"},
    {R"({"id": "astype", "encode_dtype": "<f2", "decode_dtype": "|u1"})",
     "662e5535007c00c1ff7b007c0000007e007c00fc007c00fc007c0080fc5b06d8007c007c01000068007c00be",
     "000000fee0000000000000000000ff800000000000ff"},
    {R"({"id": "astype", "encode_dtype": "<i8", "decode_dtype": "<f4"})",
     "0000000000000080ffffffffffffff7f00000000000000008c2557f3b7246b052bab20e604ae8365385d98c469012"
     "63e98f09c9384aaa5145fc3d3d4e1e638edbe5b1df267ebd060f0a3d85f5fa461e98f35e2b6b9f8396cdb83b5184e"
     "549791f50a853f3b4614ee3201a92959ecfe04886a928a82af70739304ebbe937c41c0",
     "000000df0000005f000000009764ad5c5c07cb5e0698785e542da55dc93896ddd7a1c15eddf2b4ddf173d85e57d1d"
     "cdece5d8fdd8bdd9f5c5fe1e65e0efa7ede"},
    {R"({"id": "astype", "encode_dtype": "<u8", "decode_dtype": "<f4"})",
     "0000000000000000ffffffffffffffff000000000000000001b682225ceb2ea1b0b2cbebdc33b8f80cbf564cb39c2"
     "a558b53769e1763f565d2e329bb4b06f233bc2f422be3f0fa0cdd682f78c6268136c5d5ae4ceedf5bea752175d0b8"
     "4d15d704b6df97679fc61c2a4527bf1f43919a9622a5e8199fac7ab4b3532c86443d98",
     "000000000000805f00000000eb2e215f34b8785f3955aa5ec6eacb5e19c84f5e0eaf4f5d9b045a5ee05b6a5f4e155"
     "75ffb34e65d43911a5f3e59f55e453d185f"},
    {R"({"id": "astype", "encode_dtype": "<i8", "decode_dtype": "<f2"})",
     "0000000000000080ffffffffffffff7f0000000000000000355049c1e34a41f72dc9023cb637cb2025aa8269e52e9"
     "e2289eb1d17206013af2a6828bc7b69d68faba177ada22a59e9596dd200d3799743cacb25b30760b25073813de54e"
     "93e03a771450d7f0fffa9c917d1febcb9fd16915b4afb1e844524d854fc5bda361b060",
     "00fc007c000000fc007c007c00fc00fc00fc007c007c007c00fc007c007c007c"},
    {R"({"id": "astype", "encode_dtype": "<i4", "decode_dtype": "|u1"})",
     "00000080ffffff7f000000007815676a966212ccac66f18b559b92ab4f02c1872c033eef0ad92c8534f84ac2b572b"
     "5c04d84eb34c644a2bf66082873f03700b0",
     "00ff007896ac554f2c0a34b54dc666f0"},
    {R"({"id": "astype", "encode_dtype": "<u8", "decode_dtype": "|i1"})",
     "0000000000000000ffffffffffffffff0000000000000000f692ea1bf9b47f2ad872651da12189ad21138f16c6316"
     "50543e4ab744787814f8136f091732237f0f0f488db5b58d489ae7893a42831c4cf9bc5f86fb46574a8992a6637da"
     "295a9cdd09ab3c86eff5307316edc2c2880b93836474609de3280ac9f4a43ce2e039cd",
     "00ff00f6d8214381f0ae9b99dd7383c9"},
    {R"({"id": "astype", "encode_dtype": ">i8", "decode_dtype": "<f8"})",
     "80000000000000007fffffffffffffff0000000000000000d6b26d5e9423d7dfd168a856d788087b9cdb0551273a0"
     "f442069a1d74d24ad2f4c26380f2050ead2d0500ce64d7855fc5ce110e6a9a9cfdc4c1082656f817a14a10f2f234e"
     "13a4634450e1b6d41991a861f36e76c02ee410b2811c497f89397912da25f995c40dea",
     "000000000000e0c3000000000000e043000000000000000014eeb550c9a6c4c3fc3b94d4ab4bc7c37c31b6ab3ec9d"
     "8c35792a6ebd034c0433b14c8038e09d343d543d98cf9d7c7c3746aaa394438d7435fe05b992004d343177b2c3734"
     "bcd7c36406b56d3814d143b90bb09ddb7cd843b21da0edb85fd3c30ec495f925dab243"},
    {R"({"id": "astype", "encode_dtype": "<u8", "decode_dtype": "<f8"})",
     "0000000000000000ffffffffffffffff00000000000000009e702374f5d743a941891c0debc8c7a11468a1e9ce28e"
     "ad2da8779af1c02b3cd3c55975cb14bc1535b0965151118d8b82da57c50f4a005de66fa48776a3998e4ef7b622332"
     "df582993c2d05818f7d5069060e97d0d519ba6f43a61a93206f536f1a50b2ace474f90",
     "0000000000000000000000000000f04300000000000000006e84aefe7a28e54391a3611df938e4432d34dd19455de"
     "a4331ef954360b6e943d52557ec52f0d443a1ac2202031be743950f8a1eb4c0eb431fe94e2d0793ec433eb111996f"
     "acc4430a436361dc579b432cbdaf216ad3e4439db05419837acb437541c5f9e809e243"},
    {R"({"id": "astype", "encode_dtype": "|i1", "decode_dtype": "<u8"})",
     "807f00222c355e716bcfd265c4979be1",
     "80ffffffffffffff7f00000000000000000000000000000022000000000000002c000000000000003500000000000"
     "0005e0000000000000071000000000000006b00000000000000cfffffffffffffffd2ffffffffffffff6500000000"
     "000000c4ffffffffffffff97ffffffffffffff9bffffffffffffffe1ffffffffffffff"},
    {R"({"id": "astype", "encode_dtype": "<i2", "decode_dtype": ">f2"})",
     "0080ff7f0000b5c0d31dad61b657ddf4a3ad2c7e18a341282af05918381fe199",
     "f80078000000f3e96f75761b757be992f52677e3f5ce7108ebeb6e166fcef662"},
    {R"({"id": "astype", "encode_dtype": "<f8", "decode_dtype": "<f2"})",
     "6d69aaa59d9e54c0619008ce7a4354400bd01386772b72c06304c16b470a924041fa5c27fa7835c09b0806d3d430a"
     "1c0f8d9579594a085c09f35c4b92fc39ec062f7fe77e066a9c0745d803cec9080c0716758493dd6944046be861559"
     "8f47404906eccd2e5292c05007805499658dc0d272a1f273aa9140116a834c0db4634057ebc225e7ff4740858e8ae"
     "51bbb4ac0970749c53b334340b12ad3c33e2b89409c3b32d3894481403ad610e78cf66a405169bb32794b90c0ae23"
     "4680bdf17f4096ca0604fa6185c049fedcf861179140372c9c0a34dc93c0d467a309df3361c09674fe99e26e1dc0e"
     "a613a0b95b294c0bf6b9bf6e2e79a4071b39887a0d19640c3ba691657f97cc0079573f2c41d88400a366e2ed1aa77"
     "4064c6fa711e6ba4c0dcf0a18cbc4c6f40f981d7ce0aac4ec0ea318c1ee9cd544069b1fbea7fd390c06e6d56808dd"
     "570c0cb0b25ca474866c085167a7a609092402dcd463dd5e67440bdee62d6593816c0b4e22147e1e397408f9499c2"
     "fb5981c063715d87e25678c07c45b12105639cc012daf7626c84984068eaa7b0a8228e40b19a8fcbc8a68c406ed6b"
     "00430e784405cfed47582895b40bebac863a5ef6a40e3d1cafc35806fc0667701b0367369c0ed7fa6bfdc264b404f"
     "b87a6b519f974074c4a9d2805d8140b62d9f66e53a4dc026c657eb221b82c05dd4f7e6fcd783c0a2e472eed10a994"
     "0049db732ffaa7f4061b3ec583ce35040a82f51d3e8a275c0f68b8eb1365491c0fd34f1c123b750c03b8993a7434d"
     "8b4063ce2390988878c014bf6c3dc3676cc0725f306819a16bc01a7b12200a665b407342cc230be498c0a0cb9e4cb"
     "f6c6dc0b0056c052ab38ac0e15b8d25aea48b40a357f016ca1488c04f7d0cbd5f088240ec8b9bf3bfd197403e0745"
     "498a9973c04dc4122a9ccc82c0ea3e1711d5ed6740f6abbbd3723b00c04c988347ee0c8fc04c4640edb5ce7c40757"
     "f5270107e9f407b398cbbca2170c0985354cc095c69c04cf16264ba5390c0f8cf504c6af173403d2373a7e77b93c0"
     "9b95725eb94b91c0796a4f49abfe934023999add9f4b8cc09aa0a7266ee59040012c8b986ed1974052a2792b39357"
     "040c95ed197214b814067bf61f700819e40f152d9114f9768c03f5544df0b8882c0f8173f9cec2495c0d999d99b81"
     "da44406ae706ac931c9740e8ea5257c3fc8d4058d1c7dcba708dc094233dc900bb8ac0de38fa5abd827fc0f6e1de1"
     "04a4472401d2df935f7a969c0790698b886ce6a403ac9127ed48b7240dac86c9c60ac72c05107ecb7431644c06538"
     "10c1f4d26940a173689f0ffe54c04531887655787f40f529b9ca803b9d40ede83c3dc77f82406b4f16fcbfe74b40d"
     "d0f677879589ac002ec6c39503f7840820593b1b66a9ec029377be7220496c0def965301db58a40887c3567e11186"
     "40a9ee43460cbe62c03442695f0bb89ac0e3847286933577c0ea7e6113e83585c0ee6b1bd9b9e68340d4a9580876a"
     "3a14034d2ac8ec61d6b407d96b1307d5a88c0551c5cc4344a92c0b42f6864110c4cc04a085dd7611966c0971f8e9e"
     "13fe91c065137c2ebc165d4066692172a7fb91c087e4a3d86d609140dc5a67389a9a9040fd9ab04b01f390409bd04"
     "4bacea07dc083d5191d2a1480403f810263398260c00ae01834fe4c78c0a559959c543275c08dc58870dc4e94c0f1"
     "5cb26c748f96c0912d14b184d288400cf6cc6d88e767c0ed596461980d6b40354f24e0ae4d8f40b003c6ac87149bc"
     "0a50a24640a8188c04078a409b7ea6540b9cb053f84817840285ee7f2309177c089bec688b7149040c0a6c156a34c"
     "6a40c2a0664f87f592c0542a96361c168dc0bb565dbbc42b894032ed48a54dfd7c405d2a70b53eac9dc071072f66d"
     "90e9540c601145c37b0824090ad2a385ffd9440f0fd12cf36fb77c03c61bdae4c7b72c0a969060ed49991c098c79d"
     "f0dbd1a340eb96b80389ee65c0c5e91afd21ce984049c0c0f0563a84c0090a2f0ceb7a6440174b3df2681d9ac0a3a"
     "062d7dfed77c0c24c6a0d0abe8e40e03acaaaf98e93c01d128a01e9c09040e2b9fd17ce137540507147bfcd4f90c0"
     "a5817b6c8e597fc0bf5d04030db17cc0344f6baa79c248c08eca9dd726c180c0d0dfef9e4dda89c0ae8ec03a67097"
     "3c06a4fa3178f0b90c0efe3db351b2694c0efb592fa961648c096b1f769fe968b405b2b44a07ce597c044fff8b6b1"
     "100c405cc17549a64f84c0eec8f1da29898ec07cfd46c7dbe5e13eec22ecfecdbbd5bea4ca2e27f26bef3e2292930"
     "fbb5ae0bea1d922970836d03ee217e38add10c3bebd6de85d3fa0dfbe6eb94edb1ca6d83e96c777697300babee71d"
     "659eec4cd93e955cb37b9ebc9fbe225e777f6ec5e6bee2a57e32d71fb1bece509742ea6ea13ea9f40674b519e43e8"
     "ea4aaa37e01e3be4d454c3dd1649abe7069ae0d220ef2be65ddf77c5a53db3ea4fbdfe12aaee6be247e94cfe8f0f2"
     "befc9af7f4afdea3be9176fcd51930e73e09438eee4ff8efbe576cd2b858d1e6be93419f76da2cdfbe35a4c75ef0a"
     "fe7bea86829e026d4cf3e7d11fd5d85eee0be5c941a9b3443debe47f4c5ab3177d83e1724e4cd46b0dfbef2f1dbdf"
     "f026d23e856c4a9d155fe4befed3127d9e6be9beaa93b425ff3ef3be46f7efd02084f33e1a600da682ddcabe7da94"
     "fdf6d76c43ef79db0d843d694beea3a481e4ed6ba3ef3a57e3c09aca03efcf3aac35402f43e88ff7dd5b1c9e5be97"
     "ac46cfc754f0be920026c7ea38e5bec2ee4b18aafdebbefeb3d0a77154df3ed78ac7395f34e13e517d5a060629e4b"
     "e0b3a3f61d828edbe5e48663a33c3cdbe449b68198a2ced3edd6aa159b990fdbefd20dca39c16d63e1496fdb96a8f"
     "e6bef6d5edb76dd1e53e575331620f9be6be9497971a42f1c7be4620773bc696efbe64f662f69c7ee4be7cccadd72"
     "a10ed3e840d20c27235e13e5b186e02e1d8d0bef1ff8bccb33fe2beda0fc75aa6dbf3bead2a8954db82d0beae9914"
     "6c23bd94be9c1e47e03634acbe37d4da4eaa78afbe47325f69ab86e7be64d6cb26e23ca6be6c9d283809f499be5cf"
     "a6af5a610eb3ea0363e76f992f33e1dee9c47a2fbb6beb05933e11212e0be91263a25eccda5be11bbc0a4487cd9be"
     "baae7d88d223dfbee55eed7a02aea3be5c6e13b132e1e5be6df0298d056cd93e8358dd8b236fb1bef21ec133e3f8c"
     "43ef995a4f736b1bebee2fa81cdd580debed0f1c0b251e1e3be0bccf4a076e7c3be5d39feed4404d7be83ba962dfe"
     "9ec33ef8dd63f1e2ca67bead2e2e23d491ecbea320defbac85a63e00eacc4d6d29ecbed0d536cb60dbd9beb9177f1"
     "432b1c8beeceefaefc4c2f5beefd31a0f6eb4ae3e4505727caf54b93e403b69bb39ab413eb801aed4803c463edc60"
     "fc0b1a22523e1dbf7b8752c66e3e0055e05808691a3e60b90170c384473ed04433a04920453eac3ebdd1b75b5e3e4"
     "0afc8167ade0e3e9a7a88c5b5525d3eb0d21491a4da443eea8a8110c941513e426db866ac5b693e482441c4838f47"
     "3e1e656ef784bf633ed06ac92d05015a3ef0ab34c4e2b95a3e1b0f4f0099236a3e64edd578dc98443ede821376da8"
     "f6d3ee6c766237a976c3e52c4b2bde462653e308fa9c22851293ea9daa0ced239653e3973bf570c36633e9e736b2a"
     "e9b5683e98047952d55e4b3e8a52c376e4816e3edd710120ba5b6c3ee8dd247282463d3e7ab3916a442c543e1052a"
     "954869c203e2d54db9b1e976a3e6ac435c774486d3efa017e7384ac6f3e5b044cc6e394633e986b18fdc04f653ece"
     "5179857fb5653e68632ceea73e623e155f069d3f7a6e3eb0a53c649973633ef41bb111897c553ecf358c877d69603"
     "ee0740e555c1c133e17a8aced0a2c673e365708f99934663ed455667c80f25a3ec1379745553f6b3e7c731e10452d"
     "683e66dac58e3d8c553ea834872de8d6333e3888b51fafec403eb4e9467f3b96473ef858d19a6473533e5e49fefd1"
     "8a45c3e5cc951e125b26d3e48e3804d99d1513e4a966db836c16c3e591f379f58c6653e4a1bac5fd04f6b3e26e88b"
     "53e7ce593e00c3686bd3d7ea3d27ed622dd62e693e9cd678b0c06b4f3e94e50998ca3c423e65df81676f95693e348"
     "d418067f6653e389465da6b304b3e1aa8ce790f20513e3c4b78bf160e6e3ea65730e7b92f513ecced56e41b7a663e"
     "f428b6663395403efc106a1ac6146a3ef01b8404611a3e3e6b425dae6883603e20afb2740b08223e7b4c72523e9a6"
     "13e8fd5043686176b3eb0088110249b353e2c7ecc776b8d513ea7fe57965d78683ed5485a9b8a75633e4e37fa50dd"
     "04543e89a75207fb1f643e0087d750f9195d3e2794d62a6c986b3edafe3a0187bf523e60f6f63f543f683e7dfe5d5"
     "37157643e7170667297b1673e78eb0a337035583eeea68f908d32673e515f85af8159663ed43bc9359ecc583e8084"
     "7c204b161b3ec56c6a972fd06e3e5bf4717fd0d5663edc4d9d43e0344a3e55fb3ccfc562673e0000000000c003bf0"
     "0000000004003bf0000000000c002bf00000000004002bf0000000000c001bf00000000004001bf0000000000c000"
     "bf00000000004000bf000000000080ffbe000000000080febe000000000080fdbe000000000080fcbe00000000008"
     "0fbbe000000000080fabe000000000080f9be000000000080f8be000000000080f7be000000000080f6be00000000"
     "0080f5be000000000080f4be000000000080f3be000000000080f2be000000000080f1be000000000080f0be00000"
     "0000000efbe000000000000edbe000000000000ebbe000000000000e9be000000000000e7be000000000000e5be00"
     "0000000000e3be000000000000e1be000000000000debe000000000000dabe000000000000d6be000000000000d2b"
     "e000000000000ccbe000000000000c4be000000000000b8be000000000000a0be000000000000a03e000000000000"
     "b83e000000000000c43e000000000000cc3e000000000000d23e000000000000d63e000000000000da3e000000000"
     "000de3e000000000000e13e000000000000e33e000000000000e53e000000000000e73e000000000000e93e000000"
     "000000eb3e000000000000ed3e000000000000ef3e000000000080f03e000000000080f13e000000000080f23e000"
     "000000080f33e000000000080f43e000000000080f53e000000000080f63e000000000080f73e000000000080f83e"
     "000000000080f93e000000000080fa3e000000000080fb3e000000000080fc3e000000000080fd3e000000000080f"
     "e3e000000000080ff3e000000000040003f0000000000c0003f000000000040013f0000000000c0013f0000000000"
     "40023f0000000000c0023f000000000040033f0000000000c0033f",
     "28d511558bdc83645ecd4ce868e1b1e75aea24e03665e45195e459e36b64ed580052afd2cd504b625160be5a13e4f"
     "c5f58e14664f7e44dd85cc72de5ba66b4653edf0762eb5d1be9d35babd3335535e435dc92d9a4643a5d8ec5f96556"
     "e016de19e7216689632a633a61e256bc5ae0db5ddaca52e86557604fd387e0f6e04366eb5f395469dd55e42ed4d36"
     "222de1adbe8dada5639e65bdbade2e96205e28260f465e6dcb3e0fb590fc0c3e3345fe06708dc57da15e4fc5cdfe4"
     "53e4006513e33964f4650d5c5360a06726daa2e049e53751c7657f635ce3afe2e1df915c6adab45aa35cabdc06d17"
     "55a40d5de5f4f67a060fa5296e6105e9be781e5ad628461b0d8aee6cddd4de1fa606968c75a17e293e403d386d980"
     "e446577fe4586427643d6468df056021d813de4ddd14e5a4e53562fad9c35ad363c5e620e27b59205ee4dd0564935"
     "abde446e34b623f5f6be74465ac603f65ffdd9fdc66e4f4687cd934660fe11f5987e6fbddb063e4e43064455d14e4"
     "d6df2cdf31d230e077e2c2dc03e40ae506d2e662f9e5044314e1a2e38f005780fb008380410026807f8063001a806"
     "5000880b68011800900a1009880078021816d00b5802f810a80ba000081b7807d80bd8040008780798062007f8049"
     "00a380cb80348138013680290005801b0008004001ae800581aa80e0807d008a00a180e9803c80e900d9815800b48"
     "0af00b5803080fd80a480e9008a00438092803e81428005800e801080bc800b800680d9003901178081800b806680"
     "7d800a80af80660011802a001f807a809f8028805c8027000180e5800b00e180678031805c810f001900000000000"
     "000010000000000000000000000000000000000010000000100000000000100000001000100010000000100010001"
     "000000010001000000000000000100010001000100010001000100010001000000010000000100010000000100010"
     "000000000000000000000000001000000010001000100000000000100000000000100010000000000010000000100"
     "000001000000010000000100010000000000010001000000010000000100000001000100010000000100010000000"
     "000010001000000010078826882588248823882288218820882f881e881d881c881b881a881988188817881688158"
     "8148813881288118810881f880e880d880c880b880a88098808880788068805880488038802880188008800800180"
     "028003800480058006800780088009800a800b800c800d800e800f800080118012801380148015801680178018801"
     "9801a801b801c801d801e801f80108021802280238024802580268027802"},
    {R"({"id": "shuffle", "elementsize": 4})", "7656207dfcca5747256fb0dc661623789c81820d68a121dc",
     "765766825647160d202523687d6f78a1fcb09c21cadc81dc"},
    {R"({"id": "shuffle", "elementsize": 1})", "a216eb6a74", "a216eb6a74"},
    {R"({"id": "shuffle", "elementsize": 3})", "8dfec3617bccba4942e0d299",
     "8d7b42fecce0c3bad2614999"},
    {R"({"id": "shuffle", "elementsize": 8})",
     "5daa344e1b8f56825167b71366425ed5858431386f45ea9ac4376745f57c612f2ab4472ca617dab41d1325104bd7e"
     "7cb65f53d77027c407433aae2361b97685b",
     "5d5185c42a1d6533aa678437b413f5aa34b7316747253de24e1338452c1077361b666ff5a64b021b8f42457c17d77"
     "c97565eea61dae7406882d59a2fb4cb745b"},
    {R"({"id": "shuffle", "elementsize": 2})", "", ""},
    {R"({"id": "shuffle", "elementsize": 0})", "701020bda256fe", "701020bda256fe"},
};

TEST(FiltersCodec, BitExactWithNumcodecs) {
  int n = 0;
  for (const Golden& g : kGolden) {
    SCOPED_TRACE(g.config);
    auto codec = make(json::parse(g.config));
    ASSERT_TRUE(codec);
    const Bytes want = from_hex(g.decoded);
    EXPECT_EQ(to_hex(decode_all(*codec, from_hex(g.encoded), want.size())), g.decoded);
    ++n;
  }
  EXPECT_GT(n, 60);
}

// ---- errors and configuration ------------------------------------------------------------------

TEST(FiltersCodec, SizeErrors) {
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

  auto shuffle = make({{"id", "shuffle"}, {"elementsize", 4}});
  auto s = shuffle->decode(Bytes(10), std::nullopt, scratch);
  EXPECT_EQ(s.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.status().message().find("not a multiple of elementsize 4"), std::string::npos);
  EXPECT_EQ(shuffle->decode(Bytes(8), 12, scratch).status().code(), ErrorCode::kCorruptData);
  auto copy = make({{"id", "shuffle"}, {"elementsize", 1}});
  EXPECT_TRUE(copy->decode(Bytes(7), 7, scratch).ok());
  EXPECT_TRUE(copy->decode(Bytes{}, std::nullopt, scratch).ok());
}

TEST(FiltersCodec, RandomInputNeverCrashes) {
  std::mt19937 rng(3);
  const json configs[] = {{{"id", "delta"}, {"dtype", "<f2"}, {"astype", ">u8"}},
                          {{"id", "fixedscaleoffset"},
                           {"offset", 1},
                           {"scale", 0},
                           {"dtype", "|u1"},
                           {"astype", "<f4"}},
                          {{"id", "astype"}, {"encode_dtype", "<f8"}, {"decode_dtype", ">u8"}},
                          {{"id", "shuffle"}, {"elementsize", 3}}};
  for (const json& cfg : configs) {
    auto codec = make(cfg);
    ASSERT_TRUE(codec);
    for (int iter = 0; iter < 200; ++iter) {
      Bytes in(rng() % 200);
      for (auto& b : in) b = static_cast<std::byte>(rng());
      Buffer scratch;
      auto r = codec->decode(in, std::nullopt, scratch);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
      }
    }
  }
}

TEST(FiltersCodec, Configuration) {
  const ChunkSpec spec;
  const auto& v2 = CodecRegistry::v2();
  // Defaults and spellings numcodecs accepts.
  EXPECT_TRUE(v2.create("delta", {{"id", "delta"}, {"dtype", "int16"}}, spec).ok());
  EXPECT_TRUE(
      v2.create("delta", {{"id", "delta"}, {"dtype", "i4"}, {"astype", nullptr}}, spec).ok());
  EXPECT_TRUE(v2.create("shuffle", {{"id", "shuffle"}}, spec).ok());
  EXPECT_TRUE(v2.create("astype",
                        {{"id", "astype"}, {"encode_dtype", "<f2"}, {"decode_dtype", "float32"}},
                        spec)
                  .ok());

  auto code = [&](std::string_view id, const json& cfg) {
    return v2.create(id, cfg, spec).status().code();
  };
  EXPECT_EQ(code("delta", {{"id", "delta"}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("delta", {{"id", "delta"}, {"dtype", 4}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("delta", {{"id", "delta"}, {"dtype", "<i3"}}), ErrorCode::kUnimplemented);
  EXPECT_EQ(code("delta", {{"id", "delta"}, {"dtype", "xyz"}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("delta", {{"id", "delta"}, {"dtype", "<i4"}, {"level", 1}}),
            ErrorCode::kInvalidMetadata);
  auto unsupported = v2.create("delta", {{"id", "delta"}, {"dtype", "<c8"}}, spec);
  EXPECT_EQ(unsupported.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(unsupported.status().message().find("'<c8'"), std::string::npos)
      << unsupported.status().message();
  EXPECT_EQ(code("delta", {{"id", "delta"}, {"dtype", "|b1"}}), ErrorCode::kUnimplemented);
  EXPECT_EQ(code("delta", {{"id", "delta"}, {"dtype", "<M8[ns]"}}), ErrorCode::kUnimplemented);
  EXPECT_EQ(code("fixedscaleoffset", {{"id", "fixedscaleoffset"}, {"scale", 1}, {"dtype", "<f8"}}),
            ErrorCode::kInvalidMetadata);  // offset is required
  EXPECT_EQ(code("fixedscaleoffset",
                 {{"id", "fixedscaleoffset"}, {"offset", "1"}, {"scale", 1}, {"dtype", "<f8"}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("astype", {{"id", "astype"}, {"encode_dtype", "<f4"}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code("shuffle", {{"id", "shuffle"}, {"elementsize", "4"}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(CodecRegistry::v3()
                .create("numcodecs.shuffle", {{"elementsize", 4}, {"x", 0}}, spec)
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
  // Only the byte shuffle is bytes→bytes in Zarr v3.
  EXPECT_FALSE(CodecRegistry::v3().contains("numcodecs.delta"));
  EXPECT_FALSE(CodecRegistry::v3().contains("delta"));
}

}  // namespace
}  // namespace zarrflow
