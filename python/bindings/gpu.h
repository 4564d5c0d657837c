// The GPU reader as Python holds it, and what the array and pipeline bindings share of it.
//
// A GpuReader owns a DeviceReader (its pinned and device pools, which carry zarrflow's GPU memory
// limit) and one non-blocking stream per device for reads given none. It is a Python object:
// zarrflow._gpu makes one for the process, which every Array read and Loader holds while it
// reads, so that all of them share one set of pools and one limit. Nothing in the binding is
// global. Memory lent out (tensors, chunk cache entries) keeps the reader's state alive, so its
// pools outlive every buffer that goes back to them.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"

#include "tensor.h"
#include "zarrflow/pipeline/gpu/read_report.h"

#ifdef ZARRFLOW_HAVE_CUDA
#include "zarrflow/pipeline/gpu/device_reader.h"
#endif

namespace zarrflow::py {

// Array.read_device_tensor: `sel` of `arr` into new GPU memory of `reader` (a GpuReader) on
// `device`: (tensor, report dict). Raises UnsupportedError without CUDA.
nanobind::tuple read_device_tensor(const Array& arr, const Selection& sel, int device,
                                   std::optional<std::uintptr_t> stream, const std::string& decode,
                                   const std::string& io, Executor* exec, nanobind::handle reader);

// A device read's report (every counter of gpu::DeviceReadReport); also the loader's per-batch
// report, of which host batches fill the host path's counters.
nanobind::dict report_dict(const gpu::DeviceReadReport& report);

#ifdef ZARRFLOW_HAVE_CUDA
struct GpuReaderState {
  gpu::DeviceReader reader;
  std::mutex mu;
  std::vector<gpu::Stream> streams;  // by device, made on first use

  // The reader's own stream on `device` (the current device).
  Result<cudaStream_t> stream(int device);
};

struct GpuReader {
  std::shared_ptr<GpuReaderState> state = std::make_shared<GpuReaderState>();
};

// The GpuReader `h` holds; raises when it is None or something else.
GpuReader& reader_of(nanobind::handle h);

// A stream handle as callers pass it (1 and 2: the legacy and per-thread default streams).
cudaStream_t as_stream(std::uintptr_t s);

// The reader's DeviceReader, sharing ownership of its state: memory of its pools keeps it alive.
std::shared_ptr<gpu::DeviceReader> shared_reader(std::shared_ptr<GpuReaderState> state);

// A device tensor over `data`, memory of `reader`'s device pool held by `owner`: it goes back to
// the pool only once the streams of its consumers have passed the point of release (tensor.h).
py::Tensor pooled_device_tensor(const DataType& dtype, const Shape& shape, void* data,
                                std::shared_ptr<void> owner,
                                std::shared_ptr<gpu::DeviceReader> reader, int device);

// gpu_decode and io as Python spells them ("auto", "on", "off"; "auto", "pinned", "direct",
// "cufile").
gpu::GpuDecode parse_decode(const std::string& decode);
gpu::IoPath parse_io(const std::string& io);

// Compressed chunks kept across reads in `reader`'s GPU or pinned memory.
struct ChunkCacheHandle {
  std::shared_ptr<GpuReaderState> reader;  // first: outlives the cache's buffers
  gpu::ChunkCache cache;
  ChunkCacheHandle(std::uint64_t budget, std::shared_ptr<GpuReaderState> r)
      : reader(std::move(r)), cache(budget) {}
};
#endif

}  // namespace zarrflow::py
