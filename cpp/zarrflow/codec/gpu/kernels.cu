// Batched kernels of the GPU read path; see kernels.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "zarrflow/codec/gpu/blosclz_block.h"
#include "zarrflow/codec/gpu/checksum.h"
#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/codec/gpu/lz4_block.h"
#include "zarrflow/codec/gpu/unshuffle.h"

namespace zarrflow::gpu {
namespace {

constexpr int kWarp = 32;

// One warp per stream; all lanes run the decoder's control flow and share the copies.
__global__ void decode_streams_kernel(const StreamJob* jobs, std::uint32_t n, int* status) {
  const int lane = threadIdx.x % kWarp;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * (blockDim.x / kWarp);
  for (std::uint64_t j = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; j < n;
       j += warps) {
    const StreamJob job = jobs[j];
    int r;
    switch (job.kind) {
      case kStreamCopy:
        if (job.src_size != job.dst_size) {
          r = kErrSizeMismatch;
          break;
        }
        for (std::uint32_t i = lane; i < job.src_size; i += kWarp) job.dst[i] = job.src[i];
        r = int(job.dst_size);
        break;
      case kStreamLz4:
        r = lz4_decode_block(job.src, job.src_size, job.dst, job.dst_size, lane, kWarp);
        break;
      case kStreamBlosclz:
        r = blosclz_decode_block(job.src, job.src_size, job.dst, job.dst_size, lane, kWarp);
        break;
      default:
        r = kErrUnknownKind;
    }
    if (lane == 0) {
      if (r >= 0 && std::uint32_t(r) != job.dst_size) r = kErrSizeMismatch;
      status[job.status] = r < 0 ? r : kKernelOk;
    }
    __syncwarp();
  }
}

// One thread block per Blosc block; every thread gathers whole output bytes.
__global__ void unshuffle_kernel(const UnshuffleJob* jobs, std::uint32_t n) {
  for (std::uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    const UnshuffleJob job = jobs[j];
    if (job.bitshuffle) {
      bit_unshuffle(job.src, job.dst, job.typesize, job.size, threadIdx.x, blockDim.x);
    } else {
      byte_unshuffle(job.src, job.dst, job.typesize, job.size, threadIdx.x, blockDim.x);
    }
  }
}

__global__ void check_sizes_kernel(const std::size_t* actual, const std::size_t* expected,
                                   int* status, std::uint32_t n) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (status[i] == 0 && actual[i] != expected[i]) status[i] = kErrSizeMismatch;
}

constexpr unsigned kChecksumThreads = 256;

// One block per stream: thread t sums part t of the decoded bytes (checksum.h: part_bounds),
// thread 0 combines the parts in order and compares with the trailer.
__global__ void verify_checksums_kernel(const ChecksumJob* jobs, std::uint32_t n, int* status) {
  __shared__ std::uint32_t table[256];
  __shared__ std::uint32_t sums[kChecksumThreads], weighted[kChecksumThreads];
  const unsigned t = threadIdx.x;
  table[t] = crc32_table_entry(t);
  __syncthreads();
  for (std::uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    const ChecksumJob job = jobs[j];
    const bool adler = job.kind == kChecksumAdler32;
    std::uint64_t begin, end;
    part_bounds(job.size, kChecksumThreads, t, &begin, &end);
    if (adler) {
      const AdlerPart p = adler32_part(job.data + begin, end - begin);
      sums[t] = p.sum;
      weighted[t] = p.weighted;
    } else {
      sums[t] = crc32_update(0, job.data + begin, end - begin, table);
    }
    __syncthreads();
    if (t == 0) {
      const std::uint32_t value = adler
                                      ? adler32_of_parts(job.size, kChecksumThreads, sums, weighted)
                                      : crc32_of_parts(job.size, kChecksumThreads, sums);
      const std::uint32_t stored = adler ? load_be32(job.trailer) : load_le32(job.trailer);
      if (value != stored && status[job.status] == kKernelOk) status[job.status] = kErrChecksum;
    }
    __syncthreads();
  }
}

}  // namespace

cudaError_t launch_decode_streams(const StreamJob* d_jobs, std::uint32_t n, int* d_status,
                                  cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr unsigned kThreads = 128;  // 4 warps
  decode_streams_kernel<<<grid_for(n, kThreads / kWarp), kThreads, 0, stream>>>(d_jobs, n,
                                                                                d_status);
  return cudaGetLastError();
}

cudaError_t launch_unshuffle(const UnshuffleJob* d_jobs, std::uint32_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  unshuffle_kernel<<<grid_for(n, 1), 256, 0, stream>>>(d_jobs, n);
  return cudaGetLastError();
}

cudaError_t launch_check_sizes(const std::size_t* d_actual, const std::size_t* d_expected,
                               int* d_status, std::uint32_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  check_sizes_kernel<<<grid_for(n, 256), 256, 0, stream>>>(d_actual, d_expected, d_status, n);
  return cudaGetLastError();
}

cudaError_t launch_verify_checksums(const ChecksumJob* d_jobs, std::uint32_t n, int* d_status,
                                    cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  verify_checksums_kernel<<<grid_for(n, 1), kChecksumThreads, 0, stream>>>(d_jobs, n, d_status);
  return cudaGetLastError();
}

}  // namespace zarrflow::gpu
