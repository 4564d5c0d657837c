// Tests of the GPU blosclz decoder (codec/gpu/blosclz_block.h) on the host, against c-blosc's own
// blosclz decoder: every blosclz stream of chunks made by blosc_compress_ctx, hand-made streams
// (far matches, long lengths, runs, the end-of-stream quirk), an emulated warp, every stream cut
// near its end, and 20,000 random corruptions, where c-blosc and this decoder must accept and
// reject exactly the same streams.
// c-blosc does not export blosclz_decompress, so a stream is handed to it wrapped in a one-block,
// one-stream chunk; blosc_decompress_ctx then succeeds only if blosclz fills the block exactly.
#include "zarrflow/codec/gpu/blosclz_block.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <blosc.h>
#include <gtest/gtest.h>

#include "zarrflow/codec/decoder_test_util.h"
#include "zarrflow/codec/gpu/blosc_plan.h"

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::uint8_t>;
using codec_test::agreed_result_of_lanes;
using codec_test::BarrierSync;
using codec_test::random_bytes;

int decode(const Bytes& src, Bytes& dst) {
  return blosclz_decode_block(src.data(), src.size(), dst.data(), dst.size(), 0, 1);
}

// Decodes with `nlanes` threads meeting at a barrier (a warp); all lanes must agree.
int decode_lanes(const Bytes& src, Bytes& dst, int nlanes) {
  return agreed_result_of_lanes(nlanes, [&](int lane, int n, BarrierSync sync) {
    return blosclz_decode_block_with(src.data(), src.size(), dst.data(), dst.size(), lane, n, sync);
  });
}

void put_le32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// c-blosc's blosclz decoder on `stream`, expecting out.size() bytes: returns what
// blosc_decompress_ctx returns (out.size(), or negative). Needs stream.size() != out.size()
// (equal sizes mean "stored" to c-blosc).
int cblosc_blosclz(const Bytes& stream, Bytes& out) {
  Bytes chunk(24 + stream.size());
  chunk[0] = 2;     // format version
  chunk[1] = 1;     // blosclz version
  chunk[2] = 0x10;  // don't split, no shuffle, blosclz (0 << 5)
  chunk[3] = 1;     // typesize
  put_le32(&chunk[4], static_cast<std::uint32_t>(out.size()));
  put_le32(&chunk[8], static_cast<std::uint32_t>(out.size()));
  put_le32(&chunk[12], static_cast<std::uint32_t>(chunk.size()));
  put_le32(&chunk[16], 20);
  put_le32(&chunk[20], static_cast<std::uint32_t>(stream.size()));
  if (!stream.empty()) std::memcpy(&chunk[24], stream.data(), stream.size());
  return blosc_decompress_ctx(chunk.data(), out.data(), out.size(), 1);
}

// ---- A writer of arbitrary blosclz token sequences, and their byte-by-byte meaning. ----

struct Tok {
  Bytes literals;    // emitted first, in runs of up to 32
  std::size_t dist;  // then a match (0: none)
  std::size_t len;   // >= 3
};

void emit_literals(Bytes& out, const Bytes& lit) {
  for (std::size_t i = 0; i < lit.size(); i += 32) {
    const std::size_t run = std::min<std::size_t>(32, lit.size() - i);
    out.push_back(static_cast<std::uint8_t>(run - 1));
    if (out.size() == 1) out[0] |= 0x20;  // the encoder's marker bit; decoders mask it off
    out.insert(out.end(), lit.begin() + static_cast<std::ptrdiff_t>(i),
               lit.begin() + static_cast<std::ptrdiff_t>(i + run));
  }
}

