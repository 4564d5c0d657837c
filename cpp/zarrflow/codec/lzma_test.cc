#include <gtest/gtest.h>

#include <lzma.h>

#include "zarrflow/codec/compressor_test_util.h"

namespace zarrflow {
namespace {

using namespace compressor_test;  // (with codec_test's sample, from_hex and expect_decodes)

Bytes xz_compress(const Bytes& src, std::uint32_t preset = 1, lzma_check check = LZMA_CHECK_CRC64) {
  Bytes out(lzma_stream_buffer_bound(src.size()));
  std::size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(preset, check, nullptr,
                                    reinterpret_cast<const std::uint8_t*>(src.data()), src.size(),
                                    reinterpret_cast<std::uint8_t*>(out.data()), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

struct Golden {
  const char* config;
  const char* encoded;
};

// numcodecs.LZMA(**config).encode(golden_data()); the format-0 (auto) rows decode an .xz and an
// .lzma ("alone") stream.
const Golden kGolden[] = {
    {R"({"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null})",
     "fd377a585a000004e6d6b4460200210116000000742fe5a3e004af002c5d0000687ebf0a82ad1ce65c818cf6d9"
     "477bccf98d5d7f316f3478c6a2b11e473ecfd55c4e748018a014abc051000085cdb7b39cf78ff7000148b00900"
     "0000421b914db1c467fb020000000004595a"},
    {R"({"id": "lzma", "format": 1, "check": -1, "preset": 9, "filters": null})",
     "fd377a585a000004e6d6b446020021011c00000010cf58cce004af002c5d0000687ebf0a82ad1ce65c818cf6d9"
     "477bccf98d5d7f316f3478c6a2b11e473ecfd55c4e748018a014abc051000085cdb7b39cf78ff7000148b00900"
     "0000421b914db1c467fb020000000004595a"},
    {R"({"id": "lzma", "format": 2, "check": -1, "preset": 1, "filters": null})",
     "5d00001000ffffffffffffffff0000687e9e2040a60b69998b065a8b0094e93ec008161aa4a02e49651a68a7a4"
     "70564bc3d0b1f86e3690d91fb0d6eb092e8e072f912539b73fffff76c40000"},
    {R"({"id": "lzma", "format": 3, "check": -1, "preset": null, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]})",
     "e004af00175d0000687ecab284b876e953be42b24900e26ce608d67c870000"},
    {R"({"id": "lzma", "format": 1, "check": 10, "preset": null, "filters": null})",
     "fd377a585a00000ae1fb0ca10200210116000000742fe5a3e004af002c5d0000687ebf0a82ad1ce65c818cf6d9"
     "477bccf98d5d7f316f3478c6a2b11e473ecfd55c4e748018a014abc05100007a1f532a951045758f32b81f31e6"
     "650b8850ba33455dc06a7330270c227c6b94000160b009000000199c6ea6b6e9df1c02000000000a595a"},
    {R"({"id": "lzma", "format": 3, "check": -1, "preset": null, "filters": [{"id": 4611686018427387905, "preset": 2, "lc": 1, "lp": 1, "pb": 1}]})",
     "0000687e9e18ffc23e2578c2e377dbed48eadf5dbcdb8b34edab7a52cc1afc1956e873ae6fb92571c1b55858ff"
     "e15f197e6601a9675b359ef61ffff5720000"},
    {R"({"id": "lzma", "format": 0, "check": -1, "preset": null, "filters": null})",
     "fd377a585a000004e6d6b4460200210110000000a8708e86e004af00385d0000687e9e2040a60b69998b065a8b"
     "0094e93ec008161aa4a02e49651a68a7a470564bc3d0b1f86e3690d91fb0d6eb092e8e072f91240c65000085cd"
     "b7b39cf78ff7000154b009000000a2d98539b1c467fb020000000004595a"},
    {R"({"id": "lzma", "format": 0, "check": -1, "preset": null, "filters": null})",
     "5d00001000ffffffffffffffff0000687e9e2040a60b69998b065a8b0094e93ec008161aa4a02e49651a68a7a4"
     "70564bc3d0b1f86e3690d91fb0d6eb092e8e072f912539b73fffff76c40000"},
};

TEST(LzmaCodec, DecodesNumcodecsOutputInEveryFormat) {
  for (const Golden& g : kGolden) {
    SCOPED_TRACE(g.config);
    auto codec = make(json::parse(g.config));
    ASSERT_TRUE(codec);
    expect_decodes(*codec, from_hex(g.encoded), golden_data());
  }
}

TEST(LzmaCodec, DescribeAndV3Name) {
  auto raw = make(json::parse(kGolden[3].config));
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->describe(), "lzma(format=raw, 2 filters)");
  auto v3 = CodecRegistry::v3().create("numcodecs.lzma", {{"preset", 2}}, {});
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ((*v3)->describe(), "lzma(format=xz, preset=2)");
}

TEST(LzmaCodec, RoundTripsThroughLiblzmaAtEverySize) {
  auto codec = make({{"id", "lzma"}});
  for (std::size_t n : {0, 1, 100, 4096, 1000000}) {
    SCOPED_TRACE(n);
    const Bytes raw = sample(n, static_cast<unsigned>(n) + 1);
    expect_decodes(*codec, xz_compress(raw, n % 4), raw);
  }
}

TEST(LzmaCodec, ConcatenatedStreamsAndTrailingBytesLikePython) {
  auto codec = make({{"id", "lzma"}});
  expect_concatenated_streams(*codec, [](const Bytes& raw) { return xz_compress(raw); });
  // After a complete stream, bytes that are not a stream are ignored, as lzma.decompress does;
  // fewer than an .xz header's 12 bytes read as a stream cut short, there as here.
  const Bytes a = sample(5000, 1);
  const Bytes sa = xz_compress(a);
  const Bytes garbage = from_hex("00000000123456780000000012345678");
  expect_decodes(*codec, concat(sa, garbage), a);
  std::string message;
  EXPECT_EQ(decode_error(*codec, concat(sa, from_hex("0000000012345678")), std::nullopt, &message),
            ErrorCode::kCorruptData);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_EQ(decode_error(*codec, garbage, std::nullopt, &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find("bad header"), std::string::npos) << message;
}

TEST(LzmaCodec, CorruptTruncatedAndWrongSizeStreams) {
  auto codec = make({{"id", "lzma"}});
  const Bytes raw = sample(50000, 3);
  const Bytes enc = xz_compress(raw, 1, LZMA_CHECK_SHA256);
  expect_corrupt_streams_rejected(*codec, enc, raw, "lzma: ");
  // An .xz stream is not an .lzma ("alone") one.
  auto alone = make({{"id", "lzma"}, {"format", 2}});
  EXPECT_EQ(decode_error(*alone, enc, raw.size()), ErrorCode::kCorruptData);
}

TEST(LzmaCodec, RandomInputNeverCrashes) {
  const Bytes enc = xz_compress(sample(20000, 9));
  for (const json& cfg : {json{{"id", "lzma"}}, json::parse(kGolden[3].config)}) {
    auto codec = make(cfg);
    // (kOutOfRange: a header asking for more decoder memory than the limit)
    expect_mutated_streams_fail_cleanly(*codec, enc, 20000, 200,
                                        {ErrorCode::kCorruptData, ErrorCode::kOutOfRange});
  }
}

TEST(LzmaCodec, Configuration) {
  const auto& v2 = CodecRegistry::v2();
  auto code = [&](const json& cfg) { return v2.create("lzma", cfg, {}).status().code(); };
  EXPECT_EQ(code({{"id", "lzma"}, {"format", 4}}), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "lzma"}, {"format", 3}}), ErrorCode::kInvalidMetadata);  // no filters
  EXPECT_EQ(code({{"id", "lzma"}, {"filters", {{{"id", 33}}}}}),
            ErrorCode::kInvalidMetadata);  // filters need the raw format
  EXPECT_EQ(code({{"id", "lzma"}, {"format", 3}, {"filters", {{{"id", 99}}}}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "lzma"}, {"format", 3}, {"filters", {{{"id", 33}, {"lc", 9}}}}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "lzma"}, {"format", 3}, {"filters", {{{"id", 3}, {"dist", 0}}}}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code({{"id", "lzma"}, {"format", 3}, {"filters", {{{"id", 33}, {"x", 0}}}}}),
            ErrorCode::kInvalidMetadata);
  EXPECT_TRUE(v2.create("lzma",
                        {{"id", "lzma"},
                         {"format", 3},
                         {"filters", {{{"id", 4}, {"start_offset", 0}}, {{"id", 33}}}}},
                        {})
                  .ok());
}

}  // namespace
}  // namespace zarrflow
