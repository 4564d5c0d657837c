#include <gtest/gtest.h>

#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/checksum_test_util.h"

namespace zarrflow {
namespace {

using namespace checksum_test;
using json = nlohmann::json;

// numcodecs.JenkinsLookup3(initval=0 / 12345).encode(pattern(kind, n)).
const Golden kInitval0[] = {
    {0, 0, 0xDEADBEEFu},    {0, 1, 0xA46F3A98u},    {0, 2, 0x111931DEu},    {0, 3, 0x046E7A60u},
    {0, 4, 0x5C2A6FA5u},    {0, 5, 0x94D4AF51u},    {0, 6, 0xC6210D0Au},    {0, 7, 0x50038CF8u},
    {0, 8, 0x8DD72A95u},    {0, 9, 0xEBBC3DDEu},    {0, 10, 0xCE4D1F75u},   {0, 11, 0x8A45901Bu},
    {0, 12, 0x0D9AC26Bu},   {0, 13, 0x7B4F42A3u},   {0, 14, 0x3F894A89u},   {0, 15, 0x156E0BAFu},
    {0, 16, 0xB6053F87u},   {0, 17, 0x821232A4u},   {0, 18, 0x74C00EB8u},   {0, 19, 0x5D1A8074u},
    {0, 20, 0x155A5B8Fu},   {0, 21, 0x1A69E91Du},   {0, 22, 0x58654F38u},   {0, 23, 0x4411F97Au},
    {0, 24, 0xAFDE0F53u},   {0, 25, 0xBABF105Du},   {0, 719, 0x630F1D95u},  {0, 720, 0xBC02ABD8u},
    {0, 721, 0x10DA31A9u},  {0, 1000, 0x69AAA960u}, {0, 5000, 0x53383F4Cu}, {1, 0, 0xDEADBEEFu},
    {1, 1, 0x2C43362Bu},    {1, 2, 0x8DBA7AE2u},    {1, 3, 0x7E1EB2BAu},    {1, 4, 0x9B11C75Bu},
    {1, 5, 0xDDDD9326u},    {1, 6, 0xE3CA64E2u},    {1, 7, 0xE91BE688u},    {1, 8, 0x52648E85u},
    {1, 9, 0xF6AE1CA7u},    {1, 10, 0xB6BB33B9u},   {1, 11, 0x93143CD8u},   {1, 12, 0x6E0964A9u},
    {1, 13, 0xBAF67575u},   {1, 14, 0x580021A0u},   {1, 15, 0xC4C8C468u},   {1, 16, 0x9D82926Fu},
    {1, 17, 0x5A060F6Du},   {1, 18, 0xD1EEBB12u},   {1, 19, 0xE8D6CCB6u},   {1, 20, 0xCDED23FCu},
    {1, 21, 0x3B4896B2u},   {1, 22, 0xBA9CD323u},   {1, 23, 0xF8D760C7u},   {1, 24, 0x088527C4u},
    {1, 25, 0x4097F0C7u},   {1, 719, 0x8EFCED3Eu},  {1, 720, 0x873C0D3Fu},  {1, 721, 0xE126D105u},
    {1, 1000, 0x5AFEEA26u}, {1, 5000, 0x7A93CCE8u},
};
const Golden kInitval12345[] = {
    {0, 0, 0xDEADEF28u},    {0, 1, 0x483195A9u},    {0, 2, 0xA9633EF0u},    {0, 3, 0x66599D46u},
    {0, 4, 0x3689A499u},    {0, 5, 0x376FC85Du},    {0, 6, 0x14C3D816u},    {0, 7, 0xF90D8149u},
    {0, 8, 0xE49EB25Eu},    {0, 9, 0x3E0DDA57u},    {0, 10, 0x36DE6735u},   {0, 11, 0x419EDE8Du},
    {0, 12, 0xD8532748u},   {0, 13, 0xB6EED6BBu},   {0, 14, 0x978AE01Bu},   {0, 15, 0x6A1AA743u},
    {0, 16, 0x7496F6E7u},   {0, 17, 0xDEC04213u},   {0, 18, 0x846888DCu},   {0, 19, 0xCF757A4Fu},
    {0, 20, 0x36CA3665u},   {0, 21, 0xA2CE201Du},   {0, 22, 0x69C0E8F2u},   {0, 23, 0x6FD0439Du},
    {0, 24, 0xDF47F683u},   {0, 25, 0x9E3FA172u},   {0, 719, 0xC5B9CF3Fu},  {0, 720, 0xDE3EDAF1u},
    {0, 721, 0xA4639926u},  {0, 1000, 0xF08C0614u}, {0, 5000, 0xF6D46743u}, {1, 0, 0xDEADEF28u},
    {1, 1, 0x6777ED1Eu},    {1, 2, 0x0B28EF4Eu},    {1, 3, 0x326B4C25u},    {1, 4, 0xA9AE760Bu},
    {1, 5, 0x3A9D70E2u},    {1, 6, 0x6D3E00D5u},    {1, 7, 0x2F41AA9Eu},    {1, 8, 0x41163B19u},
    {1, 9, 0x8892655Au},    {1, 10, 0xCC240323u},   {1, 11, 0xD2ECBA93u},   {1, 12, 0x534FF24Fu},
    {1, 13, 0xE63DB0A9u},   {1, 14, 0x64EBFD49u},   {1, 15, 0x70C197CCu},   {1, 16, 0x6B7E2584u},
    {1, 17, 0xA012F327u},   {1, 18, 0xDE7037CCu},   {1, 19, 0x7E589085u},   {1, 20, 0xE026BB16u},
    {1, 21, 0x9D8E1959u},   {1, 22, 0x6BA0158Du},   {1, 23, 0xEA41BC04u},   {1, 24, 0x73B559B7u},
    {1, 25, 0xAE84AFA3u},   {1, 719, 0x09169AD7u},  {1, 720, 0x2FBFF46Au},  {1, 721, 0x0FC3FD53u},
    {1, 1000, 0xF1D4E41Bu}, {1, 5000, 0xE29BA6C3u},
};

TEST(JenkinsLookup3Codec, BitExactWithNumcodecs) {
  auto codec = make(CodecRegistry::v3(), "numcodecs.jenkins_lookup3", json::object());
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "jenkins_lookup3");
  expect_checksum_codec(*codec, kInitval0, /*at_start=*/false);
  auto seeded = make(CodecRegistry::v2(), "jenkins_lookup3",
                     {{"id", "jenkins_lookup3"}, {"initval", 12345}, {"prefix", nullptr}});
  ASSERT_TRUE(seeded);
  EXPECT_EQ(seeded->describe(), "jenkins_lookup3(initval=12345)");
  expect_checksum_codec(*seeded, kInitval12345, /*at_start=*/false);
}

TEST(JenkinsLookup3Codec, PrefixIsHashedFirst) {
  // With prefix p, the hash covers p followed by the payload.
  const Bytes whole = pattern(0, 30);
  const Bytes payload(whole.begin() + 3, whole.end());
  auto codec = make(
      CodecRegistry::v2(), "jenkins_lookup3",
      {{"id", "jenkins_lookup3"},
       {"prefix",
        {static_cast<int>(whole[0]), static_cast<int>(whole[1]), static_cast<int>(whole[2])}}});
  ASSERT_TRUE(codec);
  const Bytes enc = framed(payload, jenkins_lookup3(whole, 0), /*at_start=*/false);
  Buffer scratch;
  EXPECT_TRUE(codec->decode(enc, payload.size(), scratch).ok());
}

TEST(JenkinsLookup3Codec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  auto code = [&](const json& cfg) {
    return v2.create("jenkins_lookup3", cfg, {}).status().code();
  };
  EXPECT_EQ(code({{"id", "jenkins_lookup3"}, {"initval", -1}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "jenkins_lookup3"}, {"prefix", "abc"}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "jenkins_lookup3"}, {"prefix", {300}}}), ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
