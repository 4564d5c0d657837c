// The chain: codec order validation, exact intermediate sizes, and views between codecs.
#include "zarrflow/codec/codec_chain.h"

#include <blosc.h>
#include <gtest/gtest.h>
#include <isa-l/crc.h>
#include <libdeflate.h>
#include <lz4.h>
#include <zstd.h>

#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

namespace zarrflow {
namespace {

using Bytes = std::vector<std::byte>;

Bytes gzip(const Bytes& in) {
  auto* c = libdeflate_alloc_compressor(6);
  Bytes out(libdeflate_gzip_compress_bound(c, in.size()));
  out.resize(libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size()));
  libdeflate_free_compressor(c);
  return out;
}

Bytes with_crc32c(Bytes in) {
  const std::uint32_t crc =
      ~crc32_iscsi(reinterpret_cast<unsigned char*>(in.data()), static_cast<int>(in.size()), ~0u);
  for (int i = 0; i < 4; ++i) in.push_back(static_cast<std::byte>(crc >> (8 * i)));
  return in;
}

Bytes zstd(const Bytes& in) {
  Bytes out(ZSTD_compressBound(in.size()));
  out.resize(ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3));
  return out;
}

ChunkSpec spec_4x5_u16() {
  return {DataType{DTypeKind::kUInt, 2}, {4, 5}, std::vector<std::byte>(2, std::byte{0})};
}

// bytes → gzip → crc32c → zstd: decoding runs zstd, then crc32c (which returns a view of zstd's
// output), then gzip, which must not write into the buffer it is reading.
TEST(CodecChain, ViewsBetweenCodecsAndTransposeIntoStridedDest) {
  const auto codecs = nlohmann::json::parse(R"([
    {"name": "transpose", "configuration": {"order": [1, 0]}},
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "gzip", "configuration": {"level": 6}}, {"name": "crc32c"},
    {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])");
  auto chain = CodecChain::from_v3_json(codecs, spec_4x5_u16());
  ASSERT_TRUE(chain.ok()) << chain.status().to_string();
  // Encoded layout is the transpose: a 5x4 C-order array with element (j, i) = i * 10 + j.
  std::vector<std::uint16_t> enc(20);
  for (int j = 0; j < 5; ++j)
    for (int i = 0; i < 4; ++i) enc[j * 4 + i] = static_cast<std::uint16_t>(i * 10 + j);
  Bytes raw(40);
  std::memcpy(raw.data(), enc.data(), 40);
  const Bytes stored = zstd(with_crc32c(gzip(raw)));
  // Read rows 1..3, every other column, into a destination with a gap between rows.
  std::vector<std::uint16_t> dest(3 * 4, 0xffff);
  StridedView view{reinterpret_cast<std::byte*>(dest.data()), {3, 3}, {8, 2}};
  Selection sel{{1, 0}, {3, 3}, {1, 2}};
  ASSERT_TRUE(chain->decode_into(stored, sel, view, DecodeContext{}).ok());
  const std::vector<std::uint16_t> want = {10, 12,     14, 0xffff, 20, 22,
                                           24, 0xffff, 30, 32,     34, 0xffff};
  EXPECT_EQ(dest, want);
  // A flipped byte inside the crc32c-protected region is a checksum mismatch.
  Bytes inner = with_crc32c(gzip(raw));
  inner[3] ^= std::byte{1};
  std::vector<std::uint16_t> full(20);
  StridedView fv{reinterpret_cast<std::byte*>(full.data()), {4, 5}, {10, 2}};
  EXPECT_EQ(chain->decode_into(zstd(inner), Selection::full({4, 5}), fv, DecodeContext{}).code(),
            ErrorCode::kChecksumMismatch);
}

TEST(CodecChain, RejectsCodecsOutOfOrder) {
  auto spec = spec_4x5_u16();
  auto twice = CodecChain::from_v3_json(
      nlohmann::json::parse(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "bytes", "configuration": {"endian": "little"}}])"),
      spec);
  EXPECT_EQ(twice.status().code(), ErrorCode::kInvalidMetadata);
  auto late = CodecChain::from_v3_json(
      nlohmann::json::parse(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "transpose", "configuration": {"order": [1, 0]}}])"),
      spec);
  EXPECT_EQ(late.status().code(), ErrorCode::kInvalidMetadata);
  auto none = CodecChain::from_v3_json(nlohmann::json::parse(R"(["crc32c"])"), spec);
  EXPECT_EQ(none.status().code(), ErrorCode::kInvalidMetadata);
  auto unknown = CodecChain::from_v3_json(
      nlohmann::json::parse(R"([{"name": "bytes", "configuration": {"endian": "big"}}, "bz2"])"),
      spec);
  EXPECT_EQ(unknown.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(unknown.status().message().find("bz2"), std::string::npos);
}

