// The GPU zstd decoder's kernels (zstd_frame.h, zstd_block.h, zstd_execute.h): four launches on
// one stream, each over all frames of the call:
//   plan     one thread a frame: the walk of its headers
//   blocks   a group of warps a frame, one warp a compressed block: literals and sequences
//   execute  one thread block a frame: the sequences, a window of 256 at a time
//   checksum one thread a frame that stores one: XXH64 of the output against it
// A frame whose status slot is set by one stage is skipped by the next; the read path then
// decodes it on the host (read_op_cuda.cc), which names what is wrong or recovers the data.
#include <cub/block/block_scan.cuh>

#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/codec/gpu/zstd_block.h"
#include "zarrflow/codec/gpu/zstd_execute.h"
#include "zarrflow/codec/gpu/zstd_frame.h"

namespace zarrflow::gpu {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kBlockWarps = 4;        // warps of a block-stage thread block
constexpr unsigned kWindow = 256;          // sequences of an execution window (its threads)
constexpr unsigned kMaxBlockGroups = 64;   // block-stage thread blocks a frame at most

__global__ void zstd_plan_kernel(ZstdFrameJob* jobs, std::uint32_t n, int* status) {
  for (std::uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
    ZstdFrameJob& job = jobs[j];
    const int r = plan_zstd_frame(job.src, job.src_size, job.dst_size, job.room, job.blocks,
                                  &job.frame);
    status[job.status] = r < 0 ? r : kKernelOk;
  }
}

__global__ void __launch_bounds__(kBlockWarps * kWarp)
    zstd_blocks_kernel(const ZstdFrameJob* jobs, std::uint32_t n, int* status) {
  __shared__ ZstdBlockTables tables[kBlockWarps];
  __shared__ int shared[kBlockWarps];
  const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (std::uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    const ZstdFrameJob& job = jobs[j];
    if (status[job.status] != kKernelOk) continue;
    const std::uint32_t nblocks = job.frame.blocks;
    for (std::uint32_t b = blockIdx.y * kBlockWarps + warp; b < nblocks;
         b += gridDim.y * kBlockWarps) {
      ZstdBlockPlan& plan = job.blocks[b];
      if (plan.type != kZstdCompressed) continue;
      int r = decode_zstd_literals(job.src, plan, job.literals + plan.lit_out, tables[warp],
                                   &shared[warp], int(lane), kWarp, WarpSync{});
      if (r == 0 && lane == 0)
        r = decode_zstd_sequences(job.src, plan, job.frame.block_max, tables[warp],
                                  job.sequences + plan.seq_out);
      if (r < 0 && lane == 0) status[job.status] = r;
      __syncwarp();
    }
  }
}

// The sequences of compressed block `b` of `job`, window by window. False (with *error set)
// when an offset reaches before the frame's start.
__device__ bool execute_block(const ZstdFrameJob& job, const ZstdBlockPlan& b, int* error) {
  using Scan = cub::BlockScan<std::uint64_t, kWindow>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ ZstdTask tasks[kWindow];
  __shared__ unsigned dependent[kWindow / kWarp];
  const unsigned t = threadIdx.x, warp = t / kWarp, lane = t % kWarp;
  const std::uint8_t* lit = job.literals + b.lit_out;
  std::uint8_t* dst = job.dst;
  std::uint32_t out = b.out_pos, at = 0;
  for (std::uint32_t w = 0; w < b.nseq; w += kWindow) {
    const bool has = w + t < b.nseq;
    std::uint32_t ll = 0, ml = 0, off = 1;
    if (has) {
      const std::uint64_t s = job.sequences[b.seq_out + w + t];
      ll = sequence_ll(s);
      ml = sequence_ml(s);
      off = OffsetRef::resolve(sequence_off(s), b.in_history);
    }
    // Low half: literal bytes before this sequence; high half: output bytes before it.
    std::uint64_t before, total;
    Scan(scan).ExclusiveSum((std::uint64_t(ll + ml) << 32) | ll, before, total);
    const ZstdTask task{out + std::uint32_t(before >> 32), at + std::uint32_t(before), ll, ml,
                        off};
    if (__syncthreads_or(has && !valid_offset(task))) {
      *error = kDecodeOffsetBeforeStart;
      return false;
    }
    bool later = false;
    if (has) {
      copy_literals(task, lit, dst, 0, 1);
      if (independent_match(task, out)) {
        copy_match(task, dst, 0, 1);
      } else {
        later = true;
      }
    }
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, later);
    if (lane == 0) dependent[warp] = mask;
    tasks[t] = task;
    __syncthreads();
    if (warp == 0) {  // the matches that read this window's bytes, in order
      for (unsigned k = 0; k < kWindow / kWarp; ++k) {
        for (unsigned m = dependent[k]; m != 0; m &= m - 1) {
          copy_match(tasks[k * kWarp + __ffs(m) - 1], dst, int(lane), kWarp);
          __syncwarp();
        }
      }
    }
    __syncthreads();
    out += std::uint32_t(total >> 32);
    at += std::uint32_t(total);
  }
  const ZstdTask rest{out, at, b.lit_size - at, 0, 1};
  copy_literals(rest, lit, dst, int(t), kWindow);
  return true;
}

