#include <gtest/gtest.h>

#include "zarrflow/codec/filter_test_util.h"

namespace zarrflow {
namespace {

using namespace filter_test;

// numcodecs.PackBits().encode(x) for random bool arrays of 1, 7, 8, 9, 15, 16, 17 and 100
// elements, and x as bytes.
const Golden kGolden[] = {
    {R"({"id": "packbits"})", "0700", "00"},
    {R"({"id": "packbits"})", "01b2", "01000101000001"},
    {R"({"id": "packbits"})", "001c", "0000000101010000"},
    {R"({"id": "packbits"})", "07ee00", "010101000101010000"},
    {R"({"id": "packbits"})", "013f6a", "000001010101010100010100010001"},
    {R"({"id": "packbits"})", "00a5b0", "01000100000100010100010100000000"},
    {R"({"id": "packbits"})", "076bd480", "0001010001000101010100010001000001"},
    {R"({"id": "packbits"})", "04ae230e32dd6be811c4ec262440",
     "010001000101010000000100000001010000000001010100000001010000010001010001010100010001010001"
     "000101010101000100000000000001000000010101000000010000010101000101000000000100000101000000"
     "01000001000000010000"},
};

TEST(PackBitsCodec, BitExactWithNumcodecs) { expect_golden(kGolden); }

TEST(PackBitsCodec, PaddingAndSizes) {
  auto codec = make({{"id", "packbits"}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->encoded_size(9), 3);
  EXPECT_EQ(codec->encoded_size(16), 3);
  // 0b10100000 with 5 padding bits: three booleans 1, 0, 1.
  EXPECT_EQ(to_hex(decode_all(*codec, from_hex("05a0"), 3)), "010001");
  // A padding count beyond the bits present leaves nothing, as np.unpackbits(...)[:-p] does.
  EXPECT_EQ(decode_all(*codec, from_hex("09ff"), 0).size(), 0u);
  EXPECT_EQ(decode_all(*codec, from_hex("00"), 0).size(), 0u);
  Buffer scratch;
  auto empty = codec->decode(Bytes{}, std::nullopt, scratch);
  EXPECT_EQ(empty.status().code(), ErrorCode::kCorruptData);
  EXPECT_EQ(codec->decode(from_hex("05a0"), 4, scratch).status().code(), ErrorCode::kCorruptData);
}

TEST(PackBitsCodec, RandomInputNeverCrashes) { expect_random_input_safe({{"id", "packbits"}}); }

TEST(PackBitsCodec, Configuration) {
  EXPECT_TRUE(CodecRegistry::v3().create("numcodecs.packbits", json::object(), {}).ok());
  EXPECT_EQ(
      CodecRegistry::v2().create("packbits", {{"id", "packbits"}, {"bits", 1}}, {}).status().code(),
      ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