// The bound of `codecs` (after a `bytes` codec) for chunks of n uint8 elements.
std::optional<std::uint64_t> chain_bound(const std::string& codecs, std::size_t n) {
  const ChunkSpec spec{
      DataType{DTypeKind::kUInt, 1}, {static_cast<std::int64_t>(n)}, std::vector<std::byte>(1)};
  auto chain = CodecChain::from_v3_json(
      nlohmann::json::parse(R"([{"name": "bytes", "configuration": {"endian": "little"}}, )" +
                            codecs + "]"),
      spec);
  EXPECT_TRUE(chain.ok()) << chain.status().to_string();
  return chain.ok() ? chain->max_encoded_size() : std::nullopt;
}

Bytes random_bytes(std::size_t n) {
  std::mt19937 rng(7);
  Bytes v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

// Each codec's bound is its reference library's worst case, and incompressible data encoded by
// that library at any level stays within it.
TEST(CodecChain, MaxEncodedSizeBoundsTheReferenceEncoders) {
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000},
                              std::size_t{200000}, (std::size_t{1} << 18) + 7}) {
    const Bytes src = random_bytes(n);
    const auto zstd_bound = chain_bound(R"({"name": "zstd"})", n);
    ASSERT_TRUE(zstd_bound);
    EXPECT_EQ(*zstd_bound, ZSTD_compressBound(n));
    for (int level : {1, 9}) {
      Bytes out(ZSTD_compressBound(n));
      const std::size_t got = ZSTD_compress(out.data(), out.size(), src.data(), n, level);
      ASSERT_FALSE(ZSTD_isError(got));
      EXPECT_LE(got, *zstd_bound) << n;
    }
    const auto lz4_bound = chain_bound(R"({"name": "numcodecs.lz4"})", n);
    ASSERT_TRUE(lz4_bound);
    EXPECT_EQ(*lz4_bound, 4u + static_cast<std::uint64_t>(LZ4_compressBound(static_cast<int>(n))));
    const auto blosc_bound = chain_bound(R"({"name": "blosc", "configuration": {"cname": "lz4",
        "clevel": 9, "shuffle": "shuffle", "typesize": 1}})",
                                         n);
    ASSERT_TRUE(blosc_bound);
    for (const char* cname : {"blosclz", "lz4", "zstd", "zlib"}) {
      Bytes out(n + BLOSC_MAX_OVERHEAD);
      const int got =
          blosc_compress_ctx(9, 1, 1, n, src.data(), out.data(), out.size(), cname, 0, 1);
      ASSERT_GT(got, 0) << cname;
      EXPECT_LE(static_cast<std::uint64_t>(got), *blosc_bound) << cname << " " << n;
    }
    for (const char* name : {"gzip", "numcodecs.zlib"}) {
      const bool is_gzip = std::string(name) == "gzip";
      const auto bound = chain_bound(R"({"name": ")" + std::string(name) + R"("})", n);
      ASSERT_TRUE(bound);
      for (int level : {0, 1, 9}) {
        auto* c = libdeflate_alloc_compressor(level);
        Bytes out(libdeflate_gzip_compress_bound(c, n));
        const std::size_t got =
            is_gzip ? libdeflate_gzip_compress(c, src.data(), n, out.data(), out.size())
                    : libdeflate_zlib_compress(c, src.data(), n, out.data(), out.size());
        libdeflate_free_compressor(c);
        ASSERT_GT(got, 0u);
        EXPECT_LE(got, *bound) << name << " level " << level << " n " << n;
      }
    }
    EXPECT_EQ(chain_bound(R"({"name": "crc32c"})", n), n + 4);
    EXPECT_EQ(chain_bound(R"({"name": "zstd"}, {"name": "crc32c"})", n), *zstd_bound + 4);
  }
}

TEST(CodecChain, ShardBoundIsTheIndexPlusEveryInnerChunk) {
  const ChunkSpec spec{DataType{DTypeKind::kUInt, 2}, {4, 6}, std::vector<std::byte>(2)};
  auto chain = CodecChain::from_v3_json(nlohmann::json::parse(R"([{"name": "sharding_indexed",
      "configuration": {"chunk_shape": [2, 3], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}])"),
                                        spec);
  ASSERT_TRUE(chain.ok()) << chain.status().to_string();
  // 4 inner chunks of 12 bytes + 4 (crc32c), and the index: 4 x 16 bytes + 4 (crc32c).
  EXPECT_EQ(chain->max_encoded_size(), 4u * (12 + 4) + (4 * 16 + 4));
  EXPECT_EQ(stored_size_cap(1000), 1000u + 62 + 65536);
  EXPECT_EQ(stored_size_cap(UINT64_MAX - 10), UINT64_MAX);
}

}  // namespace
}  // namespace zarrflow
