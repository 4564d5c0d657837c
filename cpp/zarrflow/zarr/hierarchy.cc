#include "zarrflow/zarr/hierarchy.h"

#include <set>
#include <utility>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace zarrflow {
namespace {

// Runs a metadata step under a net for nlohmann's exceptions: a value of an unexpected JSON type
// that a parser reads without checking (`value("kind", std::string())` on a number) becomes
// kInvalidMetadata naming the file, not an exception crossing into the caller.
template <typename F>
auto json_errors_as_metadata(const std::string& where, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const nlohmann::json::exception& e) {
    return invalid_metadata(where + ": unexpected JSON value (" + e.what() + ")");
  }
}

// A metadata document as stored and as parsed.
struct Document {
  nlohmann::json json;
  std::string text;
};

// The JSON document stored at `key`, nullopt when absent.
Result<std::optional<Document>> read_json(const Store& store, const std::string& key,
                                          const JsonLimits& limits) {
  auto value = store.get(key, limits.max_bytes);
  if (!value.ok()) {
    Status s = std::move(value).take_status();
    // A whole-value read reports kCorruptData only for a value over the size asked for.
    if (s.code() == ErrorCode::kCorruptData)
      return invalid_metadata(s.message() + " (limit: max_metadata_bytes)");
    return s;
  }
  if (!*value) return std::optional<Document>();
  Document d;
  d.text.assign(reinterpret_cast<const char*>((*value)->data()), (*value)->size());
  value->reset();
  auto doc = parse_json_document(d.text, limits);
  if (!doc.ok()) return std::move(doc).take_status().annotate("'" + store.describe_key(key) + "'");
  d.json = std::move(doc).value();
  return std::optional(std::move(d));
}

// Gives the memory of a large document's freed DOM back to the operating system. The DOM is
// millions of small allocations; once freed, glibc keeps them in the heap (below whatever was
// allocated after them) and the process would go on holding gigabytes it no longer uses.
void release_freed_memory(std::size_t document_bytes) {
#ifdef __GLIBC__
  if (document_bytes >= (std::size_t{16} << 20)) malloc_trim(0);
#else
  (void)document_bytes;
#endif
}

// Consolidated entries below `prefix` of a parent's map, re-keyed relative to it.
nlohmann::json sub_consolidated(const nlohmann::json& all, const std::string& prefix) {
  nlohmann::json out = nlohmann::json::object();
  const std::string p = prefix + "/";
  for (const auto& [key, doc] : all.items())
    if (key.size() > p.size() && key.compare(0, p.size(), p) == 0) out[key.substr(p.size())] = doc;
  return out;
}

// `text`: the document as stored, when it was read from a file of its own (not from a parent's
// consolidated metadata); an array keeps it as its metadata_json().
Result<Node> node_from_v3(std::shared_ptr<const Store> store, const std::string& path,
                          nlohmann::json doc, std::string text, const OpenLimits& limits) {
  const std::string where = "'" + store->describe_key(join_key(path, "zarr.json")) + "'";
  return json_errors_as_metadata(where, [&]() -> Result<Node> {
    if (!doc.is_object() || !doc.contains("node_type"))
      return invalid_metadata(where + ": missing required field 'node_type'");
    if (doc["node_type"] == "array") {
      // The attributes are user data no array field depends on; the parser copies the document
      // (twice), so a large attributes tree is taken out first and handed over after.
      nlohmann::json attributes;
      if (auto it = doc.find("attributes"); !text.empty() && it != doc.end()) {
        if (!it->is_object() && !it->is_null())
          return invalid_metadata(where + ": field 'attributes' must be an object");
        attributes = std::exchange(*it, nlohmann::json::object());
      }
      auto md = parse_array_v3(doc);
      if (!md.ok()) return std::move(md).take_status().annotate(where);
      doc = nullptr;
      if (attributes.is_object()) md->attributes = std::move(attributes);
      ZF_ASSIGN_OR_RETURN(auto arr, Array::open(std::move(store), path, std::move(md).value(),
                                                limits, std::move(text)));
      return Node(std::move(arr));
    }
    if (doc["node_type"] == "group") {
      auto md = parse_group_v3(doc);
      if (!md.ok()) return std::move(md).take_status().annotate(where);
      return Node(std::make_shared<Group>(std::move(store), path, std::move(md).value(), limits));
    }
    return invalid_metadata(where + ": field 'node_type' must be \"array\" or \"group\", got " +
                            doc["node_type"].dump());
  });
}

