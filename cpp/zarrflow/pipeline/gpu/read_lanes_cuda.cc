// StreamLender and ReadLanes (read_lanes.h).
#include "zarrflow/pipeline/gpu/read_lanes.h"

namespace zarrflow::gpu {

ReadLanes::ReadLanes(ReadLanes&& o) noexcept
    : lender_(std::exchange(o.lender_, nullptr)), key_(o.key_), streams_(std::move(o.streams_)) {}

ReadLanes& ReadLanes::operator=(ReadLanes&& o) noexcept {
  std::swap(lender_, o.lender_);
  std::swap(key_, o.key_);
  std::swap(streams_, o.streams_);
  return *this;
}

ReadLanes::~ReadLanes() {
  if (lender_ != nullptr && !streams_.empty()) lender_->take_back(key_, std::move(streams_));
}

void ReadLanes::synchronize() const {
  for (const Stream& s : streams_)
    if (cudaStreamSynchronize(s.get()) != cudaSuccess) cudaGetLastError();
}

Result<ReadLanes> StreamLender::lend(std::size_t count, cudaStream_t caller) {
  int device = 0, priority = 0;
  ZF_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  ZF_CUDA_RETURN_IF_ERROR(cudaStreamGetPriority(caller, &priority));
  ReadLanes lanes;
  lanes.lender_ = this;
  lanes.key_ = {device, priority};
  {
    std::lock_guard lock(mu_);
    auto& idle = idle_[lanes.key_];
    while (!idle.empty() && lanes.streams_.size() < count) {
      lanes.streams_.push_back(std::move(idle.back()));
      idle.pop_back();
    }
  }
  while (lanes.streams_.size() < count) {
    ZF_ASSIGN_OR_RETURN(Stream s, Stream::create(priority));
    lanes.streams_.push_back(std::move(s));
  }
  // The lanes start where the caller's stream is now.
  ZF_ASSIGN_OR_RETURN(Event start, Event::create());
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), caller));
  for (const Stream& s : lanes.streams_)
    ZF_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s.get(), start.get(), 0));
  return lanes;
}

bool StreamLender::idle() {
  std::lock_guard lock(mu_);
  for (const auto& [key, streams] : idle_)
    for (const Stream& s : streams)
      if (cudaStreamQuery(s.get()) != cudaSuccess) return false;
  return true;
}

void StreamLender::take_back(std::pair<int, int> key, std::vector<Stream> streams) {
  std::lock_guard lock(mu_);
  auto& idle = idle_[key];
  for (Stream& s : streams) idle.push_back(std::move(s));
}

}  // namespace zarrflow::gpu
