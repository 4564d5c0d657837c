// Arrays and groups: opening nodes, their metadata, and reads into host memory (NumPy arrays,
// new tensors, variable-length elements) or GPU memory (gpu.cc). Reads release the GIL.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "gpu.h"
#include "status_error.h"
#include "tensor.h"
#include "vlen.h"
#include "zarrflow/zarr/hierarchy.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow::py {
namespace {

using AnyArray = nb::ndarray<nb::device::cpu>;
using Coords = std::vector<std::int64_t>;

// Array::read on host memory with the GIL released; raises on failure.
void host_read(const Array& arr, const Selection& sel, const StridedView& view, Executor* exec) {
  Status s;
  {
    nb::gil_scoped_release release;
    s = arr.read(sel, view, read_options(exec));
  }
  throw_if_error(std::move(s));
}

void read_into(const Array& arr, const Coords& start, const Coords& count, const Coords& step,
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
  host_read(arr, {start, count, step}, view, exec);
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

// Reads into new host memory and returns it as a DLPack-exportable Tensor.
py::Tensor read_host_tensor(const Array& arr, const Selection& sel, Executor* exec) {
  const std::size_t elem = arr.dtype().size;
  auto buf = std::make_shared<Buffer>(
      static_cast<std::size_t>(std::max<std::int64_t>(product(sel.count), 1)) * elem);
  StridedView view{buf->data(), sel.count, c_strides(sel.count, static_cast<std::int64_t>(elem))};
  host_read(arr, sel, view, exec);
  auto st = std::make_shared<TensorState>();
  st->data = buf->data();
  st->owner = std::move(buf);
  st->shape = sel.count;
  st->strides = c_strides(sel.count, 1);
  st->dtype = arr.dtype();
  return py::Tensor{st};
}

nb::object wrap_node(Node node) {
  if (auto* a = std::get_if<std::shared_ptr<Array>>(&node)) return nb::cast(*a);
  return nb::cast(std::get<std::shared_ptr<Group>>(node));
}

nb::object open_node_py(std::shared_ptr<Store> store, const std::string& path,
                        std::optional<int> zarr_format, bool use_consolidated,
                        std::optional<std::uint64_t> max_chunk_bytes,
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
}

nb::object dims_of(const Array& a) {
  const auto& d = a.metadata().dimension_names;
  if (!d) return nb::none();
  nb::list l;
  for (const auto& n : *d) l.append(n ? nb::object(nb::str(n->c_str())) : nb::none());
  return nb::tuple(l);
}

nb::dict storage_info_of(const Array& a) {
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
}

void bind_array_metadata(nb::class_<Array>& c) {
  c.def_prop_ro("path", &Array::path)
      .def_prop_ro("description", &Array::describe)
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
      .def_prop_ro("dims", &dims_of)
      .def_prop_ro("attrs_json", &Array::attributes_json)
      .def_prop_ro("codecs_json", [](const Array& a) { return a.metadata().codecs_json.dump(); })
      .def_prop_ro("metadata_json", &Array::metadata_json)
      .def_prop_ro("codecs_description", [](const Array& a) { return a.codecs().describe(); })
      .def("chunk_key", [](const Array& a, const Coords& c) { return a.chunk_key(c); })
      .def("storage_info", &storage_info_of)
      .def("remote_stats", [](const Array& a) { return remote_stats(a.store()); })
      .def("reset_remote_stats", [](const Array& a) { reset_remote_stats(a.store()); });
}

void bind_array_reads(nb::class_<Array>& c) {
  c.def("read_into", &read_into, "start"_a, "count"_a, "step"_a, "out"_a, "executor"_a = nb::none())
      .def(
          "read_vlen_objects",
          [](const Array& a, const Coords& start, const Coords& count, const Coords& step,
             Executor* exec) {
            return py::vlen_objects(vlen_read(a, {start, count, step}, exec),
                                    a.dtype().kind == DTypeKind::kVlenString);
          },
          "start"_a, "count"_a, "step"_a, "executor"_a = nb::none())
      .def(
          "read_vlen",
          [](const Array& a, const Coords& start, const Coords& count, const Coords& step,
             Executor* exec) {
            return py::vlen_buffers(vlen_read(a, {start, count, step}, exec));
          },
          "start"_a, "count"_a, "step"_a, "executor"_a = nb::none())
      .def(
          "read_host_tensor",
          [](const Array& a, const Coords& start, const Coords& count, const Coords& step,
             Executor* exec) {
            return read_host_tensor(a, {start, count, step}, exec);
          },
          "start"_a, "count"_a, "step"_a, "executor"_a = nb::none())
      .def(
          "read_device_tensor",
          [](const Array& a, const Coords& start, const Coords& count, const Coords& step,
             int device, std::optional<std::uintptr_t> stream, const std::string& decode,
             const std::string& io, Executor* exec, nb::handle reader) {
            return read_device_tensor(a, {start, count, step}, device, stream, decode, io, exec,
                                      reader);
          },
          "start"_a, "count"_a, "step"_a, "device"_a, "stream"_a, "gpu_decode"_a, "io"_a,
          "executor"_a = nb::none(), "reader"_a = nb::none());
}

std::vector<std::string> member_names(const Group& g) {
  Result<std::vector<std::string>> r = std::vector<std::string>{};
  {
    nb::gil_scoped_release release;  // may list a remote store
    r = g.member_names();
  }
  return value_or_throw(std::move(r));
}

nb::object open_member(const Group& g, const std::string& name) {
  Result<Node> r = internal_error("unset");
  {
    nb::gil_scoped_release release;
    r = g.open_member(name);
  }
  return wrap_node(value_or_throw(std::move(r)));
}

}  // namespace

ReadOptions read_options(Executor* exec) {
  ReadOptions opts;
  if (exec != nullptr) {
    opts.pool = &exec->pool;
    opts.buffers = &exec->buffers;
  }
  return opts;
}

void bind_executor(nb::module_& m) {
  nb::class_<Executor>(m, "Executor")
      .def(nb::init<std::size_t, int, std::vector<int>>(), "threads"_a, "nice"_a = 0,
           "cpus"_a = std::vector<int>{})
      .def_prop_ro("threads", [](const Executor& e) { return e.pool.size(); })
      .def_prop_ro("requested_threads", [](const Executor& e) { return e.pool.requested(); })
      .def_prop_ro("start_error", [](const Executor& e) { return e.pool.start_error(); })
      .def_prop_ro("nice", [](const Executor& e) { return e.pool.nice(); })
      .def_prop_ro("cpus", [](const Executor& e) { return e.pool.cpus(); })
      .def_prop_ro("cpu_error", [](const Executor& e) { return e.pool.cpu_error(); });
}

void bind_arrays(nb::module_& m) {
  nb::class_<Array> array(m, "Array");
  bind_array_metadata(array);
  bind_array_reads(array);
  nb::class_<Group>(m, "Group")
      .def_prop_ro("path", &Group::path)
      .def_prop_ro("zarr_format", [](const Group& g) { return g.metadata().zarr_format; })
      .def_prop_ro("attrs_json", [](const Group& g) { return g.metadata().attributes.dump(); })
      .def_prop_ro("consolidated",
                   [](const Group& g) { return g.metadata().consolidated.has_value(); })
      .def("member_names", &member_names)
      .def("open_member", &open_member);
  m.def("open_node", &open_node_py, "store"_a, "path"_a = "", "zarr_format"_a = nb::none(),
        "use_consolidated"_a = true, "max_chunk_bytes"_a = nb::none(),
        "max_metadata_bytes"_a = nb::none(), "max_metadata_depth"_a = nb::none());
}

}  // namespace zarrflow::py
