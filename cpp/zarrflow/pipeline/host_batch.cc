#include "zarrflow/pipeline/host_batch.h"

#include <atomic>
#include <cmath>

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

std::uint64_t float32_nans(const void* data, std::int64_t n) {
  const float* f = static_cast<const float*>(data);
  std::uint64_t nans = 0;
  for (std::int64_t i = 0; i < n; ++i) nans += std::isnan(f[i]) ? 1 : 0;
  return nans;
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

Result<MadeBatch> HostBatchMaker::make(const BatchJob& job, int /*worker*/, double /*host_share*/) {
  MadeBatch out;
  auto memory = std::make_shared<Buffer>(batch_bytes(recipe_, job));
  out.data = memory->data();
  out.memory = memory;
  out.shape = batch_shape(recipe_, job);
  out.dtype = recipe_.dtype;
  ZF_ASSIGN_OR_RETURN(PlannedBatch planned,
                      PlannedBatch::create(recipe_, job, static_cast<std::byte*>(out.data)));
  HostBatchReport report;
  ZF_RETURN_IF_ERROR(read_batch_on_host(planned.requests().requests, planned.requests().transforms,
                                        options_, &report));
  out.read_end = BatchEngine::clock();
  out.report.chunks = report.chunks;
  out.report.missing = report.missing;
  out.report.cpu_decoded = report.cpu_decoded;
  out.report.stored_bytes = report.stored_bytes;
  const bool float32 = recipe_.dtype.kind == DTypeKind::kFloat && recipe_.dtype.size == 4;
  if (recipe_.mean_std)
    out.report.nans = report.nans;
  else if (float32)
    out.report.nans = float32_nans(out.data, recipe_.plan.elements(job.times.size()));
  ZF_RETURN_IF_ERROR(check_missing(recipe_, job, out.report));
  return out;
}

}  // namespace zarrflow
