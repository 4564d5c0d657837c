#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "zarrflow/codec/filter_test_util.h"

namespace zarrflow {
namespace {

using namespace filter_test;

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

// numcodecs.get_codec(config).decode(encoded): integer extremes and random integers, and floats
// including NaN, ±inf, -0, float16 boundaries, exact float16 midpoints, and values outside every
// integer range.
const Golden kGolden[] = {
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
};

TEST(FixedScaleOffsetCodec, BitExactWithNumcodecs) { expect_golden(kGolden); }
TEST(FixedScaleOffsetCodec, RandomInputNeverCrashes) {
  expect_random_input_safe({{"id", "fixedscaleoffset"},
                            {"offset", 1},
                            {"scale", 0},
                            {"dtype", "|u1"},
                            {"astype", "<f4"}});
}

TEST(FixedScaleOffsetCodec, Configuration) {
  const ChunkSpec spec;
  auto code = [&](const json& cfg) {
    return CodecRegistry::v2().create("fixedscaleoffset", cfg, spec).status().code();
  };
  EXPECT_EQ(code({{"id", "fixedscaleoffset"}, {"scale", 1}, {"dtype", "<f8"}}),
            ErrorCode::kInvalidMetadata);  // offset is required
  EXPECT_EQ(code({{"id", "fixedscaleoffset"}, {"offset", "1"}, {"scale", 1}, {"dtype", "<f8"}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_TRUE(
      CodecRegistry::v3()
          .create("numcodecs.fixedscaleoffset",
                  {{"offset", 10}, {"scale", 100}, {"dtype", "float64"}, {"astype", "int16"}}, spec)
          .ok());
}

}  // namespace
}  // namespace zarrflow
