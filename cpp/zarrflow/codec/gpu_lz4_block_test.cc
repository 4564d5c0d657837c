// Tests of the GPU LZ4 block decoder (codec/gpu/lz4_block.h) on the host: against liblz4 on
// blocks from LZ4_compress_default / LZ4_compress_HC and hand-made ones (overlapping matches),
// with the warp emulated by real threads meeting at a barrier, and under random corruption.
#include "zarrflow/codec/gpu/lz4_block.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <lz4.h>
#include <lz4hc.h>

#include "zarrflow/codec/decoder_test_util.h"

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::uint8_t>;
using codec_test::agreed_result_of_lanes;
using codec_test::BarrierSync;

int decode(const Bytes& src, Bytes& dst) {
  return lz4_decode_block(src.data(), src.size(), dst.data(), dst.size(), 0, 1);
}

// Decodes with `nlanes` threads; every lane must return the same value, which is returned.
int decode_lanes(const Bytes& src, Bytes& dst, int nlanes) {
  return agreed_result_of_lanes(nlanes, [&](int lane, int n, BarrierSync sync) {
    return lz4_decode_block_with(src.data(), src.size(), dst.data(), dst.size(), lane, n, sync);
  });
}

int liblz4(const Bytes& src, Bytes& dst) {
  return LZ4_decompress_safe(reinterpret_cast<const char*>(src.data()),
                             reinterpret_cast<char*>(dst.data()), static_cast<int>(src.size()),
                             static_cast<int>(dst.size()));
}

Bytes compress(const Bytes& in, int hc_level) {
  Bytes out(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(in.size()))) + 1);
  static const char kEmpty[1] = {};  // liblz4 dislikes a null source, even for 0 bytes
  const auto* s = in.empty() ? kEmpty : reinterpret_cast<const char*>(in.data());
  auto* d = reinterpret_cast<char*>(out.data());
  const int n = hc_level == 0 ? LZ4_compress_default(s, d, static_cast<int>(in.size()),
                                                     static_cast<int>(out.size()))
                              : LZ4_compress_HC(s, d, static_cast<int>(in.size()),
                                                static_cast<int>(out.size()), hc_level);
  EXPECT_GT(n, 0);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Test inputs: runs, short periods (overlapping matches with offsets 1, 2, 3, 7), noise, text,
// smooth floats, and mixes of them.
Bytes make_data(int kind, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes v(n);
  switch (kind) {
    case 0:  // zeros
      break;
    case 1:  // random
      for (auto& b : v) b = static_cast<std::uint8_t>(rng());
      break;
    case 2:
    case 3:
    case 4:
    case 5: {  // period 1, 2, 3, 7 with occasional noise
      const std::size_t period = kind == 2 ? 1 : kind == 3 ? 2 : kind == 4 ? 3 : 7;
      Bytes pat(period);
      for (auto& b : pat) b = static_cast<std::uint8_t>(rng());
      for (std::size_t i = 0; i < n; ++i)
        v[i] = rng() % 512 == 0 ? static_cast<std::uint8_t>(rng()) : pat[i % period];
      break;
    }
    case 6: {  // words
      static const char* kWords[] = {"zarr ", "chunk ", "blosc ", "lz4 ", "gpu ", "warp ", "a "};
      std::size_t i = 0;
      while (i < n) {
        const char* w = kWords[rng() % 7];
        for (std::size_t k = 0; w[k] && i < n; ++k) v[i++] = static_cast<std::uint8_t>(w[k]);
      }
      break;
    }
    case 7: {  // smooth float32
      for (std::size_t i = 0; i + 4 <= n; i += 4) {
        const float f = static_cast<float>(std::sin(static_cast<double>(i) * 1e-3) * 100.0);
        std::memcpy(&v[i], &f, 4);
      }
      break;
    }
    default: {  // mix: blocks of each kind
      std::size_t i = 0;
      while (i < n) {
        const std::size_t len = std::min<std::size_t>(n - i, 1 + rng() % 3000);
        Bytes part = make_data(static_cast<int>(rng() % 8), len, static_cast<unsigned>(rng()));
        std::memcpy(&v[i], part.data(), len);
        i += len;
      }
    }
  }
  return v;
}
constexpr int kDataKinds = 9;

