// Tests of the GPU LZ4 block decoder (codec/gpu/lz4_block.h) on the host, against liblz4's
// LZ4_decompress_safe: blocks from LZ4_compress_default / LZ4_compress_HC, hand-made ones
// (overlapping matches), the warp emulated by real threads meeting at a barrier, and then exact
// agreement -- same verdict, same count, same bytes -- on blocks around every one of liblz4's
// end-of-block limits, on random well-formed blocks, and on random corruptions of real blocks.
#include "zarrflow/codec/gpu/lz4_block.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
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
using codec_test::random_bytes;

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
        if (n == (1 << 20) && level > 1) continue;  // slow; the smaller blocks cover HC
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
  EXPECT_EQ(blocks, kDataKinds * (9 * 4 - 2));
}

// A block of hand-made sequences: literals, then a match (offset, length), ..., final literals.
struct Seq {
  Bytes literals;
  std::size_t offset = 0;  // written as it is: 0 and offsets past the start too
  std::size_t length = 0;  // match length (>= 4); 0: the last sequence (literals only)
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
    const std::size_t ml = s.length ? s.length - 4 : 0;
    out.push_back(static_cast<std::uint8_t>((std::min<std::size_t>(lit, 15) << 4) |
                                            std::min<std::size_t>(ml, 15)));
    if (lit >= 15) put_length(out, lit - 15);
    out.insert(out.end(), s.literals.begin(), s.literals.end());
    if (!s.length) break;
    out.push_back(static_cast<std::uint8_t>(s.offset));
    out.push_back(static_cast<std::uint8_t>(s.offset >> 8));
    if (ml >= 15) put_length(out, ml - 15);
  }
  return out;
}

// The byte-by-byte meaning of valid sequences (offset 0 writes zeros, as liblz4 does).
Bytes naive(const std::vector<Seq>& seqs) {
  Bytes out;
  for (const Seq& s : seqs) {
    out.insert(out.end(), s.literals.begin(), s.literals.end());
    if (!s.length) break;
    for (std::size_t k = 0; k < s.length; ++k)
      out.push_back(s.offset ? out[out.size() - s.offset] : 0);
  }
  return out;
}

