// Tests of the GPU zstd decoder's stages (codec/gpu/zstd_*.h) on the host, against libzstd:
// frames libzstd writes at many levels and parameters (raw, RLE and compressed blocks; raw, RLE,
// Huffman and treeless literals; predefined, RLE, FSE and repeated tables; with and without
// content size and checksum), the frames the decoder leaves to the host, and random corruptions
// of real frames, where any output it returns must be libzstd's.
#include <zstd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "zarrflow/codec/gpu/zstd_tables.h"
#include "zarrflow/codec/gpu_zstd_test_util.h"

namespace zarrflow::gpu {
namespace {

using zstd_test::byte_shuffled;
using zstd_test::Bytes;
using zstd_test::compress;
using zstd_test::floats_like_era5;
using zstd_test::mixed;
using zstd_test::Params;
using zstd_test::random_bytes;
using zstd_test::text_like;

// libzstd's verdict: decoded bytes, or nothing.
bool libzstd(const Bytes& frame, Bytes& out) {
  const std::size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  return !ZSTD_isError(n) && n == out.size();
}

zstd_test::HostRun ours(const Bytes& frame, Bytes& out, std::uint32_t window = 256) {
  return zstd_test::decode_on_host(frame.data(), std::uint32_t(frame.size()), out.data(),
                                   out.size(), window);
}

void expect_round_trip(const Bytes& data, const Params& p, const std::string& what) {
  const Bytes frame = compress(data, p);
  Bytes out(data.size(), 0xEE);
  const auto run = ours(frame, out);
  ASSERT_EQ(run.status, 0) << what << ": " << decode_status_name(run.status);
  ASSERT_TRUE(out == data) << what;
}

TEST(GpuZstd, DecodesWhatLibzstdWritesAtEveryLevel) {
  const Bytes data[] = {floats_like_era5(1 << 20, 1),
                        text_like(300000, 2),
                        random_bytes(200000, 3),
                        Bytes(500000, 7),
                        mixed(1 << 20, 4),
                        byte_shuffled(floats_like_era5(1 << 18, 5))};
  const char* names[] = {"floats", "text", "random", "zeros", "mixed", "shuffled floats"};
  for (int level : {-5, 1, 3, 6, 9, 12, 16, 19, 22}) {
    for (int d = 0; d < 6; ++d) {
      Params p;
      p.level = level;
      expect_round_trip(data[d], p, std::string(names[d]) + " level " + std::to_string(level));
    }
  }
}

TEST(GpuZstd, DecodesFramesOfEveryHeaderForm) {
  const Bytes data = mixed(700000, 9);
  for (bool checksum : {false, true})
    for (bool content_size : {false, true})
      for (bool stream : {false, true}) {
        Params p;
        p.checksum = checksum;
        p.content_size = content_size;
        p.stream = stream;
        expect_round_trip(data, p,
                          "checksum " + std::to_string(checksum) + " size " +
                              std::to_string(content_size) + " stream " + std::to_string(stream));
      }
  Params small_window;
  small_window.window_log = 10;  // 1 KiB window: blocks of at most 1 KiB
  small_window.stream = true;
  expect_round_trip(text_like(50000, 5), small_window, "window 1 KiB");
  Params small_blocks;
  small_blocks.target_block = 1340;
  expect_round_trip(mixed(400000, 6), small_blocks, "target block 1340");
}

TEST(GpuZstd, DecodesSmallAndOddSizes) {
  for (std::size_t n :
       {0, 1, 2, 5, 31, 32, 33, 255, 256, 1023, 1024, 1025, 131071, 131072, 131073, 262145}) {
    for (int level : {1, 19}) {
      Params p;
      p.level = level;
      expect_round_trip(text_like(n, unsigned(n)), p, "text of " + std::to_string(n));
      expect_round_trip(random_bytes(n, unsigned(n)), p, "random of " + std::to_string(n));
    }
  }
}

TEST(GpuZstd, AnyWindowSizeGivesTheSameBytes) {
  const Bytes data = mixed(600000, 11);
  const Bytes frame = compress(data, Params{});
  for (std::uint32_t window : {1u, 2u, 7u, 32u, 256u, 1024u}) {
    Bytes out(data.size());
    ASSERT_EQ(ours(frame, out, window).status, 0) << window;
    ASSERT_TRUE(out == data) << window;
  }
}

TEST(GpuZstd, MostMatchesOfGriddedFloatsRunInTheParallelStep) {
  const Bytes data = floats_like_era5(4 << 20, 12);
  const Bytes frame = compress(data, Params{});
  Bytes out(data.size());
  const auto run = ours(frame, out);
  ASSERT_EQ(run.status, 0);
  ASSERT_TRUE(out == data);
  ASSERT_GT(run.matches, 0u);
  EXPECT_LT(double(run.dependent_matches) / run.matches, 0.25)
      << run.dependent_matches << " of " << run.matches;
}

TEST(GpuZstd, ChecksumMismatchIsCaught) {
  Params p;
  p.checksum = true;
  const Bytes data = text_like(100000, 13);
  Bytes frame = compress(data, p);
  frame[frame.size() - 2] ^= 0x40;  // in the stored checksum
  Bytes out(data.size());
  EXPECT_EQ(ours(frame, out).status, -9);
}

TEST(GpuZstd, LeavesToTheHostWhatItDoesNotTake) {
  const Bytes data = text_like(50000, 14);
  const Bytes frame = compress(data, Params{});
  Bytes out(data.size());
  // Two frames in one chunk, with and without their content sizes.
  Params no_size;
  no_size.content_size = false;
  for (const Bytes& one : {frame, compress(data, no_size)}) {
    Bytes two = one;
    two.insert(two.end(), one.begin(), one.end());
    Bytes out2(2 * data.size());
    EXPECT_EQ(ours(two, out2).status, kDecodeUnsupported);
  }
  // A skippable frame.
  Bytes skippable = {0x50, 0x2A, 0x4D, 0x18, 1, 0, 0, 0, 9};
  Bytes none(0);
  EXPECT_EQ(ours(skippable, none).status, kDecodeUnsupported);
  // A dictionary ID.
  Bytes with_dict = frame;
  with_dict[4] = std::uint8_t((with_dict[4] & ~3) | 1);
  with_dict.insert(with_dict.begin() + 5 + ((frame[4] & 0x20) ? 0 : 1), 0x42);
  EXPECT_EQ(ours(with_dict, out).status, kDecodeUnsupported);
}

TEST(GpuZstd, RejectsWrongSizesAndTruncation) {
  const Bytes data = mixed(300000, 15);
  const Bytes frame = compress(data, Params{});
  Bytes bigger(data.size() + 1), smaller(data.size() - 1);
  EXPECT_LT(ours(frame, bigger).status, 0);
  EXPECT_LT(ours(frame, smaller).status, 0);
  Params no_size;
  no_size.content_size = false;
  const Bytes frame2 = compress(data, no_size);
  EXPECT_LT(ours(frame2, bigger).status, 0);
  EXPECT_LT(ours(frame2, smaller).status, 0);
  for (std::size_t cut :
       {std::size_t(0), std::size_t(3), std::size_t(5), frame.size() / 2, frame.size() - 1}) {
    Bytes part(frame.begin(), frame.begin() + cut), out(data.size());
    EXPECT_LT(ours(part, out).status, 0) << cut;
  }
}

// Whatever the decoder accepts of a corrupted frame, libzstd accepts too, with the same bytes.
TEST(GpuZstd, CorruptedFramesNeverDecodeToOtherBytesThanLibzstds) {
  std::mt19937 rng(16);
  const Bytes sources[] = {mixed(200000, 17), floats_like_era5(150000, 18), text_like(80000, 19)};
  int accepted = 0, rejected = 0;
  for (const Bytes& data : sources) {
    for (int level : {1, 3, 19}) {
      Params p;
      p.level = level;
      p.content_size = level != 3;
      const Bytes frame = compress(data, p);
      for (int trial = 0; trial < 300; ++trial) {
        Bytes bad = frame;
        const int flips = 1 + int(rng() % 3);
        for (int f = 0; f < flips; ++f) {
          const std::size_t at = rng() % bad.size();
          if (rng() % 2) {
            bad[at] ^= std::uint8_t(1u << (rng() % 8));
          } else {
            bad[at] = std::uint8_t(rng());
          }
        }
        Bytes out(data.size(), 0), ref(data.size(), 0);
        const auto run = ours(bad, out);
        if (run.status == 0) {
          ++accepted;
          ASSERT_TRUE(libzstd(bad, ref)) << "level " << level << " trial " << trial;
          ASSERT_TRUE(out == ref) << "level " << level << " trial " << trial;
        } else {
          ++rejected;
        }
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted + rejected, 2000);
}

TEST(GpuZstd, FseTablesOfTheDefaultDistributionsMatchTheFormatsAppendix) {
  // RFC 8878 Appendix A, first states of the literal length table and the offset table.
  FseCell ll[64], of[32];
  std::uint16_t next[64];
  int n = 0, log = 0;
  const std::int16_t* c = predefined_counts(SeqTable::kLitLen, &n, &log);
  ASSERT_TRUE(build_fse_table(c, n, log, ll, next));
  const int ll_expect[][3] = {{0, 4, 0},  {0, 4, 16},  {1, 5, 32}, {3, 5, 0},
                              {14, 6, 0}, {25, 5, 32}, {35, 6, 0}, {32, 6, 0}};
  const int ll_states[] = {0, 1, 2, 3, 10, 17, 60, 63};
  for (int i = 0; i < 8; ++i) {
    const FseCell e = ll[ll_states[i]];
    EXPECT_EQ(e.symbol, ll_expect[i][0]) << ll_states[i];
    EXPECT_EQ(e.nbits, ll_expect[i][1]) << ll_states[i];
    EXPECT_EQ(e.baseline, ll_expect[i][2]) << ll_states[i];
  }
  c = predefined_counts(SeqTable::kOffset, &n, &log);
  ASSERT_TRUE(build_fse_table(c, n, log, of, next));
  EXPECT_EQ(of[1].symbol, 6);
  EXPECT_EQ(of[1].nbits, 4);
  EXPECT_EQ(of[15].baseline, 16);
  EXPECT_EQ(of[27].symbol, 28);
  EXPECT_EQ(of[31].symbol, 24);
}

}  // namespace
}  // namespace zarrflow::gpu
