// GPU: whether one can be used, nvCOMP, the GpuReader (pools, memory limit), zarrflow's streams,
// new tensors and device reads of arrays (see gpu.h).
#include "gpu.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "status_error.h"
#include "tensor.h"
#include "zarrflow/pipeline/gpu/read_plan.h"  // plain C++: the zstd decoder setting

#ifdef ZARRFLOW_HAVE_CUDA
#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/core/gpu/kernel_probe.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow::py {
namespace {

#ifdef ZARRFLOW_HAVE_CUDA
// Device memory lent to a tensor; the reader's state outlives it (its pool takes it back).
struct DeviceBlock {
  std::shared_ptr<GpuReaderState> reader;
  gpu::GpuBuffer buffer;
};

// A device tensor over `block`.
py::Tensor device_tensor(const DataType& dtype, const Shape& shape,
                         std::shared_ptr<DeviceBlock> block, int device) {
  void* data = block->buffer.data();
  auto reader = shared_reader(block->reader);
  return pooled_device_tensor(dtype, shape, data, std::move(block), std::move(reader), device);
}

// Makes `device` current, or throws why no GPU can be used.
void use_device(int device) {
  Status s = gpu::device_available(device);
  if (s.ok()) {
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
      s = gpu::cuda_status(e, "cudaSetDevice");
  }
  throw_if_error(std::move(s));
}

// A CUDA stream of zarrflow's own (non-blocking), for callers that run several reads at once
// (the loader's workers); destroyed with the object, after its queued work.
struct StreamHandle {
  gpu::Stream stream;
  int device = 0;
  explicit StreamHandle(int dev) : device(dev) {
    use_device(dev);
    stream = value_or_throw(gpu::Stream::create());
  }
};

// A GPU this build has no kernel image for (device_available fails where device_present does
// not) still has memory and copies: the host threads read and decode the region, and it is copied
// up. The GPU read's result, without the GPU's decoders; said once through the report's notes.
Status read_on_host_and_copy(const Array& arr, const Selection& sel, void* dst, std::size_t bytes,
                             cudaStream_t stream, Executor* exec, gpu::DeviceReadReport* report) {
  Buffer host(bytes);
  const auto elem = static_cast<std::int64_t>(arr.dtype().size);
  ZF_RETURN_IF_ERROR(arr.read(sel, StridedView{host.data(), sel.count, c_strides(sel.count, elem)},
                              read_options(exec)));
  ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, host.data(), bytes, cudaMemcpyHostToDevice, stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // `host` goes on return
  report->h2d_bytes = bytes;
  report->io = "host read and decode → H2D";
  return {};
}

nb::dict pool_stats(const GpuReader& r) {
  nb::dict d;
  gpu::GpuMemoryPool& device = r.state->reader.device_pool();
  // First, so that memory whose consumers' streams have passed its release counts as idle below.
  const std::size_t pending = device.collect_released();
  for (auto [name, pool] :
       {std::pair{"device", &device}, std::pair{"pinned", &r.state->reader.pinned_pool()}}) {
    const std::string n(name);
    d[(n + "_in_use").c_str()] = pool->in_use();
    d[(n + "_peak").c_str()] = pool->peak_in_use();
    d[(n + "_cached").c_str()] = pool->cached_bytes();
    d[(n + "_budget").c_str()] = pool->budget();
    d[(n + "_allocations").c_str()] = pool->allocations();
    d[(n + "_frees").c_str()] = pool->frees();
    d[(n + "_held").c_str()] = pool->held();
    d[(n + "_held_peak").c_str()] = pool->held_peak();
  }
  d["device_limit"] = device.limit();
  d["device_pending_releases"] = pending;
  return d;
}

nb::tuple device_memory(int device) {
  int before = -1;
  const bool had = cudaGetDevice(&before) == cudaSuccess;
  use_device(device);
  std::size_t free = 0, total = 0;
  const cudaError_t err = cudaMemGetInfo(&free, &total);
  if (had && before != device) cudaSetDevice(before);  // the caller's current GPU stays
  if (err != cudaSuccess) throw_if_error(gpu::cuda_status(err, "cudaMemGetInfo"));
  return nb::make_tuple(free, total);
}

void bind_reader(nb::module_& m) {
  nb::class_<GpuReader>(m, "GpuReader",
                        "zarrflow's GPU reader: pinned and device memory pools (with the GPU "
                        "memory limit) and a stream per device")
      .def(nb::init<>())
      .def("pool_stats", &pool_stats)
      .def(
          "set_limit",
          [](GpuReader& r, std::size_t bytes) { r.state->reader.device_pool().set_limit(bytes); },
          "bytes"_a, "Bounds the GPU memory the device pool holds (in use and idle); 0 = none.")
      .def(
          "set_read_streams",
          [](GpuReader& r, int n) { throw_if_error(r.state->reader.set_streams(n)); }, "n"_a,
          "How many CUDA streams each read spreads its pieces over (1-16): consecutive pieces' "
          "copies and decoding overlap on different streams (reads nvCOMP decodes keep one).")
      .def_prop_ro(
          "read_streams", [](GpuReader& r) { return r.state->reader.streams(); },
          "The streams each read spreads its pieces over.")
      .def(
          "trim",
          [](GpuReader& r) {
            return r.state->reader.device_pool().trim() + r.state->reader.pinned_pool().trim();
          },
          "Frees the idle memory the pools keep for reuse; returns the bytes.");
  nb::class_<StreamHandle>(m, "Stream", "A non-blocking CUDA stream of zarrflow's own.")
      .def(nb::init<int>(), "device"_a = 0)
      .def_prop_ro(
          "handle",
          [](const StreamHandle& s) { return reinterpret_cast<std::uintptr_t>(s.stream.get()); })
      .def_ro("device", &StreamHandle::device);
  m.def("device_memory", &device_memory, "device"_a,
        "(free, total) bytes of the GPU's memory (cudaMemGetInfo).");
}
#endif

// A new C-contiguous tensor (host memory, or device memory from `reader`'s pool).
py::Tensor empty_tensor(const std::vector<std::int64_t>& shape, const std::string& dtype,
                        const std::string& device, int device_id, nb::handle reader) {
  const DataType t = value_or_throw(parse_v3_data_type(dtype));
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(product(shape), 1)) * t.size;
  if (device == "cpu") {
    auto buf = std::make_shared<Buffer>(bytes);
    void* data = buf->data();
    return py::Tensor{tensor_state(t, shape, data, std::move(buf), /*device_type=*/1, 0)};
  }
#ifdef ZARRFLOW_HAVE_CUDA
  GpuReader& r = reader_of(reader);
  use_device(device_id);
  // A loader's batch: under zarrflow's memory limit, other reads' pieces give memory back soon.
  // Without the GIL while it waits: the consumer thread may be the one to drop a batch.
  Result<gpu::GpuBuffer> got = [&] {
    nb::gil_scoped_release unlocked;
    return r.state->reader.device_pool().acquire_waiting(bytes, gpu::kLimitWaitMs);
  }();
  auto block = std::make_shared<DeviceBlock>(DeviceBlock{r.state, value_or_throw(std::move(got))});
  return device_tensor(t, shape, std::move(block), device_id);
#else
  (void)device_id;
  (void)reader;
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

}  // namespace

