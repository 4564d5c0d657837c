// The GPU zstd decoder's kernels (codec/gpu/zstd_kernels.cu) on a real device: a batch of frames
// of every kind libzstd writes decodes to the original bytes, the same as libzstd's and as the
// host run of the same stages; corrupted, truncated and unsupported frames fail in their own
// slot only, and a wrong checksum is caught.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/codec/gpu/zstd_jobs.h"
#include "zarrflow/codec/gpu_zstd_test_util.h"
#include "zarrflow/core/gpu/device_memory.h"
#include "zarrflow/core/status.h"

namespace zarrflow::gpu {
namespace {

using zstd_test::Bytes;
using zstd_test::compress;
using zstd_test::Params;

class ZstdDecodeGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = device_available(0);
    if (!s.ok()) GTEST_SKIP() << "GPU 0 not usable: " << s.message();
  }
};

struct Case {
  std::string name;
  Bytes frame;
  Bytes expect;  // empty with fails
  std::size_t out_size;
  bool fails = false;
};

// Decodes all cases in one launch; returns each case's status and output.
std::vector<int> decode_on_gpu(const std::vector<Case>& cases, std::vector<Bytes>& outs) {
  std::size_t in_bytes = 0, out_bytes = 0, scratch_bytes = 0, max_dst = 0;
  for (const Case& c : cases) {
    in_bytes += zstd_align(c.frame.size());
    out_bytes += zstd_align(c.out_size);
    scratch_bytes += zstd_scratch_bytes(c.frame.size(), c.out_size);
    max_dst = std::max(max_dst, c.out_size);
  }
  const std::size_t n = cases.size();
  std::uint8_t *d_in, *d_out, *d_scratch;
  ZstdFrameJob* d_jobs;
  int* d_status;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_in), in_bytes + 1), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_out), out_bytes + 1), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_scratch), scratch_bytes + 1), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_jobs), n * sizeof(ZstdFrameJob)), cudaSuccess);
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_status), n * sizeof(int)), cudaSuccess);
  EXPECT_EQ(cudaMemset(d_out, 0xEE, out_bytes + 1), cudaSuccess);
  EXPECT_EQ(cudaMemset(d_status, 0, n * sizeof(int)), cudaSuccess);
  std::vector<ZstdFrameJob> jobs;
  std::size_t in_at = 0, out_at = 0, scratch_at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const Case& c = cases[k];
    EXPECT_EQ(cudaMemcpy(d_in + in_at, c.frame.data(), c.frame.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
    jobs.push_back(make_zstd_job(d_in + in_at, c.frame.size(), d_out + out_at, c.out_size,
                                 std::uint32_t(k),
                                 reinterpret_cast<std::byte*>(d_scratch + scratch_at)));
    in_at += zstd_align(c.frame.size());
    out_at += zstd_align(c.out_size);
    scratch_at += zstd_scratch_bytes(c.frame.size(), c.out_size);
  }
  EXPECT_EQ(cudaMemcpy(d_jobs, jobs.data(), n * sizeof(ZstdFrameJob), cudaMemcpyHostToDevice),
            cudaSuccess);
  EXPECT_EQ(launch_zstd_decode(d_jobs, std::uint32_t(n), max_dst, d_status, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<int> status(n);
  EXPECT_EQ(cudaMemcpy(status.data(), d_status, n * sizeof(int), cudaMemcpyDeviceToHost),
            cudaSuccess);
  outs.clear();
  out_at = 0;
  for (const Case& c : cases) {
    Bytes o(c.out_size);
    EXPECT_EQ(cudaMemcpy(o.data(), d_out + out_at, c.out_size, cudaMemcpyDeviceToHost),
              cudaSuccess);
    outs.push_back(std::move(o));
    out_at += zstd_align(c.out_size);
  }
  for (void* p :
       {static_cast<void*>(d_in), static_cast<void*>(d_out), static_cast<void*>(d_scratch),
        static_cast<void*>(d_jobs), static_cast<void*>(d_status)})
    cudaFree(p);
  return status;
}

Case good(std::string name, Bytes data, const Params& p) {
  Case c{std::move(name), compress(data, p), data, data.size()};
  return c;
}

TEST_F(ZstdDecodeGpuTest, ABatchOfEveryKindDecodesToTheOriginalBytes) {
  std::vector<Case> cases;
  for (int level : {-5, 1, 3, 9, 19}) {
    Params p;
    p.level = level;
    cases.push_back(good("floats 4 MB level " + std::to_string(level),
                         zstd_test::floats_like_era5(721 * 1440 * 4, unsigned(level + 10)), p));
    cases.push_back(good("mixed level " + std::to_string(level),
                         zstd_test::mixed(900000, unsigned(level + 20)), p));
  }
  Params checksum;
  checksum.checksum = true;
  cases.push_back(good("text with checksum", zstd_test::text_like(300000, 1), checksum));
  // Blosc's blocks: runs and literals of kilobytes, which whole warps copy.
  for (unsigned seed : {30u, 31u}) {
    cases.push_back(good("byte-shuffled floats with checksum " + std::to_string(seed),
                         zstd_test::byte_shuffled(zstd_test::floats_like_era5(1 << 18, seed)),
                         checksum));
  }
  Params stream;
  stream.stream = true;
  stream.content_size = false;
  cases.push_back(good("random, streamed", zstd_test::random_bytes(200000, 2), stream));
  cases.push_back(good("zeros", Bytes(1 << 20, 0), Params{}));
  cases.push_back(good("empty", Bytes(), Params{}));
  cases.push_back(good("tiny", zstd_test::text_like(7, 3), Params{}));
  Params small;
  small.target_block = 1340;
  cases.push_back(good("small blocks", zstd_test::mixed(300000, 4), small));
  // Failures, each in its own slot.
  Case corrupt = good("corrupt", zstd_test::floats_like_era5(1 << 20, 5), Params{});
  for (std::size_t k = 100; k < corrupt.frame.size(); k += 997) corrupt.frame[k] ^= 0x5A;
  corrupt.fails = true;
  cases.push_back(corrupt);
  Case cut = good("truncated", zstd_test::text_like(200000, 6), Params{});
  cut.frame.resize(cut.frame.size() / 2);
  cut.fails = true;
  cases.push_back(cut);
  Case bad_sum = good("checksum mismatch", zstd_test::text_like(100000, 7), checksum);
  bad_sum.frame[bad_sum.frame.size() - 1] ^= 1;
  bad_sum.fails = true;
  cases.push_back(bad_sum);
  Case two = good("two frames", zstd_test::text_like(50000, 8), Params{});
  const Bytes one = two.frame;
  two.frame.insert(two.frame.end(), one.begin(), one.end());
  two.expect.insert(two.expect.end(), two.expect.begin(), two.expect.end());
  two.out_size *= 2;
  two.fails = true;
  cases.push_back(two);

  std::vector<Bytes> outs;
  const std::vector<int> status = decode_on_gpu(cases, outs);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    if (c.fails) {
      EXPECT_LT(status[k], 0) << c.name;
      continue;
    }
    ASSERT_EQ(status[k], 0) << c.name;
    EXPECT_TRUE(outs[k] == c.expect) << c.name;
    Bytes host(c.out_size);
    ASSERT_EQ(zstd_test::decode_on_host(c.frame.data(), std::uint32_t(c.frame.size()), host.data(),
                                        host.size())
                  .status,
              0)
        << c.name;
    EXPECT_TRUE(host == outs[k]) << c.name;
  }
  EXPECT_EQ(status[cases.size() - 2], kErrChecksum);
  EXPECT_EQ(status[cases.size() - 1], kErrUnsupported);
}

}  // namespace
}  // namespace zarrflow::gpu
