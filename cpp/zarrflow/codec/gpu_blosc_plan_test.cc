// Tests of the GPU Blosc path's host half: the planner (codec/gpu/blosc_plan.h), the un-shuffle
// primitives (codec/gpu/unshuffle.h) and the host reference driver (codec/gpu/blosc_host_decode.h),
// all against c-blosc 1.21 itself: decode_blosc_via_plan must equal blosc_decompress_ctx byte for
// byte on chunks from blosc_compress_ctx for every compressor, shuffle, typesize, blocksize,
// clevel and size, and must reject corrupt chunks without reading or writing out of bounds.
// Set ZARRFLOW_GPU_BLOSC_FULL=1 to run the whole matrix at 1 MiB too (slow: zstd clevel 9 is
// zstd level 22).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <blosc.h>
#include <gtest/gtest.h>

#include "zarrflow/codec/decoder_test_util.h"
#include "zarrflow/codec/gpu/blosc_host_decode.h"
#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/codec/gpu/unshuffle.h"

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::uint8_t>;
using codec_test::blosc_compress;
using codec_test::random_bytes;

ConstByteSpan cspan(const Bytes& b) {
  return {reinterpret_cast<const std::byte*>(b.data()), b.size()};
}
ByteSpan span(Bytes& b) { return {reinterpret_cast<std::byte*>(b.data()), b.size()}; }

void put_le32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_le32(const std::uint8_t* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// ---- Un-shuffle against the definitions and against c-blosc. ----

Bytes naive_byte_unshuffle(const Bytes& in, std::size_t ts) {
  Bytes out(in);
  const std::size_t n = in.size() / ts;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < ts; ++j) out[i * ts + j] = in[j * n + i];
  return out;
}

Bytes naive_bit_unshuffle(const Bytes& in, std::size_t ts) {
  Bytes out(in);
  const std::size_t n = in.size() / ts;
  if (n % 8 != 0) return out;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < ts; ++j) {
      unsigned v = 0;
      for (std::size_t k = 0; k < 8; ++k)
        v |= ((in[(j * 8 + k) * (n / 8) + i / 8] >> (i % 8)) & 1u) << k;
      out[i * ts + j] = static_cast<std::uint8_t>(v);
    }
  return out;
}

TEST(GpuUnshuffle, TransposeBits) {
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 10000; ++iter) {
    const std::uint64_t x = rng();
    std::uint64_t want = 0;
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) want |= ((x >> (8 * r + c)) & 1u) << (8 * c + r);
    ASSERT_EQ(transpose_bits_8x8(x), want);
  }
}

