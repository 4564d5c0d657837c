// A batch read (read_batch: the loader's read of one batch, for tests and tools) and the caches
// the loader keeps across batches. The request table is checked and turned into requests by
// pipeline/batch_request.h; GPU targets are read by the GpuReader's DeviceReader
// (pipeline/gpu/device_batch.h), host targets by pipeline/host_batch.h, as the loader's workers
// read them (engine.cc).
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "pipeline.h"

#include "bindings.h"
#include "gpu.h"
#include "status_error.h"
#include "tensor.h"
#include "zarrflow/pipeline/batch_request.h"
#include "zarrflow/pipeline/host_batch.h"
#include "zarrflow/pipeline/shard_index_cache.h"

#ifdef ZARRFLOW_HAVE_CUDA
#include "zarrflow/pipeline/gpu/device_batch.h"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow::py {
namespace {

using Table = nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// How a batch is read: everything read_batch takes besides the arrays, the table and the target.
struct BatchOptions {
  std::optional<std::uintptr_t> stream;
  std::string decode, io;
  Executor* exec = nullptr;
  nb::handle cache, host_cache;
  Executor* decode_exec = nullptr;
  double host_share = 0.0;
  std::uint64_t batch_bytes = 0;
  ShardIndexCache* shard_indexes = nullptr;
  nb::handle reader;
};

nb::dict read_on_host(const BatchRequests& batch, const BatchOptions& o) {
  ReadOptions host = read_options(o.exec);
  host.shard_indexes = o.shard_indexes;
  HostBatchReport report;
  Status s;
  {
    nb::gil_scoped_release release;
    s = read_batch_on_host(batch.requests, batch.transforms, host, &report);
  }
  throw_if_error(std::move(s));
  nb::dict out;
  out["chunks"] = report.chunks;
  out["missing"] = report.missing;
  out["gpu_decoded"] = 0;
  out["cpu_decoded"] = report.cpu_decoded;
  out["deduplicated"] = report.deduplicated;
  out["stored_bytes"] = report.stored_bytes;
  if (!batch.transforms.empty()) out["nans"] = report.nans;
  return out;
}

#ifdef ZARRFLOW_HAVE_CUDA
nb::dict read_on_gpu(const BatchRequests& batch, int device, const BatchOptions& o) {
  GpuReader& reader = reader_of(o.reader);
  gpu::DeviceReadOptions opts;
  opts.decode = parse_decode(o.decode);
  opts.io = parse_io(o.io);
  opts.cache = cache_of(o.cache, reader);
  opts.host_cache = cache_of(o.host_cache, reader);
  if (o.decode_exec != nullptr) opts.decode_pool = &o.decode_exec->pool;
  opts.host_share = o.host_share;
  opts.batch_bytes = o.batch_bytes;  // 0: chosen per codec (gpu::DeviceReadOptions)
  const ReadOptions host = read_options(o.exec);
  opts.pool = host.pool;
  opts.buffers = host.buffers;
  opts.shard_indexes = o.shard_indexes;
  gpu::DeviceReadReport report;
  Status s;
  {
    nb::gil_scoped_release release;
    s = [&]() -> Status {
      ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
      if (o.stream) {
        opts.stream = as_stream(*o.stream);
      } else {
        ZF_ASSIGN_OR_RETURN(opts.stream, reader.state->stream(device));
      }
      return gpu::read_batch_on_device(reader.state->reader, batch, opts, device, &report);
    }();
  }
  throw_if_error(std::move(s));
  return report_dict(report);
}
#endif

// Reads many regions into one target tensor (see pipeline/batch_request.h for the table). GPU
// targets go through one DeviceReader pipeline (chunks shared by several requests fetched and
// decoded once); host targets through the thread pool. `normalize`, float32, one (mean, std)
// row per region: the target receives cast((f - mean) / std) in its own dtype (float32,
// bfloat16, float16), where f is the element CF-decoded as `decode` says (one entry per array;
// none: f = the element as float32), computed as the chunks are copied in, and the report counts
// the NaNs of f.
nb::dict read_batch(const nb::list& arrays, const Table& table, const py::Tensor& target,
                    std::optional<MeanStd> normalize,
                    const std::optional<std::vector<CfTuple>>& decoding, const BatchOptions& o) {
  const auto& st = *target.state;
  std::vector<std::shared_ptr<Array>> keep;
  std::vector<const Array*> arrs;
  for (nb::handle h : arrays) {
    keep.push_back(nb::cast<std::shared_ptr<Array>>(h));
    arrs.push_back(keep.back().get());
  }
  BatchSource source;
  source.arrays = arrs;
  source.table = RequestTable{table.data(), table.shape(0), table.shape(1)};
  if (normalize) {
    if (normalize->shape(1) != 2)
      throw StatusError(
          invalid_argument("read_batch: normalize needs one (mean, std) row per request"));
    source.mean_std = std::span<const float>(normalize->data(), normalize->size());
  }
  const std::optional<std::vector<CfDecoding>> cf = cf_decoding(decoding);
  source.decoding = &cf;
  const BatchTarget to{static_cast<std::byte*>(st.data), st.shape, st.dtype};
  const BatchRequests batch = value_or_throw(batch_requests(source, to));
  if (st.device_type == 1) return read_on_host(batch, o);
#ifdef ZARRFLOW_HAVE_CUDA
  return read_on_gpu(batch, st.device_id, o);
#else
  throw StatusError(unimplemented("zarrflow was built without CUDA"));
#endif
}

}  // namespace

