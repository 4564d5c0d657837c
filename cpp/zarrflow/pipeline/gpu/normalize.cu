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

// Two 16-bit outputs packed into one 32-bit word (round to nearest even, like convert<T>).
template <typename T>
__device__ inline unsigned pack2(float a, float b);
template <>
__device__ inline unsigned pack2<__nv_bfloat16>(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&v);
}
template <>
__device__ inline unsigned pack2<__half>(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const unsigned*>(&v);
}

// Four outputs at once: 8 bytes of 16-bit types, 16 bytes of floats.
template <typename T>
struct Vec4 {
  using type = uint2;
  __device__ static type make(float a, float b, float c, float d) {
    return {pack2<T>(a, b), pack2<T>(c, d)};
  }
};
template <>
struct Vec4<float> {
  using type = float4;
  __device__ static type make(float a, float b, float c, float d) { return {a, b, c, d}; }
};

// blockIdx.y walks the planes (one channel of one sample and step: `inner` elements, so the
// channel is known per block and no element needs a division); blockIdx.x/threads the plane,
// four elements at a time where `vec` (inner % 4 == 0 and 16-byte aligned buffers).
template <typename T>
__global__ void normalize_cast_kernel(const float* in, T* out, std::int64_t planes,
                                      std::int64_t inner, std::int64_t channels, bool vec,
                                      const float* mean, const float* inv_std,
                                      unsigned long long* nans) {
  unsigned long long local = 0;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t first = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
    const std::int64_t c = p % channels;
    const float m = mean[c], k = inv_std[c];
    const float* src = in + p * inner;
    T* dst = out + p * inner;
    if (vec) {
      const auto* s4 = reinterpret_cast<const float4*>(src);
      auto* d4 = reinterpret_cast<typename Vec4<T>::type*>(dst);
      for (std::int64_t i = first; i < inner / 4; i += stride) {
        const float4 x = s4[i];
        local += (isnan(x.x) ? 1 : 0) + (isnan(x.y) ? 1 : 0) + (isnan(x.z) ? 1 : 0) +
                 (isnan(x.w) ? 1 : 0);
        d4[i] = Vec4<T>::make((x.x - m) * k, (x.y - m) * k, (x.z - m) * k, (x.w - m) * k);
      }
    } else {
      for (std::int64_t i = first; i < inner; i += stride) {
        const float x = src[i];
        local += isnan(x) ? 1 : 0;
        dst[i] = convert<T>((x - m) * k);
      }
    }
  }
  // One atomic per warp.
  for (int o = 16; o > 0; o /= 2) local += __shfl_down_sync(0xffffffffu, local, o);
  if ((threadIdx.x & 31) == 0 && local) atomicAdd(nans, local);
}

template <typename T>
cudaError_t launch(const float* in, T* out, std::int64_t n, std::int64_t inner,
                   std::int64_t channels, const float* d_mean, const float* d_inv_std,
                   unsigned long long* d_nans, cudaStream_t stream) {
  const unsigned threads = 256;
  const bool vec = inner % 4 == 0 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  const std::int64_t planes = n / inner;
  const std::int64_t items = vec ? inner / 4 : inner;  // per plane
  const std::int64_t per_plane = (items + threads - 1) / threads;
  const dim3 grid(unsigned(per_plane < 64 ? per_plane : 64),
                  unsigned(planes < 65535 ? planes : 65535));
  normalize_cast_kernel<T><<<grid, threads, 0, stream>>>(in, out, planes, inner, channels, vec,
                                                         d_mean, d_inv_std, d_nans);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_normalize_cast(const float* in, void* out, OutType type, std::int64_t n,
                                  std::int64_t inner, std::int64_t channels, const float* d_mean,
                                  const float* d_inv_std, unsigned long long* d_nans,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (inner <= 0 || n % inner != 0) return cudaErrorInvalidValue;  // whole planes only
  switch (type) {
    case OutType::kFloat32:
      return launch(in, static_cast<float*>(out), n, inner, channels, d_mean, d_inv_std, d_nans,
                    stream);
    case OutType::kBFloat16:
      return launch(in, static_cast<__nv_bfloat16*>(out), n, inner, channels, d_mean, d_inv_std,
                    d_nans, stream);
    case OutType::kFloat16:
      return launch(in, static_cast<__half*>(out), n, inner, channels, d_mean, d_inv_std, d_nans,
                    stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace zarrflow::gpu
