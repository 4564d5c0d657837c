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
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "zarrflow/store/file_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow {
namespace {

// Carries a failed Status across the C++/Python boundary.
struct StatusError : std::exception {
  explicit StatusError(Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return status.message().c_str(); }
  Status status;
};

void throw_if_error(Status s) {
  if (!s.ok()) throw StatusError(std::move(s));
}

template <typename T>
T value_or_throw(Result<T> r) {
  if (!r.ok()) throw StatusError(std::move(r).take_status());
  return std::move(r).value();
}

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
    default:
      return "ZarrflowError";
  }
}

// Thread pool plus scratch-buffer pool: the resources one or many arrays read with.
struct Executor {
  explicit Executor(std::size_t threads) : pool(threads) {}
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
  ReadOptions opts;
  if (exec != nullptr) {
    opts.pool = &exec->pool;
    opts.buffers = &exec->buffers;
  }
  Status s;
  {
    nb::gil_scoped_release release;
    s = arr.read(to_selection(start, count, step), view, opts);
  }
  throw_if_error(std::move(s));
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

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object errors = nb::module_::import_("zarrflow.errors");
      nb::object cls = errors.attr(exception_name(e.status.code()));
      PyErr_SetString(cls.ptr(), e.status.message().c_str());
    }
  });

  nb::class_<Executor>(m, "Executor")
      .def(nb::init<std::size_t>(), "threads"_a)
      .def_prop_ro("threads", [](const Executor& e) { return e.pool.size(); });

  nb::class_<Store>(m, "Store")
      .def("describe_key", &Store::describe_key)
      .def("get", [](const Store& s, const std::string& key) -> nb::object {
        auto v = value_or_throw(s.get(key));
        if (!v) return nb::none();
        return nb::bytes(reinterpret_cast<const char*>(v->data()), v->size());
      });
  nb::class_<FileStore, Store>(m, "FileStore");
  m.def("open_file_store", [](const std::string& root) -> std::shared_ptr<Store> {
    return value_or_throw(FileStore::open(root));
  });

  nb::class_<Array>(m, "Array")
      .def_prop_ro("path", &Array::path)
      .def_prop_ro("zarr_format", [](const Array& a) { return a.metadata().zarr_format; })
      .def_prop_ro("shape", [](const Array& a) { return to_tuple(a.shape()); })
      .def_prop_ro("dtype", [](const Array& a) { return a.dtype().numpy_str(); })
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
      .def_prop_ro("attrs_json", [](const Array& a) { return a.metadata().attributes.dump(); })
      .def_prop_ro("codecs_json", [](const Array& a) { return a.metadata().codecs_json.dump(); })
      .def_prop_ro("metadata_json", [](const Array& a) { return a.metadata().raw.dump(); })
      .def_prop_ro("codecs_description", [](const Array& a) { return a.codecs().describe(); })
      .def("chunk_key",
           [](const Array& a, const std::vector<std::int64_t>& c) { return a.chunk_key(c); })
      .def("read_into", &read_into, "start"_a, "count"_a, "step"_a, "out"_a,
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
      .def("member_names", [](const Group& g) { return value_or_throw(g.member_names()); })
      .def("open_member", [](const Group& g, const std::string& name) {
        return wrap_node(value_or_throw(g.open_member(name)));
      });

  m.def(
      "open_node",
      [](std::shared_ptr<Store> store, const std::string& path, std::optional<int> zarr_format) {
        return wrap_node(value_or_throw(open_node(std::move(store), path, zarr_format)));
      },
      "store"_a, "path"_a = "", "zarr_format"_a = nb::none());
}
