// Planner of the GPU Blosc path (see blosc_plan.h): c-blosc 1.21's chunk walk, as data.
//
// The rules, from c-blosc 1.21.3 blosc/blosc.c (blosc_run_decompression_with_context, blosc_d,
// serial_blosc) and blosc/shuffle.c:
//   * nblocks = ceil(nbytes / blocksize); the last block holds nbytes % blocksize bytes when that
//     is not 0 (the "leftover" block).
//   * A block is split into typesize streams of size / typesize bytes when
//       !dont_split (flag 0x10) && typesize <= 16 (MAX_SPLITS) && size / typesize >= 128
//       (MIN_BUFFERSIZE) && it is not the leftover block;
//     otherwise it is one stream. (Chunks from before the flag existed have it clear and follow
//     the same rule.) c-blosc's encoder splits only blocks that are a multiple of typesize; a
//     split block that is not would leave bytes undecoded, so it is rejected here.
//   * A stream is int32 csize then csize bytes; streams of a block follow each other from the
//     block's bstarts entry. csize == the stream's decoded size means stored; csize 0 can never
//     decode (c-blosc hands 0 bytes to the codec, which fails); csize < 0 is an error.
//   * Un-shuffle: byte when flag 0x01 and typesize > 1; otherwise bit when flag 0x04 and the
//     block is at least typesize bytes (both flags: byte wins, unless typesize is 1). Bit
//     un-shuffle leaves a block whose element count is not a multiple of 8 as it is.
//   * memcpyed (flag 0x02): the nbytes follow the header, no bstarts, no shuffle (whatever the
//     shuffle flags say).
#include "zarrflow/codec/gpu/blosc_plan.h"

#include <algorithm>
#include <string>

#include "zarrflow/core/byte_order.h"

