#include "zarrflow/pipeline/gpu/device_batch.h"

#include <algorithm>

namespace zarrflow::gpu {

Status read_batch_on_device(DeviceReader& reader, const BatchRequests& batch,
                            DeviceReadOptions options, int device, DeviceReadReport* report) {
  if (!(options.host_share >= 0.0 && options.host_share <= 1.0))
    return invalid_argument("host_share must be in [0, 1]");
  ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  options.transforms = batch.transforms;
  return reader.read_many(batch.requests, options, report);
}

DeviceBatchMaker::DeviceBatchMaker(BatchRecipe recipe, std::shared_ptr<DeviceReader> reader,
                                   const DeviceReadOptions& options,
                                   const DeviceBatchSettings& settings)
    : recipe_(std::move(recipe)),
      reader_(std::move(reader)),
      options_(options),
      settings_(settings),
      streams_(std::size_t(std::max(settings.workers, 0))) {}

std::size_t DeviceBatchMaker::pool_allocations() const {
  return reader_->device_pool().allocations() + reader_->pinned_pool().allocations();
}

Result<MadeBatch> DeviceBatchMaker::make(const BatchJob& job, int worker, double host_share) {
  if (worker < 0 || std::size_t(worker) >= streams_.size())
    return invalid_argument("device batch: no worker " + std::to_string(worker));
  ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(settings_.device));
  Stream& stream = streams_[std::size_t(worker)];
  if (stream.get() == nullptr) {
    int priority = 0;
    if (settings_.high_priority) {
      ZF_ASSIGN_OR_RETURN(priority, Stream::highest_priority());
    }
    ZF_ASSIGN_OR_RETURN(stream, Stream::create(priority));
  }
  // A batch made while the pools grew waited for the driver (pinned pages mapped and
  // registered, cudaMalloc), so its time says nothing about how fast the host threads decode.
  const std::size_t allocations = settings_.watch_pools ? pool_allocations() : 0;
  ZF_ASSIGN_OR_RETURN(GpuBuffer buffer, reader_->device_pool().acquire_waiting(
                                            batch_bytes(recipe_, job), kLimitWaitMs));
  auto memory = std::make_shared<DeviceBatchMemory>(DeviceBatchMemory{reader_, std::move(buffer)});
  MadeBatch out;
  out.data = memory->buffer.data();
  out.memory = memory;
  out.shape = batch_shape(recipe_, job);
  out.dtype = recipe_.dtype;
  out.device = settings_.device;
  ZF_ASSIGN_OR_RETURN(PlannedBatch planned,
                      PlannedBatch::create(recipe_, job, static_cast<std::byte*>(out.data)));
  DeviceReadOptions options = options_;
  options.stream = stream.get();
  options.host_share = host_share;
  ZF_RETURN_IF_ERROR(
      read_batch_on_device(*reader_, planned.requests(), options, settings_.device, &out.report));
  out.read_end = BatchEngine::clock();
  ZF_RETURN_IF_ERROR(check_missing(recipe_, job, out.report));
  out.pools_grew = settings_.watch_pools && pool_allocations() != allocations;
  return out;
}

}  // namespace zarrflow::gpu