TEST(GpuLz4Block, MatchesLiblz4OnCompressedData) {
  int blocks = 0;
  for (int kind = 0; kind < kDataKinds; ++kind) {
    for (std::size_t n : {0, 1, 5, 12, 13, 100, 1000, 65536 + 7, 1 << 20}) {
      const Bytes data = make_data(kind, n, static_cast<unsigned>(kind * 1000 + n));
      for (int level : {0, 1, 9, 12}) {
        if (n == (1 << 20) && level == 12) continue;  // slow, and level 9 covers HC
        const Bytes enc = compress(data, level);
        Bytes out(n, 0xEE);
        ASSERT_EQ(decode(enc, out), static_cast<int>(n)) << kind << " " << n << " " << level;
        ASSERT_EQ(out, data) << kind << " " << n << " " << level;
        Bytes ref(n);
        ASSERT_EQ(liblz4(enc, ref), static_cast<int>(n));
        ++blocks;
      }
    }
  }
  EXPECT_EQ(blocks, kDataKinds * (9 * 4 - 1));
}

// A block of hand-made sequences: literals, then a match (offset, length), ..., final literals.
struct Seq {
  Bytes literals;
  std::size_t offset = 0;  // 0: last sequence (literals only)
  std::size_t length = 0;  // match length (>= 4)
};

void put_length(Bytes& out, std::size_t extra) {
  while (extra >= 255) {
    out.push_back(255);
    extra -= 255;
  }
  out.push_back(static_cast<std::uint8_t>(extra));
}

Bytes encode(const std::vector<Seq>& seqs) {
  Bytes out;
  for (const Seq& s : seqs) {
    const std::size_t lit = s.literals.size();
    const std::size_t ml = s.offset ? s.length - 4 : 0;
    out.push_back(static_cast<std::uint8_t>((std::min<std::size_t>(lit, 15) << 4) |
                                            std::min<std::size_t>(ml, 15)));
    if (lit >= 15) put_length(out, lit - 15);
    out.insert(out.end(), s.literals.begin(), s.literals.end());
    if (!s.offset) break;
    out.push_back(static_cast<std::uint8_t>(s.offset));
    out.push_back(static_cast<std::uint8_t>(s.offset >> 8));
    if (ml >= 15) put_length(out, ml - 15);
  }
  return out;
}

// The byte-by-byte meaning of the sequences.
Bytes naive(const std::vector<Seq>& seqs) {
  Bytes out;
  for (const Seq& s : seqs) {
    out.insert(out.end(), s.literals.begin(), s.literals.end());
    if (!s.offset) break;
    for (std::size_t k = 0; k < s.length; ++k) out.push_back(out[out.size() - s.offset]);
  }
  return out;
}

