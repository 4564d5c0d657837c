// Host-side checks that run before GPU decoding: which chains go to the GPU and payload framing.
#include <gtest/gtest.h>
#include <libdeflate.h>
#include <zstd.h>

#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/crc32c.h"
#include "zarrflow/codec/gpu/framing.h"

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::byte>;

CodecChain chain(const char* json, DataType t = {DTypeKind::kFloat, 4}) {
  ChunkSpec spec{t, {8, 8}, std::vector<std::byte>(t.size, std::byte{0})};
  auto c = CodecChain::from_v3_json(nlohmann::json::parse(json), spec);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return std::move(c).value();
}

Bytes data(std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = std::byte(i * 7 % 13);
  return b;
}

TEST(GpuFraming, AnalyzeChain) {
  auto p = analyze_chain(chain(R"([{"name":"transpose","configuration":{"order":[1,0]}},
      {"name":"bytes","configuration":{"endian":"big"}},{"name":"zstd"},{"name":"crc32c"}])"));
  EXPECT_TRUE(p.gpu);
  EXPECT_EQ(p.codec, GpuCodec::kZstd);
  EXPECT_TRUE(p.crc32c);
  EXPECT_EQ(p.swap_unit, 4u);
  auto two = analyze_chain(chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
      {"name":"gzip"},{"name":"zstd"}])"));
  EXPECT_FALSE(two.gpu);
  EXPECT_NE(two.reason.find("gzip"), std::string::npos);
  auto sharded = analyze_chain(chain(R"([{"name":"sharding_indexed","configuration":{
      "chunk_shape":[4,4],"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}}])"));
  EXPECT_FALSE(sharded.gpu);
}

// Codecs without a GPU decoder (numcodecs bz2, zarr-python's numcodecs filters, which decode as
// bytes→bytes codecs after `bytes`) go to the host, and the reason names them.
TEST(GpuFraming, HostCodecsSayWhich) {
  auto bz2 = analyze_chain(chain(R"([{"name":"bytes","configuration":{"endian":"little"}},
      {"name":"numcodecs.bz2","configuration":{"level":3}}])"));
  EXPECT_FALSE(bz2.gpu);
  EXPECT_EQ(bz2.reason, "codec 'bz2(level=3)' has no GPU decoder");
  auto delta = analyze_chain(chain(R"([{"name":"numcodecs.delta","configuration":{
      "dtype":"float32"}},{"name":"bytes","configuration":{"endian":"little"}}])"));
  EXPECT_FALSE(delta.gpu);
  EXPECT_NE(delta.reason.find("delta(dtype='<f4'"), std::string::npos) << delta.reason;
  auto filtered = analyze_chain(chain(R"([{"name":"numcodecs.delta","configuration":{
      "dtype":"float32"}},{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd"}])"));
  EXPECT_FALSE(filtered.gpu);
  EXPECT_NE(filtered.reason.find("delta"), std::string::npos) << filtered.reason;
}

// Every numcodecs filter zarr-python writes (lowered to a bytes→bytes codec after `bytes`) sends
// its chunks to the host, alone or before a codec the GPU decodes: the GPU decoders would hand
// back the filter's encoded bytes as the elements. The reason names the filter.
TEST(GpuFraming, NumcodecsFilterChainsDecodeOnTheHost) {
  const DataType f4{DTypeKind::kFloat, 4}, f8{DTypeKind::kFloat, 8}, b1{DTypeKind::kBool, 1};
  const std::vector<std::tuple<std::string, DataType, std::string>> filters = {
      {R"({"name":"numcodecs.delta","configuration":{"dtype":"float32"}})", f4, "delta("},
      {R"({"name":"numcodecs.fixedscaleoffset","configuration":{"offset":10,"scale":100,
          "dtype":"float64","astype":"int32"}})",
       f8, "fixedscaleoffset("},
      {R"({"name":"numcodecs.astype","configuration":{"encode_dtype":"float32",
          "decode_dtype":"float64"}})",
       f8, "astype("},
      {R"({"name":"numcodecs.quantize","configuration":{"digits":2,"dtype":"float64"}})", f8,
       "quantize("},
      {R"({"name":"numcodecs.bitround","configuration":{"keepbits":6}})", f4, "bitround"},
      {R"({"name":"numcodecs.packbits","configuration":{}})", b1, "packbits"}};
  for (const char* endian : {"little", "big"}) {
    for (const auto& [filter, type, named] : filters) {
      const std::string bytes = type.size > 1 ? R"({"name":"bytes","configuration":{"endian":")" +
                                                    std::string(endian) + R"("}})"
                                              : R"({"name":"bytes"})";
      for (const std::string after : {"", R"(,{"name":"zstd"})", R"(,{"name":"numcodecs.lz4"})"}) {
        const std::string json = "[" + filter + "," + bytes + after + "]";
        const ChainProgram p = analyze_chain(chain(json.c_str(), type));
        EXPECT_FALSE(p.gpu) << json;
        // (bitround decodes as the identity: stored big-endian, it lowers to the byte swap)
        const std::string want =
            named == "bitround" && std::string(endian) == "big" ? "astype(" : named;
        EXPECT_NE(p.reason.find(want), std::string::npos) << json << ": " << p.reason;
      }
    }
  }
  // numcodecs.shuffle is a bytes→bytes codec of its own in zarr-python's chains.
  for (const std::string after : {"", R"(,{"name":"zstd"})"}) {
    const std::string json = R"([{"name":"bytes","configuration":{"endian":"little"}},
        {"name":"numcodecs.shuffle","configuration":{"elementsize":4}})" +
                             after + "]";
    const ChainProgram p = analyze_chain(chain(json.c_str()));
    EXPECT_FALSE(p.gpu) << json;
    EXPECT_NE(p.reason.find("shuffle("), std::string::npos) << p.reason;
  }
}

