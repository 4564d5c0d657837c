#include <gtest/gtest.h>

#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/checksum_test_util.h"

namespace zarrflow {
namespace {

using namespace checksum_test;
using json = nlohmann::json;

// numcodecs.CRC32().encode(pattern(kind, n)): zlib.crc32.
const Golden kGolden[] = {
    {0, 0, 0x00000000u},    {0, 1, 0x4C667A2Eu},    {0, 2, 0x03F5EE06u},    {0, 3, 0x45D3C3EBu},
    {0, 4, 0x159094FAu},    {0, 5, 0x0BC125C5u},    {0, 6, 0x206B2EE6u},    {0, 7, 0xFF206B2Eu},
    {0, 8, 0xF7921D46u},    {0, 9, 0xC04294C0u},    {0, 10, 0x717EAD6Du},   {0, 11, 0xAA745882u},
    {0, 12, 0x09135203u},   {0, 13, 0xE7BE5425u},   {0, 14, 0xA88F0B71u},   {0, 15, 0xA4762116u},
    {0, 16, 0xEA7E5B68u},   {0, 17, 0x293CDDB3u},   {0, 18, 0xABF76BF4u},   {0, 19, 0x301162F2u},
    {0, 20, 0x1AE5AF6Fu},   {0, 21, 0xE0C066C1u},   {0, 22, 0x4C86BA48u},   {0, 23, 0xA54959A1u},
    {0, 24, 0xE1A4BB31u},   {0, 25, 0x655E170Du},   {0, 719, 0x9EF2A721u},  {0, 720, 0x24253B71u},
    {0, 721, 0x3B456F83u},  {0, 1000, 0x1ED57BB9u}, {0, 5000, 0x09D9A1FBu}, {1, 0, 0x00000000u},
    {1, 1, 0xFF000000u},    {1, 2, 0xFFFF0000u},    {1, 3, 0xFFFFFF00u},    {1, 4, 0xFFFFFFFFu},
    {1, 5, 0xD2FD1072u},    {1, 6, 0x41D9ED00u},    {1, 7, 0xFF41D9EDu},    {1, 8, 0x2144DF1Cu},
    {1, 9, 0xEB201890u},    {1, 10, 0x0FE4B35Cu},   {1, 11, 0x9DD2F96Cu},   {1, 12, 0xBB99FF8Au},
    {1, 13, 0xF2D6F3C1u},   {1, 14, 0x139124D5u},   {1, 15, 0x09AAB77Fu},   {1, 16, 0x3FB3C61Au},
    {1, 17, 0x025D4ABCu},   {1, 18, 0x3DD5A2EDu},   {1, 19, 0x21864B67u},   {1, 20, 0x2CF772B0u},
    {1, 21, 0x344D44FEu},   {1, 22, 0xA531925Fu},   {1, 23, 0x04717DF7u},   {1, 24, 0xDCDD16C2u},
    {1, 25, 0x8AB67E8Au},   {1, 719, 0xE359EC9Du},  {1, 720, 0x715DB615u},  {1, 721, 0x92ACB95Du},
    {1, 1000, 0xE0533230u}, {1, 5000, 0x338AE894u},
};

TEST(Crc32Codec, BitExactWithNumcodecsAtEitherEnd) {
  const auto& v2 = CodecRegistry::v2();
  auto start = make(v2, "crc32", {{"id", "crc32"}});  // numcodecs' default: at the start
  ASSERT_TRUE(start);
  EXPECT_EQ(start->describe(), "crc32");
  expect_checksum_codec(*start, kGolden, /*at_start=*/true);
  auto end = make(CodecRegistry::v3(), "numcodecs.crc32", {{"location", "end"}});
  ASSERT_TRUE(end);
  EXPECT_EQ(end->describe(), "crc32(location=end)");
  expect_checksum_codec(*end, kGolden, /*at_start=*/false);
}

TEST(Crc32Codec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  EXPECT_EQ(v2.create("crc32", {{"id", "crc32"}, {"location", "middle"}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v2.create("crc32", {{"id", "crc32"}, {"level", 1}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
