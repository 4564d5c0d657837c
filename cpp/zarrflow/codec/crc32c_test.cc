#include "zarrflow/codec/crc32c.h"

#include <random>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "zarrflow/codec/codec_test_util.h"

#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using codec_test::make;

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> v(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) v[i] = static_cast<std::byte>(s[i]);
  return v;
}

// Bitwise reference CRC-32C (reflected polynomial 0x82F63B78), independent of ISA-L.
std::uint32_t reference_crc32c(ConstByteSpan data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : data) {
    crc ^= static_cast<std::uint8_t>(b);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::vector<std::byte> with_checksum(std::vector<std::byte> payload, bool at_start = false) {
  const std::uint32_t c = crc32c(payload);
  std::byte le[4] = {std::byte(c & 0xFF), std::byte(c >> 8 & 0xFF), std::byte(c >> 16 & 0xFF),
                     std::byte(c >> 24)};
  payload.insert(at_start ? payload.begin() : payload.end(), le, le + 4);
  return payload;
}

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

TEST(Crc32cCodec, KnownVectors) {
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  // RFC 3720 B.4: 32 bytes of zeros.
  std::vector<std::byte> zeros(32, std::byte{0});
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  for (std::size_t n : {1, 3, 17, 64, 1000, 65537}) {
    auto v = random_bytes(n, static_cast<unsigned>(n));
    EXPECT_EQ(crc32c(v), reference_crc32c(v)) << n;
  }
}

TEST(Crc32cCodec, RoundTripReturnsViewOfInput) {
  auto codec = make(CodecRegistry::v3(), "crc32c");
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->name(), "crc32c");
  EXPECT_EQ(codec->encoded_size(100), 104);
  for (std::size_t n : {0, 1, 5, 4096}) {
    auto payload = random_bytes(n, 7);
    auto enc = with_checksum(payload);
    Buffer scratch;
    auto dec = codec->decode(enc, std::nullopt, scratch);
    ASSERT_TRUE(dec.ok()) << dec.status().to_string();
    EXPECT_EQ(dec->data(), enc.data());  // zero copy
    EXPECT_TRUE(std::equal(dec->begin(), dec->end(), payload.begin(), payload.end()));
    auto dec2 = codec->decode(enc, n, scratch);
    ASSERT_TRUE(dec2.ok());
    EXPECT_EQ(dec2->size(), n);
    std::vector<std::byte> out(n);
    ASSERT_TRUE(codec->decode_into(enc, out).ok());
    EXPECT_EQ(out, payload);
  }
}

TEST(Crc32cCodec, Errors) {
  auto codec = make(CodecRegistry::v3(), "crc32c", nlohmann::json::object());
  ASSERT_TRUE(codec);
  Buffer scratch;
  auto enc = with_checksum(bytes_of("hello zarr"));

  auto wrong = codec->decode(enc, 3, scratch);
  EXPECT_EQ(wrong.status().code(), ErrorCode::kCorruptData);

  std::vector<std::byte> out(11);
  EXPECT_EQ(codec->decode_into(enc, out).code(), ErrorCode::kCorruptData);

  for (std::size_t n = 0; n < 4; ++n) {
    auto s = codec->decode(ConstByteSpan(enc).first(n), std::nullopt, scratch);
    EXPECT_EQ(s.status().code(), ErrorCode::kCorruptData);
    EXPECT_NE(s.status().message().find("crc32c"), std::string::npos);
  }

  auto bad = enc;
  bad[2] ^= std::byte{0x10};
  auto s = codec->decode(bad, std::nullopt, scratch);
  EXPECT_EQ(s.status().code(), ErrorCode::kChecksumMismatch);
  EXPECT_NE(s.status().message().find("0x"), std::string::npos) << s.status().message();
  // Truncating the payload also changes the checksum.
  std::vector<std::byte> shorter(enc.begin() + 1, enc.end());
  EXPECT_EQ(codec->decode(shorter, std::nullopt, scratch).status().code(),
            ErrorCode::kChecksumMismatch);

  // Random corruption: every single-bit flip is detected.
  for (std::size_t i = 0; i < enc.size() * 8; ++i) {
    auto c = enc;
    c[i / 8] ^= std::byte(1u << (i % 8));
    EXPECT_EQ(codec->decode(c, std::nullopt, scratch).status().code(),
              ErrorCode::kChecksumMismatch);
  }
}

TEST(Crc32cCodec, Configuration) {
  const ChunkSpec spec;
  EXPECT_EQ(CodecRegistry::v3().create("crc32c", {{"x", 1}}, spec).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(CodecRegistry::v3().create("crc32c", 5, spec).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(CodecRegistry::v2()
                .create("crc32c", {{"id", "crc32c"}, {"location", "middle"}}, spec)
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
}

TEST(Crc32cCodec, NumcodecsLocations) {
  auto payload = bytes_of("numcodecs");
  auto end = make(CodecRegistry::v2(), "crc32c", {{"id", "crc32c"}});
  auto start = make(CodecRegistry::v2(), "crc32c", {{"id", "crc32c"}, {"location", "start"}});
  auto v3alias = make(CodecRegistry::v3(), "numcodecs.crc32c", {{"location", "start"}});
  ASSERT_TRUE(end && start && v3alias);
  Buffer scratch;
  auto enc_end = with_checksum(payload);  // decode returns a view: keep the input alive
  auto a = end->decode(enc_end, std::nullopt, scratch);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(std::equal(a->begin(), a->end(), payload.begin(), payload.end()));
  auto enc_start = with_checksum(payload, true);
  auto b = start->decode(enc_start, std::nullopt, scratch);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_TRUE(std::equal(b->begin(), b->end(), payload.begin(), payload.end()));
  EXPECT_TRUE(v3alias->decode(enc_start, std::nullopt, scratch).ok());
  EXPECT_EQ(end->decode(enc_start, std::nullopt, scratch).status().code(),
            ErrorCode::kChecksumMismatch);
}

}  // namespace
}  // namespace zarrflow
