#include <gtest/gtest.h>

#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/checksum_test_util.h"

namespace zarrflow {
namespace {

using namespace checksum_test;
using json = nlohmann::json;

// numcodecs.Fletcher32().encode(pattern(kind, n)) (numcodecs cannot encode 0 bytes).
const Golden kGolden[] = {
    {0, 1, 0x07000700u},    {0, 2, 0x078A078Au},    {0, 3, 0x1C14148Au},    {0, 4, 0x1CA4151Au},
    {0, 5, 0x44BE281Au},    {0, 6, 0x455428B0u},    {0, 7, 0x870441B0u},    {0, 8, 0x87A0424Cu},
    {0, 9, 0xE8EC614Cu},    {0, 10, 0xE98E61EEu},   {0, 11, 0x707D86EEu},   {0, 12, 0x71258796u},
    {0, 13, 0x23BCB296u},   {0, 14, 0x246AB344u},   {0, 15, 0x08AFE444u},   {0, 16, 0x0963E4F8u},
    {0, 17, 0x255C1BF9u},   {0, 18, 0x26161CB3u},   {0, 19, 0x7FC959B3u},   {0, 20, 0x80895A73u},
    {0, 21, 0x1DFD9D73u},   {0, 22, 0x1EC39E39u},   {0, 23, 0x05FDE739u},   {0, 24, 0x06C9E805u},
    {0, 25, 0x3DCF3706u},   {0, 719, 0x6DEF1754u},  {0, 720, 0x6EE31848u},  {0, 721, 0xFE2B8F48u},
    {0, 1000, 0x7A4E7A53u}, {0, 5000, 0x41E9206Eu}, {1, 1, 0xFF00FF00u},    {1, 2, 0xFFFFFFFFu},
    {1, 3, 0xFF00FF00u},    {1, 4, 0xFFFFFFFFu},    {1, 5, 0xFF00FF00u},    {1, 6, 0xFFFFFFFFu},
    {1, 7, 0xFF00FF00u},    {1, 8, 0xFFFFFFFFu},    {1, 9, 0xFF00FF00u},    {1, 10, 0xFFFFFFFFu},
    {1, 11, 0xFF00FF00u},   {1, 12, 0xFFFFFFFFu},   {1, 13, 0xFF00FF00u},   {1, 14, 0xFFFFFFFFu},
    {1, 15, 0xFF00FF00u},   {1, 16, 0xFFFFFFFFu},   {1, 17, 0xFF00FF00u},   {1, 18, 0xFFFFFFFFu},
    {1, 19, 0xFF00FF00u},   {1, 20, 0xFFFFFFFFu},   {1, 21, 0xFF00FF00u},   {1, 22, 0xFFFFFFFFu},
    {1, 23, 0xFF00FF00u},   {1, 24, 0xFFFFFFFFu},   {1, 25, 0xFF00FF00u},   {1, 719, 0xFF00FF00u},
    {1, 720, 0xFFFFFFFFu},  {1, 721, 0xFF00FF00u},  {1, 1000, 0xFFFFFFFFu}, {1, 5000, 0xFFFFFFFFu},
};

TEST(Fletcher32Codec, BitExactWithNumcodecs) {
  auto codec = make(CodecRegistry::v3(), "numcodecs.fletcher32", json::object());
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "fletcher32");
  expect_checksum_codec(*codec, kGolden, /*at_start=*/false);
  for (const Golden& g : kGolden) EXPECT_EQ(fletcher32(pattern(g.kind, g.n)), g.checksum) << g.n;
}

TEST(Fletcher32Codec, HandWorkedValues) {
  // Big-endian words: "ab" is 0x6162; sum1 = 0x6162, sum2 = 0x6162.
  const std::byte ab[] = {std::byte{'a'}, std::byte{'b'}};
  EXPECT_EQ(fletcher32(ab), 0x61626162u);
  // An odd byte is the high byte of a last word: "a" is 0x6100.
  EXPECT_EQ(fletcher32(std::span(ab, 1)), 0x61006100u);
}

TEST(Fletcher32Codec, Configuration) {
  EXPECT_TRUE(CodecRegistry::v2().create("fletcher32", {{"id", "fletcher32"}}, {}).ok());
  EXPECT_EQ(CodecRegistry::v2()
                .create("fletcher32", {{"id", "fletcher32"}, {"location", "start"}}, {})
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
