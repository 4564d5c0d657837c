// Pinned (page-locked) host memory that does not stall the rest of the process's GPU work.
//
// cudaHostAlloc faults, zeroes and pins every page while it holds the driver's lock, so another
// thread's kernel launches and synchronisations wait for all of it: a GB-sized allocation stopped
// a training thread's steps for most of a second, and its cudaFreeHost for a fraction of one.
// Here the pages are mapped and faulted in by a few plain threads first (as transparent huge
// pages where the kernel allows), outside any CUDA call, and only then registered: the
// registration pins pages that already exist and stalls the training thread for tens of
// milliseconds; unregistering is as short and the unmap happens outside the lock
// (docs/design_measurements.md, "pinned memory mapped and registered outside CUDA").
// Small sizes keep cudaHostAlloc (its stall is short, and a mapping per buffer would waste
// pages); `pinned_uses_mapping` says which way a capacity goes, so a free can match it.
#pragma once

#include <cstddef>

#include "zarrflow/core/status.h"

namespace zarrflow::gpu {

// Capacities from which `pin_host_pages` maps and registers (below: cudaHostAlloc).
inline constexpr std::size_t kPinnedMappingFrom = std::size_t{4} << 20;

[[nodiscard]] constexpr bool pinned_uses_mapping(std::size_t bytes) {
  return bytes >= kPinnedMappingFrom;
}

// `bytes` of pinned host memory, usable by every CUDA context of the process; the error names
// the call that failed and the size.
Result<std::byte*> pin_host_pages(std::size_t bytes);

// Gives back memory from `pin_host_pages(bytes)` (the same `bytes`).
void unpin_host_pages(std::byte* p, std::size_t bytes);

}  // namespace zarrflow::gpu
