// zarrflow._core: the thin nanobind layer over the C++ library.
//
// It exposes handles (Store, Array, Group, Executor) and one read call; the Pythonic API
// (indexing, dtypes, attrs as dicts) lives in python/zarrflow/. Errors become exceptions from
// zarrflow.errors, chosen by Status code (see errors.py for the mapping). Reads release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <cstring>

#include <nlohmann/json.hpp>

#include "python_codec.h"
#include "status_error.h"
#include "tensor.h"
#include "vlen.h"
#include "zarrflow/codec/shard_index_cache.h"
#include "zarrflow/core/normalize.h"
#include "zarrflow/store/file_store.h"
#include "zarrflow/store/http_store.h"
#include "zarrflow/zarr/hierarchy.h"
#ifdef ZARRFLOW_HAVE_CUDA
#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/core/gpu/kernel_probe.h"
#include "zarrflow/zarr/gpu/device_read.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow {
// Icechunk repositories and Kerchunk reference sets (reference_stores.cc).
void bind_reference_stores(nb::module_& m);
// The GPUs, nvCOMP and cuFile as `zarrflow doctor` reports them (cuda_info.cc).
void bind_cuda_info(nb::module_& m);

namespace {

// The exception class zarrflow.errors maps each code to.
const char* exception_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgumentError";
    case ErrorCode::kInvalidMetadata:
      return "MetadataError";
    case ErrorCode::kNotFound:
      return "NodeNotFoundError";
    case ErrorCode::kUnimplemented:
      return "UnsupportedError";
    case ErrorCode::kCorruptData:
      return "CorruptChunkError";
    case ErrorCode::kChecksumMismatch:
      return "ChecksumError";
    case ErrorCode::kIoError:
      return "StoreIOError";
    case ErrorCode::kPathEscape:
      return "PathEscapeError";
    case ErrorCode::kOutOfRange:
      return "ZarrflowIndexError";
    case ErrorCode::kResourceExhausted:
      return "ZarrflowMemoryError";
    default:
      return "ZarrflowError";
  }
}

// Thread pool plus scratch-buffer pool: the resources one or many arrays read with.
struct Executor {
  Executor(std::size_t threads, int nice) : pool(threads, nice) {}
  ThreadPool pool;
  BufferPool buffers;
};

nb::tuple to_tuple(const Shape& s) {
  nb::list l;
  for (auto v : s) l.append(v);
  return nb::tuple(l);
}

Selection to_selection(const std::vector<std::int64_t>& start,
                       const std::vector<std::int64_t>& count,
                       const std::vector<std::int64_t>& step) {
  return {start, count, step};
}

using AnyArray = nb::ndarray<nb::device::cpu>;

nb::dict lru_stats(const LruStats& s) {
  nb::dict d;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["entries"] = s.entries;
  d["evictions"] = s.evictions;
  d["bytes"] = s.bytes;
  d["budget"] = s.budget;
  return d;
}

ReadOptions read_options(Executor* exec) {
  ReadOptions opts;
  if (exec != nullptr) {
    opts.pool = &exec->pool;
    opts.buffers = &exec->buffers;
  }
  return opts;
}

// Transport counters of a remote store (requests, retries, bytes, requests in flight).
nb::dict http_stats(const HttpStore& s) {
  const HttpCounters& c = s.client().counters();
  nb::dict d;
  d["requests"] = c.requests.load();
  d["retries"] = c.retries.load();
  d["bytes"] = c.bytes.load();
  d["in_flight"] = c.in_flight.load();
  d["max_in_flight"] = c.max_in_flight.load();
  d["io_threads"] = s.io_threads();
  return d;
}

// Array::read on host memory with the GIL released; raises on failure.
void host_read(const Array& arr, const Selection& sel, const StridedView& view, Executor* exec) {
  Status s;
  {
    nb::gil_scoped_release release;
    s = arr.read(sel, view, read_options(exec));
  }
  throw_if_error(std::move(s));
}

// A C-contiguous tensor of `arr`'s dtype over `data`, kept alive by `owner`.
std::shared_ptr<py::TensorState> tensor_state(const Array& arr, const Shape& shape, void* data,
                                              std::shared_ptr<void> owner, int device_type,
                                              int device_id) {
  auto st = std::make_shared<py::TensorState>();
  st->data = data;
  st->owner = std::move(owner);
  st->shape = shape;
  st->strides = c_strides(shape, 1);
  st->dtype = arr.dtype();
  st->device_type = device_type;
  st->device_id = device_id;
  return st;
}

