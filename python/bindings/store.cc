// Stores: the Store handle (describe_key, get), local directories and HTTP / S3 / GCS stores
// (python/zarrflow/_remote.py builds their configuration).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "status_error.h"
#include "zarrflow/store/file_store.h"
#include "zarrflow/store/http_store.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow::py {
namespace {

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

nb::object get_value(const Store& s, const std::string& key, std::uint64_t max_size) {
  Result<std::optional<Buffer>> r = std::optional<Buffer>();
  {
    nb::gil_scoped_release release;
    r = s.get(key, max_size);
  }
  auto v = value_or_throw(std::move(r));
  if (!v) return nb::none();
  return nb::bytes(reinterpret_cast<const char*>(v->data()), v->size());
}

nb::list list_entries(const HttpStore& s, const std::string& prefix) {
  std::vector<ListEntry> entries;
  {
    nb::gil_scoped_release release;
    entries = value_or_throw(s.list(prefix));
  }
  nb::list out;
  for (const auto& e : entries) out.append(nb::make_tuple(e.key, e.size));
  return out;
}

}  // namespace

nb::object remote_stats(const Store& store) {
  const auto* http = dynamic_cast<const HttpStore*>(&store);
  return http ? nb::object(http_stats(*http)) : nb::none();
}

void reset_remote_stats(const Store& store) {
  if (const auto* http = dynamic_cast<const HttpStore*>(&store)) http->client().reset_counters();
}

void bind_stores(nb::module_& m) {
  nb::class_<Store>(m, "Store")
      .def("describe_key", &Store::describe_key)
      .def("get", &get_value, "key"_a, "max_size"_a = Store::kNoLimit);
  nb::class_<FileStore, Store>(m, "FileStore");
  m.def("open_file_store", [](const std::string& root) -> std::shared_ptr<Store> {
    return value_or_throw(FileStore::open(root));
  });
  nb::class_<HttpStore, Store>(m, "HttpStore")
      .def("stats", &http_stats)
      .def("reset_stats", [](const HttpStore& s) { s.client().reset_counters(); })
      .def("list", &list_entries);
  m.def("open_remote_store", [](const std::string& config_json) -> std::shared_ptr<Store> {
    return value_or_throw(HttpStore::open_json(config_json));
  });
}

}  // namespace zarrflow::py
