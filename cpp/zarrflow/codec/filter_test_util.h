// Helpers shared by the numcodecs filter tests (delta, fixedscaleoffset, astype, shuffle, ...).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/codec_test_util.h"
#include "zarrflow/codec/registry.h"

namespace zarrflow::filter_test {

using Bytes = std::vector<std::byte>;
using json = nlohmann::json;
using codec_test::from_hex;

inline std::string to_hex(ConstByteSpan b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    s += d[static_cast<unsigned>(x) >> 4];
    s += d[static_cast<unsigned>(x) & 15];
  }
  return s;
}

template <typename T>
inline Bytes pack(std::initializer_list<T> values, bool big_endian = false) {
  Bytes out(values.size() * sizeof(T));
  std::byte* p = out.data();
  for (T v : values) {
    std::memcpy(p, &v, sizeof(T));
    if (big_endian) std::reverse(p, p + sizeof(T));
    p += sizeof(T);
  }
  return out;
}

inline std::shared_ptr<const BytesToBytesCodec> make(
    std::string_view name, const json& cfg, const CodecRegistry& reg = CodecRegistry::v2()) {
  auto c = reg.create(name, cfg, ChunkSpec{});
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const BytesToBytesCodec>(*c);
}

// A v2 filter from its numcodecs configuration (which names itself with "id").
inline std::shared_ptr<const BytesToBytesCodec> make(const json& cfg) {
  return make(cfg.at("id").get<std::string>(), cfg);
}

// Decodes through all three entry points and checks they agree; returns the bytes.
inline Bytes decode_all(const BytesToBytesCodec& codec, const Bytes& enc,
                        std::size_t expected_size) {
  Buffer scratch;
  auto a = codec.decode(enc, std::nullopt, scratch);
  EXPECT_TRUE(a.ok()) << a.status().to_string();
  if (!a.ok()) return {};
  Bytes result(a->begin(), a->end());
  EXPECT_EQ(result.size(), expected_size);
  Buffer scratch2;
  auto b = codec.decode(enc, expected_size, scratch2);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  if (b.ok()) {
    EXPECT_EQ(Bytes(b->begin(), b->end()), result);
  }
  Bytes out(expected_size);
  EXPECT_TRUE(codec.decode_into(enc, out).ok());
  EXPECT_EQ(out, result);
  return result;
}

// numcodecs' decode of `encoded` under `config` (hex strings), recorded from numcodecs 0.16.6 and
// NumPy 2.4.6 on x86-64.
struct Golden {
  const char* config;
  const char* encoded;
  const char* decoded;
};

// Decodes every golden case through all three entry points and compares with numcodecs.
inline void expect_golden(std::span<const Golden> cases) {
  for (const Golden& g : cases) {
    SCOPED_TRACE(g.config);
    auto codec = make(json::parse(g.config));
    ASSERT_TRUE(codec);
    const Bytes want = from_hex(g.decoded);
    EXPECT_EQ(to_hex(decode_all(*codec, from_hex(g.encoded), want.size())), g.decoded);
  }
}

// Random input of random length: a clean kCorruptData or success, never a crash.
inline void expect_random_input_safe(const json& cfg, unsigned seed = 3, int iterations = 200) {
  std::mt19937 rng(seed);
  auto codec = make(cfg);
  ASSERT_TRUE(codec);
  for (int iter = 0; iter < iterations; ++iter) {
    Bytes in(rng() % 200);
    for (auto& b : in) b = static_cast<std::byte>(rng());
    Buffer scratch;
    auto r = codec->decode(in, std::nullopt, scratch);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData) << r.status().to_string();
    }
  }
}

}  // namespace zarrflow::filter_test