void emit_match(Bytes& out, std::size_t dist, std::size_t len) {
  const bool far = dist > 8191;
  const std::size_t biased = dist - 1;
  const unsigned hi = far ? 31u : static_cast<unsigned>(biased >> 8);
  const unsigned lo = far ? 255u : static_cast<unsigned>(biased & 255);
  if (len <= 8) {
    out.push_back(static_cast<std::uint8_t>(((len - 2) << 5) | hi));
  } else {
    out.push_back(static_cast<std::uint8_t>((7u << 5) | hi));
    std::size_t extra = len - 9;
    for (; extra >= 255; extra -= 255) out.push_back(255);
    out.push_back(static_cast<std::uint8_t>(extra));
  }
  out.push_back(static_cast<std::uint8_t>(lo));
  if (far) {
    const std::size_t f = dist - 8192;
    out.push_back(static_cast<std::uint8_t>(f >> 8));
    out.push_back(static_cast<std::uint8_t>(f & 255));
  }
}

Bytes encode(const std::vector<Tok>& toks) {
  Bytes out;
  for (const Tok& t : toks) {
    emit_literals(out, t.literals);
    if (t.dist) emit_match(out, t.dist, t.len);
  }
  return out;
}

Bytes naive(const std::vector<Tok>& toks) {
  Bytes out;
  for (const Tok& t : toks) {
    out.insert(out.end(), t.literals.begin(), t.literals.end());
    for (std::size_t k = 0; k < t.len && t.dist; ++k) out.push_back(out[out.size() - t.dist]);
  }
  return out;
}

// What kinds of tokens a valid stream holds (to show the tests reach every part of the format).
struct TokenStats {
  long literal_runs = 0, near_short = 0, near_long = 0, far = 0, runs = 0, overlapping = 0,
       multi_byte_lengths = 0;
};
void count_tokens(const Bytes& s, TokenStats& st) {
  std::size_t ip = 1, op = 0;
  unsigned ctrl = s[0] & 31u;
  for (;;) {
    if (ctrl >= 32) {
      std::size_t len = (ctrl >> 5) - 1, dist = (ctrl & 31u) << 8;
      int ext = 0;
      if (len == 6) {
        unsigned c;
        do {
          c = s[ip++];
          len += c;
          ++ext;
        } while (c == 255);
      }
      const unsigned code = s[ip++];
      len += 3;
      if (code == 255 && dist == (31u << 8)) {
        dist = (static_cast<std::size_t>(s[ip]) << 8 | s[ip + 1]) + 8192;
        ip += 2;
        ++st.far;
      } else {
        dist += code + 1;
        ++((ctrl >> 5) == 7 ? st.near_long : st.near_short);
      }
      st.runs += dist == 1;
      st.overlapping += dist < len;
      st.multi_byte_lengths += ext > 1;
      op += len;
      if (ip >= s.size()) return;
      ctrl = s[ip++];
    } else {
      ++st.literal_runs;
      ip += ctrl + 1;
      op += ctrl + 1;
      if (ip >= s.size()) return;
      ctrl = s[ip++];
    }
  }
}

// Inputs for c-blosc: smooth integers, smooth floats, runs, and random data repeated 10-40 KB
// later (far matches) with a compressible tail (c-blosc only compresses a block when its last
// quarter looks compressible).
Bytes make_data(int kind, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes v(n);
  switch (kind) {
    case 0: {
      std::uint32_t x = rng();
      for (std::size_t i = 0; i < n; ++i) {
        if (i % 4 == 0) x += rng() % 7;
        v[i] = static_cast<std::uint8_t>(rng() % 16 == 0 ? rng() : x >> (8 * (i % 4)));
      }
      break;
    }
    case 1:
      for (std::size_t i = 0; i + 4 <= n; i += 4) {
        const float f = static_cast<float>(std::sin(static_cast<double>(i) * 3e-4) * 1000.0);
        std::memcpy(&v[i], &f, 4);
      }
      break;
    case 2:
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i / 700) * 37);
      break;
    default: {
      std::size_t i = 0;
      while (i < n * 3 / 4) {
        const std::size_t len = 10000 + rng() % 30000;
        const Bytes r = random_bytes(len / 2, static_cast<unsigned>(rng()));
        for (std::size_t k = 0; k < len && i < n; ++k, ++i) v[i] = r[k % r.size()];
      }
      for (; i < n; ++i) v[i] = static_cast<std::uint8_t>(i / 50);
    }
  }
  return v;
}

