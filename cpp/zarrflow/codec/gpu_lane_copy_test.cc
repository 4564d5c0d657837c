// The lane-split copies of the GPU block decoders (codec/gpu/lane_copy.h), run on the host with
// the lanes one after another: word copies at every alignment of source and output, the bytes
// around the output left alone, and matches that end where their output begins.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zarrflow/codec/decoder_test_util.h"
#include "zarrflow/codec/gpu/lane_copy.h"

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::uint8_t>;
using codec_test::random_bytes;

// Lanes of a copy write disjoint bytes and read none of them, so running them one after another
// (in either order) stands for any interleaving. The source ends where its allocation ends, so a
// read past it is an error under AddressSanitizer (scripts/sanitize.sh).
TEST(GpuLaneCopy, EveryAlignmentAndLengthCopiesExactly) {
  const Bytes data = random_bytes(4096, 1);
  int cases = 0;
  for (std::size_t src_at = 0; src_at < 4; ++src_at) {
    for (std::size_t dst_at = 0; dst_at < 4; ++dst_at) {
      for (std::size_t n :
           {0, 1, 3, 4, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 2049, 4000}) {
        for (int nlanes : {1, 2, 3, 32, 256}) {
          const Bytes src(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(src_at + n));
          for (bool reverse : {false, true}) {
            Bytes dst(n + 16, 0xEE);
            for (int i = 0; i < nlanes; ++i)
              lane_copy(src.data() + src_at, dst.data() + 4 + dst_at, n,
                        reverse ? nlanes - 1 - i : i, nlanes);
            Bytes want(n + 16, 0xEE);
            std::copy(src.begin() + static_cast<std::ptrdiff_t>(src_at), src.end(),
                      want.begin() + 4 + static_cast<std::ptrdiff_t>(dst_at));
            ASSERT_EQ(dst, want) << src_at << " " << dst_at << " " << n << " " << nlanes;
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 4 * 4 * 20 * 5 * 2);
}

// A match whose source ends where its output begins (dist == len): a word copy, at every
// alignment of the output.
TEST(GpuLaneCopy, MatchEndingWhereItsOutputBegins) {
  for (std::size_t base_at = 0; base_at < 4; ++base_at) {
    for (std::size_t len : {256, 257, 258, 259, 1000, 1001}) {
      for (int nlanes : {1, 3, 32}) {
        const std::size_t op = base_at + len;
        Bytes buf = random_bytes(op + len, static_cast<unsigned>(len * 7 + base_at));
        Bytes want = buf;
        std::copy(want.begin() + static_cast<std::ptrdiff_t>(op - len),
                  want.begin() + static_cast<std::ptrdiff_t>(op),
                  want.begin() + static_cast<std::ptrdiff_t>(op));
        for (int i = 0; i < nlanes; ++i) lane_match(buf.data(), op, len, len, i, nlanes);
        ASSERT_EQ(buf, want) << base_at << " " << len << " " << nlanes;
      }
    }
  }
}

// Words that reach outside the copy's source are read byte by byte, only within it (so a match
// never reads the bytes its own lanes are writing).
TEST(GpuLaneCopy, WordsReadOnlyWithinTheirRange) {
  const Bytes b = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(load_word_within(b.data(), 8, 0), 0x04030201u);
  EXPECT_EQ(load_word_within(b.data(), 8, 4), 0x08070605u);
  EXPECT_EQ(load_word_within(b.data() + 2, 4, -2), 0x04030000u);  // bytes before the range
  EXPECT_EQ(load_word_within(b.data(), 6, 4), 0x00000605u);       // bytes after it
  EXPECT_EQ(funnel_bytes(0x04030201u, 0x08070605u, 0), 0x04030201u);
  EXPECT_EQ(funnel_bytes(0x04030201u, 0x08070605u, 1), 0x05040302u);
  EXPECT_EQ(funnel_bytes(0x04030201u, 0x08070605u, 3), 0x07060504u);
}

}  // namespace
}  // namespace zarrflow::gpu
