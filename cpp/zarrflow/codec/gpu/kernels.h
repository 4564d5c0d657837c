// Batched CUDA kernels of the GPU read path (CUDA builds only). Each launcher takes an array of
// jobs in device memory and processes all of them in one launch, on the given stream.
//
//   decode_streams   one warp per LZ4 / blosclz / stored stream (zarrflow's own decoders, so
//                    Blosc-LZ4 and numcodecs-LZ4 decode on the GPU even without nvCOMP)
//   unshuffle        one thread block per Blosc block: byte or bit un-shuffle
//   check_sizes      compares nvCOMP's actual output sizes with the expected ones
//   verify_checksums one thread block per inflated zlib / gzip stream: its Adler-32 / CRC-32
//                    against the stream's trailer (nvCOMP ignores trailers; codec/gpu/checksum.h)
//   zstd_decode      zarrflow's zstd decoder, four launches over all frames (zstd_kernels.cu)
// Job tables and status codes: kernel_jobs.h, zstd_jobs.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "zarrflow/codec/gpu/kernel_jobs.h"
#include "zarrflow/codec/gpu/zstd_jobs.h"

namespace zarrflow::gpu {

// Blocks for `items` work items at `per_block` a block (at least one; capped).
inline unsigned grid_for(std::uint64_t items, unsigned per_block) {
  const std::uint64_t g = (items + per_block - 1) / per_block;
  return unsigned(g == 0 ? 1 : (g > 65535u * 16 ? 65535u * 16 : g));
}

cudaError_t launch_decode_streams(const StreamJob* d_jobs, std::uint32_t n, int* d_status,
                                  cudaStream_t stream);
cudaError_t launch_unshuffle(const UnshuffleJob* d_jobs, std::uint32_t n, cudaStream_t stream);
// status[i] = (actual[i] == expected[i]) ? status[i] : kErrSizeMismatch, for nvCOMP batches.
cudaError_t launch_check_sizes(const std::size_t* d_actual, const std::size_t* d_expected,
                               int* d_status, std::uint32_t n, cudaStream_t stream);
// status[job.status] = kErrChecksum where a job's checksum differs from its trailer and the slot
// still says OK (an inflate error or a size mismatch already reported stays).
cudaError_t launch_verify_checksums(const ChecksumJob* d_jobs, std::uint32_t n, int* d_status,
                                    cudaStream_t stream);

// Decodes every frame of `d_jobs` into its dst; status[job.status] = 0 or a KernelError.
// `max_dst` is the largest dst_size among them.
cudaError_t launch_zstd_decode(ZstdFrameJob* d_jobs, std::uint32_t n, std::uint64_t max_dst,
                               int* d_status, cudaStream_t stream);
// Device memory a launch of the zstd decoder takes when it starts on the current device: its
// kernels' local memory, which the driver sets aside for every thread the GPU can hold (the
// block stage's table builds keep arrays there). 0 when the attributes cannot be read.
std::size_t zstd_launch_memory();

}  // namespace zarrflow::gpu