void read_into(const Array& arr, const std::vector<std::int64_t>& start,
               const std::vector<std::int64_t>& count, const std::vector<std::int64_t>& step,
               AnyArray out, Executor* exec) {
  // Elements travel as themselves, or (raw types of odd sizes) as a trailing axis of bytes.
  const std::size_t nd = arr.shape().size();
  const std::size_t elem = arr.dtype().size;
  const bool byte_axis =
      out.ndim() == nd + 1 && out.itemsize() == 1 && out.shape(nd) == elem && out.stride(nd) == 1;
  if (!byte_axis && out.itemsize() != elem)
    throw StatusError(invalid_argument("out has " + std::to_string(out.itemsize()) +
                                       "-byte elements, the array has " + std::to_string(elem)));
  if (!byte_axis && out.ndim() != nd)
    throw StatusError(invalid_argument("out has " + std::to_string(out.ndim()) +
                                       " dimensions, the array has " + std::to_string(nd)));
  StridedView view;
  view.data = static_cast<std::byte*>(out.data());
  for (std::size_t i = 0; i < nd; ++i) {
    view.shape.push_back(static_cast<std::int64_t>(out.shape(i)));
    view.strides.push_back(static_cast<std::int64_t>(out.stride(i)) *
                           static_cast<std::int64_t>(out.itemsize()));
  }
  host_read(arr, to_selection(start, count, step), view, exec);
}

// read_vlen with the GIL released; raises on failure.
VlenData vlen_read(const Array& arr, const Selection& sel, Executor* exec) {
  Result<VlenData> r = VlenData{};
  {
    nb::gil_scoped_release release;
    r = read_vlen(arr, sel, read_options(exec));
  }
  return value_or_throw(std::move(r));
}

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (auto x : v) n *= x;
  return n;
}

// Reads into new host memory and returns it as a DLPack-exportable Tensor.
py::Tensor read_host_tensor(const Array& arr, const Selection& sel, Executor* exec) {
  const std::size_t elem = arr.dtype().size;
  auto buf = std::make_shared<Buffer>(
      static_cast<std::size_t>(std::max<std::int64_t>(product(sel.count), 1)) * elem);
  StridedView view{buf->data(), sel.count, c_strides(sel.count, static_cast<std::int64_t>(elem))};
  host_read(arr, sel, view, exec);
  return py::Tensor{tensor_state(arr, sel.count, buf->data(), buf, /*device_type=*/1, 0)};
}

#ifdef ZARRFLOW_HAVE_CUDA
// The read report as a dict (every counter; see gpu::DeviceReadReport).
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

gpu::DeviceReader& device_reader() {
  static auto* reader = new gpu::DeviceReader();  // process lifetime: pools outlive every tensor
  return *reader;
}

cudaStream_t zarrflow_stream(int device) {
  static std::mutex mu;
  static std::vector<cudaStream_t> streams;
  std::lock_guard lock(mu);
  if (streams.size() <= static_cast<std::size_t>(device)) streams.resize(device + 1, nullptr);
  if (streams[device] == nullptr)
    cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking);
  return streams[device];
}

cudaStream_t as_stream(std::uintptr_t s) {
  if (s == 1) return cudaStreamLegacy;
  if (s == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(s);
}

// Device tensors go back to the pool only after the streams that consumed them have passed the
// point of release (see tensor.h).
void release_via_pool(py::TensorState& st, int device) {
  st.release_after = [device](std::shared_ptr<void> owner,
                              const std::vector<std::uintptr_t>& consumers) {
    int before = -1;
    const bool switched = cudaGetDevice(&before) == cudaSuccess && before != device &&
                          cudaSetDevice(device) == cudaSuccess;
    std::vector<cudaStream_t> streams;
    // The per-thread default stream of the releasing thread is not the consumer's: the legacy
    // stream waits for every blocking stream, that one included.
    for (auto c : consumers) streams.push_back(c == 2 ? cudaStreamLegacy : as_stream(c));
    device_reader().device_pool().release_after(std::move(owner), streams);
    if (switched) cudaSetDevice(before);
  };
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

nb::tuple read_device_tensor(const Array& arr, const Selection& sel, int device,
                             std::optional<std::uintptr_t> stream, const std::string& decode,
                             const std::string& io, Executor* exec) {
  gpu::DeviceReadOptions opts;
  opts.decode = decode == "on"    ? gpu::GpuDecode::kOn
                : decode == "off" ? gpu::GpuDecode::kOff
                                  : gpu::GpuDecode::kAuto;
  opts.io = io == "cufile"   ? gpu::IoPath::kCuFile
            : io == "direct" ? gpu::IoPath::kDirect
            : io == "pinned" ? gpu::IoPath::kPinned
                             : gpu::IoPath::kAuto;
  const ReadOptions host = read_options(exec);
  opts.pool = host.pool;
  opts.buffers = host.buffers;
  const std::size_t elem = arr.dtype().size;
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(product(sel.count), 1)) * elem;
  gpu::DeviceReadReport report;
  std::shared_ptr<gpu::GpuBuffer> buf;
  std::shared_ptr<gpu::Event> ready;
  Status s;
  {
    nb::gil_scoped_release release;
    s = [&]() -> Status {
      Status kernels = gpu::device_available(device);
      if (!kernels.ok() && (opts.decode == gpu::GpuDecode::kOn || !gpu::device_present(device).ok()))
        return kernels;
      ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
      opts.stream = stream ? as_stream(*stream) : zarrflow_stream(device);
      ZF_ASSIGN_OR_RETURN(gpu::GpuBuffer b, device_reader().device_pool().acquire(bytes));
      buf = std::make_shared<gpu::GpuBuffer>(std::move(b));
      if (!kernels.ok()) {
        ZF_RETURN_IF_ERROR(
            read_on_host_and_copy(arr, sel, buf->data(), bytes, opts.stream, exec, &report));
        report.notes.push_back(kernels.message() + "; decoded on the CPU and copied to the GPU");
      } else {
        StridedView view{buf->data(), sel.count,
                         c_strides(sel.count, static_cast<std::int64_t>(elem))};
        ZF_RETURN_IF_ERROR(device_reader().read(arr, sel, view, opts, &report));
      }
      ZF_ASSIGN_OR_RETURN(gpu::Event e, gpu::Event::create());
      ready = std::make_shared<gpu::Event>(std::move(e));
      ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(ready->get(), opts.stream));
      return {};
    }();
  }
  throw_if_error(std::move(s));
  auto st = tensor_state(arr, sel.count, buf->data(), buf, /*device_type=*/2, device);
  release_via_pool(*st, device);
  st->wait_on = [ready](std::uintptr_t consumer) {
    cudaStreamWaitEvent(as_stream(consumer), ready->get(), 0);
  };
  nb::dict r = report_dict(report);
  return nb::make_tuple(py::Tensor{st}, r);
}
#endif

