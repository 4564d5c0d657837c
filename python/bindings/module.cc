// zarrflow._core: the thin nanobind layer over the C++ library, one file per concept (errors,
// tensor, store, array, gpu, pipeline, engine; bindings.h lists them). It exposes handles and a
// few read calls; the Pythonic API (indexing, dtypes, attrs as dicts, the Loader) lives in
// python/zarrflow/. Errors become exceptions from zarrflow.errors, chosen by Status code. Reads
// release the GIL. Nothing here is global: the GPU reader is an object Python holds (gpu.h).
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "python_codec.h"
#include "tensor.h"

namespace nb = nanobind;

namespace zarrflow::py {

nb::tuple to_tuple(const Shape& s) {
  nb::list l;
  for (auto v : s) l.append(v);
  return nb::tuple(l);
}

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

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (auto x : v) n *= x;
  return n;
}

}  // namespace zarrflow::py

NB_MODULE(_core, m) {
  using namespace zarrflow;
  m.doc() = "zarrflow C++ core (internal; use the zarrflow package)";
  // Arrays, loaders and thread pools held by user code's module globals can outlive this module's
  // teardown at interpreter exit; that is harmless, so nanobind's leak report is noise here.
  nb::set_leak_warnings(false);
  py::bind_errors(m);
  py::bind_tensor(m);
  py::install_python_codecs();
  py::bind_executor(m);
  py::bind_stores(m);
  bind_reference_stores(m);  // after Store, which its classes derive from
  py::bind_arrays(m);
  py::bind_gpu(m);
  py::bind_cuda_info(m);
  py::bind_pipeline(m);
  py::bind_engine(m);
}
