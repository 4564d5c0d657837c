#include "zarrflow/pipeline/host_batch.h"

#include <atomic>

namespace zarrflow {
namespace {

Status read_transformed(std::span<const ReadRequest> requests,
                        std::span<const ElementTransform> transforms, const ReadOptions& options,
                        std::uint64_t* nans) {
  ThreadPool* pool = options.pool;  // as read_many: a remote store's requests on its I/O pool
  if (!requests.empty() && requests.front().array->store().io_pool() != nullptr)
    pool = requests.front().array->store().io_pool();
  std::atomic<std::uint64_t> found{0};
  Status s = parallel_for(pool, requests.size(), [&](std::size_t i) -> Status {
    const ReadRequest& r = requests[i];
    const std::int64_t elem = in_type_size(transforms[i].in);
    std::int64_t n = 1;
    for (auto c : r.region.count) n *= c;
    if (n == 0) return {};
    Buffer block = options.buffers != nullptr ? options.buffers->acquire(std::size_t(n * elem))
                                              : Buffer(std::size_t(n * elem));
    const StridedView staged{block.data(), r.region.count, c_strides(r.region.count, elem)};
    ZF_RETURN_IF_ERROR(r.array->read(r.region, staged, options));
    found += normalize_cast_strided(block.data(), r.dest.data, int(r.dest.shape.size()),
                                    r.dest.shape.data(), r.dest.strides.data(), transforms[i]);
    return {};
  });
  *nans = found.load();
  return s;
}

}  // namespace

Status read_batch_on_host(std::span<const ReadRequest> requests,
                          std::span<const ElementTransform> transforms, ReadOptions options,
                          HostBatchReport* report) {
  if (!transforms.empty() && transforms.size() != requests.size())
    return invalid_argument(std::to_string(transforms.size()) + " element transforms for " +
                            std::to_string(requests.size()) + " requests");
  ReadCounters counters;
  options.counters = &counters;
  std::uint64_t nans = 0;
  ZF_RETURN_IF_ERROR(transforms.empty() ? read_many(requests, options)
                                        : read_transformed(requests, transforms, options, &nans));
  if (report != nullptr) {
    report->chunks = counters.chunks.load();
    report->missing = counters.missing.load();
    report->cpu_decoded = report->chunks - report->missing;
    report->stored_bytes = counters.stored_bytes.load();
    report->nans = nans;
  }
  return {};
}

}  // namespace zarrflow