// A new C-contiguous tensor (host, or pooled device memory).
py::Tensor empty_tensor(const std::vector<std::int64_t>& shape, const std::string& dtype,
                        const std::string& device, int device_id) {
  const DataType t = value_or_throw(parse_v3_data_type(dtype));
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(product(shape), 1)) * t.size;
  auto st = std::make_shared<py::TensorState>();
  st->shape = shape;
  st->strides = c_strides(shape, 1);
  st->dtype = t;
  if (device == "cpu") {
    auto buf = std::make_shared<Buffer>(bytes);
    st->data = buf->data();
    st->owner = buf;
    st->device_type = 1;
    return py::Tensor{st};
  }
#ifdef ZARRFLOW_HAVE_CUDA
  use_device(device_id);
  // A loader's batch: under zarrflow's memory limit, other reads' pieces give memory back soon.
  // Without the GIL while it waits: the consumer thread may be the one to drop a batch.
  Result<gpu::GpuBuffer> got = [&] {
    nb::gil_scoped_release unlocked;
    return device_reader().device_pool().acquire_waiting(bytes, gpu::kLimitWaitMs);
  }();
  auto buf = std::make_shared<gpu::GpuBuffer>(value_or_throw(std::move(got)));
  st->data = buf->data();
  st->owner = buf;
  st->device_type = 2;
  st->device_id = device_id;
  release_via_pool(*st, device_id);
  return py::Tensor{st};
#else
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

// CF decoding of one array's elements for read_batch: (packed, scale_factor, add_offset, raw
// values to mask as the source type's bits); see core/normalize.h.
using CfDecoding = std::tuple<bool, double, double, std::vector<std::uint64_t>>;

