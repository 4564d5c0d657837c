// The first stage of the GPU zstd decoder: one thread walks a frame's headers (RFC 8878 §3.1)
// and plans its blocks, so that the blocks' entropy decoding can then run in parallel
// (zstd_block.h) and their sequences execute in parallel windows (zstd_execute.h). Host and
// device code.
//
// The walk reads only headers: the frame header, each block header, each literals section header
// and Huffman tree header byte (which give the section's size), and each sequences section's
// count, modes and FSE table descriptions (read to find where the bitstream starts). It resolves
// what the later stages would otherwise need the previous block for: which Huffman tree a
// treeless literals section uses and which table a Repeat_Mode repeats.
//
// What the GPU decoder does not take -- dictionaries, more than one frame (or a skippable frame)
// in a chunk, back-references over 2^27 bytes, more blocks or sequences than the scratch was
// sized for, outputs of 2 GiB or more -- is kDecodeUnsupported: the chunk is then decoded by
// libzstd on the host (the read path's recovery), like any chunk the GPU rejects, so the GPU never
// returns bytes for a chunk the CPU path would reject.
#pragma once

#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/zstd_tables.h"

namespace zarrflow::gpu {

constexpr std::uint32_t kZstdMagic = 0xFD2FB528u;
constexpr std::uint32_t kZstdMaxBlock = 128u * 1024u;
// Offsets are kept in 27 bits (zstd_block.h), windows up to 128 MiB.
constexpr std::uint32_t kZstdMaxOffset = (1u << 27) - 1;

enum ZstdBlockType : std::uint8_t { kZstdRaw = 0, kZstdRle = 1, kZstdCompressed = 2 };
enum ZstdLiteralsType : std::uint8_t {
  kLitRaw = 0,
  kLitRle = 1,
  kLitCompressed = 2,
  kLitTreeless = 3
};
enum ZstdTableMode : std::uint8_t { kTablePredefined = 0, kTableRle = 1, kTableFse = 2 };

// One block, as the walk plans it; the block and execution stages fill in the rest.
struct ZstdBlockPlan {
  std::uint32_t src;   // offset of the block's content in the frame
  std::uint32_t size;  // content bytes (raw, compressed); the run length (RLE)
  std::uint8_t type;   // ZstdBlockType
  // Compressed blocks:
  std::uint8_t lit_type;  // ZstdLiteralsType
  std::uint8_t streams;   // Huffman streams: 1 or 4
  std::uint8_t unused = 0;
  std::uint32_t lit_size;      // decoded literal bytes
  std::uint32_t lit_src;       // raw: the bytes; RLE: the byte; Huffman: the streams (jump table)
  std::uint32_t lit_src_size;  // Huffman: the streams' bytes
  std::uint32_t huf_desc;      // Huffman: the tree description in force (this block's or earlier)
  std::uint32_t huf_desc_size;
  std::uint32_t lit_out;  // where the literals go in the frame's literal scratch
  std::uint32_t nseq;
  std::uint32_t seq_out;                // first sequence's index in the frame's sequence scratch
  std::uint32_t seq_src, seq_src_size;  // the sequences bitstream
  std::uint8_t mode[3];                 // ZstdTableMode of literal lengths, offsets, match lengths
  std::uint8_t unused2 = 0;
  std::uint32_t table[3];  // the RLE symbol, or where the FSE table description is
  // Set by the block stage: decoded bytes and the repeat offsets at the block's end (symbolic,
  // see zstd_block.h).
  std::uint32_t out_size;
  std::uint32_t history[3];
  // Set by the execution stage: where the block's output starts; the repeat offsets it starts
  // with (0 = invalid).
  std::uint32_t out_pos;
  std::uint32_t in_history[3];
};

struct ZstdFramePlan {
  std::uint32_t blocks = 0;
  std::uint32_t literals = 0;   // literal scratch bytes used
  std::uint32_t sequences = 0;  // sequence scratch entries used
  std::uint32_t block_max = 0;  // largest block content or output the frame allows
  std::uint32_t has_checksum = 0;
  std::uint32_t checksum = 0;  // low 32 bits of the XXH64 of the content, as stored
};

// What the frame may use of its scratch: its literals take at most dst_size bytes, its blocks and
// sequences at most these. Frames of blocks under 1 KiB on average, or of sequences under 4
// bytes, are left to the host.
struct ZstdFrameRoom {
  std::uint32_t blocks;
  std::uint32_t sequences;
};

ZF_HD inline ZstdFrameRoom zstd_frame_room(std::uint64_t src_size, std::uint64_t dst_size) {
  const std::uint64_t blocks = dst_size / 1024 + 64, by_src = src_size / 3 + 1;
  const std::uint64_t b = blocks < by_src ? blocks : by_src;
  const std::uint64_t seqs = dst_size / 4 + 64;
  return ZstdFrameRoom{std::uint32_t(b < (1u << 30) ? b : (1u << 30)),
                       std::uint32_t(seqs < (1u << 30) ? seqs : (1u << 30))};
}

namespace zstd_detail {

ZF_HD inline std::uint32_t le(const std::uint8_t* p, int n) {
  std::uint32_t v = 0;
  for (int k = 0; k < n; ++k) v |= std::uint32_t(p[k]) << (8 * k);
  return v;
}

// The table of one sequence symbol type: its mode, RLE symbol or description, checked.
struct TableRef {
  std::uint8_t mode = 0;
  std::uint32_t where = 0;
  bool set = false;
};

ZF_HD inline int plan_table(const std::uint8_t* frame, std::uint32_t* pos, std::uint32_t end,
                            int mode, SeqTable which, TableRef* previous) {
  static constexpr int kMaxSymbol[3] = {35, 31, 52};
  static constexpr int kMaxLog[3] = {9, 8, 9};
  const int k = int(which);
  switch (mode) {
    case 0:  // predefined
      *previous = TableRef{kTablePredefined, 0, true};
      return 0;
    case 1:  // RLE: one symbol byte
      if (*pos >= end) return kDecodeCorrupt;
      if (frame[*pos] > kMaxSymbol[k]) return kDecodeCorrupt;
      *previous = TableRef{kTableRle, frame[*pos], true};
      *pos += 1;
      return 0;
    case 2: {  // FSE table description
      std::int16_t counts[53];
      int n = 0, log = 0;
      std::uint32_t used = 0;
      if (!read_fse_counts(frame + *pos, end - *pos, kMaxSymbol[k], kMaxLog[k], counts, &n, &log,
                           &used))
        return kDecodeCorrupt;
      *previous = TableRef{kTableFse, *pos, true};
      *pos += used;
      return 0;
    }
    default:  // repeat the previous block's
      return previous->set ? 0 : kDecodeCorrupt;
  }
}

// The literals section of the compressed block whose content is frame[c, c + n): fills the
// literal fields of `b`; *size = the section's bytes.
ZF_HD inline int plan_literals(const std::uint8_t* frame, std::uint32_t c, std::uint32_t n,
                               std::uint32_t block_max, std::uint32_t* huf_desc,
                               std::uint32_t* huf_desc_size, ZstdBlockPlan* b,
                               std::uint32_t* size) {
  if (n < 1) return kDecodeCorrupt;
  const std::uint8_t* h = frame + c;
  const int type = h[0] & 3, format = (h[0] >> 2) & 3;
  b->lit_type = std::uint8_t(type);
  b->streams = 1;
  if (type == kLitRaw || type == kLitRle) {
    const int hsize = (format & 1) == 0 ? 1 : (format == 1 ? 2 : 3);
    if (std::uint32_t(hsize) > n) return kDecodeCorrupt;
    const std::uint32_t v = le(h, hsize);
    b->lit_size = hsize == 1 ? v >> 3 : v >> 4;
    const std::uint32_t body = type == kLitRaw ? b->lit_size : 1;
    if (b->lit_size > block_max) return kDecodeCorrupt;
    if (hsize + body > n) return kDecodeCorrupt;
    b->lit_src = c + std::uint32_t(hsize);
    b->lit_src_size = body;
    *size = std::uint32_t(hsize) + body;
    return 0;
  }
  const int hsize = format <= 1 ? 3 : format + 2;
  if (std::uint32_t(hsize) > n) return kDecodeCorrupt;
  const int size_bits = format <= 1 ? 10 : (format == 2 ? 14 : 18);
  const std::uint64_t v =
      std::uint64_t(le(h, 4 > hsize ? hsize : 4)) | (hsize == 5 ? std::uint64_t(h[4]) << 32 : 0);
  const std::uint32_t mask = (1u << size_bits) - 1;
  b->lit_size = std::uint32_t(v >> 4) & mask;
  const std::uint32_t csize = std::uint32_t(v >> (4 + size_bits)) & mask;
  b->streams = format == 0 ? 1 : 4;
  if (b->lit_size > block_max) return kDecodeCorrupt;
  if (b->streams == 4 && b->lit_size < 6) return kDecodeCorrupt;
  if (hsize + csize > n) return kDecodeCorrupt;
  std::uint32_t desc = 0;
  if (type == kLitCompressed) {
    if (csize < 1) return kDecodeCorrupt;
    const std::uint8_t header = frame[c + hsize];
    desc = header < 128 ? 1u + header : 1u + (std::uint32_t(header) - 127u + 1u) / 2u;
    if (desc >= csize) return kDecodeCorrupt;
    *huf_desc = c + std::uint32_t(hsize);
    *huf_desc_size = desc;
  } else if (*huf_desc_size == 0) {
    return kDecodeCorrupt;  // treeless, but no tree earlier in the frame
  }
  b->huf_desc = *huf_desc;
  b->huf_desc_size = *huf_desc_size;
  b->lit_src = c + std::uint32_t(hsize) + desc;
  b->lit_src_size = csize - desc;
  if (b->streams == 4) {
    const std::uint32_t total = b->lit_src_size;
    if (total < 10) return kDecodeCorrupt;
    const std::uint8_t* jump = frame + b->lit_src;
    const std::uint32_t s123 = le(jump, 2) + le(jump + 2, 2) + le(jump + 4, 2);
    if (s123 + 6 >= total) return kDecodeCorrupt;  // the fourth stream takes at least one byte
  }
  *size = std::uint32_t(hsize) + csize;
  return 0;
}

}  // namespace zstd_detail

// Plans the frame in src[0, size), whose content must be dst_size bytes. Returns 0, or a
// negative DecodeStatus (kDecodeUnsupported: leave the frame to the host).
ZF_HD inline int plan_zstd_frame(const std::uint8_t* src, std::uint32_t size,
                                 std::uint64_t dst_size, ZstdFrameRoom room, ZstdBlockPlan* blocks,
                                 ZstdFramePlan* frame) {
  using zstd_detail::le;
  *frame = ZstdFramePlan{};
  if (dst_size >= (1ull << 31)) return kDecodeUnsupported;
  if (size < 4) return kDecodeTruncated;
  const std::uint32_t magic = le(src, 4);
  if (magic != kZstdMagic)
    return (magic & 0xFFFFFFF0u) == 0x184D2A50u ? kDecodeUnsupported : kDecodeCorrupt;
  std::uint32_t pos = 4;
  if (pos >= size) return kDecodeTruncated;
  const std::uint8_t fhd = src[pos++];
  const int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, did_flag = fhd & 3;
  if (fhd & 0x08) return kDecodeCorrupt;  // reserved bit
  frame->has_checksum = (fhd >> 2) & 1;
  std::uint64_t window = 0;
  if (!single) {
    if (pos >= size) return kDecodeTruncated;
    const int w = src[pos++];
    const int log = 10 + (w >> 3);
    if (log > 31) return kDecodeUnsupported;
    window = (1ull << log) + ((1ull << log) / 8) * std::uint64_t(w & 7);
  }
  static constexpr int kDidBytes[4] = {0, 1, 2, 4};
  const int did_bytes = kDidBytes[did_flag];
  if (pos + std::uint32_t(did_bytes) > size) return kDecodeTruncated;
  if (did_bytes > 0 && le(src + pos, did_bytes) != 0) return kDecodeUnsupported;  // dictionary
  pos += std::uint32_t(did_bytes);
  static constexpr int kFcsBytes[4] = {0, 2, 4, 8};
  const int fcs_bytes = fcs_flag == 0 ? single : kFcsBytes[fcs_flag];
  if (pos + std::uint32_t(fcs_bytes) > size) return kDecodeTruncated;
  if (fcs_bytes > 0) {
    std::uint64_t fcs = le(src + pos, fcs_bytes > 4 ? 4 : fcs_bytes);
    if (fcs_bytes == 8) fcs |= std::uint64_t(le(src + pos + 4, 4)) << 32;
    if (fcs_bytes == 2) fcs += 256;
    if (fcs > dst_size) return kDecodeOverflow;
    if (fcs < dst_size) return kDecodeUnsupported;  // more frames follow, or a wrong size
    if (single) window = fcs;
    pos += std::uint32_t(fcs_bytes);
  }
  const std::uint32_t block_max = window < kZstdMaxBlock ? std::uint32_t(window) : kZstdMaxBlock;
  frame->block_max = block_max;

  std::uint32_t huf_desc = 0, huf_desc_size = 0;
  zstd_detail::TableRef tables[3];
  std::uint64_t out_min = 0;  // output the blocks planned so far make at least
  for (;;) {
    if (pos + 3 > size) return kDecodeTruncated;
    const std::uint32_t header = le(src + pos, 3);
    pos += 3;
    const bool last = header & 1;
    const int type = (header >> 1) & 3;
    const std::uint32_t bsize = header >> 3;
    if (type == 3) return kDecodeCorrupt;
    if (bsize > block_max) return kDecodeCorrupt;
    const std::uint32_t content = type == kZstdRle ? 1 : bsize;
    if (content > size - pos) return kDecodeTruncated;
    if (frame->blocks == room.blocks) return kDecodeUnsupported;
    ZstdBlockPlan& b = blocks[frame->blocks++];
    b = ZstdBlockPlan{};
    b.src = pos;
    b.size = bsize;
    b.type = std::uint8_t(type);
    if (type != kZstdCompressed) {
      out_min += bsize;
    } else {
      std::uint32_t lit_bytes = 0;
      if (int r = zstd_detail::plan_literals(src, pos, bsize, block_max, &huf_desc, &huf_desc_size,
                                             &b, &lit_bytes);
          r < 0)
        return r;
      // Sequences section: count, modes, tables, bitstream.
      std::uint32_t s = pos + lit_bytes;
      const std::uint32_t end = pos + bsize;
      if (s >= end) return kDecodeCorrupt;
      const std::uint32_t b0 = src[s];
      if (b0 < 128) {
        b.nseq = b0;
        s += 1;
      } else if (b0 < 255) {
        if (s + 2 > end) return kDecodeCorrupt;
        b.nseq = ((b0 - 128) << 8) + src[s + 1];
        s += 2;
      } else {
        if (s + 3 > end) return kDecodeCorrupt;
        b.nseq = src[s + 1] + (std::uint32_t(src[s + 2]) << 8) + 0x7F00;
        s += 3;
      }
      if (b.nseq == 0) {
        if (s != end) return kDecodeCorrupt;
      } else {
        if (std::uint64_t(b.nseq) * 3 > block_max) return kDecodeCorrupt;  // matches are >= 3
        if (s >= end) return kDecodeCorrupt;
        const std::uint8_t modes = src[s++];
        if (modes & 3) return kDecodeCorrupt;
        const int mode[3] = {modes >> 6, (modes >> 4) & 3, (modes >> 2) & 3};
        for (int k = 0; k < 3; ++k) {
          if (int r = zstd_detail::plan_table(src, &s, end, mode[k], SeqTable(k), &tables[k]);
              r < 0)
            return r;
          b.mode[k] = tables[k].mode;
          b.table[k] = tables[k].where;
        }
        if (s >= end) return kDecodeCorrupt;  // no bitstream
        b.seq_src = s;
        b.seq_src_size = end - s;
      }
      if (std::uint64_t(frame->literals) + b.lit_size > dst_size) return kDecodeOverflow;
      b.lit_out = frame->literals;
      frame->literals += b.lit_size;
      if (std::uint64_t(frame->sequences) + b.nseq > room.sequences) return kDecodeUnsupported;
      b.seq_out = frame->sequences;
      frame->sequences += b.nseq;
      out_min += std::uint64_t(b.lit_size) + 3ull * b.nseq;
    }
    if (out_min > dst_size) return kDecodeOverflow;
    pos += content;
    if (last) break;
  }
  if (frame->has_checksum) {
    if (pos + 4 > size) return kDecodeTruncated;
    frame->checksum = le(src + pos, 4);
    pos += 4;
  }
  return pos == size ? 0 : kDecodeUnsupported;  // more frames, or bytes after the frame
}

}  // namespace zarrflow::gpu
