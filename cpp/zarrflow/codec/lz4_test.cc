#include "zarrflow/codec/lz4.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <lz4.h>
#include <nlohmann/json.hpp>
#include "zarrflow/codec/codec_test_util.h"

#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using codec_test::Bytes;
using codec_test::expect_decodes;
using codec_test::from_hex;
using codec_test::make;
using codec_test::sample;

// numcodecs.lz4.compress: 4-byte little-endian size, then LZ4_compress_fast's block.
Bytes compress(const Bytes& src, int acceleration = 1) {
  const int n = static_cast<int>(src.size());
  Bytes out(4 + static_cast<std::size_t>(LZ4_compressBound(n)));
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::byte>(static_cast<unsigned>(n) >> (8 * i));
  const int c = LZ4_compress_fast(reinterpret_cast<const char*>(src.data()),
                                  reinterpret_cast<char*>(out.data()) + 4, n,
                                  static_cast<int>(out.size()) - 4, acceleration);
  EXPECT_GT(c, 0);
  out.resize(4 + static_cast<std::size_t>(c));
  return out;
}

TEST(Lz4Codec, RoundTrip) {
  auto v2 = make(CodecRegistry::v2(), "lz4", {{"id", "lz4"}, {"acceleration", 1}});
  auto v3 = make(CodecRegistry::v3(), "numcodecs.lz4", {{"acceleration", 5}});
  ASSERT_TRUE(v2 && v3);
  EXPECT_EQ(v2->name(), "lz4");
  EXPECT_EQ(v3->describe(), "lz4(acceleration=5)");
  for (std::size_t n : {0, 1, 2, 15, 1000, 65536, 5 << 20}) {
    SCOPED_TRACE(n);
    const Bytes src = sample(n, static_cast<unsigned>(n));
    for (int acc : {1, 20}) {
      expect_decodes(*v2, compress(src, acc), src);
      expect_decodes(*v3, compress(src, acc), src);
    }
  }
  // Highly compressible input close to LZ4's maximum ratio.
  const Bytes zeros(4 << 20, std::byte{0});
  expect_decodes(*v2, compress(zeros), zeros);
}

TEST(Lz4Codec, NumcodecsGoldenBytes) {
  // numcodecs 0.16.6: LZ4().encode(np.arange(20, dtype='<i2')), and compress(b'').
  const Bytes want =
      from_hex("00000100020003000400050006000700080009000a000b000c000d000e000f001000110012001300");
  const Bytes enc = from_hex(
      "28000000f01900000100020003000400050006000700080009000a000b000c000d000e000f001000110012001"
      "300");
  expect_decodes(*make_lz4_codec(1), enc, want);
  expect_decodes(*make_lz4_codec(1), from_hex("0000000000"), {});
}

TEST(Lz4Codec, HeaderValidation) {
  auto codec = make_lz4_codec(1);
  const Bytes src = sample(10000);
  const Bytes enc = compress(src);
  Buffer scratch;
  for (std::size_t n = 0; n < 4; ++n) {
    auto r = codec->decode(Bytes(enc.begin(), enc.begin() + static_cast<std::ptrdiff_t>(n)),
                           std::nullopt, scratch);
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
    EXPECT_NE(r.status().message().find("4-byte size header"), std::string::npos);
  }
  // Wrong expected size: rejected from the header alone.
  for (std::size_t wrong : {std::size_t{0}, src.size() - 1, src.size() + 1}) {
    auto r = codec->decode(enc, wrong, scratch);
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
    EXPECT_NE(r.status().message().find("header says 10000 bytes"), std::string::npos)
        << r.status().message();
    Bytes out(wrong);
    EXPECT_EQ(codec->decode_into(enc, out).code(), ErrorCode::kCorruptData);
  }
  // A header that lies: bigger than possible (rejected before allocating), negative, or
  // off by a little (the block decodes to a different size).
  Bytes huge = enc;
  huge[3] = std::byte{0x70};  // ~1.8 GiB from a 10 KB block
  auto r = codec->decode(huge, std::nullopt, scratch);
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("more than"), std::string::npos) << r.status().message();
  Bytes negative = enc;
  negative[3] = std::byte{0x80};
  EXPECT_EQ(codec->decode(negative, std::nullopt, scratch).status().code(),
            ErrorCode::kCorruptData);
  Bytes off = enc;
  off[0] = static_cast<std::byte>(static_cast<unsigned>(off[0]) + 1);
  EXPECT_EQ(codec->decode(off, std::nullopt, scratch).status().code(), ErrorCode::kCorruptData);
  off[0] = static_cast<std::byte>(static_cast<unsigned>(off[0]) - 2);
  EXPECT_EQ(codec->decode(off, std::nullopt, scratch).status().code(), ErrorCode::kCorruptData);
}

TEST(Lz4Codec, TruncationAndCorruption) {
  auto codec = make_lz4_codec(1);
  const Bytes src = sample(30000, 8);
  const Bytes enc = compress(src);
  Buffer scratch;
  for (std::size_t cut : {std::size_t{4}, std::size_t{5}, enc.size() / 2, enc.size() - 1}) {
    const Bytes t(enc.begin(), enc.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_EQ(codec->decode(t, std::nullopt, scratch).status().code(), ErrorCode::kCorruptData);
    EXPECT_EQ(codec->decode(t, src.size(), scratch).status().code(), ErrorCode::kCorruptData);
  }
  std::mt19937 rng(5);
  for (int iter = 0; iter < 1000; ++iter) {
    Bytes c = enc;
    for (int f = 0, nf = 1 + static_cast<int>(rng() % 3); f < nf; ++f)
      c[rng() % c.size()] ^= static_cast<std::byte>(1 + rng() % 255);
    auto r =
        codec->decode(c, iter % 2 ? std::optional<std::size_t>(src.size()) : std::nullopt, scratch);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
      EXPECT_EQ(r.status().message().rfind("lz4:", 0), 0u);
    }
  }
}

TEST(Lz4Codec, Configuration) {
  const ChunkSpec spec;
  EXPECT_TRUE(CodecRegistry::v2().create("lz4", {{"id", "lz4"}}, spec).ok());
  EXPECT_TRUE(CodecRegistry::v3().create("numcodecs.lz4", nullptr, spec).ok());
  EXPECT_EQ(CodecRegistry::v2()
                .create("lz4", {{"id", "lz4"}, {"acceleration", "1"}}, spec)
                .status()
                .code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(CodecRegistry::v3().create("numcodecs.lz4", {{"level", 1}}, spec).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_FALSE(CodecRegistry::v3().contains("lz4"));
}

}  // namespace
}  // namespace zarrflow