// The element transform of every request: the array's source type and CF decoding, the row's
// mean and std, the target's type.
std::vector<ElementTransform> element_transforms(std::span<const ReadRequest> reqs,
                                                 const std::vector<std::shared_ptr<Array>>& arrays,
                                                 const std::int64_t* table, std::size_t cols,
                                                 const float* mean_std, const DataType& target,
                                                 const std::optional<std::vector<CfDecoding>>& cf) {
  const OutType type = target.kind == DTypeKind::kBFloat16                    ? OutType::kBFloat16
                       : target.kind == DTypeKind::kFloat && target.size == 2 ? OutType::kFloat16
                       : target.kind == DTypeKind::kFloat && target.size == 4 ? OutType::kFloat32
                                                                              : OutType::kStored;
  if (type == OutType::kStored)
    throw StatusError(
        invalid_argument("read_batch: a normalised batch is float32, bfloat16 or "
                         "float16, not " +
                         target.v3_name()));
  if (cf && cf->size() != arrays.size())
    throw StatusError(invalid_argument("read_batch: decode needs one entry per array"));
  std::vector<ElementTransform> per_array(arrays.size());
  for (std::size_t a = 0; a < arrays.size(); ++a) {
    ElementTransform& tf = per_array[a];
    const auto in = in_type_of(arrays[a]->dtype());
    if (!in)
      throw StatusError(invalid_argument(arrays[a]->describe() + " has data type " +
                                         arrays[a]->dtype().v3_name() +
                                         ": batches read numeric types (int8..int64, "
                                         "uint8..uint64, float16/32/64, bfloat16)"));
    tf.out = type;
    tf.in = *in;
    if (!cf) continue;
    const auto& [packed, scale, offset, masks] = (*cf)[a];
    tf.packed = packed ? 1 : 0;
    tf.scale = scale;
    tf.offset = offset;
    for (std::uint64_t bits : masks)
      if (!add_mask(tf, bits))
        throw StatusError(invalid_argument(arrays[a]->describe() + ": more than " +
                                           std::to_string(kMaxMasks) + " values to mask"));
  }
  std::vector<ElementTransform> out(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const float sd = mean_std[2 * i + 1];
    if (!(sd > 0.f))
      throw StatusError(
          invalid_argument("read_batch: std must be positive (request " + std::to_string(i) + ")"));
    out[i] = per_array[std::size_t(table[i * cols])];
    out[i].mean = mean_std[2 * i];
    out[i].inv_std = 1.f / sd;  // 1 / std in float32, on both paths
  }
  return out;
}

// Host reads with an element transform: each request is read into a scratch block of the
// array's type (in the reading thread's cache) and transformed from there into its destination.
Status read_many_transformed(std::span<const ReadRequest> reqs,
                             std::span<const ElementTransform> tfs, const ReadOptions& options,
                             std::uint64_t* nans) {
  ThreadPool* pool = options.pool;  // as read_many: a remote store's requests on its I/O pool
  if (!reqs.empty() && reqs.front().array->store().io_pool() != nullptr)
    pool = reqs.front().array->store().io_pool();
  std::atomic<std::uint64_t> found{0};
  Status s = parallel_for(pool, reqs.size(), [&](std::size_t i) -> Status {
    const ReadRequest& r = reqs[i];
    const std::int64_t elem = in_type_size(tfs[i].in);
    std::int64_t n = 1;
    for (auto c : r.region.count) n *= c;
    if (n == 0) return {};
    Buffer block = options.buffers != nullptr ? options.buffers->acquire(std::size_t(n * elem))
                                              : Buffer(std::size_t(n * elem));
    const StridedView staged{block.data(), r.region.count, c_strides(r.region.count, elem)};
    ZF_RETURN_IF_ERROR(r.array->read(r.region, staged, options));
    found += normalize_cast_strided(block.data(), r.dest.data, int(r.dest.shape.size()),
                                    r.dest.shape.data(), r.dest.strides.data(), tfs[i]);
    return {};
  });
  *nans = found.load();
  return s;
}

