// The `blosc` bytes→bytes codec (Zarr v3 `blosc`, numcodecs `blosc`): c-blosc 1.x chunks.
#pragma once

#include <cstdint>
#include <string>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// The 16-byte header that starts every c-blosc 1.x chunk (little-endian fields).
struct BloscHeader {
  std::uint8_t version = 0;     // format version; c-blosc 1.x writes and reads 2
  std::uint8_t versionlz = 0;   // version of the inner codec's format (1)
  std::uint8_t flags = 0;       // bit 0 byte shuffle, 1 memcpyed, 2 bit shuffle, 4 don't split,
                                // bits 5-7 inner codec (0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib,
                                // 4 zstd)
  std::uint8_t typesize = 0;    // element size the shuffle used
  std::uint32_t nbytes = 0;     // decoded size
  std::uint32_t blocksize = 0;  // decoded bytes per block (the last may be shorter)
  std::uint32_t cbytes = 0;     // size of the whole chunk, header included

  [[nodiscard]] bool memcpyed() const { return (flags & 0x02) != 0; }
  [[nodiscard]] int compformat() const { return flags >> 5; }
  [[nodiscard]] std::uint64_t nblocks() const {
    return blocksize == 0 ? 0 : (std::uint64_t{nbytes} + blocksize - 1) / blocksize;
  }
};

// Parses and checks the header and the block-offset table of `chunk` without decompressing:
// every field in range, cbytes == chunk.size(), and every block start inside the chunk. Errors
// are kCorruptData (kUnimplemented for an inner codec this c-blosc build lacks) naming the field.
Result<BloscHeader> parse_blosc_header(ConstByteSpan chunk);

}  // namespace zarrflow
