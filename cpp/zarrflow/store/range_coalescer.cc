#include "zarrflow/store/range_coalescer.h"

#include <algorithm>
#include <numeric>

namespace zarrflow {

std::vector<MergedRange> coalesce_ranges(std::span<const ByteRange> ranges,
                                         const CoalesceOptions& options) {
  std::vector<std::size_t> order(ranges.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a].offset < ranges[b].offset;
  });
  std::vector<MergedRange> out;
  for (std::size_t i : order) {
    const ByteRange& r = ranges[i];
    if (!out.empty()) {
      MergedRange& m = out.back();
      const std::uint64_t end = m.offset + m.length;
      const std::uint64_t new_end = std::max(end, r.offset + r.length);
      if (r.offset <= end + options.max_gap_bytes &&
          new_end - m.offset <= options.max_merged_bytes) {
        m.length = new_end - m.offset;
        m.parts.push_back(i);
        continue;
      }
    }
    out.push_back({r.offset, r.length, {i}});
  }
  return out;
}

}  // namespace zarrflow