__global__ void __launch_bounds__(kWindow)
    zstd_execute_kernel(const ZstdFrameJob* jobs, std::uint32_t n, int* status) {
  __shared__ int error;
  const unsigned t = threadIdx.x;
  for (std::uint32_t j = blockIdx.x; j < n; j += gridDim.x) {
    const ZstdFrameJob& job = jobs[j];
    if (status[job.status] != kKernelOk) continue;  // the same for every thread
    if (t == 0) error = resolve_zstd_blocks(job.blocks, job.frame.blocks, job.dst_size);
    __syncthreads();
    for (std::uint32_t i = 0; error == 0 && i < job.frame.blocks; ++i) {
      const ZstdBlockPlan& b = job.blocks[i];
      if (b.type == kZstdRaw) {
        for (std::uint32_t k = t; k < b.size; k += kWindow) job.dst[b.out_pos + k] = job.src[b.src + k];
      } else if (b.type == kZstdRle) {
        const std::uint8_t v = job.src[b.src];
        for (std::uint32_t k = t; k < b.size; k += kWindow) job.dst[b.out_pos + k] = v;
      } else {
        int e = 0;
        if (!execute_block(job, b, &e) && t == 0) error = e;
      }
      __syncthreads();  // the next block reads this one's bytes; `error` is settled
    }
    if (t == 0 && error != 0) status[job.status] = error;
    __syncthreads();
  }
}

__global__ void zstd_checksum_kernel(const ZstdFrameJob* jobs, std::uint32_t n, int* status) {
  for (std::uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
    const ZstdFrameJob& job = jobs[j];
    if (!job.frame.has_checksum || status[job.status] != kKernelOk) continue;
    if (std::uint32_t(xxh64(job.dst, job.dst_size)) != job.frame.checksum)
      status[job.status] = kErrChecksum;
  }
}

}  // namespace

cudaError_t launch_zstd_decode(ZstdFrameJob* d_jobs, std::uint32_t n, std::uint64_t max_dst,
                               int* d_status, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  zstd_plan_kernel<<<grid_for(n, 128), 128, 0, stream>>>(d_jobs, n, d_status);
  // Enough thread blocks a frame for a warp per block of its largest (128 KiB blocks).
  const std::uint64_t blocks = max_dst / kZstdMaxBlock + 1;
  const unsigned groups = unsigned(std::min<std::uint64_t>(
      (blocks + kBlockWarps - 1) / kBlockWarps, kMaxBlockGroups));
  const dim3 grid(std::min<std::uint32_t>(n, 65535u), groups);
  zstd_blocks_kernel<<<grid, kBlockWarps * kWarp, 0, stream>>>(d_jobs, n, d_status);
  zstd_execute_kernel<<<std::min<std::uint32_t>(n, 1u << 20), kWindow, 0, stream>>>(d_jobs, n,
                                                                                    d_status);
  zstd_checksum_kernel<<<grid_for(n, 128), 128, 0, stream>>>(d_jobs, n, d_status);
  return cudaGetLastError();
}

}  // namespace zarrflow::gpu