std::optional<std::vector<CfDecoding>> cf_decoding(const std::optional<std::vector<CfTuple>>& cf) {
  if (!cf) return std::nullopt;
  std::vector<CfDecoding> out;
  for (const auto& [packed, scale, offset, masks] : *cf)
    out.push_back({packed, scale, offset, masks});
  return out;
}

#ifdef ZARRFLOW_HAVE_CUDA
gpu::ChunkCache* cache_of(nb::handle h, const GpuReader& reader) {
  if (h.is_none()) return nullptr;
  auto& c = nb::cast<ChunkCacheHandle&>(h);
  if (c.reader != reader.state)
    throw StatusError(
        invalid_argument("read_batch: a chunk cache is used with the GpuReader it was made for"));
  return &c.cache;
}
#endif

void bind_pipeline(nb::module_& m) {
  m.def(
      "read_batch",
      [](const nb::list& arrays, const Table& requests, const py::Tensor& target,
         std::optional<std::uintptr_t> stream, const std::string& gpu_decode, const std::string& io,
         Executor* executor, nb::handle cache, nb::handle host_cache, Executor* decode_executor,
         double host_share, std::optional<MeanStd> normalize, std::uint64_t batch_bytes,
         ShardIndexCache* shard_indexes, const std::optional<std::vector<CfTuple>>& decode,
         nb::handle reader) {
        const BatchOptions o{stream,     gpu_decode,      io,         executor,    cache,
                             host_cache, decode_executor, host_share, batch_bytes, shard_indexes,
                             reader};
        return read_batch(arrays, requests, target, std::move(normalize), decode, o);
      },
      "arrays"_a, "requests"_a, "target"_a, "stream"_a = nb::none(), "gpu_decode"_a = "auto",
      "io"_a = "auto", "executor"_a = nb::none(), "cache"_a = nb::none(),
      "host_cache"_a = nb::none(), "decode_executor"_a = nb::none(), "host_share"_a = 0.0,
      "normalize"_a = nb::none(), "batch_bytes"_a = 0, "shard_indexes"_a = nb::none(),
      "decode"_a = nb::none(), "reader"_a = nb::none());
  nb::class_<ShardIndexCache>(m, "ShardIndexCache",
                              "Shard indexes kept across reads (the store must not change)")
      .def(nb::init<std::uint64_t>(), "budget_bytes"_a)
      .def("clear", &ShardIndexCache::clear)
      .def("stats", [](const ShardIndexCache& c) { return lru_stats(c.stats()); });
#ifdef ZARRFLOW_HAVE_CUDA
  nb::class_<ChunkCacheHandle>(m, "ChunkCache",
                               "Compressed chunks kept across reads (GPU or pinned host memory "
                               "of a GpuReader)")
      .def(
          "__init__",
          [](ChunkCacheHandle* self, std::uint64_t budget, nb::handle reader) {
            new (self) ChunkCacheHandle(budget, reader_of(reader).state);
          },
          "budget_bytes"_a, "reader"_a)
      .def("clear", [](ChunkCacheHandle& c) { c.cache.clear(); })
      .def("stats", [](const ChunkCacheHandle& c) { return lru_stats(c.cache.stats()); });
#endif
}

}  // namespace zarrflow::py
