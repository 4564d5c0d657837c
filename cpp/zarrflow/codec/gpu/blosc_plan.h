// Host-side planner of the GPU Blosc path: turns one c-blosc 1.x chunk (bytes in host memory)
// into a flat list of independent streams to decode (one warp each) and of blocks to un-shuffle
// afterwards (one thread block each), reproducing exactly how c-blosc 1.21's blosc_d() walks a
// chunk, and validating every offset and size so the kernels can trust the plan.
//
// Layout of a chunk (see README_CHUNK_FORMAT.rst in c-blosc):
//   16-byte header | int32 bstarts[nblocks] | per block: nsplits x (int32 csize, csize bytes)
// or, for a memcpyed chunk (flag 0x02), header | nbytes raw bytes (no bstarts, no shuffle); its
// plan is only stored streams of up to 1 MiB each, and no blocks.
//
// Decoded positions: block b covers bytes [b * blocksize, b * blocksize + size) of the chunk's
// decoded bytes, and its stream s decodes to [b * blocksize + s * neblock, + neblock) where
// neblock = size / nsplits. A stream's dst_offset is the same in the output buffer and in a
// chunk-sized scratch buffer: streams of blocks that need un-shuffling decode into the scratch
// (to_scratch = 1), which unshuffle then reads at the same offsets; all other streams decode
// straight into the output. Snappy chunks are kUnimplemented (no GPU snappy decoder; the CPU
// codec reads them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zarrflow/codec/blosc.h"
#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"

namespace zarrflow::gpu {

// How one stream's bytes become its decoded bytes. Codes 1..5 are Blosc's compressor format
// (header flags >> 5) + 1.
enum class BloscStreamKind : std::uint8_t {
  kMemcpy = 0,   // stored: a memcpyed chunk's block, or a stream with csize == its decoded size
  kBlosclz = 1,  // blosclz_decode_block
  kLz4 = 2,      // lz4_decode_block (lz4 and lz4hc)
  kSnappy = 3,   // never planned: make_blosc_plan reports kUnimplemented
  kZlib = 4,     // zlib format (RFC 1950)
  kZstd = 5,     // zstd frame(s)
};

const char* blosc_stream_kind_name(BloscStreamKind kind);

enum class BloscUnshuffle : std::uint8_t {
  kNone = 0,  // decoded bytes are final
  kByte = 1,  // byte_unshuffle(scratch + dst_offset, out + dst_offset, typesize, size)
  kBit = 2,   // bit_unshuffle(...): always with size / typesize a positive multiple of 8
};

struct BloscStream {
  std::uint64_t src_offset;  // first byte of the stream's data in the chunk (after its csize)
  std::uint64_t dst_offset;  // first decoded byte, from the start of the chunk's decoded bytes
  std::uint32_t src_size;    // csize (> 0)
  std::uint32_t dst_size;    // exact decoded size (> 0); a decoder must produce exactly this
  std::uint32_t block;       // index of its block (memcpyed chunks: of the 1 MiB piece)
  std::uint8_t split;        // its index within the block (0..nsplits-1)
  BloscStreamKind kind;
  std::uint8_t to_scratch;  // 1: decode into the scratch buffer; 0: straight into the output
  std::uint8_t reserved = 0;
};
static_assert(sizeof(BloscStream) == 32);

struct BloscBlock {
  std::uint64_t dst_offset;    // b * blocksize
  std::uint32_t size;          // blocksize, or the leftover for a partial last block
  std::uint32_t first_stream;  // its streams are streams[first_stream, + num_streams)
  std::uint32_t num_streams;   // 1, or typesize when c-blosc split the block
  BloscUnshuffle unshuffle;
};

struct BloscPlan {
  BloscHeader header;           // as stored (see blosc.h); the fields below are derived from it
  std::uint32_t nbytes = 0;     // decoded size of the chunk
  std::uint32_t typesize = 0;   // element size of the shuffle
  std::uint32_t blocksize = 0;  // decoded bytes per block
  std::uint32_t nblocks = 0;
  std::uint32_t leftover = 0;        // size of the partial last block; 0 when all blocks are full
  bool byte_shuffle = false;         // flag 0x01
  bool memcpyed = false;             // flag 0x02
  bool bit_shuffle = false;          // flag 0x04
  bool dont_split = false;           // flag 0x10
  int compressor = 0;                // flags >> 5: 0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd
  std::vector<BloscStream> streams;  // in chunk order
  std::vector<BloscBlock> blocks;    // every block, in order
  std::vector<std::uint32_t> unshuffled;  // indices of blocks whose unshuffle != kNone

  // Whether any stream decodes into the scratch buffer (nbytes bytes), i.e. unshuffled is
  // non-empty. Without one, every stream decodes straight into the output.
  [[nodiscard]] bool needs_scratch() const { return !unshuffled.empty(); }
};

// Parses and validates `chunk` (all of it: header cbytes must equal chunk.size()) into a plan.
// Errors: kCorruptData naming the part that is wrong ("blosc: block 3 stream 2 starts past the
// end of the chunk"), kUnimplemented for snappy.
Result<BloscPlan> make_blosc_plan(ConstByteSpan chunk);

}  // namespace zarrflow::gpu
