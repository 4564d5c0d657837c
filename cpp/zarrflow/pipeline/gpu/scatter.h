// The scatter kernel of the GPU read path (CUDA builds only): decoded chunks into their
// destinations and fill values into the blocks of missing chunks, many jobs (scatter_job.h) in
// one launch; CF-decoded, normalised and cast on the way for training batches.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "zarrflow/pipeline/gpu/scatter_job.h"

namespace zarrflow::gpu {

// `d_tile_starts[i]` is the first tile of job i (tiles of kScatterTile elements), n + 1 entries.
// `d_nans` (device, may be null when no job transforms) is incremented by the number of NaN
// source elements of the transforming jobs.
cudaError_t launch_scatter(const ScatterJob* d_jobs, std::uint32_t n,
                           const std::int64_t* d_tile_starts, std::int64_t total_tiles,
                           unsigned long long* d_nans, cudaStream_t stream);

}  // namespace zarrflow::gpu
