// device_available() on a real device: the probe kernel runs once per GPU and its verdict stays.
#include <gtest/gtest.h>

#include <string>

#include "zarrflow/core/gpu/device_memory.h"
#include "zarrflow/core/gpu/kernel_probe.h"

namespace zarrflow::gpu {
namespace {

class KernelProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = device_available(0);
    if (!s.ok()) GTEST_SKIP() << "GPU 0 not usable: " << s.message();
  }
};

TEST_F(KernelProbeTest, ArchitecturesAreRecorded) {
  EXPECT_NE(std::string(compiled_cuda_archs()), "");
  EXPECT_NE(std::string(compiled_cuda_archs()), "unknown");
}

TEST_F(KernelProbeTest, VerdictIsStableAndDoesNotChangeTheCurrentDevice) {
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(device_available(0).ok());
  EXPECT_TRUE(device_available().ok());
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before);
}

TEST_F(KernelProbeTest, ProbeKernelWritesItsValue) {
  std::uint32_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof *d), cudaSuccess);
  ASSERT_EQ(launch_kernel_probe(d, nullptr), cudaSuccess);
  std::uint32_t v = 0;
  ASSERT_EQ(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  EXPECT_EQ(v, kKernelProbeValue);
}

TEST_F(KernelProbeTest, NamesADeviceThatDoesNotExist) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  Status s = device_available(n);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not exist"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace zarrflow::gpu
