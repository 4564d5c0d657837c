// CUDA runtime helpers shared by the GPU path (CUDA builds only): error conversion, device
// discovery with a reason when there is none, RAII streams/events, and pooled device and pinned
// host memory.
//
// Pools recycle by size class. A buffer goes back to its pool when its owner releases it; the
// GPU path only releases buffers after the stream work that uses them has completed (it waits on
// an event first), so recycling never races with the GPU. Memory handed to other libraries'
// streams (DLPack exports) comes back through `release_after`: it is reused only once those
// streams have passed the point where it was released, as a stream-ordered allocator would.
// The budget of cached bytes matters for speed: memory beyond it is freed, which waits for the
// device or holds other threads' CUDA calls up, and a new pinned allocation of a 2 GB staging
// buffer takes a tenth of a second even with pinned_pages.h (a cudaHostAlloc took most of a
// second and stalled the training thread all along). So the budget follows the peak
// of bytes in use plus one largest buffer (room for a size drifting into the next class): a
// steady working set (a loader's batches and staging) is recycled without ever freeing, as in
// PyTorch's caching allocator; over budget the oldest idle buffers go (AllocationCache).
// `trim` gives the idle memory back. An optional limit bounds what the pool holds, in use and
// idle together (zarrflow.set_gpu_memory_limit: room left for a model next to the loader): idle
// buffers go first, and an acquire that would still pass it fails as out of memory. The limit is
// exact: allocations under it are made one at a time (a cache hit, the steady state, takes no
// lock). Thread-safety: pools are thread-safe; streams and events are owned by one thread at a
// time.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"