TEST(GpuLz4Block, OverlappingMatchesWithSmallOffsets) {
  int cases = 0;
  for (std::size_t offset : {1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 33}) {
    for (std::size_t length : {4, 5, 7, 8, 18, 19, 31, 32, 33, 64, 270, 1000}) {
      for (int nlanes : {1, 4, 32}) {
        const std::vector<Seq> seqs = {{random_bytes(offset + 3, 7), offset, length},
                                       {random_bytes(2, 8), offset, length + 1},
                                       {random_bytes(20, 9), 0, 0}};
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
        Bytes base = random_bytes(dist + 5, static_cast<unsigned>(dist));
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

// (The host threads meet at a barrier before every match, which is slow on a busy machine:
// blocks of a few hundred sequences.)
TEST(GpuLz4Block, EmulatedWarpMatchesSingleLane) {
  for (int kind = 0; kind < kDataKinds; ++kind) {
    for (std::size_t n : {1, 100, 3000}) {
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

// Decodes `src` into `dst_size` bytes with this decoder and with liblz4 and expects the same
// verdict, the same count and the same bytes. Returns this decoder's result.
int expect_same_as_liblz4(const Bytes& src, std::size_t dst_size, const std::string& what) {
  const Bytes in(src);  // exact-size copies, so ASan sees any overrun
  Bytes ours(dst_size, 0xEE), ref(dst_size, 0xDD);
  const int r = decode(in, ours);
  const int l = liblz4(in, ref);
  EXPECT_EQ(r >= 0, l >= 0) << what << ": ours " << r << " (" << decode_status_name(r)
                            << "), liblz4 " << l;
  if (r >= 0 && l >= 0) {
    EXPECT_EQ(r, l) << what;
    EXPECT_TRUE(std::equal(ours.begin(), ours.begin() + r, ref.begin())) << what;
  }
  return r;
}

// One check of each kind, each agreeing with liblz4.
TEST(GpuLz4Block, Errors) {
  const Bytes tail = random_bytes(40, 3);  // literals after which the end rules do not apply
  auto with_tail = [&](Bytes head) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  auto run = [&](const Bytes& enc, std::size_t dst_size) {
    return expect_same_as_liblz4(enc, dst_size, "block of " + std::to_string(enc.size()));
  };
  EXPECT_EQ(run({}, 10), kDecodeTruncated);                   // no token
  EXPECT_EQ(run({0x00}, 0), 0);                               // the empty block
  EXPECT_EQ(run({0x00, 0x00}, 0), kDecodeTrailingGarbage);    // ... and nothing else
  EXPECT_EQ(run({0x10, 'a'}, 0), kDecodeOverflow);            // literals into 0 bytes
  EXPECT_EQ(run({0x30, 'a', 'b'}, 10), kDecodeTruncated);     // 3 literals announced, 2 there
  EXPECT_EQ(run({0xF0}, 100), kDecodeTruncated);              // length extension missing
  EXPECT_EQ(run({0xF0, 255}, 400), kDecodeTruncated);         // ... and again
  EXPECT_EQ(run({0x30, 'a', 'b', 'c'}, 2), kDecodeOverflow);  // literals past dst
  EXPECT_EQ(run({0x20, 'a', 'b'}, 5), 2);                     // short output: the caller's
  EXPECT_EQ(run({0x20, 'a', 'b', 0x00}, 2), kDecodeTrailingGarbage);  // input after the end
  // A match 12 bytes before the end, its offset 0, 1, 2: zeros (liblz4), a run, out of range.
  const Bytes zeros = with_tail({0x40, 'a', 'b', 'c', 'd', 0x00, 0x00, 0xF0, 25});
  Bytes out(48);
  EXPECT_EQ(decode(zeros, out), 48);
  EXPECT_EQ(Bytes(out.begin() + 4, out.begin() + 8), Bytes(4, 0));
  EXPECT_EQ(run(zeros, 48), 48);
  EXPECT_EQ(run(with_tail({0x40, 'a', 'b', 'c', 'd', 0x01, 0x00, 0xF0, 25}), 48), 48);
  EXPECT_EQ(run(with_tail({0x40, 'a', 'b', 'c', 'd', 0x05, 0x00, 0xF0, 25}), 48),
            kDecodeOffsetBeforeStart);
  // Ends: a block that ends inside a match, a match into the last 5 bytes, past the end.
  EXPECT_EQ(run({0x10, 'a', 0x01, 0x00}, 10), kDecodeTrailingGarbage);
  EXPECT_EQ(run({0x1F, 'a', 0x01, 0x00}, 100), kDecodeTrailingGarbage);
  const Bytes late = {0x70, 1, 2, 3, 4, 5, 6, 7, 0x07, 0x00, 0x30, 'x', 'y', 'z'};  // 7 + 4 + 3
  EXPECT_EQ(run(late, 14), kDecodeTrailingGarbage);  // literals within 12 bytes: must be last
  EXPECT_EQ(lz4_decode_block(nullptr, 0, nullptr, std::size_t{1} << 31, 0, 1), kDecodeTooLarge);
  EXPECT_STREQ(decode_status_name(kDecodeEndOfBlock),
               "match within the last 5 bytes of the output");
}

// The end-of-block limits as liblz4 applies them, on every combination of: a long first match
// that places the output position around liblz4's 64-byte fast-mode limit, a sequence whose
// literals, offset and match length sit around each limit, final literals of 0..13 bytes, and
// an output buffer of the exact size, smaller, or larger.
TEST(GpuLz4Block, EndOfBlockLimitsMatchLiblz4) {
  constexpr std::size_t kAtStart = ~std::size_t{0} - 1, kBeforeStart = ~std::size_t{0};
  int cases = 0, accepted = 0;
  for (std::size_t grow : {0, 20, 36, 50, 60, 200}) {  // bytes a first match adds (0: none)
    for (std::size_t lit : {0, 1, 13, 14, 15, 16, 30}) {
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{7},
                                 std::size_t{8}, std::size_t{9}, kAtStart, kBeforeStart}) {
        for (std::size_t length : {4, 5, 17, 18, 19, 40}) {
          for (std::size_t last : {0, 1, 4, 5, 6, 7, 11, 12, 13}) {
            std::vector<Seq> seqs;
            if (grow) seqs.push_back({random_bytes(2, 1), 1, grow});
            const std::size_t op = (grow ? 2 + grow : 0) + lit;
            const std::size_t off = offset == kAtStart       ? op
                                    : offset == kBeforeStart ? op + 1
                                                             : offset;
            seqs.push_back({random_bytes(lit, 2), off, length});
            seqs.push_back({random_bytes(last, 4), 0, 0});
            const Bytes enc = encode(seqs);
            const std::size_t natural = op + length + last;
            for (long delta : {-1L, 0L, 1L, 4L, 5L, 12L, 13L, 64L}) {
              if (static_cast<long>(natural) + delta < 0) continue;
              const std::size_t dst_size = static_cast<std::size_t>(long(natural) + delta);
              const int r = expect_same_as_liblz4(
                  enc, dst_size,
                  "grow " + std::to_string(grow) + " lit " + std::to_string(lit) + " offset " +
                      std::to_string(offset) + " length " + std::to_string(length) + " last " +
                      std::to_string(last) + " dst " + std::to_string(dst_size));
              if (HasFailure()) return;
              accepted += r >= 0;
              ++cases;
            }
          }
        }
      }
    }
  }
  std::printf("lz4 end-of-block limits: %d cases, %d accepted\n", cases, accepted);
  EXPECT_GT(accepted, cases / 4);
  EXPECT_LT(accepted, cases * 3 / 4);
}

// Random blocks of well-formed sequences that end near every limit: literal and match lengths
// around 15 and 19 (one extension byte) and long, offsets from 0 to past the start, few final
// literals, output buffers around the decoded size. liblz4 and this decoder must agree on each.
TEST(GpuLz4Block, RandomSequencesMatchLiblz4) {
  std::mt19937 rng(4242);
  auto pick = [&](std::initializer_list<std::size_t> v) { return *(v.begin() + rng() % v.size()); };
  int accepted = 0;
  constexpr int kBlocks = 30000;
  for (int iter = 0; iter < kBlocks; ++iter) {
    std::vector<Seq> seqs;
    std::size_t op = 0;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
      const std::size_t lit = rng() % 3 ? rng() % 20 : pick({14, 15, 16, 40, 270, 300});
      op += lit;
      std::size_t offset = rng() % 4 ? 1 + rng() % std::max<std::size_t>(op, 1) : pick({0, 1, 8});
      if (rng() % 16 == 0) offset = op + 1 + rng() % 4;  // before the start
      const std::size_t length = rng() % 3 ? 4 + rng() % 20 : pick({18, 19, 20, 100, 300});
      seqs.push_back({random_bytes(lit, static_cast<unsigned>(rng())), offset, length});
      op += length;
    }
    const std::size_t last = rng() % 3 ? rng() % 14 : rng() % 40;
    seqs.push_back({random_bytes(last, static_cast<unsigned>(rng())), 0, 0});
    const Bytes enc = encode(seqs);
    const std::size_t natural = op + last;
    const long delta = rng() % 2 ? 0 : static_cast<long>(rng() % 80) - 16;
    const std::size_t dst_size = static_cast<std::size_t>(std::max(0L, long(natural) + delta));
    const int r = expect_same_as_liblz4(enc, dst_size, "block " + std::to_string(iter));
    if (HasFailure()) return;
    accepted += r >= 0;
    if (iter % 300 == 0) {  // emulated lanes agree with one lane (offset-0 fills included)
      Bytes one(dst_size, 0xEE), warp(dst_size, 0xEE);
      ASSERT_EQ(decode_lanes(enc, warp, 8), decode(enc, one)) << iter;
      if (r >= 0) {
        ASSERT_TRUE(std::equal(warp.begin(), warp.begin() + r, one.begin()));
      }
    }
  }
  std::printf("lz4 random sequences: %d blocks, %d accepted\n", kBlocks, accepted);
  EXPECT_GT(accepted, kBlocks / 5);
  EXPECT_LT(accepted, kBlocks * 4 / 5);
}

// Random corruptions of real blocks (bit flips, truncations, appended and overwritten bytes,
// splices of two blocks, wrong sizes): liblz4 and this decoder agree on every one, and on the
// bytes of every block both decode; emulated lanes agree with one lane.
TEST(GpuLz4Block, FuzzAgainstLiblz4) {
  std::mt19937 rng(12345);
  std::vector<Bytes> corpus;
  std::vector<std::size_t> sizes;  // decoded size of each corpus block
  for (int kind = 0; kind < kDataKinds; ++kind)
    for (std::size_t n : {0, 20, 70, 300, 4000}) {
      const Bytes data = make_data(kind, n, static_cast<unsigned>(kind * 77 + n));
      corpus.push_back(compress(data, kind % 2 ? 9 : 0));
      sizes.push_back(n);
    }
  int both_ok = 0, both_fail = 0;
  constexpr int kIters = 20000;
  for (int iter = 0; iter < kIters; ++iter) {
    const std::size_t pick = rng() % corpus.size();
    Bytes enc = corpus[pick];
    std::size_t dst_size = sizes[pick];
    switch (rng() % 8) {
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
      case 4:  // overwrite a run of bytes with 0x00, 0xFF or random bytes
        if (!enc.empty()) {
          const std::size_t at = rng() % enc.size();
          const std::size_t n = std::min<std::size_t>(enc.size() - at, 1 + rng() % 6);
          const unsigned how = rng() % 3;
          for (std::size_t k = 0; k < n; ++k)
            enc[at + k] = how == 0 ? 0x00 : how == 1 ? 0xFF : static_cast<std::uint8_t>(rng());
        }
        break;
      case 5: {  // splice: this block's head, another block's tail
        const std::size_t other = rng() % corpus.size();
        const Bytes& b = corpus[other];
        enc.resize(enc.empty() ? 0 : rng() % enc.size());
        if (!b.empty())
          enc.insert(enc.end(), b.begin() + static_cast<long>(rng() % b.size()), b.end());
        dst_size = std::max(dst_size, sizes[other]);
        break;
      }
      default:  // wrong expected size: a few bytes off, or across the 64-byte fast-mode limit
        dst_size = static_cast<std::size_t>(
            std::max<long>(0, static_cast<long>(dst_size) + static_cast<long>(rng() % 16) - 8 +
                                  (rng() % 2 ? 0 : (rng() % 2 ? 64 : -64))));
    }
    const int r = expect_same_as_liblz4(enc, dst_size, "iteration " + std::to_string(iter));
    if (HasFailure()) return;
    ASSERT_LE(r, static_cast<int>(dst_size));
    ++(r >= 0 ? both_ok : both_fail);
    if (iter % 250 == 0) {  // emulated lanes agree with one lane, on errors too
      Bytes one(dst_size, 0xEE), warp(dst_size, 0xEE);
      ASSERT_EQ(decode_lanes(enc, warp, 8), decode(enc, one)) << iter;
      if (r >= 0) {
        ASSERT_TRUE(std::equal(warp.begin(), warp.begin() + r, one.begin()));
      }
    }
  }
  EXPECT_GT(both_ok, kIters / 10);
  EXPECT_GT(both_fail, kIters / 2);
  std::printf("lz4 fuzz: %d corruptions, liblz4 and this decoder both accept %d, both reject %d\n",
              kIters, both_ok, both_fail);
}

}  // namespace
}  // namespace zarrflow::gpu
