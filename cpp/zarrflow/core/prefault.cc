#include "zarrflow/core/prefault.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <string>
#include <system_error>

#ifdef __linux__
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace zarrflow {
namespace {

#if defined(__linux__)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack the name, not the kernel
#endif

std::uintptr_t page_size() {
  static const auto size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

bool populate(std::byte* p, std::size_t n) { return madvise(p, n, MADV_POPULATE_WRITE) == 0; }

bool idle_cpu_now() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return true;
  std::ifstream in("/proc/loadavg");
  std::string text;
  std::getline(in, text);
  return PrefaultAhead::a_cpu_is_idle(text, CPU_COUNT(&set));
}
#else
bool idle_cpu_now() { return true; }
std::uintptr_t page_size() { return 4096; }
bool populate(std::byte*, std::size_t) { return false; }
#endif

}  // namespace

bool PrefaultAhead::supported() {
#if defined(__linux__)
  // One page of a fresh mapping: EINVAL where the kernel does not know the advice.
  void* p = mmap(nullptr, page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const bool ok = populate(static_cast<std::byte*>(p), page_size());
  munmap(p, page_size());
  return ok;
#else
  return false;
#endif
}

bool PrefaultAhead::a_cpu_is_idle(std::string_view loadavg, int cpus) {
  // "0.52 0.58 0.59 3/1234 5678": the fourth field is runnable/total threads.
  std::size_t at = 0;
  for (int field = 0; field < 3; ++field) {
    at = loadavg.find(' ', at);
    if (at == std::string_view::npos) return true;
    ++at;
  }
  int runnable = 0;
  const auto [end, ec] =
      std::from_chars(loadavg.data() + at, loadavg.data() + loadavg.size(), runnable);
  if (ec != std::errc() || end == loadavg.data() + loadavg.size() || *end != '/') return true;
  return runnable < cpus;
}

PrefaultAhead::PrefaultAhead(std::byte* data, std::size_t size, bool even_if_all_cpus_busy) {
  static const bool kSupported = supported();
  if (!kSupported || data == nullptr || size < kMinBytes) return;
  if (!even_if_all_cpus_busy && !idle_cpu_now()) return;
  // madvise takes whole pages: the helper starts at the first page boundary inside the buffer
  // and ends at the last one (the writer faults the partial pages at either end itself).
  const std::uintptr_t page = page_size();
  const auto first = (reinterpret_cast<std::uintptr_t>(data) + page - 1) / page * page;
  const auto last = (reinterpret_cast<std::uintptr_t>(data) + size) / page * page;
  if (last <= first) return;
  try {
    thread_ = std::thread(&PrefaultAhead::run, this, reinterpret_cast<std::byte*>(first),
                          reinterpret_cast<std::byte*>(last));
  } catch (const std::system_error&) {
    // No thread to be had: the writer takes its own faults.
  }
}

PrefaultAhead::~PrefaultAhead() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void PrefaultAhead::run(std::byte* begin, std::byte* end) {
  for (std::byte* p = begin; p < end && !stop_.load(std::memory_order_relaxed); p += kStep) {
    const std::size_t n = std::min<std::size_t>(kStep, static_cast<std::size_t>(end - p));
    if (!populate(p, n)) return;  // unsupported, or no memory: the writer's faults will say
    mapped_.fetch_add(n, std::memory_order_relaxed);
  }
}

}  // namespace zarrflow
