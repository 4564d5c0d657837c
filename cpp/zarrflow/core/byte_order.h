// Unaligned little- and big-endian 32-bit loads from byte buffers (std::byte or std::uint8_t),
// as stored formats lay them out (Blosc and numcodecs headers, gzip trailers: little-endian; the
// zlib trailer: big-endian). constexpr, so CUDA kernels call them too (the build passes nvcc
// --expt-relaxed-constexpr).
#pragma once

#include <cstdint>

namespace zarrflow {

template <typename Byte>
constexpr std::uint32_t load_le32(const Byte* p) {
  return std::uint32_t(std::uint8_t(p[0])) | std::uint32_t(std::uint8_t(p[1])) << 8 |
         std::uint32_t(std::uint8_t(p[2])) << 16 | std::uint32_t(std::uint8_t(p[3])) << 24;
}

template <typename Byte>
constexpr std::uint32_t load_be32(const Byte* p) {
  return std::uint32_t(std::uint8_t(p[0])) << 24 | std::uint32_t(std::uint8_t(p[1])) << 16 |
         std::uint32_t(std::uint8_t(p[2])) << 8 | std::uint32_t(std::uint8_t(p[3]));
}

}  // namespace zarrflow
