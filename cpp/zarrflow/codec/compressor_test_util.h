// Helpers shared by the tests of the numcodecs compressors that wrap a streaming library (bz2,
// lzma): the numcodecs golden data, error codes of failed decodes, and the checks every such
// codec must pass on concatenated, corrupt, truncated and randomly mutated streams.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec_test_util.h"
#include "zarrflow/codec/registry.h"

namespace zarrflow::compressor_test {

using Bytes = std::vector<std::byte>;
using json = nlohmann::json;
// The codec_test_util.h helpers these tests use.
using codec_test::expect_decodes;
using codec_test::from_hex;
using codec_test::sample;
// A reference compressor (the system library the codec wraps): raw bytes in, one stream out.
using Compress = std::function<Bytes(const Bytes&)>;

// The data the numcodecs golden streams hold: np.arange(300, dtype="<i4") % 17.
inline Bytes golden_data() {
  Bytes b(1200);
  for (std::uint32_t i = 0; i < 300; ++i)
    for (int k = 0; k < 4; ++k) b[4 * i + k] = static_cast<std::byte>(((i % 17) >> (8 * k)) & 255);
  return b;
}

// A v2 compressor from its numcodecs configuration (which names itself with "id").
inline std::shared_ptr<const BytesToBytesCodec> make(const json& cfg) {
  return codec_test::make(CodecRegistry::v2(), cfg.at("id").get<std::string>(), cfg);
}

// The error code of decoding `enc` (kOk when it decodes); `message` gets the error's message.
inline ErrorCode decode_error(const BytesToBytesCodec& codec, const Bytes& enc,
                              std::optional<std::size_t> size, std::string* message = nullptr) {
  Buffer scratch;
  auto r = codec.decode(enc, size, scratch);
  if (message) *message = r.ok() ? "" : r.status().message();
  return r.ok() ? ErrorCode::kOk : r.status().code();
}

inline Bytes concat(const Bytes& a, const Bytes& b) {
  Bytes out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Two streams back to back decode to both payloads, as Python's module decompress() reads them;
// a second stream cut short is kCorruptData saying "truncated"; empty input decodes to nothing.
inline void expect_concatenated_streams(const BytesToBytesCodec& codec, const Compress& compress) {
  const Bytes a = sample(5000, 1), b = sample(3000, 2);
  const Bytes sa = compress(a), sb = compress(b);
  expect_decodes(codec, concat(sa, sb), concat(a, b));
  std::string message;
  const Bytes cut(sb.begin(), sb.end() - 10);
  EXPECT_EQ(decode_error(codec, concat(sa, cut), std::nullopt, &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  expect_decodes(codec, Bytes{}, Bytes{});
}

// `enc` (the stream of `raw`) with a flipped bit, cut by a byte, or decoded to a size one off is
// kCorruptData; a flipped bit's message starts with `prefix` ("bz2: ").
inline void expect_corrupt_streams_rejected(const BytesToBytesCodec& codec, const Bytes& enc,
                                            const Bytes& raw, const std::string& prefix) {
  std::string message;
  Bytes flipped = enc;
  flipped[enc.size() / 2] ^= std::byte{0x40};
  EXPECT_EQ(decode_error(codec, flipped, raw.size(), &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find(prefix), std::string::npos) << message;
  const Bytes truncated(enc.begin(), enc.end() - 1);
  EXPECT_EQ(decode_error(codec, truncated, raw.size()), ErrorCode::kCorruptData);
  EXPECT_EQ(decode_error(codec, truncated, std::nullopt), ErrorCode::kCorruptData);
  EXPECT_EQ(decode_error(codec, enc, raw.size() - 1, &message), ErrorCode::kCorruptData);
  EXPECT_NE(message.find("more than the expected"), std::string::npos) << message;
  EXPECT_EQ(decode_error(codec, enc, raw.size() + 1), ErrorCode::kCorruptData);
}

// `iterations` copies of `enc` (the stream of `decoded_size` bytes) with a few random bytes
// overwritten and, every other time, cut at a random length, decoded with the size known or not:
// each decodes or fails with one of `allowed` (kCorruptData unless told), never crashes.
inline void expect_mutated_streams_fail_cleanly(const BytesToBytesCodec& codec, const Bytes& enc,
                                                std::size_t decoded_size, int iterations,
                                                std::initializer_list<ErrorCode> allowed = {
                                                    ErrorCode::kCorruptData}) {
  std::mt19937 rng(5);
  for (int i = 0; i < iterations; ++i) {
    Bytes in = enc;
    for (int k = 0; k < 1 + i % 4; ++k) in[rng() % in.size()] = static_cast<std::byte>(rng());
    in.resize(rng() % 2 ? in.size() : rng() % in.size());
    const ErrorCode c =
        decode_error(codec, in, i % 2 ? std::optional<std::size_t>(decoded_size) : std::nullopt);
    EXPECT_TRUE(c == ErrorCode::kOk ||
                std::find(allowed.begin(), allowed.end(), c) != allowed.end())
        << static_cast<int>(c);
  }
}

}  // namespace zarrflow::compressor_test
