// The GPU zstd decoder's kernels (zstd_frame.h, zstd_block.h, zstd_execute.h): four launches on
// one stream, each over all frames of the call:
//   plan     one thread a frame: the walk of its headers
//   blocks   warps a frame, four lanes a compressed block: literals and sequences
//   execute  one thread block a frame: the sequences, a window of 256 at a time
//   checksum one warp a frame that stores one: XXH64 of the output against it
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
constexpr unsigned kGroupLanes = 4;                // lanes decoding one block (its Huffman streams)
constexpr unsigned kGroups = kWarp / kGroupLanes;  // blocks a block-stage warp decodes at once
constexpr unsigned kWindow = 256;  // sequences of an execution window (its threads); 512 was slower
constexpr unsigned kMaxFrameSlots = 512;  // block-stage slots a frame at most
// Bytes a sequence's thread copies alone; a whole warp copies longer sequences (Blosc's shuffled
// blocks have runs of kilobytes, which one thread would copy while the window waits).
constexpr std::uint32_t kLongCopy = 64;

__global__ void zstd_plan_kernel(ZstdFrameJob* jobs, std::uint32_t n, int* status) {
  for (std::uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n;
       j += gridDim.x * blockDim.x) {
    ZstdFrameJob& job = jobs[j];
    const int r =
        plan_zstd_frame(job.src, job.src_size, job.dst_size, job.room, job.blocks, &job.frame);
    status[job.status] = r < 0 ? r : kKernelOk;
  }
}

// A barrier of the four lanes that decode one block.
struct GroupSync {
  unsigned mask;
  __device__ void operator()() const { __syncwarp(mask); }
};

// One warp takes kGroups blocks at once, four lanes each: a block's Huffman streams decode on its
// four lanes, its sequences on the first. The blocks' decoders are serial; running eight in a
// warp is what keeps the SMs' issue slots from going to idle lanes. Group slots are numbered
// over all frames, `per_frame` to a frame (its expected block count); a slot takes its frame's
// blocks slot, slot + per_frame, ... so small frames (Blosc's) fill the warps too.
__global__ void __launch_bounds__(kWarp)
    zstd_blocks_kernel(const ZstdFrameJob* jobs, std::uint32_t n, std::uint32_t per_frame,
                       int* status) {
  __shared__ ZstdBlockTables tables[kGroups];
  __shared__ int shared[kGroups];
  const unsigned lane = threadIdx.x % kWarp, group = lane / kGroupLanes;
  const unsigned glane = lane % kGroupLanes;
  const GroupSync sync{0xFu << (group * kGroupLanes)};
  const std::uint64_t slots = std::uint64_t(n) * per_frame;
  for (std::uint64_t slot = std::uint64_t(blockIdx.x) * kGroups + group; slot < slots;
       slot += std::uint64_t(gridDim.x) * kGroups) {
    const ZstdFrameJob& job = jobs[slot / per_frame];
    // Another group may fail the frame meanwhile: the group's lanes go by one reading.
    if (__shfl_sync(sync.mask, status[job.status], int(group * kGroupLanes)) != kKernelOk) continue;
    const std::uint32_t nblocks = job.frame.blocks;
    for (std::uint32_t b = std::uint32_t(slot % per_frame); b < nblocks; b += per_frame) {
      ZstdBlockPlan& plan = job.blocks[b];
      if (plan.type != kZstdCompressed) continue;
      int r = decode_zstd_literals(job.src, plan, job.literals + plan.lit_out, tables[group],
                                   &shared[group], int(glane), kGroupLanes, sync);
      if (r == 0 && glane == 0)
        r = decode_zstd_sequences(job.src, plan, job.frame.block_max, tables[group],
                                  job.sequences + plan.seq_out);
      if (r < 0 && glane == 0) status[job.status] = r;
      sync();
    }
  }
}