#ifdef ZARRFLOW_HAVE_CUDA
Result<cudaStream_t> GpuReaderState::stream(int device) {
  std::lock_guard lock(mu);
  if (streams.size() <= static_cast<std::size_t>(device)) streams.resize(device + 1);
  if (streams[device].get() == nullptr) {
    ZF_ASSIGN_OR_RETURN(streams[device], gpu::Stream::create());
  }
  return streams[device].get();
}

std::shared_ptr<gpu::DeviceReader> shared_reader(std::shared_ptr<GpuReaderState> state) {
  gpu::DeviceReader* reader = &state->reader;
  return {std::move(state), reader};
}

// Device tensors go back to the pool only after the streams that consumed them have passed the
// point of release (see tensor.h).
py::Tensor pooled_device_tensor(const DataType& dtype, const Shape& shape, void* data,
                                std::shared_ptr<void> owner,
                                std::shared_ptr<gpu::DeviceReader> reader, int device) {
  auto st = tensor_state(dtype, shape, data, std::move(owner), /*device_type=*/2, device);
  st->release_after = [reader = std::move(reader), device](
                          std::shared_ptr<void> owner,
                          const std::vector<std::uintptr_t>& consumers) {
    int before = -1;
    const bool switched = cudaGetDevice(&before) == cudaSuccess && before != device &&
                          cudaSetDevice(device) == cudaSuccess;
    std::vector<cudaStream_t> streams;
    // The per-thread default stream of the releasing thread is not the consumer's: the legacy
    // stream waits for every blocking stream, that one included.
    for (auto c : consumers) streams.push_back(c == 2 ? cudaStreamLegacy : as_stream(c));
    reader->device_pool().release_after(std::move(owner), streams);
    if (switched) cudaSetDevice(before);
  };
  return py::Tensor{st};
}

