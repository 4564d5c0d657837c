// Adler-32 (the zlib trailer, RFC 1950 §2.2) and CRC-32 (the gzip trailer, RFC 1952 §8) of a
// byte range, computed in parts that are then combined in order. nvCOMP inflates zlib and gzip
// payloads without looking at their trailers, so the GPU read path checks them itself after each
// inflate (kernels.h: launch_verify_checksums): many threads each take one part of a decoded
// chunk, and one of them combines the parts. The same functions run in the host tests
// (codec/gpu_checksum_test.cc), which compare them with libdeflate's.
//
// Adler-32 of bytes p[0..n): A = 1 + Σ p[i], B = n + Σ (n - i)·p[i], both mod 65521; the value
// is B << 16 | A. A part keeps Σ p[i] and Σ (n - i)·p[i] over its own bytes, so appending it to
// the state (A, B) of the bytes before it is B += A·n + weighted, A += sum.
// CRC-32 (reflected, polynomial 0xEDB88320): crc(X ++ Y) = (crc(X) · x^(8·|Y|) mod P) ^ crc(Y),
// products taken in GF(2)[x] modulo P; x^(8·|Y|) mod P is the same for every part of one length.
#pragma once

#include <cstdint>

#include "zarrflow/codec/gpu/hd.h"
#include "zarrflow/core/byte_order.h"  // the trailers: zlib big-endian, gzip little-endian

namespace zarrflow::gpu {

constexpr std::uint32_t kAdlerMod = 65521;
// The most bytes whose sums fit in 32 bits before a reduction (zlib's NMAX).
constexpr std::uint32_t kAdlerRun = 5552;

struct AdlerPart {
  std::uint32_t sum = 0;       // Σ p[i] mod 65521
  std::uint32_t weighted = 0;  // Σ (n - i)·p[i] mod 65521
  std::uint64_t size = 0;      // n
};

ZF_HD inline AdlerPart adler32_part(const std::uint8_t* p, std::uint64_t n) {
  AdlerPart part;
  part.size = n;
  std::uint32_t s1 = 0, s2 = 0;  // running: after byte j, s2 = Σ_{i<=j} (j + 1 - i)·p[i]
  while (n > 0) {
    const std::uint32_t run = n < kAdlerRun ? std::uint32_t(n) : kAdlerRun;
    for (std::uint32_t i = 0; i < run; ++i) {
      s1 += p[i];
      s2 += s1;
    }
    s1 %= kAdlerMod;
    s2 %= kAdlerMod;
    p += run;
    n -= run;
  }
  part.sum = s1;
  part.weighted = s2;
  return part;
}

// The Adler-32 of (the bytes whose Adler-32 is `adler`) followed by `part`'s bytes.
ZF_HD inline std::uint32_t adler32_extend(std::uint32_t adler, const AdlerPart& part) {
  const std::uint64_t a = adler & 0xffffu, b = adler >> 16;
  const std::uint64_t nb = (b + a * (part.size % kAdlerMod) + part.weighted) % kAdlerMod;
  const std::uint64_t na = (a + part.sum) % kAdlerMod;
  return std::uint32_t(nb << 16 | na);
}

constexpr std::uint32_t kCrc32Poly = 0xedb88320u;

// Entry `byte` of the byte-at-a-time table of the reflected CRC-32.
ZF_HD inline std::uint32_t crc32_table_entry(std::uint32_t byte) {
  std::uint32_t c = byte;
  for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ kCrc32Poly : c >> 1;
  return c;
}

// The CRC-32 of (the bytes whose CRC-32 is `crc`) followed by p[0..n); crc = 0 for no bytes.
ZF_HD inline std::uint32_t crc32_update(std::uint32_t crc, const std::uint8_t* p, std::uint64_t n,
                                        const std::uint32_t* table) {
  crc = ~crc;
  for (std::uint64_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

// a·b mod P in the reflected representation (bit 31 is x^0).
ZF_HD inline std::uint32_t crc32_multmod(std::uint32_t a, std::uint32_t b) {
  std::uint32_t product = 0;
  for (std::uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1u) ? (b >> 1) ^ kCrc32Poly : b >> 1;
  }
  return product;
}

// x^(8·nbytes) mod P: the operator that moves a CRC past nbytes more bytes.
ZF_HD inline std::uint32_t crc32_shift(std::uint64_t nbytes) {
  std::uint32_t result = 1u << 31;  // x^0
  std::uint32_t square = 1u << 23;  // x^8, then x^16, x^32, ...
  for (; nbytes != 0; nbytes >>= 1) {
    if (nbytes & 1u) result = crc32_multmod(square, result);
    square = crc32_multmod(square, square);
  }
  return result;
}

// The CRC-32 of X ++ Y from crc(X), crc(Y) and shift = crc32_shift(|Y|).
ZF_HD inline std::uint32_t crc32_combine(std::uint32_t crc_x, std::uint32_t crc_y,
                                         std::uint32_t shift) {
  return crc32_multmod(shift, crc_x) ^ crc_y;
}

// Part k of n bytes cut into `nparts` parts of ceil(n / nparts) bytes (the last ones shorter or
// empty): [*begin, *end).
ZF_HD inline void part_bounds(std::uint64_t n, unsigned nparts, unsigned k, std::uint64_t* begin,
                              std::uint64_t* end) {
  const std::uint64_t part = (n + nparts - 1) / nparts;
  *begin = part * k < n ? part * k : n;
  *end = *begin + part < n ? *begin + part : n;
}

// The Adler-32 of n bytes from their parts' (part_bounds) sums and weighted sums, in order.
ZF_HD inline std::uint32_t adler32_of_parts(std::uint64_t n, unsigned nparts,
                                            const std::uint32_t* sums,
                                            const std::uint32_t* weighted) {
  std::uint32_t adler = 1;
  for (unsigned k = 0; k < nparts; ++k) {
    std::uint64_t begin, end;
    part_bounds(n, nparts, k, &begin, &end);
    adler = adler32_extend(adler, AdlerPart{sums[k], weighted[k], end - begin});
  }
  return adler;
}

// The CRC-32 of n bytes from their parts' (part_bounds) CRC-32s, in order.
ZF_HD inline std::uint32_t crc32_of_parts(std::uint64_t n, unsigned nparts,
                                          const std::uint32_t* crcs) {
  const std::uint64_t part = (n + nparts - 1) / nparts;
  const std::uint32_t full = crc32_shift(part);  // the same for every whole part
  std::uint32_t crc = 0;
  for (unsigned k = 0; k < nparts; ++k) {
    std::uint64_t begin, end;
    part_bounds(n, nparts, k, &begin, &end);
    if (end == begin) break;
    crc = crc32_combine(crc, crcs[k], end - begin == part ? full : crc32_shift(end - begin));
  }
  return crc;
}

}  // namespace zarrflow::gpu
