#include "zarrflow/core/gpu/kernel_probe.h"

namespace zarrflow::gpu {
namespace {

__global__ void kernel_probe(std::uint32_t* out) { *out = kKernelProbeValue; }

}  // namespace

cudaError_t launch_kernel_probe(std::uint32_t* d_out, cudaStream_t stream) {
  kernel_probe<<<1, 1, 0, stream>>>(d_out);
  return cudaGetLastError();
}

const char* compiled_cuda_archs() {
#ifdef ZARRFLOW_CUDA_ARCHS
  return ZARRFLOW_CUDA_ARCHS;
#else
  return "unknown";
#endif
}

}  // namespace zarrflow::gpu
