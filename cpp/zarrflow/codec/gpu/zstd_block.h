// The second stage of the GPU zstd decoder: the entropy decoding of one compressed block
// (RFC 8878 §3.1.1.3), independent of the frame's other blocks once the walk (zstd_frame.h) has
// said which tables it uses. Host and device code; in a kernel four lanes of a warp take a block
// (zstd_kernels.cu).
//
//   decode_zstd_literals   the literals section into the frame's literal scratch: raw and RLE
//                          sections lane-split, Huffman streams one per lane (1 or 4)
//   decode_zstd_sequences  the sequences bitstream into packed sequences (one lane: the stream
//                          is serial), and the block's decoded size
//
// Repeat offsets carry from block to block, so a block cannot know its own until the blocks
// before it are decoded. It decodes them symbolically instead: a repeat offset is either a value
// or "offset k the block started with, minus d" (the format's Repeated_Offset1 - 1 rule), and the
// block's ending history is kept in the same form; the execution stage resolves the chain
// (zstd_execute.h). A packed sequence is one 64-bit word:
//   bits 0-17 literal length, 18-35 match length, 36-63 offset (OffsetRef).
#pragma once

#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/lane_copy.h"
#include "zarrflow/codec/gpu/zstd_bits.h"
#include "zarrflow/codec/gpu/zstd_frame.h"
#include "zarrflow/codec/gpu/zstd_tables.h"

