#include "zarrflow/codec/blosc.h"

#include <random>
#include <string>
#include <vector>

#include <blosc.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "zarrflow/codec/codec_test_util.h"
#include "zarrflow/codec/decoder_test_util.h"

#include "zarrflow/codec/registry.h"

namespace zarrflow {
namespace {

using codec_test::blosc_compress;
using codec_test::Bytes;
using codec_test::expect_concurrent_decodes;
using codec_test::expect_decodes;
using codec_test::from_hex;
using codec_test::make;
using codec_test::sample;

std::shared_ptr<const BytesToBytesCodec> default_codec() {
  return make(CodecRegistry::v2(), "blosc", {{"id", "blosc"}});
}

TEST(BloscCodec, EveryCompressorShuffleTypesizeAndBlocksize) {
  auto codec = default_codec();
  ASSERT_TRUE(codec);
  int combos = 0, multi_block = 0, split = 0;
  for (const char* cname : {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"}) {
    for (int shuffle : {BLOSC_NOSHUFFLE, BLOSC_SHUFFLE, BLOSC_BITSHUFFLE}) {
      for (int typesize : {1, 2, 4, 8}) {
        // c-blosc honours a forced blocksize only where it does not split blocks into typesize
        // streams (zstd, or blocksize / typesize < 128); elsewhere it enlarges it.
        for (std::size_t blocksize : {std::size_t{0}, std::size_t{256}}) {
          for (std::size_t n : {0, 1, 7, 130, 4096, 100003}) {
            SCOPED_TRACE(std::string(cname) + " shuffle=" + std::to_string(shuffle) +
                         " typesize=" + std::to_string(typesize) +
                         " blocksize=" + std::to_string(blocksize) + " n=" + std::to_string(n));
            const Bytes src = sample(n, static_cast<unsigned>(n + typesize));
            const Bytes enc = blosc_compress(src, cname, shuffle, typesize, blocksize);
            auto h = parse_blosc_header(enc);
            ASSERT_TRUE(h.ok()) << h.status().to_string();
            EXPECT_EQ(h->nbytes, n);
            expect_decodes(*codec, enc, src);
            ++combos;
            if (h->nblocks() > 1) ++multi_block;
            if (!h->memcpyed() && !(h->flags & 0x10) && typesize > 1) ++split;
          }
        }
      }
    }
  }
  EXPECT_EQ(combos, 6 * 3 * 4 * 2 * 6);
  EXPECT_GT(multi_block, 50);
  EXPECT_GT(split, 50);
}

TEST(BloscCodec, MemcpyedAndLargeChunks) {
  auto codec = default_codec();
  const Bytes src = sample(1 << 20, 3);
  const Bytes raw = blosc_compress(src, "lz4", 1, 4, 0, /*clevel=*/0);  // clevel 0: stored
  auto h = parse_blosc_header(raw);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->memcpyed());
  expect_decodes(*codec, raw, src);
  const Bytes zeros(8 << 20, std::byte{0});
  for (const char* cname : {"lz4", "zstd", "zlib"})
    expect_decodes(*codec, blosc_compress(zeros, cname, 1, 8), zeros);
}

TEST(BloscCodec, NumcodecsGoldenBytes) {
  // numcodecs 0.16.6: Blosc(cname='zstd', clevel=5, shuffle=BITSHUFFLE) of np.arange(200, '<i4').
  const Bytes enc = from_hex(
      "02019404200300002003000050000000140000003800000028b52ffd60200275010078aaaaccf000ff0000ffff"
      "ffffff00ff0c20a08244774da8a0845cee90ce03a40033454708af90ae31c800453db1");
  Bytes want(800);
  for (std::uint32_t i = 0; i < 200; ++i)
    for (int k = 0; k < 4; ++k) want[4 * i + k] = static_cast<std::byte>(i >> (8 * k));
  expect_decodes(*make(CodecRegistry::v3(), "blosc",
                       {{"cname", "zstd"},
                        {"clevel", 5},
                        {"shuffle", "bitshuffle"},
                        {"typesize", 4},
                        {"blocksize", 0}}),
                 enc, want);
  // numcodecs writes this 16-byte header for an empty buffer (and then fails to read it).
  expect_decodes(*default_codec(), from_hex("02013304000000000100000010000000"), {});
}

Bytes set_u32(Bytes b, std::size_t at, std::uint32_t v) {
  for (int k = 0; k < 4; ++k) b[at + k] = static_cast<std::byte>(v >> (8 * k));
  return b;
}

void expect_error(const Bytes& enc, std::string_view needle,
                  ErrorCode code = ErrorCode::kCorruptData) {
  SCOPED_TRACE(needle);
  auto codec = default_codec();
  Buffer scratch;
  auto r = codec->decode(enc, std::nullopt, scratch);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_EQ(r.status().message().rfind("blosc: ", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(BloscCodec, HeaderValidation) {
  const Bytes src = sample(20000, 9);
  const Bytes enc = blosc_compress(src, "zstd", 1, 4, 2048);
  ASSERT_TRUE(parse_blosc_header(enc).ok());
  ASSERT_EQ(parse_blosc_header(enc)->nblocks(), 10u);
  const std::uint32_t cbytes = static_cast<std::uint32_t>(enc.size());

  expect_error(Bytes(enc.begin(), enc.begin() + 15), "shorter than the 16-byte header");
  expect_error(Bytes(enc.begin(), enc.end() - 1), "header says " + std::to_string(cbytes) +
                                                      " compressed bytes but the chunk has " +
                                                      std::to_string(cbytes - 1));
  Bytes v = enc;
  v[0] = std::byte{1};
  expect_error(v, "format version 1");
  v[0] = std::byte{3};
  expect_error(v, "format version 3");
  Bytes f = enc;
  f[2] |= std::byte{0x08};
  expect_error(f, "reserved bit 3");
  Bytes t = enc;
  t[3] = std::byte{0};
  expect_error(t, "typesize is 0");
  expect_error(set_u32(enc, 4, 0x7FFFFFFF), "more than Blosc's");
  expect_error(set_u32(enc, 8, 0), "blocksize 0");
  expect_error(set_u32(enc, 8, 20001), "blocksize 20001");
  expect_error(set_u32(enc, 8, 1), "table of 20000 block offsets");
  expect_error(set_u32(enc, 16 + 4 * 3, cbytes), "block 3 starts at byte");
  expect_error(set_u32(enc, 16, 8), "block 0 starts at byte 8");
  Bytes lz = enc;
  lz[1] = std::byte{2};
  expect_error(lz, "zstd format version 2");
  Bytes codec5 = enc;
  codec5[2] = static_cast<std::byte>((static_cast<unsigned>(enc[2]) & 0x1F) | (5u << 5));
  expect_error(codec5, "unknown inner codec 5");

  const Bytes raw = blosc_compress(src, "lz4", 1, 4, 0, 0);
  Bytes raw_short(raw.begin(), raw.end() - 1);
  raw_short = set_u32(raw_short, 12, static_cast<std::uint32_t>(raw_short.size()));
  expect_error(raw_short, "memcpyed");

  // A size the caller does not expect.
  auto codec = default_codec();
  Buffer scratch;
  for (std::size_t wrong : {std::size_t{0}, src.size() - 1, src.size() + 1}) {
    auto r = codec->decode(enc, wrong, scratch);
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
    EXPECT_NE(r.status().message().find("header says 20000 decoded bytes, expected"),
              std::string::npos);
    Bytes out(wrong);
    EXPECT_EQ(codec->decode_into(enc, out).code(), ErrorCode::kCorruptData);
  }
}

TEST(BloscCodec, TruncatedChunksWithPatchedSize) {
  // A truncated chunk whose header was made consistent must still fail cleanly.
  auto codec = default_codec();
  for (const char* cname : {"blosclz", "lz4", "snappy", "zlib", "zstd"}) {
    const Bytes src = sample(50000, 2);
    const Bytes enc = blosc_compress(src, cname, 1, 4, 4096);
    for (std::size_t cut = 16; cut < enc.size(); cut += 97) {
      Bytes t(enc.begin(), enc.begin() + static_cast<std::ptrdiff_t>(cut));
      t = set_u32(t, 12, static_cast<std::uint32_t>(cut));
      Buffer scratch;
      auto r = codec->decode(t, src.size(), scratch);
      EXPECT_FALSE(r.ok()) << cname << " cut " << cut;
      if (!r.ok()) {
        EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
      }
    }
  }
}

TEST(BloscCodec, RandomCorruptionNeverCrashes) {
  auto codec = default_codec();
  std::mt19937 rng(2024);
  int failures = 0, total = 0;
  for (const char* cname : {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"}) {
    for (int shuffle : {0, 1, 2}) {
      for (std::size_t blocksize : {std::size_t{0}, std::size_t{256}}) {  // 1 or 118 blocks
        const Bytes src = sample(30000, 11);
        const Bytes enc = blosc_compress(src, cname, shuffle, 4, blocksize);
        for (int iter = 0; iter < 100; ++iter) {
          Bytes c = enc;
          const int flips = 1 + static_cast<int>(rng() % 4);
          for (int k = 0; k < flips; ++k) {
            std::size_t at = rng() % c.size();
            if (iter % 3 == 0) at = rng() % std::min<std::size_t>(c.size(), 16 + 4 * 15);  // header
            if (at >= 12 && at < 16 && iter % 2 == 0) continue;  // mostly keep cbytes consistent
            c[at] ^= static_cast<std::byte>(1 + rng() % 255);
          }
          Buffer scratch;
          auto r = codec->decode(
              c, iter % 2 ? std::optional<std::size_t>(src.size()) : std::nullopt, scratch);
          ++total;
          if (!r.ok()) {
            ++failures;
            EXPECT_TRUE(r.status().code() == ErrorCode::kCorruptData ||
                        r.status().code() == ErrorCode::kUnimplemented)
                << r.status().to_string();
          }
          Bytes out(src.size());
          (void)codec->decode_into(c, out);
        }
      }
    }
  }
  EXPECT_GT(failures, total / 10);
}

// A blosclz stream whose match length is extended by millions of 0xFF bytes: c-blosc 1.21's
// blosclz decoder overflows a 32-bit length on it and crashes; zarrflow must report it.
TEST(BloscCodec, BlosclzLengthOverflowIsAnError) {
  Bytes stream = {std::byte{0x00}, std::byte{'a'}, std::byte{0xE0}};
  stream.insert(stream.end(), 8'500'000, std::byte{0xFF});
  for (int b : {0x00, 0x00, 0x00, int{'b'}}) stream.push_back(static_cast<std::byte>(b));
  const std::uint32_t nbytes = 16u << 20;
  Bytes chunk(16 + 4 + 4);
  chunk[0] = std::byte{2};     // format version
  chunk[1] = std::byte{1};     // blosclz format version
  chunk[2] = std::byte{0x10};  // blosclz, no shuffle, blocks not split
  chunk[3] = std::byte{1};     // typesize
  chunk = set_u32(chunk, 4, nbytes);
  chunk = set_u32(chunk, 8, nbytes);
  chunk = set_u32(chunk, 16, 20);  // the one block starts after its offset table
  chunk = set_u32(chunk, 20, static_cast<std::uint32_t>(stream.size()));
  chunk.insert(chunk.end(), stream.begin(), stream.end());
  chunk = set_u32(chunk, 12, static_cast<std::uint32_t>(chunk.size()));
  ASSERT_TRUE(parse_blosc_header(chunk).ok());
  Bytes out(nbytes);
  const Status s = default_codec()->decode_into(chunk, out);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << s.to_string();
}

// c-blosc leaves the tail of a split block unwritten when the block is not a multiple of the
// typesize (it never writes such chunks): zarrflow refuses the header instead of returning
// whatever the destination held.
TEST(BloscCodec, SplitBlockNotAMultipleOfTheTypesizeIsRefused) {
  const Bytes src = sample(8192, 3);
  const Bytes enc = blosc_compress(src, "lz4", 1, 4, 2048);
  const auto h = parse_blosc_header(enc);
  ASSERT_TRUE(h.ok());
  ASSERT_FALSE(h->flags & 0x10) << "c-blosc was expected to split these blocks";
  Bytes odd = enc;
  odd[3] = std::byte{3};  // typesize 3: 2048 is not a multiple of it
  expect_error(odd, "not a multiple of it");
}

TEST(BloscCodec, ConcurrentDecodes) {
  auto codec = default_codec();
  const Bytes src = sample(500000, 13);
  const Bytes enc = blosc_compress(src, "zstd", 1, 4);
  expect_concurrent_decodes(*codec, enc, src);
}

TEST(BloscCodec, Configuration) {
  const auto& v3 = CodecRegistry::v3();
  const auto& v2 = CodecRegistry::v2();
  ChunkSpec spec;
  spec.dtype = DataType{DTypeKind::kFloat, 8};
  auto c = make(v3, "blosc", {{"cname", "lz4"}, {"clevel", 1}, {"shuffle", "shuffle"}}, spec);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name(), "blosc");
  EXPECT_EQ(c->describe(), "blosc(lz4, shuffle, clevel=1, typesize=8)");
  auto d =
      make(v2, "blosc",
           {{"id", "blosc"}, {"cname", "zstd"}, {"clevel", 3}, {"shuffle", -1}, {"blocksize", 0}});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->describe(), "blosc(zstd, autoshuffle, clevel=3)");
  EXPECT_TRUE(v3.create("numcodecs.blosc", {{"cname", "lz4"}, {"shuffle", 2}}, spec).ok());
  EXPECT_TRUE(v2.create("blosc", {{"id", "blosc"}, {"typesize", 4}}, spec).ok());
  EXPECT_TRUE(v2.create("blosc", {{"id", "blosc"}, {"typesize", nullptr}}, spec).ok());

  const nlohmann::json bad_v3[] = {
      {{"cname", "lzma"}}, {{"clevel", 10}},      {{"clevel", "5"}},
      {{"shuffle", 1}},    {{"shuffle", "byte"}}, {{"typesize", 0}},
      {{"blocksize", -1}}, {{"unknown", 1}},      {{"id", "blosc"}},
  };
  for (const auto& b : bad_v3) {
    auto r = v3.create("blosc", b, spec);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata) << b.dump();
    EXPECT_NE(r.status().message().find("blosc"), std::string::npos);
  }
  const nlohmann::json bad_v2[] = {
      {{"id", "blosc"}, {"shuffle", 3}},      {{"id", "blosc"}, {"shuffle", "shuffle"}},
      {{"id", "blosc"}, {"cname", "brotli"}}, {{"id", "blosc"}, {"typesize", 0}},
      {{"id", "blosc"}, {"nthreads", 4}},
  };
  for (const auto& b : bad_v2)
    EXPECT_EQ(v2.create("blosc", b, spec).status().code(), ErrorCode::kInvalidMetadata) << b.dump();
}

}  // namespace
}  // namespace zarrflow