// `text`: as in node_from_v3 (for arrays: {".zarray": ..., ".zattrs": ...} as stored).
Result<Node> node_from_v2(std::shared_ptr<const Store> store, const std::string& path,
                          const nlohmann::json* zarray, const nlohmann::json* zgroup,
                          const nlohmann::json& zattrs, const nlohmann::json* zmetadata,
                          std::string text, const OpenLimits& limits) {
  if (zarray != nullptr) {
    const std::string where = "'" + store->describe_key(join_key(path, ".zarray")) + "'";
    return json_errors_as_metadata(where, [&]() -> Result<Node> {
      auto md = parse_array_v2(*zarray, zattrs);
      if (!md.ok()) return std::move(md).take_status().annotate(where);
      ZF_ASSIGN_OR_RETURN(auto arr, Array::open(std::move(store), path, std::move(md).value(),
                                                limits, std::move(text)));
      return Node(std::move(arr));
    });
  }
  const std::string where = "'" + store->describe_key(join_key(path, ".zgroup")) + "'";
  return json_errors_as_metadata(where, [&]() -> Result<Node> {
    auto md = parse_group_v2(*zgroup, zattrs, zmetadata);
    if (!md.ok()) return std::move(md).take_status().annotate(where);
    return Node(std::make_shared<Group>(std::move(store), path, std::move(md).value(), limits));
  });
}

// Rebuilds a node from a parent's consolidated entry (`group` names the parent in errors).
Result<Node> node_from_consolidated(std::shared_ptr<const Store> store, const std::string& path,
                                    int zarr_format, const nlohmann::json& entry,
                                    const nlohmann::json& all, const std::string& rel,
                                    const OpenLimits& limits) {
  if (zarr_format == 3) {
    nlohmann::json doc = entry;
    const auto type = doc.is_object() ? doc.find("node_type") : doc.end();
    if (type != doc.end() && *type == "group") {
      // Carry the parent's knowledge of this subtree down as the child's consolidated metadata.
      doc["consolidated_metadata"] = {
          {"kind", "inline"}, {"must_understand", false}, {"metadata", sub_consolidated(all, rel)}};
    }
    return node_from_v3(std::move(store), path, std::move(doc), {}, limits);
  }
  const nlohmann::json null_json;
  const auto get = [&](const char* f) -> const nlohmann::json* {
    return entry.is_object() && entry.contains(f) ? &entry[f] : nullptr;
  };
  const nlohmann::json* zattrs = get(".zattrs");
  const nlohmann::json* zarray = get(".zarray");
  const nlohmann::json* zgroup = get(".zgroup");
  if (zarray == nullptr && zgroup == nullptr) return not_found("no Zarr node at '" + path + "'");
  nlohmann::json zmeta;
  if (zarray == nullptr) {
    // Re-express the subtree as a .zmetadata document for the child group.
    nlohmann::json meta = nlohmann::json::object();
    const nlohmann::json below = sub_consolidated(all, rel);  // must outlive the loop
    for (const auto& [key, files] : below.items()) {
      if (!files.is_object()) continue;  // not a node's documents: parse_group_v2 never saw it
      for (const auto& [file, doc] : files.items()) meta[key + "/" + file] = doc;
    }
    zmeta = {{"metadata", meta}, {"zarr_consolidated_format", 1}};
  }
  return node_from_v2(std::move(store), path, zarray, zgroup, zattrs ? *zattrs : null_json,
                      zarray == nullptr ? &zmeta : nullptr, {}, limits);
}

}  // namespace

