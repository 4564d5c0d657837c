// Batch post-processing on the GPU (CUDA builds only): per-channel normalisation and the cast
// to the training dtype, in one pass over the float32 batch the reads assembled.
//   out[i] = cast((in[i] - mean[c]) * inv_std[c]),  c = (i / inner) % channels
// NaNs are counted (and passed through), so the loader can report them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace zarrflow::gpu {

enum class OutType : int { kFloat32 = 0, kBFloat16 = 1, kFloat16 = 2 };

// `d_mean` / `d_inv_std` hold `channels` floats in device memory; `d_nans` one counter that is
// incremented by the number of NaNs seen. `out` may alias `in` only for kFloat32. `n` must be
// a whole number of planes of `inner` elements (cudaErrorInvalidValue otherwise).
cudaError_t launch_normalize_cast(const float* in, void* out, OutType type, std::int64_t n,
                                  std::int64_t inner, std::int64_t channels, const float* d_mean,
                                  const float* d_inv_std, unsigned long long* d_nans,
                                  cudaStream_t stream);

}  // namespace zarrflow::gpu