// The window's matches that read its own bytes, in order, by one warp: a round runs, one lane
// each, every match of a chunk of 32 whose source no earlier match still to run writes.
__device__ void run_dependent_matches(const ZstdTask* tasks, const unsigned* order, unsigned count,
                                      std::uint8_t* dst, unsigned lane) {
  for (unsigned c = 0; c < count; c += kWarp) {
    const unsigned n = count - c < kWarp ? count - c : kWarp;
    ZstdTask t{};
    if (lane < n) t = tasks[order[c + lane]];
    const std::uint32_t p = t.out + t.ll;
    const std::uint32_t src = p - t.off, reach = t.off < t.ml ? t.off : t.ml;
    unsigned done = n == kWarp ? 0u : ~0u << n;  // lanes without a match count as done
    while (done != 0xFFFFFFFFu) {
      bool blocked = false;
      for (unsigned j = 0; j + 1 < n; ++j) {  // earlier matches not yet run that write our source
        const std::uint32_t pj = __shfl_sync(0xFFFFFFFFu, p, j);
        const std::uint32_t mj = __shfl_sync(0xFFFFFFFFu, t.ml, j);
        if (j < lane && !(done >> j & 1) && pj < src + reach && src < pj + mj) blocked = true;
      }
      const bool ready = lane < n && !(done >> lane & 1) && !blocked;
      const bool alone = ready && t.ml <= kLongCopy;
      if (alone) copy_run(dst + (p - t.off), dst + p, t.ml, t.off);
      for (unsigned m = __ballot_sync(0xFFFFFFFFu, ready && !alone); m != 0; m &= m - 1) {
        const int l = __ffs(int(m)) - 1;  // a long match: the warp copies it
        const std::uint32_t lp = __shfl_sync(0xFFFFFFFFu, p, l);
        const std::uint32_t loff = __shfl_sync(0xFFFFFFFFu, t.off, l);
        const std::uint32_t lml = __shfl_sync(0xFFFFFFFFu, t.ml, l);
        lane_copy_run(dst + (lp - loff), dst + lp, lml, loff, int(lane), kWarp);
      }
      done |= __ballot_sync(0xFFFFFFFFu, ready);
      __syncwarp();
    }
  }
}

// The window's tasks whose bits are set in masks[] (a warp's each), in order, into
// order[0, *count), by one warp.
__device__ void list_tasks(const unsigned* masks, unsigned* order, unsigned* count, unsigned lane) {
  unsigned n = 0;
  for (unsigned k = 0; k < kWindow / kWarp; ++k) {
    const unsigned m = masks[k];
    if (m >> lane & 1) order[n + __popc(m & ((1u << lane) - 1))] = k * kWarp + lane;
    n += __popc(m);
  }
  if (lane == 0) *count = n;
  __syncwarp();
}

// A long sequence, by a whole warp: its literals, then its match when `with_match`.
__device__ void warp_run_sequence(const ZstdTask& t, const std::uint8_t* lit, std::uint8_t* dst,
                                  bool with_match, unsigned lane) {
  lane_copy_run(lit + t.lit, dst + t.out, t.ll, 0xFFFFFFFFu, int(lane), kWarp);
  if (!with_match) return;
  __syncwarp();  // the match may read the literals
  const std::uint32_t p = t.out + t.ll;
  lane_copy_run(dst + (p - t.off), dst + p, t.ml, t.off, int(lane), kWarp);
}

