#include <gtest/gtest.h>

#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/checksum_test_util.h"

namespace zarrflow {
namespace {

using namespace checksum_test;
using json = nlohmann::json;

// numcodecs.Adler32().encode(pattern(kind, n)): zlib.adler32.
const Golden kGolden[] = {
    {0, 0, 0x00000001u},    {0, 1, 0x00080008u},    {0, 2, 0x009A0092u},    {0, 3, 0x0139009Fu},
    {0, 4, 0x0268012Fu},    {0, 5, 0x03AA0142u},    {0, 6, 0x058201D8u},    {0, 7, 0x077301F1u},
    {0, 8, 0x0A00028Du},    {0, 9, 0x0CAC02ACu},    {0, 10, 0x0FFA034Eu},   {0, 11, 0x136D0373u},
    {0, 12, 0x1788041Bu},   {0, 13, 0x1BCE0446u},   {0, 14, 0x20C204F4u},   {0, 15, 0x25E70525u},
    {0, 16, 0x2BC005D9u},   {0, 17, 0x31D00610u},   {0, 18, 0x389A06CAu},   {0, 19, 0x3FA10707u},
    {0, 20, 0x476807C7u},   {0, 21, 0x4F72080Au},   {0, 22, 0x584208D0u},   {0, 23, 0x615B0919u},
    {0, 24, 0x6B4009E5u},   {0, 25, 0x75740A34u},   {0, 719, 0x26136614u},  {0, 720, 0x8D1B6708u},
    {0, 721, 0xF49A677Fu},  {0, 1000, 0x1347EFECu}, {0, 5000, 0xCB10B954u}, {1, 0, 0x00000001u},
    {1, 1, 0x01000100u},    {1, 2, 0x02FF01FFu},    {1, 3, 0x05FD02FEu},    {1, 4, 0x09FA03FDu},
    {1, 5, 0x0EF604FCu},    {1, 6, 0x14F105FBu},    {1, 7, 0x1BEB06FAu},    {1, 8, 0x23E407F9u},
    {1, 9, 0x2CDC08F8u},    {1, 10, 0x36D309F7u},   {1, 11, 0x41C90AF6u},   {1, 12, 0x4DBE0BF5u},
    {1, 13, 0x5AB20CF4u},   {1, 14, 0x68A50DF3u},   {1, 15, 0x77970EF2u},   {1, 16, 0x87880FF1u},
    {1, 17, 0x987810F0u},   {1, 18, 0xAA6711EFu},   {1, 19, 0xBD5512EEu},   {1, 20, 0xD14213EDu},
    {1, 21, 0xE62E14ECu},   {1, 22, 0xFC1915EBu},   {1, 23, 0x131216EAu},   {1, 24, 0x2AFB17E9u},
    {1, 25, 0x43E318E8u},   {1, 719, 0x62B8CC50u},  {1, 720, 0x3016CD4Fu},  {1, 721, 0xFE64CE4Eu},
    {1, 1000, 0xE6E9E446u}, {1, 5000, 0x54B27596u},
};

TEST(Adler32Codec, BitExactWithNumcodecsAtEitherEnd) {
  auto start = make(CodecRegistry::v3(), "numcodecs.adler32", json::object());
  ASSERT_TRUE(start);
  expect_checksum_codec(*start, kGolden, /*at_start=*/true);
  auto end = make(CodecRegistry::v2(), "adler32", {{"id", "adler32"}, {"location", "end"}});
  ASSERT_TRUE(end);
  EXPECT_EQ(end->describe(), "adler32(location=end)");
  expect_checksum_codec(*end, kGolden, /*at_start=*/false);
}

TEST(Adler32Codec, Configuration) {
  EXPECT_EQ(CodecRegistry::v2()
                .create("adler32", {{"id", "adler32"}, {"location", 4}}, {})
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
