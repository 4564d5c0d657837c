// The GPU zstd decoder's bit readers on the host (zstd_bits.h), against reading the stream one
// bit at a time.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "zarrflow/codec/gpu/zstd_bits.h"

namespace zarrflow::gpu {
namespace {

// Bit j of the stream (j = 0 the lowest bit of its first byte).
int stream_bit(const std::uint8_t* s, std::uint32_t j) { return (s[j / 8] >> (j % 8)) & 1; }

// The n bits a backward reader gives after `taken` bits of a stream of `bits` bits.
std::uint32_t expected_read(const std::uint8_t* s, std::uint32_t bits, std::uint32_t taken, int n) {
  std::uint32_t v = 0;
  for (int t = 0; t < n; ++t) v = (v << 1) | std::uint32_t(stream_bit(s, bits - 1 - taken - t));
  return v;
}

TEST(GpuZstdBits, BackwardReadsMatchTheStreamBitByBitAtEveryAlignment) {
  std::mt19937 rng(7);
  std::vector<std::uint8_t> buffer(96);
  for (std::uint32_t size = 1; size <= 40; ++size) {
    for (std::uint32_t offset = 0; offset < 8; ++offset) {
      for (int trial = 0; trial < 20; ++trial) {
        for (auto& b : buffer) b = std::uint8_t(rng());
        std::uint8_t* s = buffer.data() + offset;
        if (s[size - 1] == 0) s[size - 1] = 1;
        const std::uint32_t bits = 8 * (size - 1) + std::uint32_t(highest_bit(s[size - 1]));
        BackwardBits in(s, size);
        ASSERT_TRUE(in.ok());
        std::uint32_t taken = 0;
        // Reads of 0..33 bits as the decoders make them: a reload, then up to 33 bits.
        while (true) {
          in.reload();
          int budget = 33;
          bool done = false;
          while (budget > 0) {
            const int n = int(rng() % std::uint32_t(budget < 17 ? budget + 1 : 17));
            if (taken + std::uint32_t(n) > bits) {
              done = true;
              break;
            }
            ASSERT_EQ(in.read(n), expected_read(s, bits, taken, n))
                << "size " << size << " offset " << offset << " taken " << taken << " n " << n;
            taken += std::uint32_t(n);
            budget -= n;
            if (n == 0) break;
          }
          if (done) break;
        }
        // What is left of the stream (less than the read that would have passed its start).
        const std::uint32_t rest = bits - taken;
        in.reload();
        ASSERT_EQ(in.read(int(rest)), expected_read(s, bits, taken, int(rest)));
        EXPECT_TRUE(in.finished());
        EXPECT_FALSE(in.overflowed());
        in.read(1);
        EXPECT_FALSE(in.finished());
        EXPECT_TRUE(in.overflowed());
      }
    }
  }
}

TEST(GpuZstdBits, HoldsAtLeast33BitsAfterAReload) {
  std::vector<std::uint8_t> s(64, 0xA5);
  s.back() = 0x80;
  BackwardBits in(s.data(), std::uint32_t(s.size()));
  // 33 bits a round, 15 rounds: every value is the stream's, whatever the buffer held.
  std::uint32_t taken = 0;
  const std::uint32_t bits = 8 * 63 + 7;
  for (int round = 0; round < 15; ++round) {
    in.reload();
    for (int n : {11, 11, 11}) {
      ASSERT_EQ(in.read(n), expected_read(s.data(), bits, taken, n));
      taken += std::uint32_t(n);
    }
  }
  EXPECT_FALSE(in.overflowed());
}

TEST(GpuZstdBits, EmptyOrUnmarkedStreamsAreRefused) {
  const std::uint8_t zero[4] = {1, 2, 3, 0};
  EXPECT_FALSE(BackwardBits(zero, 4).ok());
  EXPECT_FALSE(BackwardBits(zero, 0).ok());
  const std::uint8_t marker_only[1] = {1};
  BackwardBits in(marker_only, 1);
  ASSERT_TRUE(in.ok());
  EXPECT_TRUE(in.finished());
}

}  // namespace
}  // namespace zarrflow::gpu
