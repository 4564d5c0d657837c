#include "zarrflow/codec/zstd.h"

#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <zstd.h>
#include <nlohmann/json.hpp>
#include "zarrflow/codec/codec_test_util.h"

#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using codec_test::Bytes;
using codec_test::expect_decodes;
using codec_test::make;
using codec_test::sample;

Bytes compress(const Bytes& src, int level = 3, bool checksum = false, bool content_size = true) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, content_size ? 1 : 0);
  Bytes out(ZSTD_compressBound(src.size()));
  const std::size_t n = ZSTD_compress2(c, out.data(), out.size(), src.data(), src.size());
  ZSTD_freeCCtx(c);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// A frame written by the streaming API, which does not know (and so omits) the content size.
Bytes compress_streaming(const Bytes& src) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  Bytes out(ZSTD_compressBound(src.size()) + 64);
  ZSTD_inBuffer in{src.data(), src.size(), 0};
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  std::size_t r;
  do {
    r = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
    EXPECT_FALSE(ZSTD_isError(r));
  } while (r != 0 && !ZSTD_isError(r));
  ZSTD_freeCCtx(c);
  out.resize(o.pos);
  return out;
}

TEST(ZstdCodec, RoundTrip) {
  auto codec = make(CodecRegistry::v3(), "zstd", {{"level", 3}, {"checksum", false}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->name(), "zstd");
  EXPECT_EQ(codec->describe(), "zstd(level=3)");
  for (std::size_t n : {0, 1, 2, 100, 4096, 1 << 20}) {
    const Bytes src = sample(n, static_cast<unsigned>(n), 64);
    SCOPED_TRACE(n);
    expect_decodes(*codec, compress(src), src);
    expect_decodes(*codec, compress(src, 19, true), src);
    expect_decodes(*codec, compress(src, 1, false, /*content_size=*/false), src);
    expect_decodes(*codec, compress_streaming(src), src);
  }
}

TEST(ZstdCodec, LargeOutputFromTinyInputStreams) {
  // 8 MiB of zeros without a content size: the growing buffer must reach it.
  auto codec = make_zstd_codec(0, false);
  const Bytes zeros(8 << 20, std::byte{0});
  const Bytes enc = compress(zeros, 3, false, false);
  EXPECT_LT(enc.size(), 2048u);
  expect_decodes(*codec, enc, zeros);
}

TEST(ZstdCodec, ConcatenatedAndSkippableFrames) {
  auto codec = make_zstd_codec(0, false);
  const Bytes a = sample(3000, 1, 64), b = sample(5000, 2, 64);
  Bytes want = a;
  want.insert(want.end(), b.begin(), b.end());
  for (bool sized : {true, false}) {
    Bytes enc = compress(a, 3, true, sized);
    const Bytes eb = compress(b, 5, false, true);
    enc.insert(enc.end(), eb.begin(), eb.end());
    // A skippable frame (magic 0x184D2A50, 4-byte length, payload) contributes nothing.
    const std::uint8_t skip[] = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 9, 9, 9};
    for (auto x : skip) enc.push_back(static_cast<std::byte>(x));
    expect_decodes(*codec, enc, want);
  }
}

TEST(ZstdCodec, WrongSizeAndTruncation) {
  auto codec = make_zstd_codec(0, false);
  const Bytes src = sample(10000, 1, 64);
  for (bool sized : {true, false}) {
    SCOPED_TRACE(sized);
    const Bytes enc = compress(src, 3, false, sized);
    Buffer scratch;
    for (std::size_t wrong : {std::size_t{0}, src.size() - 1, src.size() + 1}) {
      auto r = codec->decode(enc, wrong, scratch);
      EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData) << wrong;
      EXPECT_NE(r.status().message().find("zstd"), std::string::npos);
      Bytes out(wrong);
      EXPECT_EQ(codec->decode_into(enc, out).code(), ErrorCode::kCorruptData);
    }
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{10},
                            enc.size() / 2, enc.size() - 1}) {
      const Bytes t(enc.begin(), enc.begin() + static_cast<std::ptrdiff_t>(cut));
      EXPECT_EQ(codec->decode(t, std::nullopt, scratch).status().code(), ErrorCode::kCorruptData)
          << cut;
      EXPECT_EQ(codec->decode(t, src.size(), scratch).status().code(), ErrorCode::kCorruptData)
          << cut;
    }
    Bytes trailing = enc;
    trailing.push_back(std::byte{0x42});
    EXPECT_EQ(codec->decode(trailing, std::nullopt, scratch).status().code(),
              ErrorCode::kCorruptData);
  }
}