// Reads many regions into one target tensor. GPU targets go through one DeviceReader pipeline
// (chunks shared by several requests fetched and decoded once); host targets through read_many.
// `requests` is one row per region, int64: [array index, ndim, destination offset (elements),
// start[D], count[D], step[D], destination strides (elements)[D]] with D = (columns - 3) / 4 and
// the first `ndim` of each group used. A table, not a list of tuples: the loader's workers build
// and pass thousands of regions per batch, and parsing Python objects would hold the GIL the
// training thread needs for milliseconds.
// `normalize`, float32, one (mean, std) row per region: the target receives
// cast((f - mean) / std) in its own dtype (float32, bfloat16, float16), where f is the element
// CF-decoded as `decode` says (one CfDecoding per array; none: f = the element as float32),
// computed as the chunks are copied in (ElementTransform, core/normalize.h), and the report
// counts the NaNs of f.
nb::dict read_batch(const nb::list& arrays,
                    const nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>&
                        requests,
                    const py::Tensor& target, std::optional<std::uintptr_t> stream,
                    const std::string& decode, const std::string& io, Executor* exec,
                    nb::handle cache, nb::handle host_cache, Executor* decode_exec,
                    double host_share,
                    std::optional<nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>>
                        normalize,
                    std::uint64_t batch_bytes, ShardIndexCache* shard_indexes,
                    const std::optional<std::vector<CfDecoding>>& decoding) {
  const auto& st = *target.state;
  const std::int64_t elem = st.dtype.size;
  if (decoding && !normalize)
    throw StatusError(invalid_argument("read_batch: decode needs normalize"));
  std::vector<std::shared_ptr<Array>> keep;
  keep.reserve(arrays.size());
  for (nb::handle h : arrays) {
    auto arr = nb::cast<std::shared_ptr<Array>>(h);
    if (!normalize && arr->dtype().size != st.dtype.size)
      throw StatusError(
          invalid_argument(arr->describe() + " has " + std::to_string(arr->dtype().size) +
                           "-byte elements, the batch " + std::to_string(st.dtype.size)));
    keep.push_back(std::move(arr));
  }
  const std::size_t rows = requests.shape(0), cols = requests.shape(1);
  if (cols < 3 || (cols - 3) % 4 != 0)
    throw StatusError(invalid_argument("read_batch: a request row has 3 + 4 x D columns, got " +
                                       std::to_string(cols)));
  const std::size_t D = (cols - 3) / 4;
  const std::int64_t target_elems = std::max<std::int64_t>(product(st.shape), 1);
  const std::int64_t* t = requests.data();
  std::vector<ReadRequest> reqs(rows);
  for (std::size_t i = 0; i < rows; ++i, t += cols) {
    const std::int64_t a = t[0], nd = t[1];
    if (a < 0 || std::size_t(a) >= keep.size() || nd < 0 || std::size_t(nd) > D ||
        std::size_t(nd) != keep[std::size_t(a)]->shape().size())
      throw StatusError(invalid_argument("read_batch: request " + std::to_string(i) +
                                         " names array " + std::to_string(a) + " with " +
                                         std::to_string(nd) + " dimensions"));
    ReadRequest& r = reqs[i];
    r.array = keep[std::size_t(a)].get();
    const auto col = [&](std::size_t group) {
      return Shape(t + 3 + group * D, t + 3 + group * D + nd);
    };
    r.region = {col(0), col(1), col(2)};
    r.dest.data = static_cast<std::byte*>(st.data) + t[2] * elem;
    r.dest.shape = r.region.count;
    r.dest.strides = col(3);
    std::int64_t last = t[2];  // the region's last element in the target must lie inside it
    for (std::size_t d = 0; d < r.dest.shape.size(); ++d)
      last += (std::max<std::int64_t>(r.dest.shape[d], 1) - 1) * r.dest.strides[d];
    if (t[2] < 0 || last >= target_elems)
      throw StatusError(invalid_argument("read_batch: request " + std::to_string(i) +
                                         " writes outside the " + std::to_string(target_elems) +
                                         "-element target"));
    for (auto& x : r.dest.strides) x *= elem;
  }
  if (normalize && (normalize->shape(0) != rows || normalize->shape(1) != 2))
    throw StatusError(invalid_argument("read_batch: normalize needs one (mean, std) row per "
                                       "request"));
  std::vector<ElementTransform> transforms;
  if (normalize)
    transforms = element_transforms(reqs, keep, requests.data(), cols, normalize->data(), st.dtype,
                                    decoding);
  nb::dict out;
  Status s;
  if (st.device_type == 1) {
    ReadOptions host = read_options(exec);
    host.shard_indexes = shard_indexes;
    std::uint64_t nans = 0;
    {
      nb::gil_scoped_release release;
      s = transforms.empty() ? read_many(reqs, host)
                             : read_many_transformed(reqs, transforms, host, &nans);
    }
    throw_if_error(std::move(s));
    if (!transforms.empty()) out["nans"] = nans;
    return out;
  }
#ifdef ZARRFLOW_HAVE_CUDA
  gpu::DeviceReadOptions opts;
  opts.decode = decode == "on"    ? gpu::GpuDecode::kOn
                : decode == "off" ? gpu::GpuDecode::kOff
                                  : gpu::GpuDecode::kAuto;
  opts.io = io == "direct" ? gpu::IoPath::kDirect : gpu::IoPath::kAuto;
  if (!cache.is_none()) opts.cache = nb::cast<gpu::ChunkCache*>(cache);
  if (!host_cache.is_none()) opts.host_cache = nb::cast<gpu::ChunkCache*>(host_cache);
  if (decode_exec != nullptr) opts.decode_pool = &decode_exec->pool;
  if (!(host_share >= 0.0 && host_share <= 1.0))
    throw StatusError(invalid_argument("host_share must be in [0, 1]"));
  opts.host_share = host_share;
  opts.batch_bytes = batch_bytes;  // 0: chosen per codec (gpu::DeviceReadOptions)
  if (!transforms.empty()) opts.transforms = transforms;
  const ReadOptions host = read_options(exec);
  opts.pool = host.pool;
  opts.buffers = host.buffers;
  opts.shard_indexes = shard_indexes;
  gpu::DeviceReadReport report;
  {
    nb::gil_scoped_release release;
    s = [&]() -> Status {
      ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(st.device_id));
      opts.stream = stream ? as_stream(*stream) : zarrflow_stream(st.device_id);
      return device_reader().read_many(reqs, opts, &report);
    }();
  }
  throw_if_error(std::move(s));
  out = report_dict(report);
  return out;
#else
  (void)decode;
  (void)io;
  (void)stream;
  (void)cache;
  (void)host_cache;
  (void)decode_exec;
  (void)host_share;
  (void)normalize;
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

