// Helpers shared by the bytes→bytes codec tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <libdeflate.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/deflate.h"

#include "zarrflow/codec/registry.h"

namespace zarrflow::codec_test {

using Bytes = std::vector<std::byte>;

// Compressible pseudo-random bytes: runs (1..max_run long) of a few letters, and some noise.
inline Bytes sample(std::size_t n, unsigned seed = 1, unsigned max_run = 32) {
  std::mt19937 rng(seed);
  Bytes v(n);
  for (std::size_t i = 0; i < n;) {
    const std::size_t run = std::min<std::size_t>(n - i, 1 + rng() % max_run);
    const auto b = static_cast<std::byte>(rng() % 4 == 0 ? rng() : 'a' + rng() % 3);
    for (std::size_t k = 0; k < run; ++k) v[i++] = b;
  }
  return v;
}

// `src` as a gzip or zlib stream (libdeflate).
inline Bytes compress(DeflateWrapper w, const Bytes& src, int level = 6) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(level);
  const bool gzip = w == DeflateWrapper::kGzip;
  Bytes out(gzip ? libdeflate_gzip_compress_bound(c, src.size())
                 : libdeflate_zlib_compress_bound(c, src.size()));
  const std::size_t n =
      gzip ? libdeflate_gzip_compress(c, src.data(), src.size(), out.data(), out.size())
           : libdeflate_zlib_compress(c, src.data(), src.size(), out.data(), out.size());
  libdeflate_free_compressor(c);
  EXPECT_GT(n, 0u);
  out.resize(n);
  return out;
}

// Bytes from a hex string ("1f8b08...").
inline Bytes from_hex(std::string_view h) {
  Bytes v(h.size() / 2);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<std::byte>(std::stoi(std::string(h.substr(2 * i, 2)), nullptr, 16));
  return v;
}

// The bytes→bytes codec registered as `name` with configuration `cfg` (null on failure).
inline std::shared_ptr<const BytesToBytesCodec> make(const CodecRegistry& reg,
                                                     std::string_view name,
                                                     const nlohmann::json& cfg = nullptr,
                                                     const ChunkSpec& spec = {}) {
  auto c = reg.create(name, cfg, spec);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const BytesToBytesCodec>(*c);
}

// `enc` decodes to `want` through decode() without and with the size, and decode_into().
inline void expect_decodes(const BytesToBytesCodec& codec, const Bytes& enc, const Bytes& want) {
  Buffer scratch;
  auto a = codec.decode(enc, std::nullopt, scratch);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_TRUE(std::equal(a->begin(), a->end(), want.begin(), want.end()));
  Buffer scratch2;
  auto b = codec.decode(enc, want.size(), scratch2);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_TRUE(std::equal(b->begin(), b->end(), want.begin(), want.end()));
  Bytes out(want.size());
  ASSERT_TRUE(codec.decode_into(enc, out).ok());
  EXPECT_EQ(out, want);
}

// Many threads decode `enc` through one shared codec at once; every result equals `want`.
inline void expect_concurrent_decodes(const BytesToBytesCodec& codec, const Bytes& enc,
                                      const Bytes& want, int threads = 6, int iters = 10) {
  std::vector<std::thread> pool;
  std::vector<int> good(threads, 0);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < iters; ++i) {
        Bytes out(want.size());
        if (codec.decode_into(enc, out).ok() && out == want) ++good[t];
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(good[t], iters) << "thread " << t;
}

}  // namespace zarrflow::codec_test
