#include "zarrflow/pipeline/gpu/device_batch.h"

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
                                   const DeviceReadOptions& options, int device, int workers,
                                   bool watch_pools, bool high_priority)
    : recipe_(std::move(recipe)),
      reader_(std::move(reader)),
      options_(options),
      device_(device),
      watch_pools_(watch_pools),
      high_priority_(high_priority),
      streams_(std::size_t(workers)) {}

std::size_t DeviceBatchMaker::pool_allocations() const {
  return reader_->device_pool().allocations() + reader_->pinned_pool().allocations();
}

Result<MadeBatch> DeviceBatchMaker::make(const BatchJob& job, int worker, double host_share) {
  if (worker < 0 || std::size_t(worker) >= streams_.size())
    return invalid_argument("device batch: no worker " + std::to_string(worker));
  ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  Stream& stream = streams_[std::size_t(worker)];
  if (stream.get() == nullptr) {
    int priority = 0;
    if (high_priority_) {
      ZF_ASSIGN_OR_RETURN(priority, Stream::highest_priority());
    }
    ZF_ASSIGN_OR_RETURN(stream, Stream::create(priority));
  }
  // A batch made while the pools grew waited for the driver (pinned pages mapped and
  // registered, cudaMalloc), so its time says nothing about how fast the host threads decode.
  const std::size_t allocations = watch_pools_ ? pool_allocations() : 0;
  ZF_ASSIGN_OR_RETURN(GpuBuffer buffer, reader_->device_pool().acquire_waiting(
                                            batch_bytes(recipe_, job), kLimitWaitMs));
  auto memory = std::make_shared<DeviceBatchMemory>(DeviceBatchMemory{reader_, std::move(buffer)});
  MadeBatch out;
  out.data = memory->buffer.data();
  out.memory = memory;
  out.shape = batch_shape(recipe_, job);
  out.dtype = recipe_.dtype;
  out.device = device_;
  ZF_ASSIGN_OR_RETURN(PlannedBatch planned,
                      PlannedBatch::create(recipe_, job, static_cast<std::byte*>(out.data)));
  DeviceReadOptions options = options_;
  options.stream = stream.get();
  options.host_share = host_share;
  ZF_RETURN_IF_ERROR(
      read_batch_on_device(*reader_, planned.requests(), options, device_, &out.report));
  out.read_end = BatchEngine::clock();
  ZF_RETURN_IF_ERROR(check_missing(recipe_, job, out.report));
  out.pools_grew = watch_pools_ && pool_allocations() != allocations;
  return out;
}

}  // namespace zarrflow::gpu