TEST(ZstdCodec, ChecksumMismatch) {
  auto codec = make_zstd_codec(0, true);
  const Bytes src = sample(5000, 1, 64);
  const Bytes enc = compress(src, 3, true);
  // Flip a bit in the stored checksum (last 4 bytes): libzstd reports a checksum error.
  Bytes bad = enc;
  bad[bad.size() - 2] ^= std::byte{0x01};
  Buffer scratch;
  auto r = codec->decode(bad, src.size(), scratch);
  EXPECT_EQ(r.status().code(), ErrorCode::kChecksumMismatch) << r.status().to_string();
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos);
  auto s = codec->decode(bad, std::nullopt, scratch);
  EXPECT_EQ(s.status().code(), ErrorCode::kChecksumMismatch) << s.status().to_string();
  // Flipping payload bytes yields either error, never a crash or a silent success (with this
  // data every flip changes the decoded bytes; a flip that did not would pass the checksum).
  int detected = 0;
  for (std::size_t i = 20; i + 4 < enc.size(); i += 7) {
    Bytes c = enc;
    c[i] ^= std::byte{0x20};
    auto e = codec->decode(c, src.size(), scratch);
    if (e.ok()) {
      ADD_FAILURE() << "corruption at byte " << i << " went unnoticed";
    } else {
      EXPECT_TRUE(e.status().code() == ErrorCode::kChecksumMismatch ||
                  e.status().code() == ErrorCode::kCorruptData);
      ++detected;
    }
  }
  EXPECT_GT(detected, 0);
}

TEST(ZstdCodec, RandomCorruptionNeverCrashes) {
  auto codec = make_zstd_codec(0, false);
  std::mt19937 rng(1234);
  const Bytes src = sample(20000, 5, 64);
  const Bytes encs[] = {compress(src), compress(src, 1, false, false), compress_streaming(src)};
  for (const Bytes& enc : encs) {
    for (int iter = 0; iter < 300; ++iter) {
      Bytes c = enc;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f)
        c[rng() % c.size()] ^= static_cast<std::byte>(1 + rng() % 255);
      Buffer scratch;
      auto r = codec->decode(c, iter % 2 ? std::optional<std::size_t>(src.size()) : std::nullopt,
                             scratch);
      if (r.ok() && r->size() == src.size()) continue;  // corrupted literals may still decode
      if (!r.ok()) {
        EXPECT_TRUE(r.status().code() == ErrorCode::kCorruptData ||
                    r.status().code() == ErrorCode::kChecksumMismatch)
            << r.status().to_string();
      }
    }
  }
}

TEST(ZstdCodec, ConcurrentDecodes) {
  // Decoding contexts are per thread; one codec serves many threads at once.
  auto codec = make_zstd_codec(3, false);
  const Bytes src = sample(200000, 21, 64);
  const Bytes sized = compress(src), streamed = compress_streaming(src);
  std::vector<std::thread> threads;
  std::vector<int> good(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        Buffer scratch;
        auto r =
            codec->decode(i % 2 ? sized : streamed,
                          t % 2 ? std::optional<std::size_t>(src.size()) : std::nullopt, scratch);
        if (r.ok() && std::equal(r->begin(), r->end(), src.begin(), src.end())) ++good[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(good[t], 20) << t;
}

TEST(ZstdCodec, Configuration) {
  const ChunkSpec spec;
  const auto& v3 = CodecRegistry::v3();
  const auto& v2 = CodecRegistry::v2();
  EXPECT_TRUE(v3.create("zstd", nullptr, spec).ok());
  EXPECT_TRUE(v3.create("zstd", nlohmann::json::object(), spec).ok());
  EXPECT_TRUE(v3.create("zstd", {{"level", -5}, {"checksum", true}}, spec).ok());
  EXPECT_TRUE(v2.create("zstd", {{"id", "zstd"}, {"level", 1}}, spec).ok());
  EXPECT_TRUE(v2.create("zstd", {{"id", "zstd"}, {"level", 1}, {"checksum", false}}, spec).ok());
  EXPECT_TRUE(v3.create("numcodecs.zstd", {{"level", 1}}, spec).ok());
  auto d = v2.create("zstd", {{"id", "zstd"}, {"level", 9}, {"checksum", true}}, spec);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->describe(), "zstd(level=9, checksum)");

  for (const nlohmann::json& bad :
       {nlohmann::json{{"level", "3"}}, nlohmann::json{{"checksum", 1}},
        nlohmann::json{{"level", 3}, {"extra", true}}, nlohmann::json{{"id", "zstd"}},
        nlohmann::json::array(), nlohmann::json{{"level", 1e20}}}) {
    auto r = v3.create("zstd", bad, spec);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata) << bad.dump();
    EXPECT_NE(r.status().message().find("zstd"), std::string::npos) << r.status().message();
  }
  EXPECT_EQ(v2.create("zstd", {{"id", "zstd"}, {"bogus", 1}}, spec).status().code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
