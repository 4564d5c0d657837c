#include "zarrflow/codec/numcodecs_v3.h"

#include <gtest/gtest.h>

#include <cstring>

#include "zarrflow/codec/codec_chain.h"

namespace zarrflow {
namespace {

using Bytes = std::vector<std::byte>;
using json = nlohmann::json;

ChunkSpec spec_of(DTypeKind kind, std::uint32_t size, Shape shape) {
  return {DataType{kind, size}, std::move(shape), std::vector<std::byte>(size, std::byte{0})};
}

json lowered(const char* codecs, const ChunkSpec& spec) {
  auto r = lower_numcodecs_filters(json::parse(codecs), spec);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : json();
}

template <typename T>
Bytes as_bytes(const std::vector<T>& v, bool big_endian = false) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  if (big_endian)
    for (std::size_t i = 0; i < b.size(); i += sizeof(T)) std::reverse(&b[i], &b[i] + sizeof(T));
  return b;
}

// Decodes a whole chunk through the chain built from `codecs`.
template <typename T>
std::vector<T> decode_chunk(const char* codecs, const ChunkSpec& spec, const Bytes& stored) {
  auto chain = CodecChain::from_v3_json(json::parse(codecs), spec);
  EXPECT_TRUE(chain.ok()) << chain.status().to_string();
  if (!chain.ok()) return {};
  std::vector<T> out(static_cast<std::size_t>(spec.num_elements()));
  StridedView view{reinterpret_cast<std::byte*>(out.data()), spec.shape,
                   c_strides(spec.shape, sizeof(T))};
  Status s = chain->decode_into(stored, Selection::full(spec.shape), view, DecodeContext{});
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

TEST(NumcodecsV3, ChainsWithoutFiltersAreUnchanged) {
  const auto spec = spec_of(DTypeKind::kInt, 4, {8});
  const char* plain = R"([{"name": "bytes", "configuration": {"endian": "little"}},
                          {"name": "numcodecs.zstd", "configuration": {}}])";
  EXPECT_EQ(lowered(plain, spec), json::parse(plain));
}

TEST(NumcodecsV3, FiltersMoveAfterBytesWithExplicitByteOrders) {
  const auto spec = spec_of(DTypeKind::kInt, 4, {8});
  // As zarr-python writes Delta(dtype="int32", astype="int16") with a big-endian `bytes`.
  EXPECT_EQ(lowered(R"([{"name": "numcodecs.delta", "configuration": {"dtype": "int32",
                                                                      "astype": "int16"}},
                        {"name": "bytes", "configuration": {"endian": "big"}},
                        {"name": "zstd", "configuration": {"level": 0}}])",
                    spec),
            json::parse(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "numcodecs.delta", "configuration": {"dtype": "<i4",
                                                                          "astype": ">i2"}},
                            {"name": "zstd", "configuration": {"level": 0}}])"));
  // Two filters: only the last one reads the stored byte order; a missing dtype is the chunk's.
  const auto f8 = spec_of(DTypeKind::kFloat, 8, {8});
  EXPECT_EQ(lowered(R"([{"name": "numcodecs.astype", "configuration": {"encode_dtype": "float32"}},
                        {"name": "numcodecs.fixedscaleoffset",
                         "configuration": {"offset": 1, "scale": 10, "astype": "uint16"}},
                        {"name": "bytes", "configuration": {"endian": "big"}}])",
                    f8),
            json::parse(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "numcodecs.astype", "configuration": {"encode_dtype": "<f4",
                                                                           "decode_dtype": "<f8"}},
                            {"name": "numcodecs.fixedscaleoffset",
                             "configuration": {"offset": 1, "scale": 10, "dtype": "<f4",
                                               "astype": ">u2"}}])"));
}

TEST(NumcodecsV3, DeltaDecodesFromBigEndianStorage) {
  // int32 array, Delta(astype=int16), big-endian bytes: stored deltas 1, 2, -5, 7.
  const auto spec = spec_of(DTypeKind::kInt, 4, {4});
  const Bytes stored = as_bytes<std::int16_t>({1, 2, -5, 7}, /*big_endian=*/true);
  EXPECT_EQ(decode_chunk<std::int32_t>(
                R"([{"name": "numcodecs.delta", "configuration": {"dtype": "int32",
                                                                 "astype": "int16"}},
                    {"name": "bytes", "configuration": {"endian": "big"}}])",
                spec, stored),
            (std::vector<std::int32_t>{1, 3, -2, 5}));
}

