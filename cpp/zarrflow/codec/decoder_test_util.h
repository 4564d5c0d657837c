// Helpers shared by the Blosc and GPU block-decoder tests: random bytes, reference chunks from
// c-blosc, and running a decoder as a "warp" of host threads that meet at a barrier.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include <blosc.h>

namespace zarrflow::codec_test {

// n bytes of a seeded std::mt19937 (uniform, incompressible).
inline std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

// A Blosc chunk of `src` made by c-blosc itself (the reference writer), for byte or uint8 vectors.
template <class Bytes>
Bytes blosc_compress(const Bytes& src, const char* cname, int shuffle, int typesize,
                     std::size_t blocksize = 0, int clevel = 5) {
  Bytes out(src.size() + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(clevel, shuffle, static_cast<std::size_t>(typesize), src.size(),
                                   src.data(), out.data(), out.size(), cname, blocksize, 1);
  EXPECT_GT(n, 0) << cname;
  out.resize(static_cast<std::size_t>(std::max(n, 0)));
  return out;
}

// The barrier a decoder's lanes call between phases (the host stand-in for __syncwarp).
struct BarrierSync {
  std::barrier<>* b;
  void operator()() const { b->arrive_and_wait(); }
};

// Runs f(lane, nlanes, sync) on `nlanes` threads. A barrier missing in the decoder shows up as a
// data race (ThreadSanitizer) or, by chance, as wrong output. Every lane must return the same
// value, which is returned.
template <class F>
int agreed_result_of_lanes(int nlanes, F f) {
  std::barrier<> bar(nlanes);
  std::vector<int> results(static_cast<std::size_t>(nlanes));
  std::vector<std::thread> threads;
  for (int lane = 0; lane < nlanes; ++lane)
    threads.emplace_back([&, lane] { results[lane] = f(lane, nlanes, BarrierSync{&bar}); });
  for (auto& t : threads) t.join();
  for (int v : results) EXPECT_EQ(v, results[0]);
  return results[0];
}

}  // namespace zarrflow::codec_test
