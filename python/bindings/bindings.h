// The parts of zarrflow._core, one file per concept, and what they share. module.cc binds them
// in order: errors, tensors, executors, stores, arrays, GPU, pipeline, engine.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <vector>

#include "zarrflow/core/lru_cache.h"
#include "zarrflow/core/thread_pool.h"
#include "zarrflow/zarr/array.h"

namespace zarrflow::py {

// Thread pool plus scratch-buffer pool: the resources one or many arrays read with.
struct Executor {
  Executor(std::size_t threads, int nice, std::vector<int> cpus = {})
      : pool(threads, nice, std::move(cpus)) {}
  ThreadPool pool;
  BufferPool buffers;
};

// Read options with `exec`'s pools (none: the calling thread, plain allocations).
ReadOptions read_options(Executor* exec);

nanobind::tuple to_tuple(const Shape& s);
nanobind::dict lru_stats(const LruStats& s);
std::int64_t product(const std::vector<std::int64_t>& v);

// A remote store's transport counters (requests, retries, bytes, in flight); None for the others
// (store.cc).
nanobind::object remote_stats(const Store& store);
void reset_remote_stats(const Store& store);

void bind_errors(nanobind::module_& m);     // errors.cc: Status codes → zarrflow.errors
void bind_executor(nanobind::module_& m);   // array.cc
void bind_stores(nanobind::module_& m);     // store.cc
void bind_arrays(nanobind::module_& m);     // array.cc
void bind_gpu(nanobind::module_& m);        // gpu.cc
void bind_pipeline(nanobind::module_& m);   // pipeline.cc
void bind_engine(nanobind::module_& m);     // engine.cc: the loader's batch engine
void bind_cuda_info(nanobind::module_& m);  // cuda_info.cc: what `zarrflow doctor` reports

}  // namespace zarrflow::py

namespace zarrflow {
void bind_reference_stores(nanobind::module_& m);  // reference_stores.cc
}  // namespace zarrflow
