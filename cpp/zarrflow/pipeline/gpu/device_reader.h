// Reading Zarr arrays straight into GPU memory (CUDA builds only).
//
// The path of one read (its GPU work on streams lent by the reader, which start where the
// caller's stream is; one synchronisation at the end of each batch to check per-chunk statuses,
// so the data is in place when a read returns):
//   region → chunks (and, for sharded arrays, the inner chunks each shard index points at)
//   → sizes → compressed bytes read by the thread pool into pooled pinned staging
//     (pread; or cuFile into device memory)
//   → host validation of framing and checksums (nvCOMP must never see malformed input)
//   → one host-to-device copy of the compressed bytes (and of the job tables)
//   → batched decoders: nvCOMP zstd and deflate (gzip/zlib), zarrflow's own LZ4 / blosclz /
//     stored-stream kernel (Blosc inner streams and numcodecs LZ4), then Blosc byte/bit un-shuffle
//   → one scatter kernel: decoded chunks into the destination (edge clipping, transpose, byte
//     swap, optionally CF decoding, normalisation and cast: ElementTransform) and fill values
//     for missing chunks. Whole chunks read into a dense native-order destination without a
//     transform are decoded (or copied up) in place and skip the scatter.
// Chunks whose codecs have no GPU decoder (or when gpu_decode is off, or nvCOMP is missing for
// zstd/deflate) are decoded by the CPU path into pinned memory and copied up; the report says
// which and why. A chunk that fails on the GPU is decoded again on the CPU, which either
// produces the error message (naming the array and chunk) or, if the CPU succeeds, the data.
// Batches are pipelined: the CPU reads batch k+1 while the GPU copies and decodes the batches
// before it, consecutive batches on different streams (read_lanes.h).
// Thread-safety: threads may read through one DeviceReader at once (pools and streams are
// shared safely); one DeviceReadReport per read.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zarrflow/codec/shard_indexes.h"
#include "zarrflow/core/gpu/device_memory.h"
#include "zarrflow/pipeline/gpu/batch_layout.h"
#include "zarrflow/pipeline/gpu/chunk_cache.h"
#include "zarrflow/pipeline/gpu/read_lanes.h"
#include "zarrflow/pipeline/gpu/read_plan.h"
#include "zarrflow/pipeline/gpu/read_report.h"
#include "zarrflow/pipeline/transform.h"
#include "zarrflow/zarr/array.h"

namespace zarrflow::gpu {

struct DeviceReadOptions {
  ThreadPool* pool = nullptr;           // file reads (I/O); null = calling thread
  ThreadPool* decode_pool = nullptr;    // host checks and CPU-fallback decodes; null = `pool`
  BufferPool* buffers = nullptr;        // host scratch of CPU-fallback decodes
  GpuDecode decode = GpuDecode::kAuto;  // on: fail instead of falling back to the CPU
  IoPath io = IoPath::kAuto;
  cudaStream_t stream = nullptr;     // the caller's stream (null = the legacy default stream)
  ChunkCache* cache = nullptr;       // optional cache of compressed chunks in GPU memory
  ChunkCache* host_cache = nullptr;  // optional cache of compressed chunks in pinned host memory
  ShardIndexes* shard_indexes = nullptr;  // optional: shard indexes kept across reads
  // Compressed bytes staged per internal batch (piece); 0 = chosen per codec
  // (ReadOp::piece_bounds). An explicit value bounds decoded bytes at twice it. Pieces are split
  // evenly (read_plan.h: PiecePlanner).
  std::uint64_t batch_bytes = 0;
  // Fraction (0..1) of the compressed chunks the GPU could decode that the host threads decode
  // instead (then copy up, like CPU fallbacks). For training, where the model keeps the GPU busy,
  // it moves decoding onto otherwise idle cores and gives the model its SMs back. Uncompressed
  // chunks are not counted: they have nothing to decode and keep their own path.
  double host_share = 0.0;
  // Device memory this read's pieces may hold (a loader worker's share of zarrflow's GPU memory
  // limit beside its batches); 0 = judged from the memory free when the read starts. Sizes the
  // pieces of chunks nvCOMP decodes (read_plan.h: nvcomp_piece_bytes).
  std::uint64_t read_budget = 0;
  // Empty, or one per request: write the element transform's output (pipeline/transform.h: CF
  // decoding of the stored value, then cast((f - mean) * inv_std); kStored = as stored) instead
  // of the elements, NaNs counted in the report. tf.in must be the array's data type. The
  // request's destination strides then count bytes of the output type. Chunks the host threads
  // decoded (or read uncompressed) into a dense destination are converted on the host and
  // copied up at the output size; the rest on the GPU, in the scatter. Same bytes either way
  // (float32 NaNs: the same places, their payloads as transform.h says).
  std::span<const ElementTransform> transforms;
};

// Device memory a read leaves free beside nvCOMP's scratch, for the local memory its kernels
// need when they launch (read_op_enqueue_cuda.cc); with less, the call is decoded in parts.
inline constexpr std::size_t kNvcompLaunchRoom = std::size_t{64} << 20;
// How long a read (its pieces, or a loader's batch) waits for memory under zarrflow's GPU memory
// limit before it fails.
inline constexpr double kLimitWaitMs = 10000;

// A region of an array into device memory (dest points into GPU memory).
using DeviceReadRequest = ReadRequest;

class DeviceReader {
 public:
  DeviceReader();
  ~DeviceReader();
  DeviceReader(const DeviceReader&) = delete;
  DeviceReader& operator=(const DeviceReader&) = delete;

  // Reads `region` of `arr` into device memory `dest` (shape == region.count; byte strides).
  Status read(const Array& arr, const Selection& region, const StridedView& dest,
              const DeviceReadOptions& options, DeviceReadReport* report = nullptr);

  // Many reads in one pipeline: chunks are batched across requests, and a chunk that several
  // requests need is fetched and decoded once.
  Status read_many(std::span<const DeviceReadRequest> requests, const DeviceReadOptions& options,
                   DeviceReadReport* report = nullptr);

  GpuMemoryPool& device_pool() { return device_; }
  GpuMemoryPool& pinned_pool() { return pinned_; }
  StreamLender& stream_lender() { return lanes_; }
  // How many streams each read spreads its pieces over (read_lanes.h; 1 to kMaxReadStreams,
  // default kDefaultReadStreams), as far as its decoders allow (read_plan.h: read_lanes). 1 runs
  // each piece's copies and decoding after the previous piece's.
  Status set_streams(int n);
  [[nodiscard]] int streams() const { return streams_.load(); }

 private:
  GpuMemoryPool pinned_;
  GpuMemoryPool device_;
  StreamLender lanes_;
  std::atomic<int> streams_{kDefaultReadStreams};
};

}  // namespace zarrflow::gpu