Bytes lits(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

TEST(GpuLz4Block, OverlappingMatchesWithSmallOffsets) {
  int cases = 0;
  for (std::size_t offset : {1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 33}) {
    for (std::size_t length : {4, 5, 7, 8, 18, 19, 31, 32, 33, 64, 270, 1000}) {
      for (int nlanes : {1, 4, 32}) {
        const std::vector<Seq> seqs = {{lits(offset + 3, 7), offset, length},
                                       {lits(2, 8), offset, length + 1},
                                       {lits(20, 9), 0, 0}};
        const Bytes enc = encode(seqs);
        const Bytes want = naive(seqs);
        Bytes out(want.size(), 0xEE);
        const int r = nlanes == 1 ? decode(enc, out) : decode_lanes(enc, out, nlanes);
        ASSERT_EQ(r, static_cast<int>(want.size())) << offset << " " << length << " " << nlanes;
        ASSERT_EQ(out, want) << offset << " " << length << " " << nlanes;
        Bytes ref(want.size());
        ASSERT_EQ(liblz4(enc, ref), static_cast<int>(want.size()));
        ASSERT_EQ(ref, want);
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 12 * 12 * 3);
}

// lane_match's split on its own: within one match no lane reads another lane's writes, so lanes
// run one after the other (in either order) must give the byte-by-byte result.
TEST(GpuLz4Block, LaneMatchSplitIsOrderIndependent) {
  for (int nlanes : {1, 2, 3, 4, 7, 8, 31, 32}) {
    for (std::size_t dist = 1; dist <= 40; ++dist) {
      for (std::size_t len = 1; len <= 200; len += (len < 40 ? 1 : 13)) {
        Bytes base = lits(dist + 5, static_cast<unsigned>(dist));
        Bytes want = base;
        for (std::size_t k = 0; k < len; ++k) want.push_back(want[want.size() - dist]);
        for (bool reverse : {false, true}) {
          Bytes buf = base;
          buf.resize(base.size() + len, 0xEE);
          for (int i = 0; i < nlanes; ++i)
            lane_match(buf.data(), base.size(), dist, len, reverse ? nlanes - 1 - i : i, nlanes);
          ASSERT_EQ(buf, want) << nlanes << " " << dist << " " << len;
        }
      }
    }
  }
}

TEST(GpuLz4Block, EmulatedWarpMatchesSingleLane) {
  for (int kind = 0; kind < kDataKinds; ++kind) {
    for (std::size_t n : {1, 100, 5000, 70000}) {
      const Bytes data = make_data(kind, n, static_cast<unsigned>(kind + n));
      for (int level : {0, 9}) {
        const Bytes enc = compress(data, level);
        for (int nlanes : {4, 32}) {
          Bytes out(n, 0xEE);
          ASSERT_EQ(decode_lanes(enc, out, nlanes), static_cast<int>(n));
          ASSERT_EQ(out, data) << kind << " " << n << " " << level << " " << nlanes;
        }
      }
    }
  }
}

TEST(GpuLz4Block, Errors) {
  Bytes out(64);
  auto run = [&](Bytes enc, std::size_t dst_size) {
    out = Bytes(dst_size, 0);
    return decode(enc, out);
  };
  EXPECT_EQ(run({}, 10), kDecodeTruncated);                   // no token
  EXPECT_EQ(run({0x00}, 0), 0);                               // empty block
  EXPECT_EQ(run({0x30, 'a', 'b'}, 10), kDecodeTruncated);     // 3 literals announced, 2 there
  EXPECT_EQ(run({0xF0}, 100), kDecodeTruncated);              // length extension missing
  EXPECT_EQ(run({0xF0, 255}, 400), kDecodeTruncated);         // ... and again
  EXPECT_EQ(run({0x30, 'a', 'b', 'c'}, 2), kDecodeOverflow);  // literals past dst
  EXPECT_EQ(run({0x10, 'a', 0x01}, 10), kDecodeTruncated);    // half an offset
  EXPECT_EQ(run({0x10, 'a', 0x00, 0x00, 0x00}, 10), kDecodeOffsetZero);
  EXPECT_EQ(run({0x10, 'a', 0x02, 0x00, 0x00}, 10), kDecodeOffsetBeforeStart);
  EXPECT_EQ(run({0x10, 'a', 0x01, 0x00, 0x50, 1, 2, 3, 4, 5}, 8), kDecodeOverflow);  // 1+4+5 > 8
  EXPECT_EQ(run({0x10, 'a', 0x01, 0x00}, 10), kDecodeTruncated);   // ends with a match
  EXPECT_EQ(run({0x1F, 'a', 0x01, 0x00}, 100), kDecodeTruncated);  // match length extension
  EXPECT_EQ(run({0x20, 'a', 'b', 0x00}, 2), kDecodeTrailingGarbage);
  EXPECT_EQ(run({0x20, 'a', 'b'}, 5), 2);  // short output is the caller's to judge
  EXPECT_EQ(lz4_decode_block(nullptr, 0, nullptr, std::size_t{1} << 31, 0, 1), kDecodeTooLarge);
  EXPECT_STREQ(decode_status_name(kDecodeOffsetZero), "match offset 0");
}

// 20,000 random corruptions of valid blocks: never out of bounds (run under ASan), never more
// than dst_size, and whatever liblz4 decodes this decodes identically (except offset 0).
TEST(GpuLz4Block, FuzzAgainstLiblz4) {
  std::mt19937 rng(12345);
  std::vector<Bytes> corpus;
  for (int kind = 0; kind < kDataKinds; ++kind)
    for (std::size_t n : {0, 20, 300, 4000}) {
      Bytes data = make_data(kind, n, static_cast<unsigned>(kind * 77 + n));
      corpus.push_back(compress(data, kind % 2 ? 9 : 0));
      corpus.push_back(data);  // also keep the size: corpus[2k + 1] is what corpus[2k] decodes to
    }
  int both_ok = 0, both_fail = 0, only_ours = 0, only_ours_full = 0, offset_zero = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::size_t pick = 2 * (rng() % (corpus.size() / 2));
    Bytes enc = corpus[pick];
    std::size_t dst_size = corpus[pick + 1].size();
    switch (rng() % 6) {
      case 0:
      case 1:  // flip 1-4 bytes
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0 && !enc.empty(); --k)
          enc[rng() % enc.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        break;
      case 2:  // truncate
        enc.resize(enc.empty() ? 0 : rng() % enc.size());
        break;
      case 3:  // append garbage
        for (int k = 1 + static_cast<int>(rng() % 8); k > 0; --k)
          enc.push_back(static_cast<std::uint8_t>(rng()));
        break;
      case 4:  // set a byte to 0x00 / 0xFF
        if (!enc.empty()) enc[rng() % enc.size()] = rng() % 2 ? 0xFF : 0x00;
        break;
      default:  // wrong expected size
        dst_size = static_cast<std::size_t>(
            std::max<long>(0, static_cast<long>(dst_size) + static_cast<long>(rng() % 16) - 8));
    }
    Bytes src(enc);  // exact-size copies, so ASan sees any overrun
    Bytes ours(dst_size, 0xEE), ref(dst_size, 0xEE);
    const int r = decode(src, ours);
    ASSERT_LE(r, static_cast<int>(dst_size));
    const int l = liblz4(src, ref);
    if (l >= 0) {
      if (r == kDecodeOffsetZero) {
        ++offset_zero;
        continue;
      }
      ASSERT_EQ(r, l) << iter;
      ASSERT_TRUE(std::equal(ours.begin(), ours.begin() + r, ref.begin())) << iter;
      ++both_ok;
    } else if (r >= 0) {
      ++only_ours;  // end-of-block rules liblz4 enforces and this decoder does not
      if (r == static_cast<int>(dst_size)) ++only_ours_full;
    } else {
      ++both_fail;
    }
    if (iter % 100 == 0) {  // the emulated warp agrees with one lane, on errors too
      Bytes warp(dst_size, 0xEE);
      ASSERT_EQ(decode_lanes(src, warp, 32), r) << iter;
      if (r >= 0) {
        ASSERT_TRUE(std::equal(warp.begin(), warp.begin() + r, ours.begin()));
      }
    }
  }
  EXPECT_GT(both_ok, 1000);
  EXPECT_GT(both_fail, 1000);
  std::printf("lz4 fuzz: both ok %d, both fail %d, only ours ok %d (%d filling dst), offset 0 %d\n",
              both_ok, both_fail, only_ours, only_ours_full, offset_zero);
}

}  // namespace
}  // namespace zarrflow::gpu
