// A one-thread kernel launched once per GPU before zarrflow uses it (device_available): it is
// compiled into the same fatbin as every other kernel, so if it runs, they have a code image for
// this GPU too (SASS for its architecture, or PTX the driver can compile).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace zarrflow::gpu {

// The value the probe kernel writes.
inline constexpr std::uint32_t kKernelProbeValue = 0x7a66'c0deu;

// Queues the probe kernel on `stream`, writing kKernelProbeValue to *d_out; returns the launch
// error (cudaErrorNoKernelImageForDevice when the build has no code for this GPU).
cudaError_t launch_kernel_probe(std::uint32_t* d_out, cudaStream_t stream);

// The GPU architectures this build carries code for, as CMake listed them ("75-real;...;120").
const char* compiled_cuda_archs();

}  // namespace zarrflow::gpu
