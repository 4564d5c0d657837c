// Entropy tables of the Zstandard format (RFC 8878 §4) for the GPU zstd decoder; host and device
// code, one thread building a table (they are small: at most 512 FSE or 2048 Huffman cells).
//
//   read_fse_counts      an FSE table description -> normalized counts, and its size in bytes
//   build_fse_table      normalized counts -> decoding table (symbol, bits, baseline per state)
//   predefined_counts    the default distributions of literal lengths, match lengths, offsets
//   read_huffman_weights a Huffman tree description (direct or FSE-compressed) -> weights
//   build_huffman_table  weights -> decoding table indexed by the next max_bits bits
//
// Every function checks what it reads and returns false on anything the format rules out.
#pragma once

#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/codec/gpu/zstd_bits.h"

namespace zarrflow::gpu {

// One state of an FSE decoding table.
struct FseCell {
  std::uint16_t baseline;  // next state = baseline + the next nbits bits
  std::uint8_t symbol;
  std::uint8_t nbits;
};

constexpr int kMaxFseLog = 9;  // literal and match lengths; offsets 8, Huffman weights 6
constexpr int kLitLenCodes = 36, kMatchLenCodes = 53, kOffsetCodes = 32;
constexpr int kMaxHuffmanBits = 11;

// Reads an FSE table description of at most `max_symbol` + 1 symbols and accuracy log at most
// `max_log` from src[0, size). On success: counts[0..*nsymbols) (-1 = "less than one"), *log,
// and *used = the description's size in bytes.
ZF_HD inline bool read_fse_counts(const std::uint8_t* src, std::uint32_t size, int max_symbol,
                                  int max_log, std::int16_t* counts, int* nsymbols, int* log,
                                  std::uint32_t* used) {
  if (size == 0) return false;
  ForwardBits in(src, size);
  const int acc = int(in.read(4)) + 5;
  if (acc > max_log) return false;
  int remaining = (1 << acc) + 1;
  int threshold = 1 << acc;
  int nbits = acc + 1;
  int symbol = 0;
  bool previous_zero = false;
  while (remaining > 1 && symbol <= max_symbol) {
    if (previous_zero) {
      int run_end = symbol;
      for (;;) {
        const int flag = int(in.read(2));
        run_end += flag;
        if (flag != 3) break;
        if (run_end > max_symbol + 1) return false;
      }
      if (run_end > max_symbol + 1) return false;
      while (symbol < run_end) counts[symbol++] = 0;
      if (symbol > max_symbol) break;
    }
    const int max = (2 * threshold - 1) - remaining;
    int value;
    const int low = int(in.peek(nbits - 1));
    if (low < max) {
      value = low;
      in.skip(nbits - 1);
    } else {
      value = int(in.peek(nbits));
      if (value >= threshold) value -= max;
      in.skip(nbits);
    }
    const int proba = value - 1;
    remaining -= proba < 0 ? -proba : proba;
    counts[symbol++] = std::int16_t(proba);
    previous_zero = proba == 0;
    while (remaining < threshold) {
      --nbits;
      threshold >>= 1;
    }
  }
  if (remaining != 1) return false;
  if (in.bytes_used() > size) return false;
  *nsymbols = symbol;
  *log = acc;
  *used = in.bytes_used();
  return true;
}

// Spreads `counts` over 2^log cells (RFC 8878 §4.1.1) and sets each cell's next-state rule.
// `next` is scratch of at least `nsymbols` entries.
ZF_HD inline bool build_fse_table(const std::int16_t* counts, int nsymbols, int log, FseCell* table,
                                  std::uint16_t* next) {
  const int size = 1 << log;
  int high = size - 1;
  for (int s = 0; s < nsymbols; ++s) {
    if (counts[s] == -1) {
      if (high < 0) return false;
      table[high--].symbol = std::uint8_t(s);
      next[s] = 1;
    } else {
      next[s] = std::uint16_t(counts[s]);
    }
  }
  const int step = (size >> 1) + (size >> 3) + 3;
  const int mask = size - 1;
  int pos = 0;
  for (int s = 0; s < nsymbols; ++s) {
    for (int k = 0; k < counts[s]; ++k) {
      table[pos].symbol = std::uint8_t(s);
      do {
        pos = (pos + step) & mask;
      } while (pos > high);
    }
  }
  if (pos != 0) return false;  // the counts did not fill the table exactly
  for (int u = 0; u < size; ++u) {
    const int s = table[u].symbol;
    const std::uint32_t n = next[s]++;
    const int bits = log - highest_bit(n);
    table[u].nbits = std::uint8_t(bits);
    table[u].baseline = std::uint16_t((n << bits) - std::uint32_t(size));
  }
  return true;
}

// A table of one symbol (RLE mode): every state decodes `symbol` and reads no bits.
ZF_HD inline void build_rle_table(std::uint8_t symbol, FseCell* table) {
  table[0] = FseCell{0, symbol, 0};
}

enum class SeqTable { kLitLen = 0, kOffset = 1, kMatchLen = 2 };

// The predefined distributions (RFC 8878 §3.1.1.3.2.2): counts, symbols and accuracy log.
ZF_HD inline const std::int16_t* predefined_counts(SeqTable t, int* nsymbols, int* log) {
  static constexpr std::int16_t kLitLen[36] = {4, 3, 2, 2, 2, 2, 2, 2, 2,  2,  2,  2,
                                               2, 1, 1, 1, 2, 2, 2, 2, 2,  2,  2,  2,
                                               2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1};
  static constexpr std::int16_t kMatchLen[53] = {
      1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  1,  1,  1,  1,  1,  1, 1,
      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1};
  static constexpr std::int16_t kOffset[29] = {1, 1, 1, 1, 1, 1, 2, 2, 2, 1,  1,  1,  1,  1, 1,
                                               1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1};
  switch (t) {
    case SeqTable::kLitLen:
      *nsymbols = 36;
      *log = 6;
      return kLitLen;
    case SeqTable::kMatchLen:
      *nsymbols = 53;
      *log = 6;
      return kMatchLen;
    default:
      *nsymbols = 29;
      *log = 5;
      return kOffset;
  }
}

// Literal and match length codes -> baseline | extra bits << 24 (RFC 8878 §3.1.1.3.2.1). Device
// code reads them from constant memory.
#define ZF_LIT_LEN_CODES                                                                           \
  {                                                                                                \
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 | 1u << 24, 18 | 1u << 24,            \
        20 | 1u << 24, 22 | 1u << 24, 24 | 2u << 24, 28 | 2u << 24, 32 | 3u << 24, 40 | 3u << 24,  \
        48 | 4u << 24, 64 | 6u << 24, 128 | 7u << 24, 256 | 8u << 24, 512 | 9u << 24,              \
        1024 | 10u << 24, 2048 | 11u << 24, 4096 | 12u << 24, 8192 | 13u << 24, 16384 | 14u << 24, \
        32768 | 15u << 24, 65536 | 16u << 24                                                       \
  }
#define ZF_MATCH_LEN_CODES                                                                        \
  {                                                                                               \
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,  \
        28, 29, 30, 31, 32, 33, 34, 35 | 1u << 24, 37 | 1u << 24, 39 | 1u << 24, 41 | 1u << 24,   \
        43 | 2u << 24, 47 | 2u << 24, 51 | 3u << 24, 59 | 3u << 24, 67 | 4u << 24, 83 | 4u << 24, \
        99 | 5u << 24, 131 | 7u << 24, 259 | 8u << 24, 515 | 9u << 24, 1027 | 10u << 24,          \
        2051 | 11u << 24, 4099 | 12u << 24, 8195 | 13u << 24, 16387 | 14u << 24,                  \
        32771 | 15u << 24, 65539 | 16u << 24                                                      \
  }
#if defined(__CUDACC__)
static __constant__ const std::uint32_t kLitLenCodesDevice[36] = ZF_LIT_LEN_CODES;
static __constant__ const std::uint32_t kMatchLenCodesDevice[53] = ZF_MATCH_LEN_CODES;
#endif
inline constexpr std::uint32_t kLitLenCodesHost[36] = ZF_LIT_LEN_CODES;
inline constexpr std::uint32_t kMatchLenCodesHost[53] = ZF_MATCH_LEN_CODES;
#undef ZF_LIT_LEN_CODES
#undef ZF_MATCH_LEN_CODES

ZF_HD inline std::uint32_t literal_length_code(int code) {
#if defined(__CUDA_ARCH__)
  return kLitLenCodesDevice[code];
#else
  return kLitLenCodesHost[code];
#endif
}

ZF_HD inline std::uint32_t match_length_code(int code) {
#if defined(__CUDA_ARCH__)
  return kMatchLenCodesDevice[code];
#else
  return kMatchLenCodesHost[code];
#endif
}

// A Huffman decoding table: entry i serves every stream position whose next max_bits bits are i.
struct HuffmanCell {
  std::uint8_t symbol;
  std::uint8_t nbits;
};

// Reads a Huffman tree description from src[0, size) into weights[0..256) (every symbol after
// the last described one but the implied last gets 0) and sets *nsymbols (the implied last
// symbol included) and *used (the description's bytes). `fse` is scratch for a 64-cell table.
ZF_HD inline bool read_huffman_weights(const std::uint8_t* src, std::uint32_t size,
                                       std::uint8_t* weights, int* nsymbols, std::uint32_t* used,
                                       FseCell* fse) {
  if (size == 0) return false;
  const int header = src[0];
  int n = 0;
  if (header >= 128) {
    n = header - 127;
    const std::uint32_t bytes = std::uint32_t(n + 1) / 2;
    if (1 + bytes > size) return false;
    for (int i = 0; i < n; ++i) {
      const std::uint8_t b = src[1 + i / 2];
      weights[i] = (i & 1) ? (b & 15) : (b >> 4);
    }
    *used = 1 + bytes;
  } else {
    const std::uint32_t csize = std::uint32_t(header);
    if (csize == 0 || 1 + csize > size) return false;
    // Weights go up to kMaxHuffmanBits: a description with larger symbols is refused (as
    // libzstd refuses their weights), and the arrays stay small (in a kernel they live in local
    // memory, which the driver sets aside at launch for every thread the GPU can hold).
    std::int16_t counts[kMaxHuffmanBits + 1];
    std::uint16_t next[kMaxHuffmanBits + 1];
    int ncounts = 0, log = 0;
    std::uint32_t desc = 0;
    if (!read_fse_counts(src + 1, csize, kMaxHuffmanBits, 6, counts, &ncounts, &log, &desc))
      return false;
    if (!build_fse_table(counts, ncounts, log, fse, next)) return false;
    if (desc >= csize) return false;
    BackwardBits in(src + 1 + desc, csize - desc);
    if (!in.ok()) return false;
    std::uint32_t s1 = in.read(log), s2 = in.read(log);
    // Two interleaved states; the stream ends when an update reads past its start. At most 255
    // weights, and (as libzstd has it) room for two more before each symbol.
    for (;;) {  // overflowed() reloads: each update reads at most 6 bits
      if (n > 253) return false;
      weights[n++] = fse[s1].symbol;
      s1 = fse[s1].baseline + in.read(fse[s1].nbits);
      if (in.overflowed()) {
        weights[n++] = fse[s2].symbol;
        break;
      }
      if (n > 253) return false;
      weights[n++] = fse[s2].symbol;
      s2 = fse[s2].baseline + in.read(fse[s2].nbits);
      if (in.overflowed()) {
        weights[n++] = fse[s1].symbol;
        break;
      }
    }
    *used = 1 + csize;
  }
  // The last weight completes the sum of 2^(w-1) to a power of two.
  std::uint32_t sum = 0;
  for (int i = 0; i < n; ++i) {
    if (weights[i] > kMaxHuffmanBits) return false;
    if (weights[i] > 0) sum += 1u << (weights[i] - 1);
  }
  if (sum == 0) return false;
  const int max_bits = highest_bit(sum) + 1;
  if (max_bits > kMaxHuffmanBits) return false;
  const std::uint32_t left = (1u << max_bits) - sum;
  if ((left & (left - 1)) != 0) return false;  // not a power of two
  weights[n++] = std::uint8_t(highest_bit(left) + 1);
  for (int i = n; i < 256; ++i) weights[i] = 0;
  *nsymbols = n;
  return true;
}

// Builds the decoding table of 2^*max_bits cells from weights[0..nsymbols).
ZF_HD inline bool build_huffman_table(const std::uint8_t* weights, int nsymbols, HuffmanCell* table,
                                      int* max_bits) {
  std::uint32_t sum = 0;
  int count_of_weight[kMaxHuffmanBits + 1] = {};
  for (int i = 0; i < nsymbols; ++i) {
    if (weights[i] > 0) sum += 1u << (weights[i] - 1);
    ++count_of_weight[weights[i]];
  }
  const int bits = highest_bit(sum);
  if (sum != (1u << bits) || bits > kMaxHuffmanBits || bits == 0) return false;
  // A complete prefix code has an even number (two or more) of the longest codes.
  if (count_of_weight[1] < 2 || (count_of_weight[1] & 1)) return false;
  // Symbols of weight w take 2^(w-1) consecutive cells; lower weights come first.
  std::uint32_t start[kMaxHuffmanBits + 2];
  start[1] = 0;
  for (int w = 1; w <= kMaxHuffmanBits; ++w)
    start[w + 1] = start[w] + std::uint32_t(count_of_weight[w]) * (1u << (w - 1));
  for (int i = 0; i < nsymbols; ++i) {
    const int w = weights[i];
    if (w == 0) continue;
    const std::uint32_t cells = 1u << (w - 1);
    const HuffmanCell c{std::uint8_t(i), std::uint8_t(bits + 1 - w)};
    for (std::uint32_t k = 0; k < cells; ++k) table[start[w] + k] = c;
    start[w] += cells;
  }
  *max_bits = bits;
  return true;
}

}  // namespace zarrflow::gpu
