#include "zarrflow/zarr/hierarchy.h"

#include <set>

namespace zarrflow {
namespace {

// The JSON document stored at `key`, nullopt when absent.
Result<std::optional<nlohmann::json>> read_json(const Store& store, const std::string& key) {
  ZF_ASSIGN_OR_RETURN(auto value, store.get(key));
  if (!value) return std::optional<nlohmann::json>();
  const auto* p = reinterpret_cast<const char*>(value->data());
  auto doc = parse_json(std::string_view(p, value->size()));
  if (!doc.ok()) return std::move(doc).take_status().annotate("'" + store.describe_key(key) + "'");
  return std::optional(std::move(doc).value());
}

// Consolidated entries below `prefix` of a parent's map, re-keyed relative to it.
nlohmann::json sub_consolidated(const nlohmann::json& all, const std::string& prefix) {
  nlohmann::json out = nlohmann::json::object();
  const std::string p = prefix + "/";
  for (const auto& [key, doc] : all.items())
    if (key.size() > p.size() && key.compare(0, p.size(), p) == 0) out[key.substr(p.size())] = doc;
  return out;
}

Result<Node> node_from_v3(std::shared_ptr<const Store> store, const std::string& path,
                          const nlohmann::json& doc) {
  const std::string where = "'" + store->describe_key(join_key(path, "zarr.json")) + "'";
  if (!doc.is_object() || !doc.contains("node_type"))
    return invalid_metadata(where + ": missing required field 'node_type'");
  if (doc["node_type"] == "array") {
    auto md = parse_array_v3(doc);
    if (!md.ok()) return std::move(md).take_status().annotate(where);
    ZF_ASSIGN_OR_RETURN(auto arr, Array::open(std::move(store), path, std::move(md).value()));
    return Node(std::move(arr));
  }
  if (doc["node_type"] == "group") {
    auto md = parse_group_v3(doc);
    if (!md.ok()) return std::move(md).take_status().annotate(where);
    return Node(std::make_shared<Group>(std::move(store), path, std::move(md).value()));
  }
  return invalid_metadata(where + ": field 'node_type' must be \"array\" or \"group\", got " +
                          doc["node_type"].dump());
}

Result<Node> node_from_v2(std::shared_ptr<const Store> store, const std::string& path,
                          const nlohmann::json* zarray, const nlohmann::json* zgroup,
                          const nlohmann::json& zattrs, const nlohmann::json* zmetadata) {
  if (zarray != nullptr) {
    auto md = parse_array_v2(*zarray, zattrs);
    if (!md.ok())
      return std::move(md).take_status().annotate(
          "'" + store->describe_key(join_key(path, ".zarray")) + "'");
    ZF_ASSIGN_OR_RETURN(auto arr, Array::open(std::move(store), path, std::move(md).value()));
    return Node(std::move(arr));
  }
  auto md = parse_group_v2(*zgroup, zattrs, zmetadata);
  if (!md.ok())
    return std::move(md).take_status().annotate(
        "'" + store->describe_key(join_key(path, ".zgroup")) + "'");
  return Node(std::make_shared<Group>(std::move(store), path, std::move(md).value()));
}

// Rebuilds a node from a parent's consolidated entry.
Result<Node> node_from_consolidated(std::shared_ptr<const Store> store, const std::string& path,
                                    int zarr_format, const nlohmann::json& entry,
                                    const nlohmann::json& all, const std::string& rel) {
  if (zarr_format == 3) {
    nlohmann::json doc = entry;
    if (doc.is_object() && doc.value("node_type", nlohmann::json()) == "group") {
      // Carry the parent's knowledge of this subtree down as the child's consolidated metadata.
      doc["consolidated_metadata"] = {
          {"kind", "inline"}, {"must_understand", false}, {"metadata", sub_consolidated(all, rel)}};
    }
    return node_from_v3(std::move(store), path, doc);
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
    for (const auto& [key, files] : below.items())
      for (const auto& [file, doc] : files.items()) meta[key + "/" + file] = doc;
    zmeta = {{"metadata", meta}, {"zarr_consolidated_format", 1}};
  }
  return node_from_v2(std::move(store), path, zarray, zgroup, zattrs ? *zattrs : null_json,
                      zarray == nullptr ? &zmeta : nullptr);
}

}  // namespace

Result<Node> open_node(std::shared_ptr<const Store> store, const std::string& path,
                       std::optional<int> zarr_format) {
  ZF_RETURN_IF_ERROR(validate_key(path, /*allow_empty=*/true));
  if (!zarr_format || *zarr_format == 3) {
    ZF_ASSIGN_OR_RETURN(auto doc, read_json(*store, join_key(path, "zarr.json")));
    if (doc) return node_from_v3(std::move(store), path, *doc);
  }
  if (!zarr_format || *zarr_format == 2) {
    ZF_ASSIGN_OR_RETURN(auto zarray, read_json(*store, join_key(path, ".zarray")));
    ZF_ASSIGN_OR_RETURN(auto zgroup, zarray ? std::optional<nlohmann::json>()
                                            : read_json(*store, join_key(path, ".zgroup")));
    if (zarray || zgroup) {
      ZF_ASSIGN_OR_RETURN(auto zattrs, read_json(*store, join_key(path, ".zattrs")));
      std::optional<nlohmann::json> zmetadata;
      if (zgroup) {
        ZF_ASSIGN_OR_RETURN(zmetadata, read_json(*store, join_key(path, ".zmetadata")));
      }
      return node_from_v2(std::move(store), path, zarray ? &*zarray : nullptr,
                          zgroup ? &*zgroup : nullptr, zattrs ? *zattrs : nlohmann::json(),
                          zmetadata ? &*zmetadata : nullptr);
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
    return node_from_consolidated(store_, path, md_.zarr_format, *it, *md_.consolidated, rel);
  }
  return open_node(store_, path, md_.zarr_format);
}

}  // namespace zarrflow
