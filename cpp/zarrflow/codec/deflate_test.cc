#include "zarrflow/codec/deflate.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <libdeflate.h>
#include <nlohmann/json.hpp>
#include "zarrflow/codec/codec_test_util.h"

#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using codec_test::Bytes;
using codec_test::compress;
using codec_test::expect_concurrent_decodes;
using codec_test::expect_decodes;
using codec_test::from_hex;
using codec_test::make;
using codec_test::sample;

struct Case {
  DeflateWrapper wrapper;
  const CodecRegistry* reg;
  const char* name;
  nlohmann::json cfg;
};

std::vector<Case> cases() {
  return {{DeflateWrapper::kGzip, &CodecRegistry::v3(), "gzip", {{"level", 5}}},
          {DeflateWrapper::kGzip, &CodecRegistry::v2(), "gzip", {{"id", "gzip"}, {"level", 1}}},
          {DeflateWrapper::kGzip, &CodecRegistry::v3(), "numcodecs.gzip", {{"level", 1}}},
          {DeflateWrapper::kZlib, &CodecRegistry::v2(), "zlib", {{"id", "zlib"}, {"level", 1}}},
          {DeflateWrapper::kZlib, &CodecRegistry::v3(), "numcodecs.zlib", {{"level", 9}}}};
}

TEST(DeflateCodec, RoundTrip) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    auto codec = make(*c.reg, c.name, c.cfg);
    ASSERT_TRUE(codec);
    for (std::size_t n : {0, 1, 2, 1000, 65536, 3 << 20}) {
      SCOPED_TRACE(n);
      const Bytes src = sample(n, static_cast<unsigned>(n) + 3);
      for (int level : {0, 1, 6, 12}) {
        if (level == 12 && n > 65536) continue;  // slow to compress, nothing new to decode
        expect_decodes(*codec, compress(c.wrapper, src, level), src);
      }
    }
  }
}

TEST(DeflateCodec, NamesAndDescriptions) {
  EXPECT_EQ(make(CodecRegistry::v3(), "gzip", {{"level", 5}})->describe(), "gzip(level=5)");
  EXPECT_EQ(make(CodecRegistry::v2(), "zlib", {{"id", "zlib"}, {"level", 1}})->name(), "zlib");
}

TEST(DeflateCodec, NumcodecsGoldenBytes) {
  // numcodecs 0.16.6: GZip(level=5) and Zlib(level=5) of np.arange(20, dtype='<i2').
  const Bytes want =
      from_hex("00000100020003000400050006000700080009000a000b000c000d000e000f001000110012001300");
  const Bytes gz = from_hex(
      "1f8b0800e971016b00ff05c1090280100000b02954448effffb58de0708a92ec727b14d5abe93ec3b46c3fb524ec"
      "6828000000");
  const Bytes zl =
      from_hex("785e05c1090280100000b02954448effffb58de0708a92ec727b14d5abe93ec3b46c3f0a8c00bf");
  expect_decodes(*make_deflate_codec(DeflateWrapper::kGzip, 5), gz, want);
  expect_decodes(*make_deflate_codec(DeflateWrapper::kZlib, 5), zl, want);
}

TEST(DeflateCodec, LargeExpansionWithUnknownSize) {
  const Bytes zeros(20 << 20, std::byte{0});
  for (auto w : {DeflateWrapper::kGzip, DeflateWrapper::kZlib}) {
    Bytes enc = compress(w, zeros, 9);
    if (w == DeflateWrapper::kGzip) {
      enc[enc.size() - 1] = std::byte{0};  // break the ISIZE hint: correct data must still decode
      enc[enc.size() - 2] = std::byte{0};
      enc[enc.size() - 3] = std::byte{0};
      enc[enc.size() - 4] = std::byte{1};
      Buffer scratch;
      EXPECT_EQ(make_deflate_codec(w, 9)->decode(enc, std::nullopt, scratch).status().code(),
                ErrorCode::kCorruptData);
      enc = compress(w, zeros, 9);
    }
    expect_decodes(*make_deflate_codec(w, 9), enc, zeros);
  }
}

