#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "zarrflow/codec/filter_test_util.h"

namespace zarrflow {
namespace {

using namespace filter_test;

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

// numcodecs.get_codec(config).decode(encoded): integer extremes and random integers, and floats
// including NaN, ±inf, -0, float16 boundaries, exact float16 midpoints, and values outside every
// integer range.
const Golden kGolden[] = {
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

TEST(ShuffleCodec, BitExactWithNumcodecs) { expect_golden(kGolden); }
TEST(ShuffleCodec, SizeErrors) {
  Buffer scratch;
  auto shuffle = make({{"id", "shuffle"}, {"elementsize", 4}});
  auto s = shuffle->decode(Bytes(10), std::nullopt, scratch);
  EXPECT_EQ(s.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.status().message().find("not a multiple of elementsize 4"), std::string::npos);
  EXPECT_EQ(shuffle->decode(Bytes(8), 12, scratch).status().code(), ErrorCode::kCorruptData);
  auto copy = make({{"id", "shuffle"}, {"elementsize", 1}});
  EXPECT_TRUE(copy->decode(Bytes(7), 7, scratch).ok());
  EXPECT_TRUE(copy->decode(Bytes{}, std::nullopt, scratch).ok());
}

TEST(ShuffleCodec, RandomInputNeverCrashes) {
  expect_random_input_safe({{"id", "shuffle"}, {"elementsize", 3}});
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

TEST(ShuffleCodec, Configuration) {
  const ChunkSpec spec;
  EXPECT_TRUE(CodecRegistry::v2().create("shuffle", {{"id", "shuffle"}}, spec).ok());
  EXPECT_EQ(CodecRegistry::v2()
                .create("shuffle", {{"id", "shuffle"}, {"elementsize", "4"}}, spec)
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(CodecRegistry::v3()
                .create("numcodecs.shuffle", {{"elementsize", 4}, {"x", 0}}, spec)
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