gpu::GpuDecode parse_decode(const std::string& decode) {
  return decode == "on"    ? gpu::GpuDecode::kOn
         : decode == "off" ? gpu::GpuDecode::kOff
                           : gpu::GpuDecode::kAuto;
}

gpu::IoPath parse_io(const std::string& io) {
  return io == "cufile"   ? gpu::IoPath::kCuFile
         : io == "direct" ? gpu::IoPath::kDirect
         : io == "pinned" ? gpu::IoPath::kPinned
                          : gpu::IoPath::kAuto;
}

GpuReader& reader_of(nb::handle h) {
  GpuReader* r = nullptr;
  if (!h.is_none() && nb::try_cast<GpuReader*>(h, r) && r != nullptr) return *r;
  throw StatusError(
      invalid_argument("a GPU read needs a zarrflow GpuReader (zarrflow._gpu.reader())"));
}

cudaStream_t as_stream(std::uintptr_t s) {
  if (s == 1) return cudaStreamLegacy;
  if (s == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(s);
}

#endif

nb::dict report_dict(const gpu::DeviceReadReport& report) {
  nb::dict r;
  r["chunks"] = report.chunks;
  r["missing"] = report.missing;
  r["gpu_decoded"] = report.gpu_decoded;
  r["cpu_decoded"] = report.cpu_decoded;
  r["deduplicated"] = report.deduplicated;
  r["cache_hits"] = report.cache_hits;
  r["host_cache_hits"] = report.host_cache_hits;
  r["stored_bytes"] = report.stored_bytes;
  r["h2d_bytes"] = report.h2d_bytes;
  r["h2d_while_read"] = report.h2d_while_read;
  r["direct_reads"] = report.direct_reads;
  r["io"] = report.io;
  r["h2d_ms"] = report.h2d_ms;
  r["decode_ms"] = report.decode_ms;
  r["scatter_ms"] = report.scatter_ms;
  r["internal_batches"] = report.batches;
  r["max_internal_batch_bytes"] = report.max_batch_decoded;
  r["gpu_idle_ms"] = report.gpu_idle_ms;
  r["plan_ms"] = report.plan_ms;
  r["fetch_ms"] = report.fetch_ms;
  r["enqueue_ms"] = report.enqueue_ms;
  r["gpu_wait_ms"] = report.wait_ms;
  r["limit_wait_ms"] = report.limit_wait_ms;
  r["nans"] = report.nans;
  r["host_transformed"] = report.host_transformed;
  nb::list notes;
  for (const auto& n : report.notes) notes.append(n);
  r["notes"] = notes;
  return r;
}

nb::tuple read_device_tensor(const Array& arr, const Selection& sel, int device,
                             std::optional<std::uintptr_t> stream, const std::string& decode,
                             const std::string& io, Executor* exec, nb::handle reader) {
#ifdef ZARRFLOW_HAVE_CUDA
  GpuReader& r = reader_of(reader);
  gpu::DeviceReadOptions opts;
  opts.decode = parse_decode(decode);
  opts.io = parse_io(io);
  const ReadOptions host = read_options(exec);
  opts.pool = host.pool;
  opts.buffers = host.buffers;
  const std::size_t elem = arr.dtype().size;
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(product(sel.count), 1)) * elem;
  gpu::DeviceReadReport report;
  std::shared_ptr<DeviceBlock> block;
  std::shared_ptr<gpu::Event> ready;
  Status s;
  {
    nb::gil_scoped_release release;
    s = [&]() -> Status {
      Status kernels = gpu::device_available(device);
      if (!kernels.ok() &&
          (opts.decode == gpu::GpuDecode::kOn || !gpu::device_present(device).ok()))
        return kernels;
      ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
      if (stream) {
        opts.stream = as_stream(*stream);
      } else {
        ZF_ASSIGN_OR_RETURN(opts.stream, r.state->stream(device));
      }
      ZF_ASSIGN_OR_RETURN(gpu::GpuBuffer b, r.state->reader.device_pool().acquire(bytes));
      block = std::make_shared<DeviceBlock>(DeviceBlock{r.state, std::move(b)});
      if (!kernels.ok()) {
        ZF_RETURN_IF_ERROR(read_on_host_and_copy(arr, sel, block->buffer.data(), bytes, opts.stream,
                                                 exec, &report));
        report.notes.push_back(kernels.message() + "; decoded on the CPU and copied to the GPU");
      } else {
        StridedView view{block->buffer.data(), sel.count,
                         c_strides(sel.count, static_cast<std::int64_t>(elem))};
        ZF_RETURN_IF_ERROR(r.state->reader.read(arr, sel, view, opts, &report));
      }
      ZF_ASSIGN_OR_RETURN(gpu::Event e, gpu::Event::create());
      ready = std::make_shared<gpu::Event>(std::move(e));
      ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(ready->get(), opts.stream));
      return {};
    }();
  }
  throw_if_error(std::move(s));
  py::Tensor t = device_tensor(arr.dtype(), sel.count, std::move(block), device);
  t.state->wait_on = [ready](std::uintptr_t consumer) {
    cudaStreamWaitEvent(as_stream(consumer), ready->get(), 0);
  };
  return nb::make_tuple(t, report_dict(report));
