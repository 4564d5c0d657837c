// Helpers shared by the numcodecs checksum codec tests (crc32, adler32, fletcher32,
// jenkins_lookup3).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/registry.h"

namespace zarrflow::checksum_test {

using Bytes = std::vector<std::byte>;

// Test payloads: (i * 131 + 7) mod 256 (kind 0) or all 0xFF (kind 1), n bytes.
inline Bytes pattern(int kind, std::size_t n) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = static_cast<std::byte>(kind == 0 ? (i * 131 + 7) & 255 : 255);
  return b;
}

// The checksum numcodecs 0.16.6 stores for pattern(kind, n).
struct Golden {
  int kind;
  std::size_t n;
  std::uint32_t checksum;
};

// `payload` with `checksum` as 4 little-endian bytes before or after it.
inline Bytes framed(const Bytes& payload, std::uint32_t checksum, bool at_start) {
  Bytes le(4);
  for (int i = 0; i < 4; ++i) le[i] = static_cast<std::byte>(checksum >> (8 * i));
  Bytes out = at_start ? le : payload;
  const Bytes& rest = at_start ? payload : le;
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

inline std::shared_ptr<const BytesToBytesCodec> make(const CodecRegistry& reg,
                                                     std::string_view name,
                                                     const nlohmann::json& cfg) {
  auto c = reg.create(name, cfg, ChunkSpec{});
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const BytesToBytesCodec>(*c);
}

// Every golden chunk decodes to its payload (a view into the input); flipping a payload bit or
// the checksum is kChecksumMismatch; fewer than 4 bytes is kCorruptData.
inline void expect_checksum_codec(const BytesToBytesCodec& codec, std::span<const Golden> golden,
                                  bool at_start) {
  for (const Golden& g : golden) {
    SCOPED_TRACE(testing::Message() << "kind " << g.kind << ", " << g.n << " bytes");
    const Bytes payload = pattern(g.kind, g.n);
    Bytes enc = framed(payload, g.checksum, at_start);
    Buffer scratch;
    auto r = codec.decode(enc, g.n, scratch);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(std::equal(r->begin(), r->end(), payload.begin(), payload.end()));
    EXPECT_EQ(r->data(), enc.data() + (at_start ? 4 : 0));  // no copy
    EXPECT_EQ(codec.decode(enc, g.n + 1, scratch).status().code(), ErrorCode::kCorruptData);
    Bytes out(g.n);
    EXPECT_TRUE(codec.decode_into(enc, out).ok());
    EXPECT_EQ(out, payload);
    enc[at_start ? 0 : enc.size() - 1] ^= std::byte{1};
    EXPECT_EQ(codec.decode(enc, std::nullopt, scratch).status().code(),
              ErrorCode::kChecksumMismatch);
    if (g.n > 0) {
      enc = framed(payload, g.checksum, at_start);
      enc[at_start ? 4 + g.n / 2 : g.n / 2] ^= std::byte{0x10};
      auto bad = codec.decode(enc, std::nullopt, scratch);
      EXPECT_EQ(bad.status().code(), ErrorCode::kChecksumMismatch);
      EXPECT_NE(bad.status().message().find("does not match"), std::string::npos);
    }
  }
  Buffer scratch;
  auto short_input = codec.decode(Bytes(3), std::nullopt, scratch);
  EXPECT_EQ(short_input.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(short_input.status().message().find("shorter than the 4-byte checksum"),
            std::string::npos);
  EXPECT_EQ(codec.encoded_size(10), 14);
}

}  // namespace zarrflow::checksum_test