// The sequences of compressed block `b` of `job`, window by window. False (with *error set)
// when an offset reaches before the frame's start.
__device__ bool execute_block(const ZstdFrameJob& job, const ZstdBlockPlan& b, int* error) {
  using Scan = cub::BlockScan<std::uint64_t, kWindow>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ ZstdTask tasks[kWindow];
  __shared__ unsigned order[kWindow], listed;
  __shared__ unsigned dependent[kWindow / kWarp], long_tasks[kWindow / kWarp];
  const unsigned t = threadIdx.x, warp = t / kWarp, lane = t % kWarp;
  const std::uint8_t* lit = job.literals + b.lit_out;
  const std::uint64_t* seq = job.sequences + b.seq_out;
  std::uint8_t* dst = job.dst;
  std::uint32_t out = b.out_pos, at = 0;
  std::uint64_t s = t < b.nseq ? seq[t] : 0;
  for (std::uint32_t w = 0; w < b.nseq; w += kWindow) {
    const bool has = w + t < b.nseq;
    const std::uint32_t ll = sequence_ll(s), ml = sequence_ml(s);
    const std::uint32_t off = has ? OffsetRef::resolve(sequence_off(s), b.in_history) : 1;
    // The next window's sequence, loaded while this one runs.
    s = w + kWindow + t < b.nseq ? seq[w + kWindow + t] : 0;
    // Low half: literal bytes before this sequence; high half: output bytes before it.
    std::uint64_t before, total;
    Scan(scan).ExclusiveSum((std::uint64_t(ll + ml) << 32) | ll, before, total);
    const ZstdTask task{out + std::uint32_t(before >> 32), at + std::uint32_t(before), ll, ml, off};
    if (__syncthreads_or(has && !valid_offset(task))) {
      *error = kDecodeOffsetBeforeStart;
      return false;
    }
    const bool now = has && independent_match(task, out);
    const bool long_task = has && task.ll + (now ? task.ml : 0) > kLongCopy;
    if (has && !long_task) run_sequence(task, lit, dst, now);
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, has && !now);
    const unsigned longs = __ballot_sync(0xFFFFFFFFu, long_task);
    if (lane == 0) {
      dependent[warp] = mask;
      long_tasks[warp] = longs;
    }
    tasks[t] = task;
    if (__syncthreads_or(long_task)) {  // the long sequences, one a warp in turn
      if (warp == 0) list_tasks(long_tasks, order, &listed, lane);
      __syncthreads();
      for (unsigned i = warp; i < listed; i += kWindow / kWarp) {
        const ZstdTask& lt = tasks[order[i]];
        warp_run_sequence(lt, lit, dst, independent_match(lt, out), lane);
      }
      __syncthreads();
    }
    if (warp == 0) {  // the matches that read this window's bytes
      list_tasks(dependent, order, &listed, lane);
      run_dependent_matches(tasks, order, listed, dst, lane);
    }
    __syncthreads();
    out += std::uint32_t(total >> 32);
    at += std::uint32_t(total);
  }
  const ZstdTask rest{out, at, b.lit_size - at, 0, 1};
  copy_literals(rest, lit, dst, int(t), kWindow);
  return true;
}

