#include "zarrflow/core/gpu/pinned_pages.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "zarrflow/core/gpu/device_memory.h"

namespace zarrflow::gpu {
namespace {

constexpr std::size_t kPage = 4096;

// Faults every page in (the kernel allocates and zeroes it), split over up to 8 threads: these
// are multi-GB buffers.
void fault_in(std::byte* p, std::size_t bytes) {
  constexpr std::size_t kPerThread = std::size_t{256} << 20;
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t n = std::min<std::size_t>({8, hw, (bytes + kPerThread - 1) / kPerThread});
  const std::size_t part = (bytes / n + kPage - 1) / kPage * kPage;
  auto touch = [p, bytes](std::size_t from, std::size_t to) {
    for (std::size_t off = from; off < std::min(to, bytes); off += kPage)
      *reinterpret_cast<volatile std::byte*>(p + off) = std::byte{0};
  };
  std::vector<std::thread> threads;
  std::size_t started = 1;  // parts [0, started) are this thread's if no more threads start
  try {
    for (; started < n; ++started)
      threads.emplace_back(touch, started * part, (started + 1) * part);
  } catch (const std::system_error&) {  // no threads to be had: the rest falls to this one
    touch(started * part, bytes);
  }
  touch(0, part);
  for (auto& t : threads) t.join();
}

}  // namespace

Result<std::byte*> pin_host_pages(std::size_t bytes) {
  if (!pinned_uses_mapping(bytes)) {
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (err != cudaSuccess)
      return cuda_status(err, "cudaHostAlloc of " + std::to_string(bytes) + " bytes");
    return static_cast<std::byte*>(p);
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    return io_error("mmap of " + std::to_string(bytes) +
                    " bytes for pinned memory: " + std::strerror(errno));
  auto* p = static_cast<std::byte*>(m);
  // Transparent huge pages where the kernel allows them: 512 times fewer pages to fault in and to
  // pin (a 2 GB registration stalled the training thread for 42-59 ms instead of 100-120 ms).
  // Advice only: without THP the 4 KiB pages work as well, a little slower.
  madvise(m, bytes, MADV_HUGEPAGE);
  // Not inherited by fork()ed children (DataLoader workers, subprocesses): a private mapping
  // would become copy-on-write in the parent too, and a write after the fork would move a page
  // the GPU's DMA engines still address.
  if (madvise(m, bytes, MADV_DONTFORK) != 0) {
    const int e = errno;
    munmap(m, bytes);
    return io_error("madvise(MADV_DONTFORK) of " + std::to_string(bytes) +
                    " bytes of pinned memory: " + std::strerror(e));
  }
  fault_in(p, bytes);
  const cudaError_t err = cudaHostRegister(m, bytes, cudaHostRegisterPortable);
  if (err != cudaSuccess) {
    munmap(m, bytes);
    return cuda_status(err, "cudaHostRegister of " + std::to_string(bytes) + " bytes");
  }
  return p;
}

void unpin_host_pages(std::byte* p, std::size_t bytes) {
  if (!pinned_uses_mapping(bytes)) {
    cudaFreeHost(p);
    return;
  }
  cudaHostUnregister(p);
  munmap(p, bytes);
}

}  // namespace zarrflow::gpu