#else
  (void)arr, (void)sel, (void)device, (void)stream, (void)decode, (void)io, (void)exec;
  (void)reader;
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

void bind_gpu(nb::module_& m) {
  m.def(
      "cuda_status",
      []() -> std::string {
#ifdef ZARRFLOW_HAVE_CUDA
        Status s = gpu::device_available();
        return s.ok() ? std::string() : s.message();
#else
        return "zarrflow was built without CUDA";
#endif
      },
      "'' when a CUDA GPU can be used, else why not");
  m.def(
      "gpu_pci_bus_ids",
      []() {
        std::vector<std::string> ids;
#ifdef ZARRFLOW_HAVE_CUDA
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
          cudaGetLastError();  // no driver or no GPU: none
          n = 0;
        }
        for (int d = 0; d < n; ++d) {
          char id[32] = {};
          if (cudaDeviceGetPCIBusId(id, sizeof(id), d) != cudaSuccess) {
            cudaGetLastError();
            return std::vector<std::string>{};  // an incomplete list would misnumber the GPUs
          }
          ids.emplace_back(id);
        }
#endif
        return ids;
      },
      "PCI bus ids of the visible CUDA GPUs, in CUDA's device order (none without CUDA).");
  m.def(
      "cuda_build_info",
      []() {
        nb::dict d;
#ifdef ZARRFLOW_HAVE_CUDA
        int driver = 0, runtime = 0;
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);  // the runtime linked in (may be newer than the headers)
        d["runtime"] = runtime;
        d["driver"] = driver;
        d["archs"] = std::string(gpu::compiled_cuda_archs());
#endif
        return d;
      },
      "CUDA runtime version built with, driver's CUDA version (0: none), compiled architectures");
  m.def("built_with_cuda", []() {
#ifdef ZARRFLOW_HAVE_CUDA
    return true;
#else
    return false;
#endif
  });
  m.def("set_zstd_decoder", [](const std::string& name) {
    gpu::ZstdDecoder d;
    if (!gpu::parse_zstd_decoder(name, &d))
      throw nb::value_error(
          ("zstd decoder must be 'auto', 'zarrflow' or 'nvcomp', got '" + name + "'").c_str());
    gpu::set_zstd_decoder(d);
  });
  m.def("zstd_decoder_used", [](bool nvcomp_loaded) {
    return gpu::zstd_by_nvcomp(nvcomp_loaded) ? "nvcomp" : "zarrflow";
  });
  m.def("set_nvcomp_library", [](const std::vector<std::string>& candidates) {
#ifdef ZARRFLOW_HAVE_CUDA
    gpu::set_nvcomp_library(candidates);
#else
    (void)candidates;
#endif
  });
  m.def(
      "nvcomp_status",
      []() -> std::string {
#ifdef ZARRFLOW_HAVE_CUDA
        auto n = gpu::Nvcomp::get();
        if (!n.ok()) return n.status().message();
        return "";
#else
        return "zarrflow was built without CUDA";
#endif
      },
      "'' when nvCOMP is loaded, else why not");
#ifdef ZARRFLOW_HAVE_CUDA
  bind_reader(m);
#endif
  m.def("empty_tensor", &empty_tensor, "shape"_a, "dtype"_a, "device"_a, "device_id"_a = 0,
        "reader"_a = nb::none());
  m.def("tensor_event_wait", [](const py::Tensor& t, std::uintptr_t stream) {
    if (t.state->wait_on) t.state->wait_on(stream);
  });
}

}  // namespace zarrflow::py
