// Helpers shared by the bytes→bytes codec tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/registry.h"

namespace zarrflow::codec_test {

using Bytes = std::vector<std::byte>;

// The bytes→bytes codec registered as `name` with configuration `cfg` (null on failure).
inline std::shared_ptr<const BytesToBytesCodec> make(const CodecRegistry& reg,
                                                     std::string_view name,
                                                     const nlohmann::json& cfg = nullptr,
                                                     const ChunkSpec& spec = {}) {
  auto c = reg.create(name, cfg, spec);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const BytesToBytesCodec>(*c);
}

// `enc` decodes to `want` through decode() without and with the size, and decode_into().
inline void expect_decodes(const BytesToBytesCodec& codec, const Bytes& enc, const Bytes& want) {
  Buffer scratch;
  auto a = codec.decode(enc, std::nullopt, scratch);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_TRUE(std::equal(a->begin(), a->end(), want.begin(), want.end()));
  Buffer scratch2;
  auto b = codec.decode(enc, want.size(), scratch2);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_TRUE(std::equal(b->begin(), b->end(), want.begin(), want.end()));
  Bytes out(want.size());
  ASSERT_TRUE(codec.decode_into(enc, out).ok());
  EXPECT_EQ(out, want);
}

}  // namespace zarrflow::codec_test
