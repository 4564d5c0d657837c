// Helpers shared by the tests of the variable-length codecs and of reading arrays through them:
// chunks in numcodecs' vlen format, built byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zarrflow::vlen_test {

using Bytes = std::vector<std::byte>;

// Little-endian integers, appended to `b`.
inline void put_u32(Bytes& b, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}
inline void put_u64(Bytes& b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

// numcodecs' vlen encoding of `items`: the count, then each item's length and bytes.
inline Bytes encode(const std::vector<std::string>& items) {
  Bytes b;
  put_u32(b, static_cast<std::uint32_t>(items.size()));
  for (const auto& s : items) {
    put_u32(b, static_cast<std::uint32_t>(s.size()));
    for (char c : s) b.push_back(static_cast<std::byte>(c));
  }
  return b;
}

}  // namespace zarrflow::vlen_test
