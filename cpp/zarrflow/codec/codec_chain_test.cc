// The chain: codec order validation, exact intermediate sizes, and views between codecs.
#include "zarrflow/codec/codec_chain.h"

#include <gtest/gtest.h>
#include <isa-l/crc.h>
#include <libdeflate.h>
#include <zstd.h>

#include <cstring>

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

}  // namespace
}  // namespace zarrflow
