#include <gtest/gtest.h>

#include <bzlib.h>

#include <climits>

#include "zarrflow/codec/compressor_test_util.h"

namespace zarrflow {
namespace {

using namespace compressor_test;  // (with codec_test's sample, from_hex and expect_decodes)

Bytes bz2_compress(const Bytes& src, int level = 9) {
  unsigned int n = static_cast<unsigned int>(src.size() + src.size() / 100 + 600);
  Bytes out(n);
  char none = 0;  // libbz2 wants a source pointer even for 0 bytes
  char* in = src.empty() ? &none : const_cast<char*>(reinterpret_cast<const char*>(src.data()));
  EXPECT_EQ(BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n, in,
                                     static_cast<unsigned int>(src.size()), level, 0, 0),
            BZ_OK);
  out.resize(n);
  return out;
}

// numcodecs.BZ2(level=9).encode(golden_data()).
constexpr const char* kNumcodecsStream =
    "425a68393141592653595055b953000001e0007fffc00020007050d34c00052a42304f51a7583c863546c8d21e"
    "91ed1ba384728e91da3b87c8661f61fa1e4324a19861287f1772453850905055b953";

TEST(Bz2Codec, DecodesNumcodecsOutput) {
  auto codec = make({{"id", "bz2"}, {"level", 9}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "bz2(level=9)");
  expect_decodes(*codec, from_hex(kNumcodecsStream), golden_data());
}

TEST(Bz2Codec, RoundTripsThroughLibbz2AtEverySize) {
  auto codec = *CodecRegistry::v3().create("numcodecs.bz2", json::object(), {});
  const auto& bz = static_cast<const BytesToBytesCodec&>(*codec);
  for (std::size_t n : {0, 1, 100, 4096, 200000, 1000000}) {
    SCOPED_TRACE(n);
    const Bytes raw = sample(n, static_cast<unsigned>(n));
    expect_decodes(bz, bz2_compress(raw, n % 9 + 1), raw);
  }
}

TEST(Bz2Codec, ConcatenatedStreamsAndTrailingBytesLikePython) {
  auto codec = make({{"id", "bz2"}});
  expect_concatenated_streams(*codec, [](const Bytes& raw) { return bz2_compress(raw); });
  // Bytes after a complete stream that are not a stream are ignored, as bz2.decompress does...
  const Bytes a = sample(5000, 1);
  expect_decodes(*codec, concat(bz2_compress(a), from_hex("00000000deadbeef")), a);
  // ...but anything that starts badly is an error.
  std::string message;
  EXPECT_EQ(decode_error(*codec, from_hex("00000000deadbeef"), std::nullopt, &message),
            ErrorCode::kCorruptData);
  EXPECT_NE(message.find("not a bzip2 stream"), std::string::npos) << message;
}

TEST(Bz2Codec, CorruptTruncatedAndWrongSizeStreams) {
  auto codec = make({{"id", "bz2"}});
  const Bytes raw = sample(50000, 3);
  expect_corrupt_streams_rejected(*codec, bz2_compress(raw), raw, "bz2: ");
}

TEST(Bz2Codec, RandomInputNeverCrashes) {
  auto codec = make({{"id", "bz2"}});
  expect_mutated_streams_fail_cleanly(*codec, bz2_compress(sample(20000, 9)), 20000, 300);
}

TEST(Bz2Codec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  EXPECT_TRUE(v2.create("bz2", {{"id", "bz2"}}, {}).ok());
  EXPECT_EQ(v2.create("bz2", {{"id", "bz2"}, {"level", 0}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v2.create("bz2", {{"id", "bz2"}, {"blocksize", 9}}, {}).status().code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
