// Bindings of the reference stores: Kerchunk reference sets and Icechunk repositories
// (python/zarrflow/_kerchunk.py and _icechunk.py build them from URLs and options).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "status_error.h"
#include "zarrflow/store/icechunk/icechunk_store.h"
#include "zarrflow/store/kerchunk_store.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow {
namespace {

using ContainerList = std::vector<std::pair<std::string, std::shared_ptr<Store>>>;

VirtualChunkContainers make_containers(const ContainerList& list) {
  VirtualChunkContainers c;
  for (const auto& [prefix, store] : list) throw_if_error(c.add(prefix, store));
  return c;
}

}  // namespace

void bind_reference_stores(nb::module_& m) {
  nb::class_<ReferenceStore, Store>(m, "ReferenceStore")
      .def("container_prefixes", [](const ReferenceStore& s) {
        std::vector<std::string> out;
        for (const auto& c : s.containers().containers()) out.push_back(c.url_prefix);
        return out;
      });

  nb::class_<KerchunkReferences>(m, "KerchunkReferences")
      .def_prop_ro("version", &KerchunkReferences::version)
      .def("urls", &KerchunkReferences::urls)
      .def("__len__", [](const KerchunkReferences& r) { return r.entries().size(); });
  m.def(
      "parse_kerchunk_json",
      [](const nb::bytes& text, const std::string& source) {
        std::string_view doc(text.c_str(), text.size());
        Result<std::shared_ptr<const KerchunkReferences>> r = internal_error("unset");
        {
          nb::gil_scoped_release release;
          r = KerchunkReferences::parse_json(doc, source);
        }
        return std::const_pointer_cast<KerchunkReferences>(value_or_throw(std::move(r)));
      },
      "text"_a, "source"_a);
  nb::class_<KerchunkStore, ReferenceStore>(m, "KerchunkStore");
  m.def(
      "open_kerchunk_store",
      [](std::shared_ptr<KerchunkReferences> refs,
         const ContainerList& containers) -> std::shared_ptr<Store> {
        return KerchunkStore::open(std::move(refs), make_containers(containers));
      },
      "references"_a, "containers"_a);

  using icechunk::IcechunkStore;
  using icechunk::Repository;
  nb::class_<Repository>(m, "IcechunkRepository")
      .def_prop_ro("spec_version", &Repository::spec_version)
      .def("branches", [](const Repository& r) { return value_or_throw(r.branches()); })
      .def("tags", [](const Repository& r) { return value_or_throw(r.tags()); })
      .def_prop_ro("config_json", [](const Repository& r) { return r.config().dump(); })
      .def("resolve", [](const Repository& r, const std::string& ref) {
        auto resolved = value_or_throw(r.resolve(ref));
        return nb::make_tuple(resolved.snapshot_id, resolved.kind, resolved.name);
      });
  m.def(
      "open_icechunk_repository",
      [](std::shared_ptr<Store> storage, std::optional<std::uint64_t> max_metadata_bytes,
         std::optional<std::uint64_t> max_manifest_bytes) {
        icechunk::IcechunkLimits limits;
        if (max_metadata_bytes) limits.max_metadata_bytes = *max_metadata_bytes;
        if (max_manifest_bytes) limits.max_manifest_bytes = *max_manifest_bytes;
        Result<std::shared_ptr<const Repository>> r = internal_error("unset");
        {
          nb::gil_scoped_release release;
          r = Repository::open(std::move(storage), limits);
        }
        return std::const_pointer_cast<Repository>(value_or_throw(std::move(r)));
      },
      "storage"_a, "max_metadata_bytes"_a = nb::none(), "max_manifest_bytes"_a = nb::none());
  nb::class_<IcechunkStore, ReferenceStore>(m, "IcechunkStore")
      .def_prop_ro("snapshot_id", [](const IcechunkStore& s) { return s.ref().snapshot_id; })
      .def_prop_ro("ref_kind", [](const IcechunkStore& s) { return s.ref().kind; })
      .def_prop_ro("ref_name", [](const IcechunkStore& s) { return s.ref().name; })
      .def_prop_ro("spec_version", &IcechunkStore::spec_version)
      .def_prop_ro("message", &IcechunkStore::message)
      .def_prop_ro("flushed_at_us", &IcechunkStore::flushed_at_us)
      .def_prop_ro("node_count", &IcechunkStore::node_count)
      .def_prop_ro("manifests_loaded", &IcechunkStore::manifests_loaded)
      .def("chunk_counts", [](const IcechunkStore& s, const std::string& path) {
        Result<icechunk::ChunkCounts> r = internal_error("unset");
        {
          nb::gil_scoped_release release;
          r = s.chunk_counts(path);
        }
        const auto c = value_or_throw(std::move(r));
        nb::dict d;
        d["native"] = c.native;
        d["inline"] = c.inline_;
        d["virtual"] = c.virtual_;
        return d;
      });
  m.def(
      "open_icechunk_store",
      [](std::shared_ptr<Repository> repo, const std::string& ref, const ContainerList& containers,
         const std::string& display) -> std::shared_ptr<Store> {
        auto c = make_containers(containers);
        Result<std::shared_ptr<IcechunkStore>> r = internal_error("unset");
        {
          nb::gil_scoped_release release;
          r = IcechunkStore::open(std::move(repo), ref, std::move(c), display);
        }
        return value_or_throw(std::move(r));
      },
      "repository"_a, "ref"_a, "containers"_a, "display"_a);
}

}  // namespace zarrflow
