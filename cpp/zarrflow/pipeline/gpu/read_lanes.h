// The streams one GPU read spreads its pieces over (read_op.h), lent by its DeviceReader.
//
// Consecutive pieces go to different streams so that one piece's copy to the GPU overlaps the
// previous piece's decoding (reads nvCOMP decodes keep one stream: ReadOp::take_lanes). A
// DeviceReader serves several threads at once (the loader's workers), so its streams are lent per
// read and kept for the next one, per device and priority (a read's streams take the priority of
// the caller's stream). Thread-safety: StreamLender is thread-safe; a ReadLanes belongs to one
// read.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "zarrflow/core/gpu/device_memory.h"

namespace zarrflow::gpu {

// Streams a read spreads its pieces over unless told otherwise (DeviceReader::set_streams):
// with n ≥ 2, n - 1 pieces are in flight while the host fills the
// next; with 1, one piece is in flight and the next queues behind it on the same stream (copies
// up wait for the previous piece's decoding). Each lane holds a piece's buffers.
// docs/settings.md has the measurements behind the default.
inline constexpr int kDefaultReadStreams = 3;
inline constexpr int kMaxReadStreams = 16;

class StreamLender;

// `count` streams lent to one read; given back when it ends. The read must have finished (or
// synchronised) the work it queued on them before that.
class ReadLanes {
 public:
  ReadLanes() = default;
  ReadLanes(ReadLanes&& o) noexcept;
  ReadLanes& operator=(ReadLanes&& o) noexcept;
  ReadLanes(const ReadLanes&) = delete;
  ReadLanes& operator=(const ReadLanes&) = delete;
  ~ReadLanes();

  [[nodiscard]] std::size_t size() const { return streams_.size(); }
  [[nodiscard]] cudaStream_t operator[](std::size_t i) const { return streams_[i].get(); }
  // Blocks until every lane has run what was queued on it (a read that failed part-way).
  void synchronize() const;

 private:
  friend class StreamLender;
  StreamLender* lender_ = nullptr;
  std::pair<int, int> key_{};  // device, priority
  std::vector<Stream> streams_;
};

class StreamLender {
 public:
  // `count` (≥ 1) streams on the current device, at the priority of `caller`, each waiting for
  // what `caller` had queued so far (the destination may still be written there).
  Result<ReadLanes> lend(std::size_t count, cudaStream_t caller);
  // Whether every stream not lent out has run all its work (for tests: a read that returned,
  // even with an error, left nothing running on them).
  [[nodiscard]] bool idle();

 private:
  friend class ReadLanes;
  void take_back(std::pair<int, int> key, std::vector<Stream> streams);

  std::mutex mu_;
  std::map<std::pair<int, int>, std::vector<Stream>> idle_;
};

}  // namespace zarrflow::gpu