Result<Node> open_node(std::shared_ptr<const Store> store, const std::string& path,
                       std::optional<int> zarr_format, const OpenLimits& limits) {
  ZF_RETURN_IF_ERROR(validate_key(path, /*allow_empty=*/true));
  const JsonLimits& json = limits.metadata;
  if (!zarr_format || *zarr_format == 3) {
    ZF_ASSIGN_OR_RETURN(auto doc, read_json(*store, join_key(path, "zarr.json"), json));
    if (doc) {
      const std::size_t bytes = doc->text.size();
      auto node =
          node_from_v3(std::move(store), path, std::move(doc->json), std::move(doc->text), limits);
      doc.reset();
      release_freed_memory(bytes);
      return node;
    }
  }
  if (!zarr_format || *zarr_format == 2) {
    ZF_ASSIGN_OR_RETURN(auto zarray, read_json(*store, join_key(path, ".zarray"), json));
    ZF_ASSIGN_OR_RETURN(auto zgroup, zarray ? std::optional<Document>()
                                            : read_json(*store, join_key(path, ".zgroup"), json));
    if (zarray || zgroup) {
      ZF_ASSIGN_OR_RETURN(auto zattrs, read_json(*store, join_key(path, ".zattrs"), json));
      std::optional<Document> zmetadata;
      if (zgroup) {
        ZF_ASSIGN_OR_RETURN(zmetadata, read_json(*store, join_key(path, ".zmetadata"), json));
      }
      std::string text;
      if (zarray)
        text = "{\".zarray\": " + zarray->text +
               ", \".zattrs\": " + (zattrs ? zattrs->text : std::string("{}")) + "}";
      const std::size_t bytes = (zarray ? zarray->text.size() : 0) +
                                (zattrs ? zattrs->text.size() : 0) +
                                (zmetadata ? zmetadata->text.size() : 0);
      auto node =
          node_from_v2(std::move(store), path, zarray ? &zarray->json : nullptr,
                       zgroup ? &zgroup->json : nullptr, zattrs ? zattrs->json : nlohmann::json(),
                       zmetadata ? &zmetadata->json : nullptr, std::move(text), limits);
      zarray.reset();
      zattrs.reset();
      zmetadata.reset();
      release_freed_memory(bytes);
      return node;
    }
  }
  return not_found("no Zarr array or group at " + store->describe_key(path));
}

Result<std::vector<std::string>> Group::member_names() const {
  std::set<std::string> names;
  if (md_.consolidated) {
    for (const auto& [key, doc] : md_.consolidated->items()) {
      ZF_RETURN_IF_ERROR_CTX(validate_key(key), "consolidated metadata of group '" +
                                                    store_->describe_key(path_) + "'");
      names.insert(key.substr(0, key.find('/')));
    }
    return std::vector<std::string>(names.begin(), names.end());
  }
  ZF_ASSIGN_OR_RETURN(auto children, store_->list_dir(path_));
  for (const auto& child : children) {
    if (child.empty() || child[0] == '.' || child == "zarr.json") continue;
    const std::string p = join_key(path_, child);
    for (const char* f : {"zarr.json", ".zarray", ".zgroup"}) {
      if (md_.zarr_format == 3 && f[0] == '.') continue;
      if (md_.zarr_format == 2 && f[0] == 'z') continue;
      ZF_ASSIGN_OR_RETURN(auto size, store_->size(join_key(p, f)));
      if (size) {
        names.insert(child);
        break;
      }
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Result<Node> Group::open_member(std::string_view name) const {
  const std::string rel(name);
  ZF_RETURN_IF_ERROR_CTX(validate_key(rel), "group '" + store_->describe_key(path_) + "'");
  const std::string path = join_key(path_, rel);
  if (md_.consolidated) {
    auto it = md_.consolidated->find(rel);
    if (it == md_.consolidated->end())
      return not_found("group '" + store_->describe_key(path_) + "' has no member '" + rel + "'");
    return node_from_consolidated(store_, path, md_.zarr_format, *it, *md_.consolidated, rel,
                                  limits_);
  }
  return open_node(store_, path, md_.zarr_format, limits_);
}

}  // namespace zarrflow
