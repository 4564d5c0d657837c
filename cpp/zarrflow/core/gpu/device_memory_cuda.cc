#include "zarrflow/core/gpu/device_memory.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "zarrflow/core/gpu/kernel_probe.h"
#include "zarrflow/core/gpu/pinned_pages.h"

namespace zarrflow::gpu {
namespace {

std::string gigabytes(std::size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f", static_cast<double>(bytes) / 1e9);
  return s;
}

// Raises `max` to `v` if `v` is larger (a running maximum several threads update).
void raise_to(std::atomic<std::size_t>& max, std::size_t v) {
  std::size_t seen = max.load();
  while (v > seen && !max.compare_exchange_weak(seen, v)) {
  }
}

}  // namespace

Status cuda_status(cudaError_t err, std::string_view what) {
  return io_error("CUDA: " + std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")");
}

namespace {

// "12.4" for a CUDA version number such as 12040.
std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Why the runtime cannot use the driver: none at all, or one older than the runtime needs.
Status driver_problem(cudaError_t err) {
  int driver = 0;
  cudaDriverGetVersion(&driver);  // 0 without libcuda
  if (driver == 0)
    return unimplemented("no NVIDIA driver (libcuda.so.1 was not found): GPU reads are off");
  if (err == cudaErrorInsufficientDriver || driver < CUDART_VERSION / 1000 * 1000)
    return unimplemented(
        "the NVIDIA driver supports CUDA " + cuda_version_text(driver) + ", older than the CUDA " +
        cuda_version_text(CUDART_VERSION) + " runtime this zarrflow was built with (CUDA " +
        std::to_string(CUDART_VERSION / 1000) + ".x needs a driver for CUDA " +
        std::to_string(CUDART_VERSION / 1000) +
        ".0 or newer): update the driver, or install the zarrflow build for CUDA " +
        std::to_string(driver / 1000) + " (pip install zarrflow-cu" +
        std::to_string(driver / 1000) + ")");
  return cuda_status(err, "cudaGetDeviceCount");
}

// Launches the probe kernel on `device` (the current device for the call) and checks what it
// wrote: OK, or why zarrflow's kernels cannot run there.
Status run_kernel_probe(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    std::snprintf(prop.name, sizeof prop.name, "GPU");
  }
  const std::string gpu = "GPU " + std::to_string(device) + " (" + prop.name + ", sm_" +
                          std::to_string(prop.major) + std::to_string(prop.minor) + ")";
  std::uint32_t* d_out = nullptr;
  std::uint32_t seen = 0;
  cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&d_out), sizeof *d_out);
  if (err == cudaSuccess) err = cudaMemset(d_out, 0, sizeof *d_out);
  if (err == cudaSuccess) err = launch_kernel_probe(d_out, nullptr);
  if (err == cudaSuccess) err = cudaMemcpy(&seen, d_out, sizeof seen, cudaMemcpyDeviceToHost);
  if (d_out != nullptr) cudaFree(d_out);
  cudaGetLastError();  // launch errors are not sticky: leave none behind for the next call
  const std::string archs = compiled_cuda_archs();
  if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction ||
      err == cudaErrorUnsupportedPtxVersion || err == cudaErrorInvalidPtx ||
      err == cudaErrorJitCompilerNotFound || err == cudaErrorJitCompilationDisabled)
    return unimplemented(gpu + " cannot run zarrflow's GPU kernels: this build has code for " +
                         "CUDA architectures " + archs + " only (" + cudaGetErrorName(err) +
                         "); GPU reads are off. Install a zarrflow wheel built for this GPU");
  if (err != cudaSuccess) return cuda_status(err, gpu + ": launching the probe kernel");
  if (seen != kKernelProbeValue)
    return unimplemented(gpu + ": the probe kernel ran but its result is wrong; GPU reads are off");
  return {};
}

// The probe's result per device, kept for the process (a GPU does not change architecture).
std::mutex g_probe_mu;
std::vector<std::optional<Status>> g_probed;

Status probe_once(int device) {
  std::lock_guard lock(g_probe_mu);
  if (device >= static_cast<int>(g_probed.size())) g_probed.resize(device + 1);
  auto& slot = g_probed[device];
  if (!slot) {
    int before = -1;
    cudaGetDevice(&before);
    if (before != device) cudaSetDevice(device);
    slot = run_kernel_probe(device);
    if (before >= 0 && before != device) cudaSetDevice(before);
  }
  return *slot;
}

}  // namespace