TEST(GpuFraming, ZstdPayloadAndFallbacks) {
  const Bytes raw = data(256);
  ChainProgram p;
  p.gpu = true;
  p.codec = GpuCodec::kZstd;
  Bytes z(ZSTD_compressBound(raw.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3));
  auto ok = locate_payload(p, z, 256);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_FALSE(ok->cpu);
  EXPECT_EQ(ok->size, z.size());
  EXPECT_EQ(locate_payload(p, z, 255).status().code(), ErrorCode::kCorruptData);
  Bytes truncated(z.begin(), z.end() - 3);
  EXPECT_EQ(locate_payload(p, truncated, 256).status().code(), ErrorCode::kCorruptData);
  Bytes two = z;
  two.insert(two.end(), z.begin(), z.end());
  auto multi = locate_payload(p, two, 512);
  ASSERT_TRUE(multi.ok());
  EXPECT_TRUE(multi->cpu);
  // With a crc32c trailer: verified, stripped; a flipped bit is a checksum mismatch.
  p.crc32c = true;
  Bytes withcrc = z;
  const std::uint32_t crc = crc32c(z);
  for (int i = 0; i < 4; ++i) withcrc.push_back(std::byte(crc >> (8 * i)));
  EXPECT_EQ(locate_payload(p, withcrc, 256)->size, z.size());
  withcrc[5] ^= std::byte{1};
  EXPECT_EQ(locate_payload(p, withcrc, 256).status().code(), ErrorCode::kChecksumMismatch);
}

TEST(GpuFraming, DeflateAndLz4Framing) {
  const Bytes raw = data(1000);
  auto* c = libdeflate_alloc_compressor(6);
  Bytes gz(libdeflate_gzip_compress_bound(c, raw.size()));
  gz.resize(libdeflate_gzip_compress(c, raw.data(), raw.size(), gz.data(), gz.size()));
  Bytes zl(libdeflate_zlib_compress_bound(c, raw.size()));
  zl.resize(libdeflate_zlib_compress(c, raw.data(), raw.size(), zl.data(), zl.size()));
  Bytes deflated(libdeflate_deflate_compress_bound(c, raw.size()));
  deflated.resize(
      libdeflate_deflate_compress(c, raw.data(), raw.size(), deflated.data(), deflated.size()));
  libdeflate_free_compressor(c);
  ChainProgram p;
  p.codec = GpuCodec::kDeflate;
  p.gzip = true;
  auto g = locate_payload(p, gz, 1000);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->size, deflated.size());           // the raw deflate stream inside
  EXPECT_TRUE(locate_payload(p, gz, 999)->cpu);  // trailer size disagrees: the CPU decides
  Bytes bad = gz;
  bad[0] = std::byte{0};
  EXPECT_EQ(locate_payload(p, bad, 1000).status().code(), ErrorCode::kCorruptData);
  p.gzip = false;
  auto z = locate_payload(p, zl, 1000);
  ASSERT_TRUE(z.ok()) << z.status().to_string();
  EXPECT_EQ(z->offset, 2u);
  EXPECT_EQ(z->size, zl.size() - 6);
  p.codec = GpuCodec::kLz4;
  Bytes lz = {std::byte{0xe8}, std::byte{0x03}, std::byte{0}, std::byte{0}, std::byte{0x10}};
  EXPECT_EQ(locate_payload(p, lz, 1000)->offset, 4u);
  EXPECT_EQ(locate_payload(p, lz, 1001).status().code(), ErrorCode::kCorruptData);
}

}  // namespace
}  // namespace zarrflow::gpu
