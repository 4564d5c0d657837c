#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "zarrflow/pipeline/gpu/normalize.h"

namespace zarrflow::gpu {
namespace {

template <typename T>
__device__ inline T convert(float x);
template <>
__device__ inline float convert<float>(float x) { return x; }
template <>
__device__ inline __nv_bfloat16 convert<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ inline __half convert<__half>(float x) { return __float2half_rn(x); }

template <typename T>
__global__ void normalize_cast_kernel(const float* in, T* out, std::int64_t n, std::int64_t inner,
                                      std::int64_t channels, const float* mean,
                                      const float* inv_std, unsigned long long* nans) {
  unsigned long long local = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const float x = in[i];
    const std::int64_t c = (i / inner) % channels;
    local += isnan(x) ? 1 : 0;
    out[i] = convert<T>((x - mean[c]) * inv_std[c]);
  }
  // One atomic per warp.
  for (int o = 16; o > 0; o /= 2) local += __shfl_down_sync(0xffffffffu, local, o);
  if ((threadIdx.x & 31) == 0 && local) atomicAdd(nans, local);
}

}  // namespace

cudaError_t launch_normalize_cast(const float* in, void* out, OutType type, std::int64_t n,
                                  std::int64_t inner, std::int64_t channels, const float* d_mean,
                                  const float* d_inv_std, unsigned long long* d_nans,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const unsigned threads = 256;
  const std::int64_t want = (n + threads - 1) / threads;
  const unsigned blocks = unsigned(want < 65535 * 8 ? want : 65535 * 8);
  switch (type) {
    case OutType::kFloat32:
      normalize_cast_kernel<<<blocks, threads, 0, stream>>>(in, static_cast<float*>(out), n, inner,
                                                            channels, d_mean, d_inv_std, d_nans);
      break;
    case OutType::kBFloat16:
      normalize_cast_kernel<<<blocks, threads, 0, stream>>>(
          in, static_cast<__nv_bfloat16*>(out), n, inner, channels, d_mean, d_inv_std, d_nans);
      break;
    case OutType::kFloat16:
      normalize_cast_kernel<<<blocks, threads, 0, stream>>>(in, static_cast<__half*>(out), n, inner,
                                                            channels, d_mean, d_inv_std, d_nans);
      break;
  }
  return cudaGetLastError();
}

}  // namespace zarrflow::gpu