// c-blosc chunks of every data kind, typesize, shuffle, level and block size -- a third of the
// combinations, chosen so that every pair of settings still occurs together.
TEST(GpuBlosclzBlock, EveryStreamOfCbloscChunks) {
  TokenStats st;
  long streams = 0;
  const int typesizes[] = {1, 2, 4, 3, 8, 16};
  const int clevels[] = {1, 5, 9};
  const std::size_t blocksizes[] = {0, 65536, 262144};
  for (int kind = 0; kind < 4; ++kind) {
    for (int t = 0; t < 6; ++t) {
      const int typesize = typesizes[t];
      const std::size_t n = 300007;
      const Bytes data = make_data(kind, n, static_cast<unsigned>(kind + typesize));
      for (int shuffle : {0, 1, 2}) {
        for (int c = 0; c < 3; ++c) {
          for (int b = 0; b < 3; ++b) {
            if ((kind + t + shuffle + c + b) % 3 != 0) continue;
            Bytes chunk(n + BLOSC_MAX_OVERHEAD);
            const int size = blosc_compress_ctx(
                clevels[c], shuffle, static_cast<std::size_t>(typesize), n, data.data(),
                chunk.data(), chunk.size(), "blosclz", blocksizes[b], 1);
            ASSERT_GT(size, 0);
            chunk.resize(static_cast<std::size_t>(size));
            auto plan =
                make_blosc_plan({reinterpret_cast<const std::byte*>(chunk.data()), chunk.size()});
            ASSERT_TRUE(plan.ok()) << plan.status().to_string();
            for (const BloscStream& s : plan->streams) {
              if (s.kind != BloscStreamKind::kBlosclz) continue;
              const Bytes stream(
                  chunk.begin() + static_cast<std::ptrdiff_t>(s.src_offset),
                  chunk.begin() + static_cast<std::ptrdiff_t>(s.src_offset) + s.src_size);
              Bytes ours(s.dst_size, 0xEE), ref(s.dst_size, 0xDD);
              ASSERT_EQ(decode(stream, ours), static_cast<int>(s.dst_size));
              ASSERT_EQ(cblosc_blosclz(stream, ref), static_cast<int>(s.dst_size));
              ASSERT_EQ(ours, ref);
              count_tokens(stream, st);
              ++streams;
            }
          }
        }
      }
    }
  }
  std::printf(
      "blosclz: %ld streams; tokens: %ld literal runs, %ld near short, %ld near long, %ld far, "
      "%ld runs (distance 1), %ld overlapping, %ld with multi-byte lengths\n",
      streams, st.literal_runs, st.near_short, st.near_long, st.far, st.runs, st.overlapping,
      st.multi_byte_lengths);
  EXPECT_GT(streams, 300);
  EXPECT_GT(st.far, 0);
  EXPECT_GT(st.near_long, 0);
  EXPECT_GT(st.near_short, 0);
  EXPECT_GT(st.runs, 0);
  EXPECT_GT(st.overlapping, 0);
  EXPECT_GT(st.multi_byte_lengths, 0);
}

// Streams of every kind of token. Each match follows `lead` literal bytes, or (lead 0) just
// enough for its distance and a few more.
std::vector<std::vector<Tok>> hand_made(std::size_t lead = 80000) {
  std::vector<std::vector<Tok>> all;
  const Bytes start = random_bytes(80000, 1);
  // Far and near distances around the boundaries, short and long lengths.
  for (std::size_t dist : {1,    2,    3,    7,    31,   32,   255,  256,   257,   7935,
                           7936, 7937, 8190, 8191, 8192, 8193, 8448, 20000, 73000, 73727}) {
    const std::size_t n = lead ? lead : dist + 7;
    const Bytes head(start.begin(), start.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t len : {3, 4, 8, 9, 10, 263, 264, 265, 1000}) {
      all.push_back({{head, dist, len}, {random_bytes(5, 2), 0, 0}});
    }
  }
  // Literal runs of every length, back to back; a stream made of literals only.
  std::vector<Tok> lits;
  for (std::size_t n = 1; n <= 70; ++n) lits.push_back({random_bytes(n, 3 + n), 0, 0});
  all.push_back(lits);
  all.push_back({{random_bytes(1, 4), 0, 0}});
  all.push_back({{random_bytes(32, 4), 0, 0}});
  // Matches back to back (no literals between), runs after runs.
  all.push_back({{random_bytes(3, 5), 1, 100},
                 {{}, 3, 50},
                 {{}, 2, 9},
                 {{}, 100, 40},
                 {random_bytes(1, 6), 0, 0}});
  return all;
}

