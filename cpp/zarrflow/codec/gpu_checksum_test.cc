// Tests of the GPU trailer checks' arithmetic (codec/gpu/checksum.h) on the host: Adler-32 and
// CRC-32 computed in parts and combined, as the kernel's threads do, against libdeflate's, for
// lengths around the parts' and the Adler-32 reductions' boundaries.
#include "zarrflow/codec/gpu/checksum.h"

#include <gtest/gtest.h>
#include <libdeflate.h>

#include <cstdint>
#include <random>
#include <vector>

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes b(n);
  for (auto& x : b) x = std::uint8_t(rng());
  return b;
}

std::vector<std::uint32_t> crc_table() {
  std::vector<std::uint32_t> t(256);
  for (std::uint32_t i = 0; i < 256; ++i) t[i] = crc32_table_entry(i);
  return t;
}

// What the kernel computes for `data` with `nparts` threads.
std::uint32_t adler_in_parts(const Bytes& data, unsigned nparts) {
  std::vector<std::uint32_t> sums(nparts), weighted(nparts);
  for (unsigned k = 0; k < nparts; ++k) {
    std::uint64_t begin, end;
    part_bounds(data.size(), nparts, k, &begin, &end);
    const AdlerPart p = adler32_part(data.data() + begin, end - begin);
    sums[k] = p.sum;
    weighted[k] = p.weighted;
  }
  return adler32_of_parts(data.size(), nparts, sums.data(), weighted.data());
}

std::uint32_t crc_in_parts(const Bytes& data, unsigned nparts) {
  const auto table = crc_table();
  std::vector<std::uint32_t> crcs(nparts);
  for (unsigned k = 0; k < nparts; ++k) {
    std::uint64_t begin, end;
    part_bounds(data.size(), nparts, k, &begin, &end);
    crcs[k] = crc32_update(0, data.data() + begin, end - begin, table.data());
  }
  return crc32_of_parts(data.size(), nparts, crcs.data());
}

const std::size_t kSizes[] = {0,    1,    2,    3,     255,   256,   257,     5551,
                              5552, 5553, 9999, 65536, 65537, 70001, 1 << 20, (1 << 20) + 13};
const unsigned kParts[] = {1, 2, 7, 256};

// For every size and part count: the combined parts equal libdeflate's checksum of the bytes.
template <typename InParts, typename Reference>
void expect_every_split_matches(std::uint32_t seed, InParts in_parts, Reference reference) {
  for (std::size_t n : kSizes) {
    const Bytes data = random_bytes(n, std::uint32_t(n) + seed);
    const std::uint32_t want = reference(data);
    for (unsigned parts : kParts) EXPECT_EQ(in_parts(data, parts), want) << n << " " << parts;
  }
}

TEST(GpuChecksum, Adler32InPartsEqualsLibdeflate) {
  expect_every_split_matches(
      1, adler_in_parts, [](const Bytes& d) { return libdeflate_adler32(1, d.data(), d.size()); });
}

TEST(GpuChecksum, Adler32OfAllOnesBytesReducesInTime) {
  // 0xFF bytes give the largest sums: the 32-bit running sums must be reduced before they wrap.
  const Bytes data((1 << 20) + 7, 0xff);
  const std::uint32_t want = libdeflate_adler32(1, data.data(), data.size());
  for (unsigned parts : kParts) EXPECT_EQ(adler_in_parts(data, parts), want) << parts;
}

TEST(GpuChecksum, Crc32InPartsEqualsLibdeflate) {
  expect_every_split_matches(
      7, crc_in_parts, [](const Bytes& d) { return libdeflate_crc32(0, d.data(), d.size()); });
}

TEST(GpuChecksum, ShiftOperatorMovesACrcPastZeroBytes) {
  // crc(X ++ zeros(n)) = crc32_combine(crc(X), crc(zeros(n)), x^(8n)) for any n, including the
  // part lengths of chunks larger than 4 GiB.
  const auto table = crc_table();
  const Bytes x = random_bytes(1000, 3);
  const std::uint32_t crc_x = crc32_update(0, x.data(), x.size(), table.data());
  for (std::size_t n : {std::size_t{1}, std::size_t{8}, std::size_t{4096}, std::size_t{123457}}) {
    const Bytes zeros(n, 0);
    Bytes both = x;
    both.insert(both.end(), zeros.begin(), zeros.end());
    const std::uint32_t crc_zeros = crc32_update(0, zeros.data(), n, table.data());
    EXPECT_EQ(crc32_combine(crc_x, crc_zeros, crc32_shift(n)),
              libdeflate_crc32(0, both.data(), both.size()))
        << n;
  }
  // x^(8·2^33) by repeated squaring agrees with squaring x^(8·2^32) once more
  EXPECT_EQ(
      crc32_shift(std::uint64_t{1} << 33),
      crc32_multmod(crc32_shift(std::uint64_t{1} << 32), crc32_shift(std::uint64_t{1} << 32)));
}

// The kernel's comparison: the checksum of the decoded bytes against the trailer as the stream
// stores it (zlib: Adler-32 big-endian in the last 4 bytes; gzip: CRC-32 little-endian before
// the 4-byte size); one changed byte of the data no longer matches.
TEST(GpuChecksum, TrailersOfLibdeflateStreamsMatchAndChangedDataDoesNot) {
  Bytes data = random_bytes(100000, 11);
  for (std::size_t i = 0; i < data.size(); i += 3) data[i] = 0;  // compressible
  auto* c = libdeflate_alloc_compressor(6);
  Bytes zlib(libdeflate_zlib_compress_bound(c, data.size()));
  zlib.resize(libdeflate_zlib_compress(c, data.data(), data.size(), zlib.data(), zlib.size()));
  Bytes gzip(libdeflate_gzip_compress_bound(c, data.size()));
  gzip.resize(libdeflate_gzip_compress(c, data.data(), data.size(), gzip.data(), gzip.size()));
  libdeflate_free_compressor(c);
  ASSERT_GT(zlib.size(), 6u);
  ASSERT_GT(gzip.size(), 18u);
  const std::uint32_t adler_stored = load_be32(zlib.data() + zlib.size() - 4);
  const std::uint32_t crc_stored = load_le32(gzip.data() + gzip.size() - 8);
  EXPECT_EQ(adler_in_parts(data, 256), adler_stored);
  EXPECT_EQ(crc_in_parts(data, 256), crc_stored);
  data[54321] ^= 0x10;
  EXPECT_NE(adler_in_parts(data, 256), adler_stored);
  EXPECT_NE(crc_in_parts(data, 256), crc_stored);
}

}  // namespace
}  // namespace zarrflow::gpu
