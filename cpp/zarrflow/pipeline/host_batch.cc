#include "zarrflow/pipeline/host_batch.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace zarrflow {
namespace {

// The request each one copies its values from: itself when it reads, else the first request
// that reads the same region of the same array through the same transform into a destination of
// the same shape (x at t+1 and y at t of neighbouring samples).
std::vector<std::size_t> first_readers(std::span<const ReadRequest> requests,
                                       std::span<const ElementTransform> transforms) {
  std::vector<std::size_t> first(requests.size());
  std::unordered_map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& r = requests[i];
    std::string key(reinterpret_cast<const char*>(&r.array), sizeof r.array);
    for (const Shape* v : {&r.region.start, &r.region.count, &r.region.step, &r.dest.shape}) {
      key.append(reinterpret_cast<const char*>(v->data()), v->size() * sizeof(std::int64_t));
      key.push_back('|');
    }
    const auto [at, inserted] = seen.try_emplace(std::move(key), i);
    const bool copies =
        !inserted && (transforms.empty() || same_transform(transforms[at->second], transforms[i]));
    first[i] = copies ? at->second : i;
  }
  return first;
}

// Reads request i (through transforms[i] when there are transforms) with its own counters.
Status read_one(const ReadRequest& r, const ElementTransform* tf, ReadOptions options,
                ReadCounters* counters, std::uint64_t* nans) {
  options.counters = counters;
  if (tf == nullptr) return r.array->read(r.region, r.dest, options);
  const std::int64_t elem = in_type_size(tf->in);
  std::int64_t n = 1;
  for (auto c : r.region.count) n *= c;
  if (n == 0) return {};
  // Read into a scratch block of the array's type (in this thread's cache), transformed from there.
  Buffer block = options.buffers != nullptr ? options.buffers->acquire(std::size_t(n * elem))
                                            : Buffer(std::size_t(n * elem));
  const StridedView staged{block.data(), r.region.count, c_strides(r.region.count, elem)};
  ZF_RETURN_IF_ERROR(r.array->read(r.region, staged, options));
  *nans = normalize_cast_strided(block.data(), r.dest.data, int(r.dest.shape.size()),
                                 r.dest.shape.data(), r.dest.strides.data(), *tf);
  return {};
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
  const std::size_t n = requests.size();
  const std::vector<std::size_t> first = first_readers(requests, transforms);
  std::vector<std::size_t> readers, copies;
  for (std::size_t i = 0; i < n; ++i) (first[i] == i ? readers : copies).push_back(i);
  ThreadPool* pool = requests_pool(requests, options.pool);
  std::unique_ptr<ReadCounters[]> counters(new ReadCounters[n]);
  std::vector<std::uint64_t> nans(n, 0);
  ZF_RETURN_IF_ERROR(parallel_for(pool, readers.size(), [&](std::size_t k) -> Status {
    const std::size_t i = readers[k];
    return read_one(requests[i], transforms.empty() ? nullptr : &transforms[i], options,
                    &counters[i], &nans[i]);
  }));
  ZF_RETURN_IF_ERROR(parallel_for(options.pool, copies.size(), [&](std::size_t k) -> Status {
    const ReadRequest& to = requests[copies[k]];
    const ReadRequest& from = requests[first[copies[k]]];
    const std::size_t elem =
        transforms.empty() ? from.array->dtype().size : out_type_size(transforms[copies[k]].out);
    copy_strided(from.dest.data, from.dest.strides, to.dest.data, to.dest.strides, to.dest.shape,
                 elem);
    return {};
  }));
  if (report == nullptr) return {};
  *report = HostBatchReport{};
  for (std::size_t i = 0; i < n; ++i) {
    // A copy counts what its first reader read (chunks, missing ones, stored bytes and NaNs
    // written), as the GPU reader counts a request it served from another's chunks; its stored
    // chunks count as deduplicated, not decoded.
    const ReadCounters& c = counters[first[i]];
    report->chunks += c.chunks.load();
    report->missing += c.missing.load();
    report->stored_bytes += c.stored_bytes.load();
    report->nans += nans[first[i]];
    if (first[i] != i) report->deduplicated += c.chunks.load() - c.missing.load();
  }
  report->cpu_decoded = report->chunks - report->missing - report->deduplicated;
  return {};
}

Result<MadeBatch> HostBatchMaker::make(const BatchJob& job, int /*worker*/, double /*host_share*/) {
  MadeBatch out;
  const std::size_t bytes = batch_bytes(recipe_, job);
  batches_->raise_budget(keep_ * bytes);
  // The buffer goes back to the pool before the batch lets go of the pool.
  struct Pooled {
    std::shared_ptr<BufferPool> pool;
    Buffer buffer;
  };
  auto memory = std::make_shared<Pooled>(Pooled{batches_, batches_->acquire(bytes)});
  out.data = memory->buffer.data();
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
  out.report.deduplicated = report.deduplicated;
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