nb::object wrap_node(Node node) {
  if (auto* a = std::get_if<std::shared_ptr<Array>>(&node)) return nb::cast(*a);
  return nb::cast(std::get<std::shared_ptr<Group>>(node));
}

}  // namespace
}  // namespace zarrflow

NB_MODULE(_core, m) {
  using namespace zarrflow;
  m.doc() = "zarrflow C++ core (internal; use the zarrflow package)";
  // Arrays, loaders and thread pools held by user code's module globals can outlive this module's
  // teardown at interpreter exit; that is harmless, so nanobind's leak report is noise here.
  nb::set_leak_warnings(false);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object errors = nb::module_::import_("zarrflow.errors");
      nb::object cls = errors.attr(exception_name(e.status.code()));
      // With its length: a message may hold a NUL byte (a key read from a listing or metadata),
      // which a C string would cut off.
      const std::string& msg = e.status.message();
      nb::object text = nb::steal(PyUnicode_DecodeUTF8(
          msg.data(), static_cast<Py_ssize_t>(msg.size()), "backslashreplace"));
      if (!text.is_valid()) {
        PyErr_Clear();
        text = nb::str("(undecodable message)");
      }
      PyErr_SetObject(cls.ptr(), text.ptr());
    }
  });

  py::bind_tensor(m);
  py::install_python_codecs();

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

  bind_cuda_info(m);

  m.def("empty_tensor", &empty_tensor, "shape"_a, "dtype"_a, "device"_a, "device_id"_a = 0);
  m.def("read_batch", &read_batch, "arrays"_a, "requests"_a, "target"_a, "stream"_a = nb::none(),
        "gpu_decode"_a = "auto", "io"_a = "auto", "executor"_a = nb::none(), "cache"_a = nb::none(),
        "host_cache"_a = nb::none(), "decode_executor"_a = nb::none(), "host_share"_a = 0.0,
        "normalize"_a = nb::none(), "batch_bytes"_a = 0, "shard_indexes"_a = nb::none(),
        "decode"_a = nb::none());
  nb::class_<ShardIndexCache>(m, "ShardIndexCache",
                              "Shard indexes kept across reads (the store must not change)")
      .def(nb::init<std::uint64_t>(), "budget_bytes"_a)
      .def("clear", &ShardIndexCache::clear)
      .def("stats", [](const ShardIndexCache& c) { return lru_stats(c.stats()); });