TEST(DeflateCodec, GzipMembersAndPadding) {
  auto codec = make_deflate_codec(DeflateWrapper::kGzip, 1);
  const Bytes a = sample(70000, 1), b = sample(5, 2), c = sample(300000, 3);
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  want.insert(want.end(), c.begin(), c.end());
  Bytes enc = compress(DeflateWrapper::kGzip, a);
  for (const Bytes* m : {&b, &c}) {
    const Bytes e = compress(DeflateWrapper::kGzip, *m);
    enc.insert(enc.end(), e.begin(), e.end());
  }
  enc.insert(enc.end(), 7, std::byte{0});  // Python's gzip module skips zero padding
  expect_decodes(*codec, enc, want);
  enc.push_back(std::byte{1});  // ...but anything else must be another member
  Buffer scratch;
  EXPECT_EQ(codec->decode(enc, std::nullopt, scratch).status().code(), ErrorCode::kCorruptData);
}

TEST(DeflateCodec, ZlibIgnoresTrailingBytes) {
  // Like Python's zlib.decompress, which numcodecs.Zlib uses.
  const Bytes src = sample(5000);
  Bytes enc = compress(DeflateWrapper::kZlib, src);
  enc.push_back(std::byte{'z'});
  expect_decodes(*make_deflate_codec(DeflateWrapper::kZlib, 1), enc, src);
}

TEST(DeflateCodec, ErrorsAndCorruption) {
  std::mt19937 rng(99);
  const Bytes src = sample(50000, 4);
  for (auto w : {DeflateWrapper::kGzip, DeflateWrapper::kZlib}) {
    auto codec = make_deflate_codec(w, 1);
    const std::string name = codec->name();
    const Bytes enc = compress(w, src);
    Buffer scratch;
    for (std::size_t wrong : {std::size_t{0}, src.size() - 1, src.size() + 1}) {
      auto r = codec->decode(enc, wrong, scratch);
      EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
      EXPECT_EQ(r.status().message().rfind(name + ":", 0), 0u) << r.status().message();
    }
    for (std::size_t cut :
         {std::size_t{0}, std::size_t{1}, std::size_t{9}, enc.size() / 2, enc.size() - 1}) {
      const Bytes t(enc.begin(), enc.begin() + static_cast<std::ptrdiff_t>(cut));
      EXPECT_EQ(codec->decode(t, std::nullopt, scratch).status().code(), ErrorCode::kCorruptData)
          << name << " cut " << cut;
      Bytes out(src.size());
      EXPECT_EQ(codec->decode_into(t, out).code(), ErrorCode::kCorruptData);
    }
    // Random corruption: errors or (for bytes the checksum cannot see) data, never a crash.
    for (int iter = 0; iter < 400; ++iter) {
      Bytes c = enc;
      for (int f = 0, nf = 1 + static_cast<int>(rng() % 3); f < nf; ++f)
        c[rng() % c.size()] ^= static_cast<std::byte>(1 + rng() % 255);
      auto r = codec->decode(c, iter % 2 ? std::optional<std::size_t>(src.size()) : std::nullopt,
                             scratch);
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
      }
    }
  }
}

TEST(DeflateCodec, ConcurrentDecodes) {
  // Decompressors are per thread; one codec serves many threads at once.
  const Bytes src = sample(300000, 17);
  for (auto w : {DeflateWrapper::kGzip, DeflateWrapper::kZlib}) {
    auto codec = make_deflate_codec(w, 6);
    expect_concurrent_decodes(*codec, compress(w, src), src);
  }
}

TEST(DeflateCodec, Configuration) {
  const ChunkSpec spec;
  const auto& v3 = CodecRegistry::v3();
  const auto& v2 = CodecRegistry::v2();
  EXPECT_TRUE(v3.create("gzip", nullptr, spec).ok());
  EXPECT_EQ(v3.create("gzip", {{"level", "5"}}, spec).status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v3.create("gzip", {{"level", 5}, {"x", 1}}, spec).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v3.create("gzip", {{"level", 10}}, spec).status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v3.create("gzip", "fast", spec).status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(v2.create("zlib", {{"id", "zlib"}, {"level", 2.5}}, spec).status().code(),
            ErrorCode::kInvalidMetadata);
  EXPECT_FALSE(v3.contains("zlib"));  // zarr-python writes numcodecs.zlib in v3
}

}  // namespace
}  // namespace zarrflow