__global__ void __launch_bounds__(kWindow, 4)
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
        lane_copy(job.src + b.src, job.dst + b.out_pos, b.size, int(t), kWindow);
      } else if (b.type == kZstdRle) {
        lane_fill(job.dst + b.out_pos, job.src[b.src], b.size, int(t), kWindow);
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

constexpr unsigned kHashWarps = 4;    // warps of a checksum thread block, one a frame
constexpr unsigned kHashTile = 2048;  // output bytes a checksum warp loads at once
constexpr unsigned kHashLoads = kHashTile / sizeof(uint4) / kWarp;  // 16-byte loads a lane

// One warp a frame: every lane loads the output a tile at a time (coalesced, the next tile in
// flight while this one is hashed) into shared memory, lanes 0-3 run XXH64's accumulators over
// it, lane 0 the rest. With only the four accumulator lanes loading, too few bytes were in
// flight and the hash waited on memory.
__global__ void __launch_bounds__(kHashWarps* kWarp)
    zstd_checksum_kernel(const ZstdFrameJob* jobs, std::uint32_t n, int* status) {
  __shared__ uint4 tiles[kHashWarps][kHashTile / sizeof(uint4)];
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  uint4* tile = tiles[warp];
  const auto* words = reinterpret_cast<const std::uint64_t*>(tile);
  constexpr std::uint64_t kTileStripes = kHashTile / 32;
  const std::uint64_t warps = std::uint64_t(gridDim.x) * kHashWarps;
  for (std::uint64_t j = std::uint64_t(blockIdx.x) * kHashWarps + warp; j < n; j += warps) {
    const ZstdFrameJob& job = jobs[j];
    if (!job.frame.has_checksum || status[job.status] != kKernelOk) continue;  // warp-uniform
    const std::uint64_t stripes = job.dst_size / 32;
    std::uint64_t acc = xxh64_start(int(lane % 4)), done = 0;
    if ((reinterpret_cast<std::uintptr_t>(job.dst) & 15) == 0) {
      const auto* src = reinterpret_cast<const uint4*>(job.dst);
      const std::uint64_t ntiles = stripes / kTileStripes;
      uint4 next[kHashLoads];
      const auto load = [&](std::uint64_t t) {
#pragma unroll
        for (unsigned m = 0; m < kHashLoads; ++m)
          next[m] = __ldg(src + t * (kHashTile / sizeof(uint4)) + m * kWarp + lane);
      };
      if (ntiles > 0) load(0);
      for (std::uint64_t t = 0; t < ntiles; ++t) {
#pragma unroll
        for (unsigned m = 0; m < kHashLoads; ++m) tile[m * kWarp + lane] = next[m];
        __syncwarp();
        if (t + 1 < ntiles) load(t + 1);
        if (lane < 4)
          for (unsigned s = 0; s < kTileStripes; ++s) acc = xxh::round(acc, words[4 * s + lane]);
        __syncwarp();  // the tile is read before the next is stored
      }
      done = ntiles * kTileStripes;
    }
    if (lane < 4) acc = xxh64_stripes(acc, job.dst, done, stripes, int(lane));
    std::uint64_t all[4];
    for (int k = 0; k < 4; ++k) all[k] = __shfl_sync(0xFFFFFFFFu, acc, k);
    if (lane == 0 && std::uint32_t(xxh64_finish(all, job.dst, job.dst_size)) != job.frame.checksum)
      status[job.status] = kErrChecksum;
  }
}

}  // namespace

std::size_t zstd_launch_memory() {
  int device = 0, sms = 0, threads = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device) !=
          cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  std::size_t most = 0;
  for (const void* k : {reinterpret_cast<const void*>(zstd_plan_kernel),
                        reinterpret_cast<const void*>(zstd_blocks_kernel),
                        reinterpret_cast<const void*>(zstd_execute_kernel),
                        reinterpret_cast<const void*>(zstd_checksum_kernel)}) {
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, k) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    most = std::max(most, a.localSizeBytes);
  }
  return most * std::size_t(threads) * std::size_t(sms);
}

cudaError_t launch_zstd_decode(ZstdFrameJob* d_jobs, std::uint32_t n, std::uint64_t max_dst,
                               int* d_status, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  zstd_plan_kernel<<<grid_for(n, 128), 128, 0, stream>>>(d_jobs, n, d_status);
  // Block slots: as many a frame as its largest has 128 KiB blocks.
  const std::uint64_t per_frame = std::max<std::uint64_t>(
      1, std::min<std::uint64_t>((max_dst + kZstdMaxBlock - 1) / kZstdMaxBlock, kMaxFrameSlots));
  const std::uint64_t ctas = (std::uint64_t(n) * per_frame + kGroups - 1) / kGroups;
  zstd_blocks_kernel<<<unsigned(std::min<std::uint64_t>(ctas, 1u << 24)), kWarp, 0, stream>>>(
      d_jobs, n, std::uint32_t(per_frame), d_status);
  zstd_execute_kernel<<<std::min<std::uint32_t>(n, 1u << 20), kWindow, 0, stream>>>(d_jobs, n,
                                                                                    d_status);
  zstd_checksum_kernel<<<grid_for(n, kHashWarps), kHashWarps * kWarp, 0, stream>>>(d_jobs, n,
                                                                                   d_status);
  return cudaGetLastError();
}

}  // namespace zarrflow::gpu
