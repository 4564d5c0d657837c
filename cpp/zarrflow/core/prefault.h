// Faulting in the pages of fresh memory on another core while this one writes it.
//
// A large buffer written once front to back (a decompressed Icechunk manifest of tens of MB)
// costs its writer a page fault per page on top of the writing: the kernel zeroes each page and,
// after reads have filled the page cache, may first have to assemble it. PrefaultAhead hands
// that work to a helper thread that walks the buffer from the front ahead of the writer, so the
// writer finds its pages mapped. It never changes the buffer's contents (Linux's
// MADV_POPULATE_WRITE maps pages as a write would, without writing), so it may run over pages
// the writer has already filled. Where the kernel lacks it (Linux < 5.14, other systems) no
// helper starts and the writer takes its faults as before; nor does one while every CPU the
// process may use is busy: it would only take time from another thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>
#include <thread>

namespace zarrflow {

class PrefaultAhead {
 public:
  // Starts the helper over [data, data + size); nothing happens for buffers under kMinBytes,
  // where a thread costs more than the faults it saves, nor (unless `even_if_all_cpus_busy`, for
  // tests) while no CPU is idle.
  PrefaultAhead(std::byte* data, std::size_t size, bool even_if_all_cpus_busy = false);
  // Stops the helper (it finishes the step it is on) and waits for it.
  ~PrefaultAhead();
  PrefaultAhead(const PrefaultAhead&) = delete;
  PrefaultAhead& operator=(const PrefaultAhead&) = delete;

  // Bytes the helper has mapped so far (0 when none started).
  std::size_t bytes_mapped() const { return mapped_.load(std::memory_order_relaxed); }
  // Whether this system can fault pages in without writing them.
  static bool supported();
  // Whether a CPU is idle, from /proc/loadavg's count of runnable threads (the caller's own
  // included) against the CPUs the process may use; true when the text cannot be read.
  static bool a_cpu_is_idle(std::string_view loadavg, int cpus);

  static constexpr std::size_t kMinBytes = std::size_t{4} << 20;
  static constexpr std::size_t kStep = std::size_t{2} << 20;  // one huge page, or 512 pages

 private:
  void run(std::byte* begin, std::byte* end);

  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> mapped_{0};
  std::thread thread_;
};

}  // namespace zarrflow
