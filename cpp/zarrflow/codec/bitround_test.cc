#include <gtest/gtest.h>

#include "zarrflow/codec/filter_test_util.h"

namespace zarrflow {
namespace {

using namespace filter_test;

// numcodecs.BitRound(keepbits=3): encode(x) and decode(encode(x)) for random float32, float64
// and float16 values.
const Golden kGolden[] = {
    {R"({"id": "bitround", "keepbits": 3})",
     "000070bf0000b0bf0000b0be0000b03f000030c00000003f000090bf0000803f000090bf",
     "000070bf0000b0bf0000b0be0000b03f000030c00000003f000090bf0000803f000090bf"},
    {R"({"id": "bitround", "keepbits": 3})",
     "000000000000d2bf000000000000f8bf000000000000f0bf000000000000f63f000000000000ea3f0000000000"
     "00dabf000000000000ecbf000000000000febf000000000000dabf",
     "000000000000d2bf000000000000f8bf000000000000f0bf000000000000f63f000000000000ea3f0000000000"
     "00dabf000000000000ecbf000000000000febf000000000000dabf"},
    {R"({"id": "bitround", "keepbits": 3})", "00a880ad00ae80bc00ac00a9003d803f80b0",
     "00a880ad00ae80bc00ac00a9003d803f80b0"},
};

TEST(BitRoundCodec, BitExactWithNumcodecs) { expect_golden(kGolden); }

TEST(BitRoundCodec, DecodesToTheSameBytesWithoutACopy) {
  auto codec = make({{"id", "bitround"}, {"keepbits", 6}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "bitround(keepbits=6)");
  const Bytes in = from_hex("0102030405060708");
  Buffer scratch;
  auto r = codec->decode(in, 8, scratch);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->data(), in.data());
  EXPECT_EQ(codec->decode(in, 4, scratch).status().code(), ErrorCode::kCorruptData);
}

TEST(BitRoundCodec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  EXPECT_EQ(v2.create("bitround", {{"id", "bitround"}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v2.create("bitround", {{"id", "bitround"}, {"keepbits", -1}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_TRUE(CodecRegistry::v3().create("numcodecs.bitround", {{"keepbits", 0}}, {}).ok());
}

}  // namespace
}  // namespace zarrflow