namespace zarrflow::gpu {
namespace {

constexpr std::uint32_t kHeaderSize = 16;
constexpr std::uint32_t kMaxSplits = 16;         // c-blosc MAX_SPLITS
constexpr std::uint32_t kMinBufferSize = 128;    // c-blosc MIN_BUFFERSIZE
constexpr std::uint64_t kMemcpyPiece = 1 << 20;  // stream size for memcpyed chunks

Status bad(std::string msg) { return corrupt_data("blosc: " + std::move(msg)); }

std::string where(std::uint32_t block, std::uint32_t split) {
  return "block " + std::to_string(block) + " stream " + std::to_string(split);
}

BloscUnshuffle unshuffle_of(const BloscPlan& p, std::uint32_t size) {
  const std::uint32_t n = size / p.typesize;
  if (p.byte_shuffle && p.typesize > 1) {
    // With fewer than 2 elements byte un-shuffle is the identity.
    return n > 1 ? BloscUnshuffle::kByte : BloscUnshuffle::kNone;
  }
  if (p.bit_shuffle && size >= p.typesize) {
    return n % 8 == 0 ? BloscUnshuffle::kBit : BloscUnshuffle::kNone;
  }
  return BloscUnshuffle::kNone;
}

}  // namespace

const char* blosc_stream_kind_name(BloscStreamKind kind) {
  switch (kind) {
    case BloscStreamKind::kMemcpy:
      return "stored";
    case BloscStreamKind::kBlosclz:
      return "blosclz";
    case BloscStreamKind::kLz4:
      return "lz4";
    case BloscStreamKind::kSnappy:
      return "snappy";
    case BloscStreamKind::kZlib:
      return "zlib";
    case BloscStreamKind::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<BloscPlan> make_blosc_plan(ConstByteSpan chunk) {
  // Header fields, cbytes == chunk.size(), version, sizes, inner codec, and every bstarts entry
  // (>= the end of the table, room for a csize) are checked there.
  ZF_ASSIGN_OR_RETURN(BloscHeader h, parse_blosc_header(chunk));
  BloscPlan plan;
  plan.header = h;
  plan.nbytes = h.nbytes;
  plan.typesize = h.typesize;
  plan.blocksize = h.blocksize;
  plan.byte_shuffle = (h.flags & 0x01) != 0;
  plan.memcpyed = (h.flags & 0x02) != 0;
  plan.bit_shuffle = (h.flags & 0x04) != 0;
  plan.dont_split = (h.flags & 0x10) != 0;
  plan.compressor = h.compformat();
  if (h.nbytes == 0) return plan;  // c-blosc decodes nothing

  plan.nblocks = static_cast<std::uint32_t>(h.nblocks());
  plan.leftover = h.nbytes % h.blocksize;
  const std::uint64_t cbytes = chunk.size();

  if (plan.memcpyed) {
    // The nbytes follow the header (parse_blosc_header checked cbytes == 16 + nbytes). c-blosc
    // copies them block by block; the plan cuts them into pieces of at most 1 MiB instead, so a
    // tiny blocksize cannot make a huge plan. No blocks, nothing to un-shuffle.
    plan.streams.reserve(h.nbytes / kMemcpyPiece + 1);
    for (std::uint64_t dst = 0, i = 0; dst < h.nbytes; dst += kMemcpyPiece, ++i) {
      const auto size =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(kMemcpyPiece, h.nbytes - dst));
      plan.streams.push_back({kHeaderSize + dst, dst, size, size, static_cast<std::uint32_t>(i), 0,
                              BloscStreamKind::kMemcpy, 0});
    }
    return plan;
  }

  if (plan.compressor == 2)
    return unimplemented("blosc: chunk uses snappy, which the GPU decode path does not support");
  const auto kind = static_cast<BloscStreamKind>(plan.compressor + 1);

  plan.blocks.reserve(plan.nblocks);
  const std::byte* p = chunk.data();
  for (std::uint32_t b = 0; b < plan.nblocks; ++b) {
    const bool leftover_block = b + 1 == plan.nblocks && plan.leftover != 0;
    const std::uint32_t size = leftover_block ? plan.leftover : h.blocksize;
    const std::uint64_t dst = std::uint64_t{b} * h.blocksize;
    const bool split = !plan.dont_split && plan.typesize <= kMaxSplits &&
                       size / plan.typesize >= kMinBufferSize && !leftover_block;
    // parse_blosc_header refused split blocks that are not a multiple of the typesize.
    const std::uint32_t nsplits = split ? plan.typesize : 1;
    const std::uint32_t neblock = size / nsplits;
    const BloscUnshuffle op = unshuffle_of(plan, size);
    const auto first = static_cast<std::uint32_t>(plan.streams.size());
    plan.blocks.push_back({dst, size, first, nsplits, op});
    if (op != BloscUnshuffle::kNone) plan.unshuffled.push_back(b);

    std::uint64_t at = load_le32(p + kHeaderSize + 4 * std::uint64_t{b});
    for (std::uint32_t s = 0; s < nsplits; ++s) {
      if (at + 4 > cbytes)
        return bad(where(b, s) + " starts past the end of the chunk (its size would be at byte " +
                   std::to_string(at) + " of " + std::to_string(cbytes) + ")");
      const std::uint32_t csize = load_le32(p + at);
      at += 4;
      if (csize > 0x7FFFFFFFu)
        return bad(where(b, s) + " has a negative compressed size (" +
                   std::to_string(static_cast<std::int32_t>(csize)) + ")");
      if (csize > cbytes - at)
        return bad(where(b, s) + ": " + std::to_string(csize) + " compressed bytes at byte " +
                   std::to_string(at) + " run past the end of the chunk (" +
                   std::to_string(cbytes) + " bytes)");
      if (csize == 0)
        return bad(where(b, s) + " is empty (0 compressed bytes for " + std::to_string(neblock) +
                   " decoded bytes)");
      const BloscStreamKind k = csize == neblock ? BloscStreamKind::kMemcpy : kind;
      plan.streams.push_back({at, dst + std::uint64_t{s} * neblock, csize, neblock, b,
                              static_cast<std::uint8_t>(s), k,
                              static_cast<std::uint8_t>(op != BloscUnshuffle::kNone)});
      at += csize;
    }
  }
  return plan;
}

}  // namespace zarrflow::gpu