// Lanes of an un-shuffle never read what other lanes write, so running them one after another
// is a faithful emulation of any interleaving.
TEST(GpuUnshuffle, MatchesDefinitionsForAnyLaneSplit) {
  int cases = 0;
  for (std::size_t ts = 1; ts <= 33; ++ts) {
    for (std::size_t size : {0, 1, 7, 8, 63, 64, 65, 128, 1000, 1024, 4096 + 3, 8 * 33 * 5}) {
      const Bytes in = random_bytes(size, static_cast<unsigned>(ts * 10000 + size));
      const Bytes want_byte = naive_byte_unshuffle(in, ts);
      const Bytes want_bit = naive_bit_unshuffle(in, ts);
      for (int nlanes : {1, 3, 32, 256}) {
        Bytes a(size, 0xEE), b(size, 0xEE);
        for (int lane = nlanes - 1; lane >= 0; --lane) {
          byte_unshuffle(in.data(), a.data(), ts, size, lane, nlanes);
          bit_unshuffle(in.data(), b.data(), ts, size, lane, nlanes);
        }
        ASSERT_EQ(a, want_byte) << ts << " " << size << " " << nlanes;
        ASSERT_EQ(b, want_bit) << ts << " " << size << " " << nlanes;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 33 * 12 * 4);
}

// Typesizes 2, 4 and 8 un-shuffle by groups of four elements when the rows are aligned, byte by
// byte when not: the same result at every alignment of source and output.
TEST(GpuUnshuffle, WordGroupsMatchTheDefinitionAtEveryAlignment) {
  int cases = 0;
  for (std::size_t ts : {2, 4, 8}) {
    for (std::size_t elements : {4, 8, 12, 64, 1000, 1001, 1003}) {
      const std::size_t size = elements * ts + (elements % 3);  // a leftover tail on some
      const Bytes in = random_bytes(size, static_cast<unsigned>(ts * 100000 + size));
      const Bytes want = naive_byte_unshuffle(in, ts);
      for (std::size_t src_at = 0; src_at < 4; ++src_at) {
        for (std::size_t dst_at : {0, 1, 2, 3, 4, 8}) {
          for (int nlanes : {1, 32, 256}) {
            Bytes src(size + 8), dst(size + 16, 0xEE);
            std::copy(in.begin(), in.end(), src.begin() + static_cast<std::ptrdiff_t>(src_at));
            for (int lane = 0; lane < nlanes; ++lane)
              byte_unshuffle(src.data() + src_at, dst.data() + dst_at, ts, size, lane, nlanes);
            ASSERT_TRUE(std::equal(want.begin(), want.end(),
                                   dst.begin() + static_cast<std::ptrdiff_t>(dst_at)))
                << ts << " " << size << " " << src_at << " " << dst_at << " " << nlanes;
            ASSERT_EQ(dst[dst_at + size], 0xEE);
            if (dst_at > 0) ASSERT_EQ(dst[dst_at - 1], 0xEE);
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 3 * 7 * 4 * 6 * 3);
}

// A chunk whose every block is one stored stream (csize == block size) holding `shuffled`: c-blosc
// copies it and un-shuffles, so decoding it tests its (SIMD) un-shuffle on arbitrary bytes.
Bytes stored_chunk(const Bytes& shuffled, std::uint8_t typesize, std::uint32_t blocksize,
                   std::uint8_t shuffle_flags) {
  const std::uint32_t nbytes = static_cast<std::uint32_t>(shuffled.size());
  const std::uint32_t nblocks = (nbytes + blocksize - 1) / blocksize;
  Bytes c(16 + 4 * nblocks);
  c[0] = 2;
  c[1] = 1;
  c[2] = static_cast<std::uint8_t>(shuffle_flags | 0x10 | (1 << 5));  // don't split, lz4
  c[3] = typesize;
  put_le32(&c[4], nbytes);
  put_le32(&c[8], blocksize);
  for (std::uint32_t b = 0; b < nblocks; ++b) {
    const std::uint32_t size = std::min(blocksize, nbytes - b * blocksize);
    put_le32(&c[16 + 4 * b], static_cast<std::uint32_t>(c.size()));
    c.resize(c.size() + 4);
    put_le32(&c[c.size() - 4], size);
    c.insert(c.end(), shuffled.begin() + b * blocksize, shuffled.begin() + b * blocksize + size);
  }
  put_le32(&c[12], static_cast<std::uint32_t>(c.size()));
  return c;
}

TEST(GpuUnshuffle, MatchesCbloscOnStoredBlocks) {
  int cases = 0, bit_transposed = 0, bit_kept = 0;
  for (int ts : {1, 2, 3, 4, 5, 7, 8, 12, 16, 17, 32, 255}) {
    for (std::uint32_t blocksize : {8u, 100u, 1024u, 1000u, 4096u, 2040u}) {
      for (std::uint32_t nbytes :
           {blocksize, 3 * blocksize, 3 * blocksize + 5, 2 * blocksize + 1}) {
        for (std::uint8_t flags : {0x01, 0x04, 0x05}) {
          const Bytes in = random_bytes(nbytes, nbytes + static_cast<unsigned>(ts));
          const Bytes chunk = stored_chunk(in, static_cast<std::uint8_t>(ts), blocksize, flags);
          Bytes ref(nbytes), ours(nbytes, 0xEE);
          ASSERT_EQ(blosc_decompress_ctx(chunk.data(), ref.data(), ref.size(), 1),
                    static_cast<int>(nbytes));
          const Status st = decode_blosc_via_plan(cspan(chunk), span(ours));
          ASSERT_TRUE(st.ok()) << st.to_string();
          ASSERT_EQ(ours, ref) << ts << " " << blocksize << " " << nbytes << " " << int{flags};
          auto plan = make_blosc_plan(cspan(chunk));
          for (const BloscBlock& b : plan->blocks) {
            if (plan->bit_shuffle && !(plan->byte_shuffle && ts > 1) && b.size >= std::uint32_t(ts))
              ++(b.unshuffle == BloscUnshuffle::kBit ? bit_transposed : bit_kept);
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 12 * 6 * 4 * 3);
  EXPECT_GT(bit_transposed, 0);
  EXPECT_GT(bit_kept, 0);  // element counts that are not a multiple of 8: stored as they are
}

// ---- The planner on known chunks. ----

// Slowly varying integers with some noise (shuffles matter), or smooth float32, or a mix with
// incompressible stretches (some streams stored), or pure noise (memcpyed chunks).
Bytes make_data(int kind, std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes v(n);
  if (kind == 0) {
    std::uint32_t x = rng();
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 4 == 0) x += rng() % 7;
      v[i] = static_cast<std::uint8_t>(rng() % 16 == 0 ? rng() : x >> (8 * (i % 4)));
    }
  } else if (kind == 1) {
    for (std::size_t i = 0; i + 4 <= n; i += 4) {
      const float f =
          static_cast<float>(std::sin(static_cast<double>(i) * 1e-4) * 1e3 + 1e-3 * (rng() % 100));
      std::memcpy(&v[i], &f, 4);
    }
  } else if (kind == 2) {
    for (std::size_t i = 0; i < n; ++i)
      v[i] = (i / 20000) % 2 ? static_cast<std::uint8_t>(rng()) : static_cast<std::uint8_t>(i / 64);
  } else {
    for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  }
  return v;
}

TEST(GpuBloscPlan, SplitBlocksLeftoverAndScratch) {
  // 4 * 65536 + 7 bytes of typesize 4: c-blosc raises a forced blocksize of 16384 for a codec it
  // splits to 16384 * typesize = 65536. 4 full blocks split into 4 streams, then a leftover block
  // of 7 bytes (one stream; 1 element + 3 bytes copied through).
  const Bytes data = make_data(0, 4 * 65536 + 7, 1);
  blosc_set_splitmode(BLOSC_ALWAYS_SPLIT);
  const Bytes chunk = blosc_compress(data, "lz4", BLOSC_SHUFFLE, 4, 16384, 5);
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  auto plan = make_blosc_plan(cspan(chunk));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->nbytes, 4 * 65536u + 7);
  EXPECT_EQ(plan->blocksize, 65536u);
  EXPECT_EQ(plan->nblocks, 5u);
  EXPECT_EQ(plan->leftover, 7u);
  EXPECT_TRUE(plan->byte_shuffle);
  EXPECT_FALSE(plan->dont_split);
  EXPECT_EQ(plan->compressor, 1);
  ASSERT_EQ(plan->blocks.size(), 5u);
  ASSERT_EQ(plan->streams.size(), 4u * 4 + 1);
  for (std::uint32_t b = 0; b < 4; ++b) {
    EXPECT_EQ(plan->blocks[b].num_streams, 4u);
    EXPECT_EQ(plan->blocks[b].unshuffle, BloscUnshuffle::kByte);
    for (std::uint32_t s = 0; s < 4; ++s) {
      const BloscStream& st = plan->streams[b * 4 + s];
      EXPECT_EQ(st.block, b);
      EXPECT_EQ(st.split, s);
      EXPECT_EQ(st.dst_offset, b * 65536u + s * 16384u);
      EXPECT_EQ(st.dst_size, 16384u);
      EXPECT_EQ(st.to_scratch, 1);
    }
  }
  EXPECT_EQ(plan->blocks[4].num_streams, 1u);
  EXPECT_EQ(plan->blocks[4].size, 7u);
  EXPECT_EQ(plan->blocks[4].unshuffle, BloscUnshuffle::kNone);  // one element: identity
  EXPECT_EQ(plan->streams.back().dst_size, 7u);
  EXPECT_EQ(plan->streams.back().kind, BloscStreamKind::kMemcpy);  // 7 bytes do not compress
  EXPECT_EQ(plan->streams.back().to_scratch, 0);
  EXPECT_EQ(plan->unshuffled, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(plan->needs_scratch());

  // The default split mode (FORWARD_COMPAT) never splits zstd blocks; dont_split is then set.
  const Bytes c2 = blosc_compress(data, "zstd", BLOSC_NOSHUFFLE, 4, 65536, 5);
  auto p2 = make_blosc_plan(cspan(c2));
  ASSERT_TRUE(p2.ok());
  EXPECT_TRUE(p2->dont_split);
  EXPECT_EQ(p2->streams.size(), 5u);
  EXPECT_FALSE(p2->needs_scratch());
}

TEST(GpuBloscPlan, MemcpyedAndEmptyChunks) {
  const Bytes noise = make_data(3, 10000, 2);
  const Bytes chunk = blosc_compress(noise, "zstd", BLOSC_SHUFFLE, 8, 4096, 5);
  auto plan = make_blosc_plan(cspan(chunk));
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->memcpyed);
  EXPECT_EQ(chunk.size(), 10016u);
  ASSERT_EQ(plan->streams.size(), 1u);  // pieces of up to 1 MiB, whatever the blocksize
  EXPECT_EQ(plan->streams[0].kind, BloscStreamKind::kMemcpy);
  EXPECT_EQ(plan->streams[0].src_offset, 16u);
  EXPECT_EQ(plan->streams[0].dst_size, 10000u);
  EXPECT_TRUE(plan->blocks.empty());
  EXPECT_FALSE(plan->needs_scratch());
  // 3 MiB + 5 at clevel 0: four pieces.
  const Bytes big = blosc_compress(make_data(0, (3 << 20) + 5, 2), "lz4", BLOSC_SHUFFLE, 4, 0, 0);
  auto pb = make_blosc_plan(cspan(big));
  ASSERT_TRUE(pb.ok());
  ASSERT_EQ(pb->streams.size(), 4u);
  EXPECT_EQ(pb->streams[3].dst_offset, 3u << 20);
  EXPECT_EQ(pb->streams[3].dst_size, 5u);
  Bytes out((3 << 20) + 5);
  ASSERT_TRUE(decode_blosc_via_plan(cspan(big), span(out)).ok());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), make_data(0, (3 << 20) + 5, 2).begin()));

  const Bytes empty = blosc_compress(Bytes{}, "lz4", BLOSC_SHUFFLE, 4, 0, 5);
  auto p2 = make_blosc_plan(cspan(empty));
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->nbytes, 0u);
  EXPECT_TRUE(p2->streams.empty());
  EXPECT_TRUE(decode_blosc_via_plan(cspan(empty), {}).ok());
}

// ---- Corrupt chunks: the messages. ----

// An lz4 chunk with blocksize 1024, typesize 1, no shuffle: 4 blocks of one stream each. (Never
// split, or c-blosc would raise the blocksize to 64 KiB.)
Bytes small_chunk() {
  blosc_set_splitmode(BLOSC_NEVER_SPLIT);
  Bytes c = blosc_compress(make_data(2, 4096, 3), "lz4", BLOSC_NOSHUFFLE, 1, 1024, 5);
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  return c;
}

std::string plan_error(const Bytes& chunk) {
  auto p = make_blosc_plan(cspan(chunk));
  return p.ok() ? "ok" : p.status().to_string();
}

TEST(GpuBloscPlan, CorruptChunksNameWhatIsWrong) {
  const Bytes good = small_chunk();
  ASSERT_EQ(plan_error(good), "ok");
  ASSERT_EQ(good[2], 0x30);                           // lz4, don't split
  const std::uint32_t b3 = get_le32(&good[16 + 12]);  // start of block 3

  Bytes c = good;
  put_le32(&c[16 + 12], static_cast<std::uint32_t>(c.size()) - 2);
  EXPECT_NE(plan_error(c).find("block 3 starts at byte"), std::string::npos) << plan_error(c);

  c = good;
  put_le32(&c[b3], 0x80000000u);
  EXPECT_EQ(plan_error(c),
            "corrupt data: blosc: block 3 stream 0 has a negative compressed size "
            "(-2147483648)");
  c = good;
  put_le32(&c[b3], static_cast<std::uint32_t>(c.size()));
  EXPECT_NE(plan_error(c).find("block 3 stream 0: "), std::string::npos);
  EXPECT_NE(plan_error(c).find("run past the end of the chunk"), std::string::npos);
  c = good;
  put_le32(&c[b3], 0);
  EXPECT_EQ(plan_error(c),
            "corrupt data: blosc: block 3 stream 0 is empty (0 compressed bytes for 1024 "
            "decoded bytes)");
  c = good;
  c[12] ^= 1;  // cbytes
  EXPECT_NE(plan_error(c).find("compressed bytes but the chunk has"), std::string::npos);

  // A split block's second stream whose size word lies past the end of the chunk.
  blosc_set_splitmode(BLOSC_ALWAYS_SPLIT);
  Bytes split = blosc_compress(make_data(0, 4096, 3), "lz4", BLOSC_SHUFFLE, 2, 4096, 5);
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  auto sp = make_blosc_plan(cspan(split));
  ASSERT_TRUE(sp.ok());
  ASSERT_EQ(sp->streams.size(), 2u);
  put_le32(&split[sp->streams[0].src_offset - 4],
           static_cast<std::uint32_t>(split.size() - sp->streams[0].src_offset - 2));
  EXPECT_NE(plan_error(split).find("block 0 stream 1 starts past the end of the chunk"),
            std::string::npos)
      << plan_error(split);

  // A split block whose size is not a multiple of the typesize (c-blosc would leave bytes
  // undecoded): blocksize 4095 with typesize 2 and the split flag clear.
  Bytes odd = blosc_compress(make_data(2, 4095, 3), "lz4", BLOSC_NOSHUFFLE, 1, 4095, 5);
  ASSERT_EQ(odd[2] & 0x02, 0);  // not memcpyed
  odd[2] &= ~0x10;
  odd[3] = 2;
  EXPECT_NE(plan_error(odd).find("blocksize 4095 is split into streams of the typesize 2 but is "
                                 "not a multiple of it"),
            std::string::npos)
      << plan_error(odd);

  // Snappy: not on the GPU path.
  const Bytes snappy = blosc_compress(make_data(0, 4096, 3), "snappy", BLOSC_SHUFFLE, 4, 0, 5);
  auto p = make_blosc_plan(cspan(snappy));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnimplemented);

  // The driver names the stream that fails to decode.
  c = good;
  c[get_le32(&c[16 + 8]) + 4] ^= 0xF0;  // first token of block 2
  Bytes out(4096);
  const Status st = decode_blosc_via_plan(cspan(c), span(out));
  EXPECT_EQ(st.code(), ErrorCode::kCorruptData);
  EXPECT_EQ(st.message().rfind("blosc: block 2 stream 0: lz4: ", 0), 0u) << st.to_string();
  Bytes wrong(4000);
  EXPECT_EQ(decode_blosc_via_plan(cspan(good), span(wrong)).code(), ErrorCode::kCorruptData);
}

// ---- Against c-blosc on everything it writes. ----

struct Coverage {
  long chunks = 0, memcpyed = 0, split_blocks = 0, leftover_blocks = 0, stored_streams = 0,
       byte_blocks = 0, bit_blocks = 0, bit_kept_blocks = 0, compressed_streams = 0;
};

// Compresses `data` with c-blosc, then requires decode_blosc_via_plan == blosc_decompress_ctx ==
// data (or kUnimplemented for snappy). With `may_fail` (odd split modes c-blosc cannot read
// back), only requires that both fail or both give the same bytes.
void check_roundtrip(const Bytes& data, const char* cname, int shuffle, int ts, std::size_t bs,
                     int clevel, Coverage& cov, bool may_fail = false) {
  const Bytes chunk = blosc_compress(data, cname, shuffle, ts, bs, clevel);
  if (chunk.empty()) return;
  const std::string what = std::string(cname) + " shuffle " + std::to_string(shuffle) + " ts " +
                           std::to_string(ts) + " bs " + std::to_string(bs) + " clevel " +
                           std::to_string(clevel) + " n " + std::to_string(data.size());
  Bytes ref(data.size(), 0xDD), ours(data.size(), 0xEE);
  const int r = blosc_decompress_ctx(chunk.data(), ref.data(), ref.size(), 1);
  const Status st = decode_blosc_via_plan(cspan(chunk), span(ours));
  auto plan = make_blosc_plan(cspan(chunk));
  if (std::string(cname) == "snappy" && !(chunk[2] & 0x02) && !data.empty()) {
    ASSERT_EQ(st.code(), ErrorCode::kUnimplemented) << what;
    return;
  }
  if (may_fail) {
    if (r != static_cast<int>(data.size()) || ref != data) {
      ASSERT_FALSE(st.ok() && ours == ref && r == static_cast<int>(data.size())) << what;
      return;
    }
  }
  ASSERT_EQ(r, static_cast<int>(data.size())) << what;
  ASSERT_TRUE(st.ok()) << what << ": " << st.to_string();
  ASSERT_EQ(ours, ref) << what;
  ++cov.chunks;
  cov.memcpyed += plan->memcpyed;
  if (plan->memcpyed) return;
  for (const BloscBlock& b : plan->blocks) {
    cov.split_blocks += b.num_streams > 1;
    cov.leftover_blocks += b.size != plan->blocksize;
    cov.byte_blocks += b.unshuffle == BloscUnshuffle::kByte;
    cov.bit_blocks += b.unshuffle == BloscUnshuffle::kBit;
    cov.bit_kept_blocks += plan->bit_shuffle && !plan->byte_shuffle && b.size >= plan->typesize &&
                           b.unshuffle == BloscUnshuffle::kNone;
  }
  for (const BloscStream& s : plan->streams) {
    ++(s.kind == BloscStreamKind::kMemcpy ? cov.stored_streams : cov.compressed_streams);
  }
}

TEST(GpuBloscPlan, MatchesCbloscOnEveryConfiguration) {
  const bool full = std::getenv("ZARRFLOW_GPU_BLOSC_FULL") != nullptr;
  Coverage cov;
  for (std::size_t n : {0, 1, 100, 65536 + 7, 1 << 20}) {
    for (int kind : {0, 1}) {
      const Bytes data = make_data(kind, n, static_cast<unsigned>(n + kind));
      for (const char* cname : {"blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"}) {
        for (int shuffle : {BLOSC_NOSHUFFLE, BLOSC_SHUFFLE, BLOSC_BITSHUFFLE}) {
          for (int ts : {1, 2, 4, 8, 3, 16}) {
            // 3000 is rounded down to a multiple of the typesize, and divides none of the sizes.
            for (std::size_t bs : {0, 1024, 4096, 3000}) {
              for (int clevel : {1, 5, 9}) {
                if (n == (1 << 20) && !full) {
                  // The 1 MiB chunks: every compressor and shuffle, fewer of the rest.
                  if (ts != 4 && ts != 3) continue;
                  if (clevel != 5 && !(clevel == 9 && std::strcmp(cname, "zstd") != 0 &&
                                       std::strcmp(cname, "zlib") != 0))
                    continue;
                  if (bs == 1024) continue;
                }
                check_roundtrip(data, cname, shuffle, ts, bs, clevel, cov);
                if (HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
  // Forced memcpyed chunks: clevel 0 and incompressible data.
  for (std::size_t n : {1, 1000, 65536 + 7}) {
    for (int ts : {1, 4, 3}) {
      check_roundtrip(make_data(0, n, 9), "lz4", BLOSC_SHUFFLE, ts, 0, 0, cov);
      check_roundtrip(make_data(3, n, 9), "blosclz", BLOSC_BITSHUFFLE, ts, 1024, 9, cov);
      check_roundtrip(make_data(3, n, 9), "zstd", BLOSC_SHUFFLE, ts, 4096, 5, cov);
    }
  }
  // Partly incompressible data: stored streams inside compressed chunks.
  for (const char* cname : {"blosclz", "lz4", "zstd", "zlib"})
    for (int shuffle : {BLOSC_NOSHUFFLE, BLOSC_SHUFFLE, BLOSC_BITSHUFFLE})
      check_roundtrip(make_data(2, 200000, 4), cname, shuffle, 8, 16384, 5, cov);
  std::printf(
      "blosc: %ld chunks (%ld memcpyed): %ld split blocks, %ld leftover blocks, %ld byte- and %ld "
      "bit-unshuffled blocks, %ld bit-shuffled blocks kept as stored (element count not a "
      "multiple of 8), %ld compressed and %ld stored streams\n",
      cov.chunks, cov.memcpyed, cov.split_blocks, cov.leftover_blocks, cov.byte_blocks,
      cov.bit_blocks, cov.bit_kept_blocks, cov.compressed_streams, cov.stored_streams);
  EXPECT_GT(cov.memcpyed, 100);
  EXPECT_GT(cov.split_blocks, 100);
  EXPECT_GT(cov.leftover_blocks, 100);
  EXPECT_GT(cov.stored_streams, 100);
  EXPECT_GT(cov.bit_blocks, 100);
  EXPECT_GT(cov.bit_kept_blocks, 0);
}

// A bit-shuffled leftover block whose whole elements form groups of 8 but which ends in a partial
// element (4679 bytes in blocks of 512: the last block is 71 bytes, 8 float64 and 7 bytes): its
// 64 bytes are bit-transposed and the last 7 copied through, as c-blosc does.
TEST(GpuBloscPlan, BitShuffledLeftoverEndingInAPartialElement) {
  Coverage cov;
  for (const char* cname : {"blosclz", "lz4", "zstd"})
    check_roundtrip(make_data(0, 4679, 11), cname, BLOSC_BITSHUFFLE, 8, 512, 5, cov);
  const Bytes chunk = blosc_compress(make_data(0, 4679, 11), "lz4", BLOSC_BITSHUFFLE, 8, 512, 5);
  auto plan = make_blosc_plan(cspan(chunk));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_FALSE(plan->memcpyed);
  const BloscBlock& last = plan->blocks.back();
  EXPECT_EQ(last.size, 71u);
  EXPECT_EQ(last.unshuffle, BloscUnshuffle::kBit);
  EXPECT_EQ(cov.chunks, 3);
}

// Every split mode c-blosc has. ALWAYS_SPLIT writes chunks c-blosc itself cannot read back when
// the decoder's split rule disagrees (typesize > 16, or blocks under 128 elements); then both
// decoders must fail (or agree).
TEST(GpuBloscPlan, EverySplitMode) {
  Coverage cov;
  for (int mode :
       {BLOSC_ALWAYS_SPLIT, BLOSC_NEVER_SPLIT, BLOSC_AUTO_SPLIT, BLOSC_FORWARD_COMPAT_SPLIT}) {
    blosc_set_splitmode(mode);
    for (const char* cname : {"blosclz", "lz4", "zstd", "zlib"})
      for (int ts : {1, 4, 16, 24})
        for (std::size_t bs : {0, 1024, 8192})
          check_roundtrip(make_data(1, 100003, 6), cname, BLOSC_SHUFFLE, ts, bs, 5, cov, true);
  }
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  EXPECT_GT(cov.split_blocks, 20);
}

// ---- 20,000 random corruptions through the planner and the driver (run under ASan). ----

// What a plan promises the kernels: every stream inside the chunk, streams tiling their block,
// blocks tiling [0, nbytes).
void check_plan_invariants(const BloscPlan& p, std::size_t chunk_size) {
  if (p.memcpyed) {
    ASSERT_TRUE(p.blocks.empty());
    std::uint64_t next = 0;
    for (const BloscStream& s : p.streams) {
      ASSERT_EQ(s.dst_offset, next);
      ASSERT_EQ(s.src_offset, 16 + next);
      ASSERT_EQ(s.src_size, s.dst_size);
      ASSERT_GT(s.dst_size, 0u);
      next += s.dst_size;
    }
    ASSERT_EQ(next, p.nbytes);
    ASSERT_EQ(16 + next, chunk_size);
    return;
  }
  std::uint64_t next_block = 0;
  ASSERT_EQ(p.blocks.size(), p.nbytes ? p.nblocks : 0u);
  for (std::size_t b = 0; b < p.blocks.size(); ++b) {
    const BloscBlock& blk = p.blocks[b];
    ASSERT_EQ(blk.dst_offset, next_block);
    ASSERT_GT(blk.size, 0u);
    next_block += blk.size;
    std::uint64_t next = blk.dst_offset;
    for (std::uint32_t s = blk.first_stream; s < blk.first_stream + blk.num_streams; ++s) {
      ASSERT_LT(s, p.streams.size());
      const BloscStream& st = p.streams[s];
      ASSERT_EQ(st.block, b);
      ASSERT_EQ(st.dst_offset, next);
      next += st.dst_size;
      ASSERT_GT(st.src_size, 0u);
      ASSERT_GE(st.src_offset, 16u);
      ASSERT_LE(st.src_offset + st.src_size, chunk_size);
      if (st.kind == BloscStreamKind::kMemcpy) {
        ASSERT_EQ(st.src_size, st.dst_size);
      }
      ASSERT_EQ(st.to_scratch, blk.unshuffle != BloscUnshuffle::kNone ? 1 : 0);
    }
    ASSERT_EQ(next, blk.dst_offset + blk.size);
    if (blk.unshuffle == BloscUnshuffle::kBit) {
      ASSERT_EQ(blk.size / p.typesize % 8, 0u);
      ASSERT_GE(blk.size, p.typesize);
    }
  }
  ASSERT_EQ(next_block, p.nbytes);
}

TEST(GpuBloscPlan, FuzzPlannerAndDriver) {
  std::vector<Bytes> corpus;
  unsigned seed = 1;
  for (const char* cname : {"blosclz", "lz4", "lz4hc", "zlib", "zstd"})
    for (int shuffle : {BLOSC_NOSHUFFLE, BLOSC_SHUFFLE, BLOSC_BITSHUFFLE})
      for (int ts : {1, 4, 3}) {
        const std::size_t n = 200 + (seed * 7919) % 30000;
        corpus.push_back(blosc_compress(make_data(static_cast<int>(seed % 3), n, seed), cname,
                                        shuffle, ts, seed % 2 ? 0 : 2048, 5));
        ++seed;
      }
  blosc_set_splitmode(BLOSC_ALWAYS_SPLIT);  // more streams per block
  corpus.push_back(blosc_compress(make_data(0, 20000, 5), "lz4", BLOSC_SHUFFLE, 4, 4096, 5));
  corpus.push_back(blosc_compress(make_data(0, 20000, 5), "blosclz", BLOSC_BITSHUFFLE, 8, 8192, 5));
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  corpus.push_back(
      blosc_compress(make_data(3, 3000, 5), "lz4", BLOSC_SHUFFLE, 4, 1024, 5));  // memcpyed

  std::mt19937 rng(99);
  int planned = 0, decoded = 0, both_ok = 0, only_cblosc = 0, only_ours = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes c = corpus[rng() % corpus.size()];
    const int nflips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < nflips; ++k) {
      switch (rng() % 8) {
        case 0:  // a header byte
          c[rng() % 16] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          break;
        case 1: {  // a bstarts entry or the csize of some stream
          const std::size_t at = 16 + 4 * (rng() % 8);
          if (at + 4 <= c.size())
            put_le32(&c[at], get_le32(&c[at]) + static_cast<std::uint32_t>(rng() % 64) - 32);
          break;
        }
        case 2:  // truncate (and, half the time, fix cbytes)
          c.resize(16 + rng() % (c.size() - 15));
          if (rng() % 2 && c.size() >= 16) put_le32(&c[12], static_cast<std::uint32_t>(c.size()));
          break;
        case 3:  // append
          for (int j = 0; j < 1 + static_cast<int>(rng() % 64); ++j)
            c.push_back(static_cast<std::uint8_t>(rng()));
          if (rng() % 2) put_le32(&c[12], static_cast<std::uint32_t>(c.size()));
          break;
        case 4:  // the flags: shuffle, split, codec bits
          c[2] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          break;
        case 5:  // typesize or blocksize
          if (rng() % 2) {
            c[3] = static_cast<std::uint8_t>(rng());
          } else {
            put_le32(&c[8], get_le32(&c[8]) + static_cast<std::uint32_t>(rng() % 256) - 128);
          }
          break;
        default:  // data bytes
          if (c.size() > 16)
            c[16 + rng() % (c.size() - 16)] ^= static_cast<std::uint8_t>(1 + rng() % 255);
      }
    }
    const Bytes chunk(c);  // exact size, so ASan sees any overrun
    auto plan = make_blosc_plan(cspan(chunk));
    if (!plan.ok()) continue;
    ++planned;
    check_plan_invariants(*plan, chunk.size());
    if (HasFatalFailure()) return;
    if (plan->nbytes > (4u << 20)) continue;
    Bytes ours(plan->nbytes, 0xEE), ref(plan->nbytes, 0xDD);
    const bool ok = decode_blosc_via_plan(cspan(chunk), span(ours)).ok();
    decoded += ok;
    const bool ref_ok = blosc_decompress_ctx(chunk.data(), ref.data(), ref.size(), 1) ==
                        static_cast<int>(plan->nbytes);
    if (ok && ref_ok) {
      ASSERT_EQ(ours, ref) << iter;
      ++both_ok;
    }
    only_cblosc += ref_ok && !ok;
    only_ours += ok && !ref_ok;
  }
  std::printf(
      "blosc fuzz: %d planned, %d decoded; c-blosc agrees on %d, decodes %d we reject, rejects "
      "%d we decode\n",
      planned, decoded, both_ok, only_cblosc, only_ours);
  EXPECT_GT(planned, 2000);
  EXPECT_GT(both_ok, 500);
  // Every chunk planned: the GPU's decoders accept exactly what c-blosc accepts.
  EXPECT_EQ(only_cblosc, 0);
  EXPECT_EQ(only_ours, 0);
}

}  // namespace
}  // namespace zarrflow::gpu
