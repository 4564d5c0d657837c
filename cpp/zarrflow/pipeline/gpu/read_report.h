// What a GPU read did (DeviceReader::read_many), and what the loader records of every batch
// (host batches fill the counters the host path has). Plain data: it builds without CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zarrflow::gpu {

struct DeviceReadReport {
  std::int64_t chunks = 0;   // leaf chunks (inner chunks of shards count one each)
  std::int64_t missing = 0;  // filled with the fill value
  std::int64_t gpu_decoded = 0;
  std::int64_t cpu_decoded = 0;      // decoded on the CPU, then copied up
  std::int64_t deduplicated = 0;     // chunks several requests shared: fetched and decoded once
  std::int64_t cache_hits = 0;       // chunks taken from the GPU chunk cache (no read, no copy)
  std::int64_t host_cache_hits = 0;  // chunks taken from the pinned host cache (no read)
  std::uint64_t stored_bytes = 0;    // compressed bytes read
  std::uint64_t h2d_bytes = 0;       // bytes copied host → device
  std::uint64_t h2d_while_read = 0;  // of those, copied while their piece was still being read:
                                     // compressed chunks into device staging (StagedUploads),
                                     // uncompressed whole chunks into their destination
  std::int64_t direct_reads = 0;     // chunks read with O_DIRECT (they were not in the page cache)
  std::string io;                    // "pread → pinned → H2D" or "cuFile (...)"
  // GPU time by stage, summed over batches (CUDA events on the stream): copies up (those not
  // made while the batch was read), decoding (nvCOMP and zarrflow's kernels), scatter/fill into
  // the destination.
  double h2d_ms = 0, decode_ms = 0, scatter_ms = 0;
  // The pipeline of internal batches: how many, how long the stream sat idle between one
  // batch's end and the next one's start (waiting for the host), and the host's wall time in
  // fetch (reads, validation, host decoding), enqueue (tables, launches) and waiting for the GPU.
  std::int64_t batches = 0;
  std::uint64_t max_batch_decoded = 0;  // decoded bytes of chunks in the largest of them
  double gpu_idle_ms = 0, fetch_ms = 0, enqueue_ms = 0, wait_ms = 0;
  // Host wall time before the first piece: chunks and shard indexes → leaf chunks, duplicates,
  // cache lookups, sizes. The GPU has nothing of this read to do meanwhile.
  double plan_ms = 0;
  double limit_wait_ms = 0;           // waits for memory other reads held under the pool's limit
  std::uint64_t nans = 0;             // NaN elements read by requests with an ElementTransform
  std::int64_t host_transformed = 0;  // blocks of those normalised and cast by the host threads
  std::vector<std::string> notes;     // why chunks fell back to the CPU (each reason once)
};

}  // namespace zarrflow::gpu
