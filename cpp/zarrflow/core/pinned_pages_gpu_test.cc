// pin_host_pages on a real device: both ways of pinning (below and above the mapping size) give
// memory that CUDA reports as page-locked host memory and that DMA copies go through, in both
// directions; the pool hands out and takes back such memory.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "zarrflow/core/gpu/device_memory.h"
#include "zarrflow/core/gpu/pinned_pages.h"

namespace zarrflow::gpu {
namespace {

class PinnedPagesTest : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    Status s = device_available();
    if (!s.ok()) GTEST_SKIP() << "no GPU: " << s.message();
  }
};

TEST_P(PinnedPagesTest, PageLockedAndCopiesBothWays) {
  const std::size_t bytes = GetParam();
  auto p = pin_host_pages(bytes);
  ASSERT_TRUE(p.ok()) << p.status().message();
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, *p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost) << "not page-locked: " << bytes << " bytes";
  for (std::size_t i = 0; i < bytes; ++i) (*p)[i] = static_cast<std::byte>(i * 31 % 251);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(d, *p, bytes, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(static_cast<std::byte*>(d) + bytes / 2, 7, 1, s), cudaSuccess);
  std::vector<std::byte> want(*p, *p + bytes);
  want[bytes / 2] = std::byte{7};
  // The upload reads the pinned pages asynchronously: clear them only once it has finished.
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  std::memset(*p, 0, bytes);
  ASSERT_EQ(cudaMemcpyAsync(*p, d, bytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(std::memcmp(*p, want.data(), bytes), 0);
  cudaStreamDestroy(s);
  cudaFree(d);
  unpin_host_pages(*p, bytes);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(BelowAndAboveTheMappingSize, PinnedPagesTest,
                         ::testing::Values(std::size_t{1} << 20, kPinnedMappingFrom,
                                           (std::size_t{64} << 20) + 4096));

// A fork while the memory is pinned (DataLoader workers, subprocesses) must not make the parent's
// pages copy-on-write: its next write would move the page away from the one the GPU copies from.
TEST(PinnedPages, WritesAfterAForkReachTheGpu) {
  if (!device_available().ok()) GTEST_SKIP() << "no GPU";
  const std::size_t bytes = std::size_t{8} << 20;
  auto p = pin_host_pages(bytes);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::memset(*p, 0x11, bytes);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // keeps the parent's pages shared for a while; no CUDA here
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    _exit(0);
  }
  std::memset(*p, 0x22, bytes);  // while the child still lives
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, *p, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<std::byte> back(bytes);
  ASSERT_EQ(cudaMemcpy(back.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back.front(), std::byte{0x22});
  EXPECT_EQ(back.back(), std::byte{0x22});
  EXPECT_EQ(std::count(back.begin(), back.end(), std::byte{0x22}), static_cast<long>(bytes));
  int status = 0;
  waitpid(child, &status, 0);
  cudaFree(d);
  unpin_host_pages(*p, bytes);
}

TEST(PinnedPool, LargeBuffersAreMappedAndGoBack) {
  if (!device_available().ok()) GTEST_SKIP() << "no GPU";
  GpuMemoryPool pool(MemoryKind::kPinned, 0);
  {
    auto b = pool.acquire(std::size_t{100} << 20);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_TRUE(pinned_uses_mapping(b->capacity()));
    cudaPointerAttributes attr{};
    ASSERT_EQ(cudaPointerGetAttributes(&attr, b->data()), cudaSuccess);
    EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  }
  EXPECT_GT(pool.trim(), 0u);
  EXPECT_EQ(pool.allocations(), 1u);
  EXPECT_EQ(pool.frees(), 1u);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace zarrflow::gpu