#ifdef ZARRFLOW_HAVE_CUDA
  nb::class_<gpu::ChunkCache>(m, "ChunkCache",
                              "Compressed chunks kept across reads (GPU or pinned host memory)")
      .def(nb::init<std::uint64_t>(), "budget_bytes"_a)
      .def("clear", &gpu::ChunkCache::clear)
      .def("stats", [](const gpu::ChunkCache& c) { return lru_stats(c.stats()); });
  nb::class_<StreamHandle>(m, "Stream", "A non-blocking CUDA stream of zarrflow's own.")
      .def(nb::init<int>(), "device"_a = 0)
      .def_prop_ro("handle",
                   [](const StreamHandle& s) { return reinterpret_cast<std::uintptr_t>(s.stream.get()); })
      .def_ro("device", &StreamHandle::device);
  m.def("pool_stats", []() {
    nb::dict d;
    for (auto [name, pool] : {std::pair{"device", &device_reader().device_pool()},
                              std::pair{"pinned", &device_reader().pinned_pool()}}) {
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
    d["device_limit"] = device_reader().device_pool().limit();
    d["device_pending_releases"] = device_reader().device_pool().pending_releases();
    return d;
  });
  m.def("pool_set_limit", [](std::size_t bytes) { device_reader().device_pool().set_limit(bytes); },
        "bytes"_a, "Bounds the GPU memory zarrflow's pool holds (in use and idle); 0 = none.");
  m.def("device_memory", [](int device) {
    int before = -1;
    const bool had = cudaGetDevice(&before) == cudaSuccess;
    use_device(device);
    std::size_t free = 0, total = 0;
    const cudaError_t err = cudaMemGetInfo(&free, &total);
    if (had && before != device) cudaSetDevice(before);  // the caller's current GPU stays
    if (err != cudaSuccess) throw_if_error(gpu::cuda_status(err, "cudaMemGetInfo"));
    return nb::make_tuple(free, total);
  }, "device"_a, "(free, total) bytes of the GPU's memory (cudaMemGetInfo).");
  m.def("pool_trim", []() {
    return device_reader().device_pool().trim() + device_reader().pinned_pool().trim();
  }, "Frees the idle memory zarrflow's GPU and pinned pools keep for reuse; returns the bytes.");
#endif
  m.def("tensor_event_wait", [](const py::Tensor& t, std::uintptr_t stream) {
    if (t.state->wait_on) t.state->wait_on(stream);
  });

  nb::class_<Executor>(m, "Executor")
      .def(nb::init<std::size_t, int>(), "threads"_a, "nice"_a = 0)
      .def_prop_ro("threads", [](const Executor& e) { return e.pool.size(); })
      .def_prop_ro("requested_threads", [](const Executor& e) { return e.pool.requested(); })
      .def_prop_ro("start_error", [](const Executor& e) { return e.pool.start_error(); })
      .def_prop_ro("nice", [](const Executor& e) { return e.pool.nice(); });

  nb::class_<Store>(m, "Store")
      .def("describe_key", &Store::describe_key)
      .def(
          "get",
          [](const Store& s, const std::string& key, std::uint64_t max_size) -> nb::object {
            Result<std::optional<Buffer>> r = std::optional<Buffer>();
            {
              nb::gil_scoped_release release;
              r = s.get(key, max_size);
            }
            auto v = value_or_throw(std::move(r));
            if (!v) return nb::none();
            return nb::bytes(reinterpret_cast<const char*>(v->data()), v->size());
          },
          "key"_a, "max_size"_a = Store::kNoLimit);
  nb::class_<FileStore, Store>(m, "FileStore");
  m.def("open_file_store", [](const std::string& root) -> std::shared_ptr<Store> {
    return value_or_throw(FileStore::open(root));
  });
  nb::class_<HttpStore, Store>(m, "HttpStore")
      .def("stats", &http_stats)
      .def("reset_stats", [](const HttpStore& s) { s.client().reset_counters(); })
      .def("list", [](const HttpStore& s, const std::string& prefix) {
        std::vector<ListEntry> entries;
        {
          nb::gil_scoped_release release;
          entries = value_or_throw(s.list(prefix));
        }
        nb::list out;
        for (const auto& e : entries) out.append(nb::make_tuple(e.key, e.size));
        return out;
      });
  m.def("open_remote_store", [](const std::string& config_json) -> std::shared_ptr<Store> {
    return value_or_throw(HttpStore::open_json(config_json));
  });
  bind_reference_stores(m);  // after Store, which its classes derive from

  nb::class_<Array>(m, "Array")
      .def_prop_ro("path", &Array::path)
      .def_prop_ro("description", &Array::describe)
      .def("remote_stats",
           [](const Array& a) -> nb::object {
             const auto* http = dynamic_cast<const HttpStore*>(&a.store());
             return http ? nb::object(http_stats(*http)) : nb::none();
           })
      .def("reset_remote_stats",
           [](const Array& a) {
             if (const auto* http = dynamic_cast<const HttpStore*>(&a.store()))
               http->client().reset_counters();
           })
      .def_prop_ro("zarr_format", [](const Array& a) { return a.metadata().zarr_format; })
      .def_prop_ro("shape", [](const Array& a) { return to_tuple(a.shape()); })
      .def_prop_ro("dtype", [](const Array& a) { return numpy_dtype_string(a.metadata()); })
      .def_prop_ro("dtype_name", [](const Array& a) { return a.metadata().dtype_json; })
      .def_prop_ro("chunks", [](const Array& a) { return to_tuple(a.read_chunk_shape()); })
      .def_prop_ro("grid_chunks", [](const Array& a) { return to_tuple(a.metadata().chunk_shape); })
      .def_prop_ro("shards",
                   [](const Array& a) -> nb::object {
                     auto s = a.shard_shape();
                     return s ? nb::object(to_tuple(*s)) : nb::none();
                   })
      .def_prop_ro("fill_value_bytes",
                   [](const Array& a) {
                     const auto& f = a.metadata().fill_value;
                     return nb::bytes(reinterpret_cast<const char*>(f.data()), f.size());
                   })
      .def_prop_ro("fill_value_is_null",
                   [](const Array& a) { return a.metadata().fill_value_json.is_null(); })
      .def_prop_ro("dims",
                   [](const Array& a) -> nb::object {
                     const auto& d = a.metadata().dimension_names;
                     if (!d) return nb::none();
                     nb::list l;
                     for (const auto& n : *d)
                       l.append(n ? nb::object(nb::str(n->c_str())) : nb::none());
                     return nb::tuple(l);
                   })
      .def_prop_ro("attrs_json", &Array::attributes_json)
      .def_prop_ro("codecs_json", [](const Array& a) { return a.metadata().codecs_json.dump(); })
      .def_prop_ro("metadata_json", &Array::metadata_json)
      .def_prop_ro("codecs_description", [](const Array& a) { return a.codecs().describe(); })
      .def("chunk_key",
           [](const Array& a, const std::vector<std::int64_t>& c) { return a.chunk_key(c); })
      .def("read_into", &read_into, "start"_a, "count"_a, "step"_a, "out"_a,
           "executor"_a = nb::none())
      .def(
          "read_vlen_objects",
          [](const Array& a, const std::vector<std::int64_t>& start,
             const std::vector<std::int64_t>& count, const std::vector<std::int64_t>& step,
             Executor* exec) {
            return py::vlen_objects(vlen_read(a, {start, count, step}, exec),
                                    a.dtype().kind == DTypeKind::kVlenString);
          },
          "start"_a, "count"_a, "step"_a, "executor"_a = nb::none())
      .def(
          "read_vlen",
          [](const Array& a, const std::vector<std::int64_t>& start,
             const std::vector<std::int64_t>& count, const std::vector<std::int64_t>& step,
             Executor* exec) { return py::vlen_buffers(vlen_read(a, {start, count, step}, exec)); },
          "start"_a, "count"_a, "step"_a, "executor"_a = nb::none())
      .def(
          "read_host_tensor",
          [](const Array& a, const std::vector<std::int64_t>& start,
             const std::vector<std::int64_t>& count, const std::vector<std::int64_t>& step,
             Executor* exec) {
            return read_host_tensor(a, {start, count, step}, exec);
          },
          "start"_a, "count"_a, "step"_a, "executor"_a = nb::none())
      .def(
          "read_device_tensor",
          [](const Array& a, const std::vector<std::int64_t>& start,
             const std::vector<std::int64_t>& count, const std::vector<std::int64_t>& step,
             int device, std::optional<std::uintptr_t> stream, const std::string& decode,
             const std::string& io, Executor* exec) -> nb::tuple {
#ifdef ZARRFLOW_HAVE_CUDA
            return read_device_tensor(a, {start, count, step}, device, stream, decode, io, exec);
#else
             throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
          },
          "start"_a, "count"_a, "step"_a, "device"_a, "stream"_a, "gpu_decode"_a, "io"_a,
          "executor"_a = nb::none())
      .def("storage_info", [](const Array& a) {
        StorageInfo info;
        {
          nb::gil_scoped_release release;
          info = value_or_throw(a.storage_info());
        }
        nb::dict d;
        d["chunks_total"] = info.chunks_total;
        d["chunks_present"] = info.chunks_present;
        d["stored_bytes"] = info.stored_bytes;
        return d;
      });

  nb::class_<Group>(m, "Group")
      .def_prop_ro("path", &Group::path)
      .def_prop_ro("zarr_format", [](const Group& g) { return g.metadata().zarr_format; })
      .def_prop_ro("attrs_json", [](const Group& g) { return g.metadata().attributes.dump(); })
      .def_prop_ro("consolidated",
                   [](const Group& g) { return g.metadata().consolidated.has_value(); })
      .def("member_names",
           [](const Group& g) {
             Result<std::vector<std::string>> r = std::vector<std::string>{};
             {
               nb::gil_scoped_release release;  // may list a remote store
               r = g.member_names();
             }
             return value_or_throw(std::move(r));
           })
      .def("open_member", [](const Group& g, const std::string& name) {
        Result<Node> r = internal_error("unset");
        {
          nb::gil_scoped_release release;
          r = g.open_member(name);
        }
        return wrap_node(value_or_throw(std::move(r)));
      });

  m.def(
      "open_node",
      [](std::shared_ptr<Store> store, const std::string& path, std::optional<int> zarr_format,
         bool use_consolidated, std::optional<std::uint64_t> max_chunk_bytes,
         std::optional<std::uint64_t> max_metadata_bytes,
         std::optional<std::size_t> max_metadata_depth) {
        OpenLimits limits;
        if (max_chunk_bytes) limits.max_chunk_bytes = *max_chunk_bytes;
        if (max_metadata_bytes) limits.metadata.max_bytes = *max_metadata_bytes;
        if (max_metadata_depth) limits.metadata.max_depth = *max_metadata_depth;
        Result<Node> r = internal_error("unset");
        {
          nb::gil_scoped_release release;  // metadata reads may go over the network
          r = open_node(store, path, zarr_format, limits);
        }
        Node node = value_or_throw(std::move(r));
        // use_consolidated=False: members listed and opened from the store, not the metadata copy.
        if (auto* g = std::get_if<std::shared_ptr<Group>>(&node);
            g != nullptr && !use_consolidated && (*g)->metadata().consolidated) {
          GroupMetadata md = (*g)->metadata();
          md.consolidated.reset();
          node = std::make_shared<Group>(std::move(store), path, std::move(md), limits);
        }
        return wrap_node(std::move(node));
      },
      "store"_a, "path"_a = "", "zarr_format"_a = nb::none(), "use_consolidated"_a = true,
      "max_chunk_bytes"_a = nb::none(), "max_metadata_bytes"_a = nb::none(),
      "max_metadata_depth"_a = nb::none());
}