namespace {

// `device` (-1: the calling thread's current one) when it exists and the driver can run this
// build's CUDA runtime on it; else why not.
Result<int> present_device(int device) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err == cudaErrorNoDevice || (err == cudaSuccess && n == 0))
    return unimplemented("no CUDA GPU is visible");
  if (err != cudaSuccess) return driver_problem(err);
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    device = 0;
  }
  if (device >= n)
    return invalid_argument("GPU " + std::to_string(device) +
                            " does not exist: " + std::to_string(n) + " visible");
  return device;
}

}  // namespace

Status device_present(int device) { return present_device(device).status(); }

Status device_available(int device) {
  ZF_ASSIGN_OR_RETURN(const int d, present_device(device));
  return probe_once(d);
}

GpuBuffer::~GpuBuffer() {
  if (data_ == nullptr) return;
  if (pool_ != nullptr) {
    pool_->release(data_, capacity_);
  } else {
    GpuMemoryPool::free_memory(kind_, data_, capacity_);
  }
}

void GpuBuffer::swap(GpuBuffer& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  std::swap(capacity_, o.capacity_);
  std::swap(kind_, o.kind_);
  std::swap(pool_, o.pool_);
}

GpuMemoryPool::~GpuMemoryPool() {
  {
    std::lock_guard lock(pending_mu_);
    for (auto& p : pending_)
      for (cudaEvent_t e : p.events) cudaEventDestroy(e);
    pending_.clear();
  }
  trim();
}

void GpuMemoryPool::release_after(std::shared_ptr<void> keep,
                                  std::span<const cudaStream_t> streams) {
  collect_released();
  Pending p;
  for (cudaStream_t s : streams) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) break;
    if (cudaEventRecord(e, s) != cudaSuccess) {
      cudaEventDestroy(e);
      break;
    }
    p.events.push_back(e);
  }
  if (p.events.size() != streams.size()) {  // no CUDA any more: nothing can still be running
    for (cudaEvent_t e : p.events) cudaEventDestroy(e);
    cudaGetLastError();
    return;  // `keep` goes now
  }
  p.keep = std::move(keep);
  std::lock_guard lock(pending_mu_);
  pending_.push_back(std::move(p));
}

std::size_t GpuMemoryPool::collect_released() {
  std::vector<std::shared_ptr<void>> done;  // released outside the lock (they re-enter the pool)
  std::size_t waiting = 0;
  {
    std::lock_guard lock(pending_mu_);
    for (std::size_t i = 0; i < pending_.size();) {
      bool complete = true;
      for (cudaEvent_t e : pending_[i].events) {
        const cudaError_t q = cudaEventQuery(e);
        if (q == cudaErrorNotReady) {
          complete = false;
          break;
        }
        if (q != cudaSuccess) cudaGetLastError();  // an error: the stream will not use it either
      }
      if (!complete) {
        ++i;
        continue;
      }
      for (cudaEvent_t e : pending_[i].events) cudaEventDestroy(e);
      done.push_back(std::move(pending_[i].keep));
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    }
    waiting = pending_.size();
  }
  return waiting;
}

void GpuMemoryPool::free_raw(std::byte* p, std::size_t capacity) {
  ++frees_;
  free_memory(kind_, p, capacity);
  held_.fetch_sub(capacity);
}

void GpuMemoryPool::free_memory(MemoryKind kind, std::byte* p, std::size_t capacity) {
  if (kind == MemoryKind::kDevice) {
    cudaFree(p);
  } else {
    unpin_host_pages(p, capacity);
  }
}

Result<std::byte*> GpuMemoryPool::allocate(std::size_t capacity) const {
  if (kind_ == MemoryKind::kPinned) return pin_host_pages(capacity);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, capacity);
  if (err != cudaSuccess)
    return cuda_status(err, "cudaMalloc of " + std::to_string(capacity) + " bytes");
  return static_cast<std::byte*>(p);
}