namespace zarrflow::gpu {

// kIoError wrapping a CUDA error, naming `what` ("cudaMemcpyAsync of 2 GB").
Status cuda_status(cudaError_t err, std::string_view what);

#define ZF_CUDA_RETURN_IF_ERROR(call)                                                \
  do {                                                                               \
    cudaError_t zf_err_ = (call);                                                    \
    if (zf_err_ != cudaSuccess) return ::zarrflow::gpu::cuda_status(zf_err_, #call); \
  } while (0)

// OK when GPU `device` (-1: the calling thread's current device) can be used: a driver new
// enough for the CUDA runtime zarrflow was built with, and a code image of zarrflow's kernels for
// its architecture (a probe kernel is launched on each device once, at its first check).
// Otherwise why not: no driver, a driver older than the runtime, no GPU, no kernel image.
Status device_available(int device = -1);

// OK when GPU `device` (-1: the current one) exists and the driver is new enough for the CUDA
// runtime: its memory and copies work even where device_available() fails because this build
// has no kernel image for it (no kernel is launched here).
Status device_present(int device = -1);

enum class MemoryKind { kDevice, kPinned };

class GpuMemoryPool;

// Device or pinned host memory; move-only; returns to its pool (if any) when destroyed.
class GpuBuffer {
 public:
  GpuBuffer() = default;
  GpuBuffer(GpuBuffer&& o) noexcept { swap(o); }
  GpuBuffer& operator=(GpuBuffer&& o) noexcept {
    GpuBuffer t(std::move(o));
    swap(t);
    return *this;
  }
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;
  ~GpuBuffer();

  [[nodiscard]] std::byte* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  void swap(GpuBuffer& o) noexcept;

 private:
  friend class GpuMemoryPool;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
  MemoryKind kind_ = MemoryKind::kDevice;
  GpuMemoryPool* pool_ = nullptr;
};

class GpuMemoryPool {
 public:
  GpuMemoryPool(MemoryKind kind, std::size_t max_cached_bytes)
      : kind_(kind), cache_(max_cached_bytes) {}
  ~GpuMemoryPool();
  GpuMemoryPool(const GpuMemoryPool&) = delete;
  GpuMemoryPool& operator=(const GpuMemoryPool&) = delete;

  // At least `size` bytes, 256-byte aligned; the capacity is rounded up to a class (a power of
  // two up to 2 MiB, then steps of max(2 MiB, an eighth of the size's power of two)).
  Result<GpuBuffer> acquire(std::size_t size);
  // acquire, but under a limit it waits up to `wait_ms` for other users to give memory back
  // (their reads' pieces come and go) before it fails; `waited_ms` (optional) gets the wait.
  Result<GpuBuffer> acquire_waiting(std::size_t size, double wait_ms, double* waited_ms = nullptr);
  [[nodiscard]] std::size_t cached_bytes() const { return cache_.cached_bytes(); }
  [[nodiscard]] std::size_t budget() const { return cache_.budget(); }
  [[nodiscard]] std::size_t in_use() const { return in_use_.load(); }
  [[nodiscard]] std::size_t peak_in_use() const { return peak_.load(); }
  // cudaMalloc / pinned-memory allocations and frees so far: a steady workload should make none
  // (each costs milliseconds, and a free waits for the whole device).
  [[nodiscard]] std::size_t allocations() const { return allocations_.load(); }
  [[nodiscard]] std::size_t frees() const { return frees_.load(); }
  // Bytes the pool holds from CUDA (in use and idle together), and the most it ever held: under
  // a limit, held_peak() <= limit() (the model beside the loader can count on the rest).
  [[nodiscard]] std::size_t held() const { return held_.load(); }
  [[nodiscard]] std::size_t held_peak() const { return held_peak_.load(); }
  // Frees the idle cached memory (not what is in use), memory released with release_after
  // whose streams have passed that point included; returns the bytes freed.
  std::size_t trim();
  // Bytes the pool may hold, in use and idle together; 0 = no limit (the default). Lowering it
  // frees idle memory above it at once; memory in use stays until released.
  void set_limit(std::size_t bytes);
  [[nodiscard]] std::size_t limit() const { return limit_.load(); }
  // What the limit leaves for new allocations now (SIZE_MAX without a limit).
  [[nodiscard]] std::size_t room() const;

  // Holds `keep` (which owns pool memory) until every stream in `streams` has reached this
  // point: an event is recorded on each now, and `keep` is dropped once all have completed
  // (checked on later acquire/release_after calls, without blocking). When events cannot be
  // recorded (the CUDA runtime is shutting down), `keep` is dropped at once.
  void release_after(std::shared_ptr<void> keep, std::span<const cudaStream_t> streams);
  // Takes back the memory released with release_after whose streams have all passed that point
  // (it is idle from then on); returns how many releases still wait. acquire, release_after and
  // trim do this too.
  std::size_t collect_released();

 private:
  friend class GpuBuffer;
  void release(std::byte* p, std::size_t capacity);
  void free_raw(std::byte* p, std::size_t capacity);  // counted
  static void free_memory(MemoryKind kind, std::byte* p, std::size_t capacity);
  Result<std::byte*> allocate(std::size_t capacity) const;
  void note_in_use(std::size_t capacity);

  struct Pending {
    std::vector<cudaEvent_t> events;
    std::shared_ptr<void> keep;
  };

  MemoryKind kind_;
  AllocationCache cache_;
  std::atomic<std::size_t> in_use_{0}, peak_{0}, largest_{0}, allocations_{0}, frees_{0};
  std::atomic<std::size_t> held_{0}, held_peak_{0};
  std::atomic<std::size_t> limit_{0};
  // Under a limit, one thread at a time checks the room, frees idle memory and allocates: two
  // threads that each saw room for their buffer used to allocate both and pass the limit.
  std::mutex grow_mu_;
  std::mutex pending_mu_;
  std::vector<Pending> pending_;
};

class Stream {
 public:
  // A stream that does not synchronise with the legacy default stream, at `priority` (CUDA's:
  // lower numbers run first; 0 is the default).
  static Result<Stream> create(int priority = 0);
  // The priority whose work the current device schedules first (CUDA's greatest).
  static Result<int> highest_priority();
  Stream() = default;
  Stream(Stream&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  ~Stream();
  [[nodiscard]] cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  // `timing` events can measure elapsed time between them (slightly costlier to record).
  // A host thread waiting on a `sleeping` event sleeps until the GPU reaches it instead of
  // spinning on a core (CUDA's default): the loader's workers wait on the GPU for tens of
  // milliseconds per batch, cores the host decoders and the training thread need.
  static Result<Event> create(bool timing = false, bool sleeping = false);
  Event() = default;
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Event& operator=(Event&& o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  ~Event();
  [[nodiscard]] cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Blocks the calling thread until the work queued on `stream` so far has run, sleeping rather
// than spinning (see Event::create).
Status wait_sleeping(cudaStream_t stream);

}  // namespace zarrflow::gpu