TEST(NumcodecsV3, TransposeBeforeDeltaStaysAView) {
  // A 2x3 int32 array, transposed, then delta over the transposed (3x2) C order.
  const auto spec = spec_of(DTypeKind::kInt, 4, {2, 3});
  const char* codecs = R"([{"name": "transpose", "configuration": {"order": [1, 0]}},
                           {"name": "numcodecs.delta", "configuration": {"dtype": "int32"}},
                           {"name": "bytes", "configuration": {"endian": "little"}}])";
  // Array [[0, 1, 2], [10, 11, 12]] transposed is [0, 10, 1, 11, 2, 12]; its deltas:
  const Bytes stored = as_bytes<std::int32_t>({0, 10, -9, 10, -9, 10});
  EXPECT_EQ(decode_chunk<std::int32_t>(codecs, spec, stored),
            (std::vector<std::int32_t>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(lowered(codecs, spec)[0]["name"], "transpose");
}

TEST(NumcodecsV3, PackBitsAndBitRound) {
  const auto b1 = spec_of(DTypeKind::kBool, 1, {10});
  // 10 booleans 1,0,0,1,0,0,1,0,0,1: 6 padding bits, 0b10010010 0b01000000.
  const Bytes packed = {std::byte{6}, std::byte{0x92}, std::byte{0x40}};
  EXPECT_EQ(decode_chunk<std::uint8_t>(R"([{"name": "numcodecs.packbits", "configuration": {}},
                                           {"name": "bytes"}])",
                                       b1, packed),
            (std::vector<std::uint8_t>{1, 0, 0, 1, 0, 0, 1, 0, 0, 1}));
  // Bit-rounded float32 stored big-endian: decoding only undoes the byte order.
  const auto f4 = spec_of(DTypeKind::kFloat, 4, {3});
  const std::vector<float> values = {1.5f, -0.25f, 1024.0f};
  EXPECT_EQ(
      decode_chunk<float>(R"([{"name": "numcodecs.bitround", "configuration": {"keepbits": 3}},
                                    {"name": "bytes", "configuration": {"endian": "big"}}])",
                          f4, as_bytes(values, /*big_endian=*/true)),
      values);
  EXPECT_EQ(
      decode_chunk<float>(R"([{"name": "numcodecs.bitround", "configuration": {"keepbits": 3}},
                                    {"name": "bytes", "configuration": {"endian": "little"}}])",
                          f4, as_bytes(values)),
      values);
}

TEST(NumcodecsV3, WhatCannotBeMovedIsRefused) {
  const auto spec = spec_of(DTypeKind::kInt, 4, {2, 3});
  auto code = [&](const char* codecs, const char* needle) {
    auto r = lower_numcodecs_filters(json::parse(codecs), spec);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return ErrorCode::kOk;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
    return r.status().code();
  };
  EXPECT_EQ(code(R"([{"name": "numcodecs.delta", "configuration": {"dtype": "int32"}},
                     {"name": "transpose", "configuration": {"order": [1, 0]}},
                     {"name": "bytes", "configuration": {"endian": "little"}}])",
                 "transpose after"),
            ErrorCode::kUnimplemented);
  EXPECT_EQ(code(R"([{"name": "numcodecs.delta", "configuration": {"dtype": "int32"}},
                     {"name": "sharding_indexed", "configuration": {}}])",
                 "before 'sharding_indexed'"),
            ErrorCode::kUnimplemented);
  EXPECT_EQ(code(R"([{"name": "numcodecs.categorize", "configuration": {}},
                     {"name": "bytes", "configuration": {"endian": "little"}}])",
                 "array→array codec 'numcodecs.categorize'"),
            ErrorCode::kUnimplemented);
  EXPECT_EQ(code(R"([{"name": "numcodecs.delta", "configuration": {"dtype": "int16"}},
                     {"name": "bytes", "configuration": {"endian": "little"}}])",
                 "decodes to is '<i4'"),
            ErrorCode::kInvalidMetadata);
  EXPECT_EQ(code(R"([{"name": "numcodecs.packbits", "configuration": {}},
                     {"name": "bytes", "configuration": {"endian": "little"}}])",
                 "non-bool"),
            ErrorCode::kUnimplemented);
  const auto f8 = spec_of(DTypeKind::kFloat, 8, {4});
  auto q = lower_numcodecs_filters(json::parse(R"([{"name": "numcodecs.quantize",
                       "configuration": {"digits": 2, "dtype": "float64", "astype": "float32"}},
                      {"name": "bytes", "configuration": {"endian": "little"}}])"),
                                   f8);
  EXPECT_EQ(q.status().code(), ErrorCode::kUnimplemented);
}

}  // namespace
}  // namespace zarrflow