Result<GpuBuffer> GpuMemoryPool::acquire(std::size_t size) {
  collect_released();
  // Above 2 MiB, capacities come in steps of 2 MiB or an eighth of the size's power of two,
  // whichever is larger (at most 12.5% unused): a batch's staging, whose size varies a little
  // from batch to batch, then reuses the same allocation instead of needing a slightly larger one.
  // Up to 2 MiB (tables, status words, small chunks), powers of two: few classes, so buffers
  // whose size depends on the batch's chunk count find a cached one.
  constexpr std::size_t kGranule = std::size_t{2} << 20;
  const std::size_t step = std::max(kGranule, std::bit_floor(size) / 8);
  const std::size_t cap = size <= kGranule ? std::bit_ceil(std::max<std::size_t>(size, 256))
                                           : (size + step - 1) / step * step;
  GpuBuffer b;
  b.kind_ = kind_;
  b.pool_ = this;
  b.size_ = size;
  if (auto [cached, capacity] = cache_.take(cap); cached != nullptr) {
    b.data_ = cached;
    b.capacity_ = capacity;
    note_in_use(capacity);
    return std::move(b);
  }
  std::unique_lock<std::mutex> grow;
  if (const std::size_t limit = limit_.load(); limit != 0) {
    // Only this locked path adds to what the pool holds (cache hits and releases move bytes
    // between in use and idle, frees lower it), so the check below cannot be overtaken.
    grow = std::unique_lock(grow_mu_);
    while (held_.load() + cap > limit) {  // idle memory goes first
      const std::size_t over = held_.load() + cap - limit, idle = cache_.cached_bytes();
      auto freed = cache_.shrink_to(idle > over ? idle - over : 0);
      if (freed.empty()) break;
      for (auto& [q, c] : freed) free_raw(q, c);
    }
    if (held_.load() + cap > limit)
      return io_error("out of memory under zarrflow's GPU memory limit: " + gigabytes(in_use()) +
                      " GB in use + " + gigabytes(cap) + " GB asked > limit " + gigabytes(limit) +
                      " GB (zarrflow.set_gpu_memory_limit)");
  }
  auto p = allocate(cap);
  if (!p.ok()) {
    // Give cached memory back and retry once before reporting.
    for (auto& [q, c] : cache_.drain()) free_raw(q, c);
    cudaGetLastError();
    p = allocate(cap);
    if (!p.ok()) return p.status();
  }
  ++allocations_;
  raise_to(held_peak_, held_.fetch_add(cap) + cap);
  b.data_ = *p;
  b.capacity_ = cap;
  note_in_use(cap);
  return std::move(b);
}

Result<GpuBuffer> GpuMemoryPool::acquire_waiting(std::size_t size, double wait_ms,
                                                 double* waited_ms) {
  auto r = acquire(size);
  if (r.ok() || limit_.load() == 0) return r;
  const auto t0 = std::chrono::steady_clock::now();
  const auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  while (!r.ok() && ms() < wait_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    r = acquire(size);
  }
  if (waited_ms != nullptr) *waited_ms = ms();
  return r;
}

void GpuMemoryPool::note_in_use(std::size_t capacity) {
  const std::size_t now = in_use_.fetch_add(capacity) + capacity;
  const std::size_t peak = peak_.load(), largest = largest_.load();  // before this one counts
  raise_to(peak_, now);
  raise_to(largest_, capacity);
  // Keep the peak working set for reuse, plus room for one more of the largest allocation: the
  // sizes a batch needs drift between capacity classes, and without the slack each drift would
  // evict (free) a buffer that the next batch allocates again.
  if (now > peak || capacity > largest)
    cache_.raise_budget(std::max(now, peak) + std::max(capacity, largest));
}

void GpuMemoryPool::release(std::byte* p, std::size_t capacity) {
  in_use_.fetch_sub(capacity);
  for (auto& [q, cap] : cache_.put(p, capacity)) free_raw(q, cap);
}

void GpuMemoryPool::set_limit(std::size_t bytes) {
  limit_.store(bytes);
  if (bytes != 0)
    for (auto& [p, cap] : cache_.shrink_to(room())) free_raw(p, cap);
}

std::size_t GpuMemoryPool::room() const {
  const std::size_t limit = limit_.load(), used = in_use_.load();
  if (limit == 0) return SIZE_MAX;
  return limit > used ? limit - used : 0;
}

std::size_t GpuMemoryPool::trim() {
  collect_released();  // memory whose streams have passed its release is idle too
  std::size_t freed = 0;
  for (auto& [p, cap] : cache_.drain()) {
    free_raw(p, cap);
    freed += cap;
  }
  return freed;
}

Result<Stream> Stream::create(int priority) {
  Stream s;
  ZF_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&s.s_, cudaStreamNonBlocking, priority));
  return std::move(s);
}

Result<int> Stream::highest_priority() {
  int least = 0, greatest = 0;
  ZF_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;
}

Stream::~Stream() {
  if (s_ != nullptr) cudaStreamDestroy(s_);
}

Result<Event> Event::create(bool timing, bool sleeping) {
  Event e;
  const unsigned flags = (timing ? cudaEventDefault : cudaEventDisableTiming) |
                         (sleeping ? cudaEventBlockingSync : 0u);
  ZF_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e.e_, flags));
  return std::move(e);
}

Status wait_sleeping(cudaStream_t stream) {
  ZF_ASSIGN_OR_RETURN(Event e, Event::create(false, true));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(e.get(), stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(e.get()));
  return {};
}

Event::~Event() {
  if (e_ != nullptr) cudaEventDestroy(e_);
}

}  // namespace zarrflow::gpu
