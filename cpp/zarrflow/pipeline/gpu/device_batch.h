// The loader's batches in GPU memory (CUDA builds only): a batch's requests read by the
// DeviceReader, and the batch maker the GPU loader's workers use.
#pragma once

#include <memory>
#include <vector>

#include "zarrflow/pipeline/batch_engine.h"
#include "zarrflow/pipeline/batch_recipe.h"
#include "zarrflow/pipeline/gpu/device_reader.h"

namespace zarrflow::gpu {

// Reads `batch` (device destinations) with `reader` on `options.stream` of `device` (made
// current), its transforms replacing options.transforms. Returns once the batch is in memory.
Status read_batch_on_device(DeviceReader& reader, const BatchRequests& batch,
                            DeviceReadOptions options, int device, DeviceReadReport* report);

// A batch's memory: a block of `reader`'s device pool, which outlives it.
struct DeviceBatchMemory {
  std::shared_ptr<DeviceReader> reader;
  GpuBuffer buffer;
};

// Where and how a DeviceBatchMaker makes its batches.
struct DeviceBatchSettings {
  int device = 0;
  int workers = 1;  // one CUDA stream each
  // Report whether zarrflow's pools allocated while a batch was made (such a batch waited for
  // the driver, so its time says nothing about decoding).
  bool watch_pools = false;
  // The workers' streams (and the read lanes, which take their priority) at the device's
  // highest priority, so that the decode kernels of a batch are scheduled ahead of the queued
  // kernels of a model on the default priority.
  bool high_priority = false;
};

// Each batch in a new block of the reader's device pool (waiting, bounded, for memory other
// reads give back under zarrflow's limit), read on the worker's own CUDA stream with the host
// share the engine gives. `options` holds everything else of the reads (pools, caches, decode
// mode).
class DeviceBatchMaker : public BatchMaker {
 public:
  DeviceBatchMaker(BatchRecipe recipe, std::shared_ptr<DeviceReader> reader,
                   const DeviceReadOptions& options, const DeviceBatchSettings& settings);
  Result<MadeBatch> make(const BatchJob& job, int worker, double host_share) override;

 private:
  std::size_t pool_allocations() const;

  const BatchRecipe recipe_;
  const std::shared_ptr<DeviceReader> reader_;
  const DeviceReadOptions options_;
  const DeviceBatchSettings settings_;
  std::vector<Stream> streams_;  // one per worker, made by the worker on its first batch
};

}  // namespace zarrflow::gpu