TEST(GpuBlosclzBlock, HandMadeStreams) {
  int cases = 0;
  for (const auto& toks : hand_made()) {
    const Bytes enc = encode(toks);
    const Bytes want = naive(toks);
    Bytes ours(want.size(), 0xEE);
    ASSERT_EQ(decode(enc, ours), static_cast<int>(want.size())) << cases;
    ASSERT_EQ(ours, want) << cases;
    if (enc.size() != want.size()) {
      Bytes ref(want.size());
      ASSERT_EQ(cblosc_blosclz(enc, ref), static_cast<int>(want.size())) << cases;
      ASSERT_EQ(ref, want) << cases;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 20 * 9 + 4);
}

TEST(GpuBlosclzBlock, EmulatedWarpMatchesSingleLane) {
  int cases = 0;
  for (const auto& toks : hand_made()) {
    if (++cases % 5 != 0) continue;
    const Bytes enc = encode(toks);
    const Bytes want = naive(toks);
    for (int nlanes : {4, 32}) {
      Bytes out(want.size(), 0xEE);
      ASSERT_EQ(decode_lanes(enc, out, nlanes), static_cast<int>(want.size()));
      ASSERT_EQ(out, want);
    }
  }
}

// c-blosc stops before copying a match that ends the stream (so the block comes out short and
// Blosc fails); here that is kDecodeTruncated. A short near match needs 2 bytes after its
// control byte, so one whose distance byte is the last byte fails in c-blosc too.
TEST(GpuBlosclzBlock, EndOfStreamRules) {
  const Bytes lit = random_bytes(10000, 9);
  for (std::size_t len : {3, 9, 300}) {
    for (std::size_t dist : {1, 5, 9000}) {
      Bytes enc = encode({{lit, dist, len}});
      Bytes ours(lit.size() + len), ref(lit.size() + len);
      EXPECT_EQ(decode(enc, ours), kDecodeTruncated) << len << " " << dist;
      EXPECT_LT(cblosc_blosclz(enc, ref), 0) << len << " " << dist;
    }
  }
  // The first byte is always literals: its top 3 bits are ignored.
  Bytes enc = {0xE2, 'a', 'b', 'c'};
  Bytes out(3);
  EXPECT_EQ(decode(enc, out), 3);
  EXPECT_EQ(out, (Bytes{'a', 'b', 'c'}));
  // Decoding stops at the end of the input; a short result is the caller's to judge.
  out = Bytes(10, 0);
  EXPECT_EQ(decode(enc, out), 3);
}

TEST(GpuBlosclzBlock, Errors) {
  Bytes out;
  auto run = [&](Bytes enc, std::size_t dst_size) {
    out = Bytes(dst_size, 0);
    return decode(enc, out);
  };
  EXPECT_EQ(run({}, 10), kDecodeTruncated);
  EXPECT_EQ(run({0x02, 'a', 'b'}, 10), kDecodeTruncated);            // 3 literals, 2 there
  EXPECT_EQ(run({0x02, 'a', 'b', 'c'}, 2), kDecodeOverflow);         // 3 literals, room for 2
  EXPECT_EQ(run({0x00, 'a', 0x20}, 10), kDecodeTruncated);           // match without its distance
  EXPECT_EQ(run({0x00, 'a', 0xE0, 255}, 300), kDecodeTruncated);     // length extension cut
  EXPECT_EQ(run({0x00, 'a', 0x3F, 255, 0}, 300), kDecodeTruncated);  // far distance cut
  EXPECT_EQ(run({0x00, 'a', 0x20, 0x01, 0x00, 'b'}, 10), kDecodeOffsetBeforeStart);  // dist 2
  EXPECT_EQ(run({0x00, 'a', 0x20, 0x00, 0x00, 'b'}, 3), kDecodeOverflow);            // 1 + 3 > 3
  EXPECT_EQ(run({0x00, 'a', 0x20, 0x00, 0x00, 'b'}, 5), 5);                          // 1 + 3 + 1
  EXPECT_EQ(blosclz_decode_block(nullptr, 0, nullptr, std::size_t{1} << 31, 0, 1), kDecodeTooLarge);
}

// Whether c-blosc (wrapped in a chunk, which needs the whole block) and this decoder both decode
// `stream` to exactly `dst_size` bytes, or both do not; where both do, the same bytes. Returns
// whether this decoder did. Exact-size copies, so ASan sees any overrun.
bool expect_same_as_cblosc(const Bytes& stream, std::size_t dst_size, const std::string& what) {
  const Bytes src(stream);
  Bytes ours(dst_size, 0xEE), ref(dst_size, 0xDD);
  const int r = decode(src, ours);
  EXPECT_LE(r, static_cast<int>(dst_size)) << what;
  const bool ours_ok = r == static_cast<int>(dst_size);
  const bool ref_ok = cblosc_blosclz(src, ref) == static_cast<int>(dst_size);
  EXPECT_EQ(ours_ok, ref_ok) << what << ": ours " << r << " (" << decode_status_name(r) << ")";
  if (ours_ok && ref_ok) {
    EXPECT_EQ(ours, ref) << what;
  }
  return ours_ok;
}

// Every hand-made stream cut short at each of its last 24 bytes (inside the last literals, the
// match header, its length extension or far distance), decoded into its full size, one byte
// less or more, and the size this decoder gets from the cut stream with room to spare: c-blosc
// accepts exactly the same ones.
TEST(GpuBlosclzBlock, EveryCutNearTheEndMatchesCblosc) {
  int cases = 0, accepted = 0;
  for (const auto& toks : hand_made(0)) {
    const Bytes enc = encode(toks);
    const std::size_t full = naive(toks).size();
    for (std::size_t cut = enc.size() > 24 ? enc.size() - 24 : 1; cut <= enc.size(); ++cut) {
      const Bytes part(enc.begin(), enc.begin() + static_cast<std::ptrdiff_t>(cut));
      Bytes room(full + 64);
      const int loose = decode(part, room);
      for (std::size_t dst_size : {full - 1, full, full + 1, static_cast<std::size_t>(loose)}) {
        if (loose < 1 && dst_size == static_cast<std::size_t>(loose)) continue;
        if (dst_size == part.size() || dst_size == 0) continue;  // stored, to c-blosc
        accepted +=
            expect_same_as_cblosc(part, dst_size,
                                  "stream " + std::to_string(cases) + " cut at " +
                                      std::to_string(cut) + " into " + std::to_string(dst_size));
        if (HasFailure()) return;
      }
    }
    ++cases;
  }
  std::printf("blosclz cuts: %d streams, %d cut streams accepted\n", cases, accepted);
  EXPECT_GT(accepted, cases);
}

// 20,000 random corruptions (bit flips, truncations, appended and overwritten bytes, splices of
// two streams, wrong sizes) of hand-made and c-blosc streams: no out-of-bounds access (run under
// ASan), and exactly the streams c-blosc decodes to a full block decode here to a full block,
// with the same bytes.
TEST(GpuBlosclzBlock, FuzzAgainstCblosc) {
  std::mt19937 rng(777);
  std::vector<std::pair<Bytes, std::size_t>> corpus;  // stream, decoded size
  for (const auto& toks : hand_made(0)) corpus.emplace_back(encode(toks), naive(toks).size());
  for (int kind = 0; kind < 4; ++kind) {
    const Bytes data = make_data(kind, 70000, static_cast<unsigned>(kind));
    Bytes chunk(data.size() + BLOSC_MAX_OVERHEAD);
    const int c = blosc_compress_ctx(9, 0, 1, data.size(), data.data(), chunk.data(), chunk.size(),
                                     "blosclz", 0, 1);
    ASSERT_GT(c, 0);
    auto plan = make_blosc_plan(
        {reinterpret_cast<const std::byte*>(chunk.data()), static_cast<std::size_t>(c)});
    ASSERT_TRUE(plan.ok());
    for (const BloscStream& s : plan->streams) {
      if (s.kind != BloscStreamKind::kBlosclz) continue;
      corpus.emplace_back(
          Bytes(chunk.begin() + static_cast<std::ptrdiff_t>(s.src_offset),
                chunk.begin() + static_cast<std::ptrdiff_t>(s.src_offset) + s.src_size),
          s.dst_size);
    }
  }
  ASSERT_GT(corpus.size(), 180u);
  int both_ok = 0, both_fail = 0;
  constexpr int kIters = 20000;
  for (int iter = 0; iter < kIters; ++iter) {
    auto [enc, dst_size] = corpus[rng() % corpus.size()];
    switch (rng() % 8) {
      case 0:
      case 1:  // flip 1-4 bytes, half the time among the last 16
        for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
          const std::size_t span = rng() % 2 ? std::min<std::size_t>(16, enc.size()) : enc.size();
          enc[enc.size() - 1 - rng() % span] ^= static_cast<std::uint8_t>(1 + rng() % 255);
        }
        break;
      case 2:  // truncate
        enc.resize(rng() % enc.size());
        break;
      case 3:  // append garbage
        for (int k = 1 + static_cast<int>(rng() % 8); k > 0; --k)
          enc.push_back(static_cast<std::uint8_t>(rng()));
        break;
      case 4: {  // overwrite a run of bytes with 0xFF, a literal-run control byte or random bytes
        const std::size_t at = rng() % enc.size();
        const std::size_t n = std::min<std::size_t>(enc.size() - at, 1 + rng() % 4);
        const unsigned how = rng() % 3;
        for (std::size_t k = 0; k < n; ++k)
          enc[at + k] = how == 0   ? 0xFF
                        : how == 1 ? static_cast<std::uint8_t>(rng() % 32)
                                   : static_cast<std::uint8_t>(rng());
        break;
      }
      case 5: {  // splice: this stream's head, another stream's tail
        const auto& [other, other_size] = corpus[rng() % corpus.size()];
        enc.resize(1 + rng() % enc.size());
        enc.insert(enc.end(), other.begin() + static_cast<std::ptrdiff_t>(rng() % other.size()),
                   other.end());
        dst_size = rng() % 2 ? dst_size : other_size;
        break;
      }
      default:
        dst_size = static_cast<std::size_t>(
            std::max<long>(1, static_cast<long>(dst_size) + static_cast<long>(rng() % 16) - 8));
    }
    if (enc.size() == dst_size) continue;  // c-blosc would take it as stored
    const bool ok = expect_same_as_cblosc(enc, dst_size, "iteration " + std::to_string(iter));
    if (HasFailure()) return;
    ++(ok ? both_ok : both_fail);
    if (iter % 250 == 0) {  // emulated lanes agree with one lane, on errors too
      Bytes one(dst_size, 0xEE), warp(dst_size, 0xEE);
      const int r = decode(enc, one);
      ASSERT_EQ(decode_lanes(enc, warp, 8), r) << iter;
      if (r >= 0) {
        ASSERT_TRUE(std::equal(warp.begin(), warp.begin() + r, one.begin()));
      }
    }
  }
  std::printf("blosclz fuzz: %d corruptions, both accept %d, both reject %d\n", kIters, both_ok,
              both_fail);
  EXPECT_GT(both_ok, kIters / 10);
  EXPECT_GT(both_fail, kIters / 3);
}

}  // namespace
}  // namespace zarrflow::gpu