namespace zarrflow::gpu {

// An offset, or a reference to one of the block's starting repeat offsets (28 bits).
struct OffsetRef {
  static constexpr std::uint32_t kSymbolic = 1u << 27;
  ZF_HD static constexpr std::uint32_t value(std::uint32_t v) { return v; }
  ZF_HD static constexpr std::uint32_t slot(std::uint32_t k, std::uint32_t minus = 0) {
    return kSymbolic | (k << 25) | minus;
  }
  // The offset `ref` stands for, given the block's starting offsets; 0 when it is not valid.
  ZF_HD static std::uint32_t resolve(std::uint32_t ref, const std::uint32_t* start) {
    if (!(ref & kSymbolic)) return ref;
    const std::uint32_t v = start[(ref >> 25) & 3], minus = ref & ((1u << 25) - 1);
    return v > minus ? v - minus : 0;
  }
};

ZF_HD inline std::uint64_t pack_sequence(std::uint32_t ll, std::uint32_t ml, std::uint32_t off) {
  return std::uint64_t(ll) | (std::uint64_t(ml) << 18) | (std::uint64_t(off) << 36);
}
ZF_HD inline std::uint32_t sequence_ll(std::uint64_t s) { return std::uint32_t(s) & 0x3FFFF; }
ZF_HD inline std::uint32_t sequence_ml(std::uint64_t s) { return std::uint32_t(s >> 18) & 0x3FFFF; }
ZF_HD inline std::uint32_t sequence_off(std::uint64_t s) { return std::uint32_t(s >> 36); }

// Per-warp tables of the block stage: the literals' while they decode, then the sequences'.
struct ZstdBlockTables {
  union {
    struct {
      HuffmanCell huffman[1 << kMaxHuffmanBits];
      FseCell weights[64];               // FSE table of compressed Huffman weights
      std::uint8_t symbol_weights[256];  // the Huffman tree's weights (not in local memory)
    } lit;
    struct {
      FseCell ll[1 << kMaxFseLog], of[1 << 8], ml[1 << kMaxFseLog];
    } seq;
  };
};

// One Huffman stream of src[0, size) into out[0, n).
ZF_HD inline int decode_huffman_stream(const std::uint8_t* src, std::uint32_t size,
                                       const HuffmanCell* table, int max_bits, std::uint8_t* out,
                                       std::uint32_t n) {
  BackwardBits in(src, size);
  if (!in.ok()) return kDecodeCorrupt;
  for (std::uint32_t i = 0; i < n;) {
    in.reload_for(33);  // three codes take at most 33 bits
    for (const std::uint32_t end = n - i < 3 ? n : i + 3; i < end; ++i) {
      const HuffmanCell c = table[in.peek(max_bits)];
      out[i] = c.symbol;
      in.skip(c.nbits);
    }
  }
  return in.finished() ? 0 : kDecodeCorrupt;
}

// The literals of compressed block `b` of `frame` into lit[0, b.lit_size). Every lane returns
// the same status when `sync` is a barrier of all lanes. Lane 0 builds the Huffman table.
template <typename Sync>
ZF_HD int decode_zstd_literals(const std::uint8_t* frame, const ZstdBlockPlan& b, std::uint8_t* lit,
                               ZstdBlockTables& t, int* shared_status, int lane, int nlanes,
                               Sync sync) {
  if (b.lit_type == kLitRaw) {
    lane_copy(frame + b.lit_src, lit, b.lit_size, lane, nlanes);
    return 0;
  }
  if (b.lit_type == kLitRle) {
    lane_fill(lit, frame[b.lit_src], b.lit_size, lane, nlanes);
    return 0;
  }
  int max_bits = 0;
  if (lane == 0) {
    std::uint8_t* weights = t.lit.symbol_weights;
    int nsymbols = 0;
    std::uint32_t used = 0;
    int r = 0;
    if (!read_huffman_weights(frame + b.huf_desc, b.huf_desc_size, weights, &nsymbols, &used,
                              t.lit.weights) ||
        used != b.huf_desc_size ||
        !build_huffman_table(weights, nsymbols, t.lit.huffman, &max_bits))
      r = kDecodeCorrupt;
    *shared_status = r < 0 ? r : max_bits;
  }
  sync();
  const int built = *shared_status;
  sync();  // every lane has read it before lane 0 may reuse the slot
  if (built < 0) return built;
  max_bits = built;
  const std::uint8_t* src = frame + b.lit_src;
  if (b.streams == 1) {
    int r = 0;
    if (lane == 0)
      r = decode_huffman_stream(src, b.lit_src_size, t.lit.huffman, max_bits, lit, b.lit_size);
    if (lane == 0) *shared_status = r;
    sync();
    r = *shared_status;
    sync();
    return r;
  }
  const std::uint32_t sizes[3] = {zstd_detail::le(src, 2), zstd_detail::le(src + 2, 2),
                                  zstd_detail::le(src + 4, 2)};
  const std::uint32_t part = (b.lit_size + 3) / 4;
  int r = 0;
  for (int k = lane; k < 4; k += nlanes) {
    std::uint32_t at = 6;
    for (int j = 0; j < k; ++j) at += sizes[j];
    const std::uint32_t size = k < 3 ? sizes[k] : b.lit_src_size - at;
    const std::uint32_t n = k < 3 ? part : b.lit_size - 3 * part;
    const int rk =
        decode_huffman_stream(src + at, size, t.lit.huffman, max_bits, lit + k * part, n);
    if (rk < 0) r = rk;
  }
  // Agree on the result: any failing lane fails the section.
  if (lane == 0) *shared_status = 0;
  sync();
  if (r < 0) *shared_status = r;
  sync();
  r = *shared_status;
  sync();
  return r;
}

namespace zstd_detail {

// The decoding table of sequence symbol type k of block b; *log its accuracy log.
ZF_HD inline bool build_sequence_table(const std::uint8_t* frame, const ZstdBlockPlan& b, int k,
                                       FseCell* table, int* log) {
  std::int16_t counts[53];
  std::uint16_t next[53];
  int n = 0;
  switch (b.mode[k]) {
    case kTableRle:
      build_rle_table(std::uint8_t(b.table[k]), table);
      *log = 0;
      return true;
    case kTableFse: {
      static constexpr int kMaxSymbol[3] = {35, 31, 52};
      static constexpr int kMaxLog[3] = {9, 8, 9};
      std::uint32_t used = 0;
      // The walk checked the description; it ends before the bitstream starts.
      if (!read_fse_counts(frame + b.table[k], b.seq_src - b.table[k], kMaxSymbol[k], kMaxLog[k],
                           counts, &n, log, &used))
        return false;
      return build_fse_table(counts, n, *log, table, next);
    }
    default: {
      const std::int16_t* pre = predefined_counts(SeqTable(k), &n, log);
      for (int i = 0; i < n; ++i) counts[i] = pre[i];
      return build_fse_table(counts, n, *log, table, next);
    }
  }
}

}  // namespace zstd_detail

// The sequences of compressed block `b` into seq[0, b.nseq) (one lane's work). Sets b.out_size
// and b.history. Literal lengths must fit the block's literals, the output its maximum.
ZF_HD inline int decode_zstd_sequences(const std::uint8_t* frame, ZstdBlockPlan& b,
                                       std::uint32_t block_max, ZstdBlockTables& t,
                                       std::uint64_t* seq) {
  // Kept in registers: the plan is in memory that the stores to `seq` might alias, and an indexed
  // history array would live in (slow) local memory.
  const std::uint32_t nseq = b.nseq;
  std::uint32_t h0 = OffsetRef::slot(0), h1 = OffsetRef::slot(1), h2 = OffsetRef::slot(2);
  if (nseq == 0) {
    b.out_size = b.lit_size;
    b.history[0] = h0;
    b.history[1] = h1;
    b.history[2] = h2;
    return 0;
  }
  int ll_log = 0, of_log = 0, ml_log = 0;
  if (!zstd_detail::build_sequence_table(frame, b, 0, t.seq.ll, &ll_log) ||
      !zstd_detail::build_sequence_table(frame, b, 1, t.seq.of, &of_log) ||
      !zstd_detail::build_sequence_table(frame, b, 2, t.seq.ml, &ml_log))
    return kDecodeCorrupt;
  BackwardBits in(frame + b.seq_src, b.seq_src_size);
  if (!in.ok()) return kDecodeCorrupt;
  std::uint32_t sll = in.read(ll_log), sof = in.read(of_log), sml = in.read(ml_log);
  std::uint64_t total_ll = 0, total_ml = 0;
  for (std::uint32_t i = 0; i < nseq; ++i) {
    const FseCell cll = t.seq.ll[sll], cof = t.seq.of[sof], cml = t.seq.ml[sml];
    // At most 31 + 16 + 16 bits of values, then 9 + 9 + 8 of states.
    in.reload_for(31);
    const int ofc = cof.symbol;
    const std::uint32_t ofv = (1u << ofc) + in.read(ofc);
    const std::uint32_t mlc = match_length_code(cml.symbol), llc = literal_length_code(cll.symbol);
    in.reload_for(32);
    const std::uint32_t ml = (mlc & 0xFFFFFF) + in.read(int(mlc >> 24));
    const std::uint32_t ll = (llc & 0xFFFFFF) + in.read(int(llc >> 24));
    std::uint32_t off;
    if (ofv > 3) {
      if (ofv - 3 > kZstdMaxOffset) return kDecodeUnsupported;
      off = OffsetRef::value(ofv - 3);
      h2 = h1;
      h1 = h0;
    } else {
      const std::uint32_t k = ll == 0 ? ofv : ofv - 1;  // 0..3; 3 = Repeated_Offset1 - 1
      if (k == 3) {
        if (h0 & OffsetRef::kSymbolic) {
          if ((h0 & ((1u << 25) - 1)) == (1u << 25) - 1) return kDecodeUnsupported;
          off = h0 + 1;  // one more subtracted
        } else {
          if (h0 <= 1) return kDecodeCorrupt;  // an offset of 0
          off = h0 - 1;
        }
        h2 = h1;
        h1 = h0;
      } else if (k == 2) {
        off = h2;
        h2 = h1;
        h1 = h0;
      } else if (k == 1) {
        off = h1;
        h1 = h0;
      } else {
        off = h0;
      }
    }
    h0 = off;
    seq[i] = pack_sequence(ll, ml, off);
    total_ll += ll;
    total_ml += ml;
    if (i + 1 < nseq) {  // the states' updates: literal lengths, match lengths, offsets
      in.reload_for(26);
      sll = cll.baseline + in.read(cll.nbits);
      sml = cml.baseline + in.read(cml.nbits);
      sof = cof.baseline + in.read(cof.nbits);
    }
  }
  if (!in.finished()) return kDecodeCorrupt;
  if (total_ll > b.lit_size) return kDecodeCorrupt;
  const std::uint64_t out = b.lit_size + total_ml;
  if (out > block_max) return kDecodeCorrupt;
  b.out_size = std::uint32_t(out);
  b.history[0] = h0;
  b.history[1] = h1;
  b.history[2] = h2;
  return 0;
}

}  // namespace zarrflow::gpu
