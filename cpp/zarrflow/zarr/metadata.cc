#include "zarrflow/zarr/metadata.h"

#include <charconv>

#include "zarrflow/codec/registry.h"
#include "zarrflow/codec/transpose.h"
#include "zarrflow/zarr/dtype_json.h"
#include "zarrflow/zarr/fill_value.h"
#include "zarrflow/zarr/json_document.h"

namespace zarrflow {
namespace {

Result<Shape> parse_dims(const nlohmann::json& doc, const char* field, bool chunks) {
  auto it = doc.find(field);
  if (it == doc.end())
    return invalid_metadata(std::string("missing required field '") + field + "'");
  const auto& a = *it;
  auto wrong = [&] {
    return invalid_metadata(std::string("field '") + field + "' must be an array of " +
                            (chunks ? "positive" : "non-negative") + " integers, got " + a.dump());
  };
  if (!a.is_array()) return wrong();
  if (a.size() > static_cast<std::size_t>(kMaxDims))
    return unimplemented(std::string("field '") + field + "' has " + std::to_string(a.size()) +
                         " dimensions; zarrflow reads at most " + std::to_string(kMaxDims));
  Shape s;
  for (const auto& x : a) {
    if (x.is_number_unsigned()) {
      const auto u = x.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX))
        return invalid_metadata(std::string("field '") + field + "': " + x.dump() +
                                " overflows 64 bits");
      s.push_back(static_cast<std::int64_t>(u));
    } else if (x.is_number_integer()) {
      s.push_back(x.get<std::int64_t>());
    } else {
      return wrong();
    }
    if (s.back() < 0 || (chunks && s.back() == 0)) return wrong();
  }
  return s;
}

// Rejects shapes whose element count or byte size does not fit in 64 bits.
Status check_sizes(const Shape& shape, const Shape& chunks, const DataType& dtype) {
  if (!checked_product(shape, dtype.size).ok())
    return invalid_metadata("shape × itemsize (" + std::to_string(dtype.size) +
                            " bytes) overflows 64 bits");
  if (!checked_product(chunks, dtype.size).ok())
    return invalid_metadata("chunk shape × itemsize overflows 64 bits");
  if (chunks.size() != shape.size())
    return invalid_metadata("chunk shape has " + std::to_string(chunks.size()) +
                            " dimensions, the array has " + std::to_string(shape.size()));
  return {};
}

// A v3 extension point (data_type, chunk_grid, chunk_key_encoding): "name" or {"name", ...}.
Status split_extension(const nlohmann::json& v, const char* field, std::string& name,
                       nlohmann::json& cfg) {
  if (v.is_string()) {
    name = v.get<std::string>();
    cfg = nlohmann::json::object();
    return {};
  }
  if (v.is_object() && v.contains("name") && v["name"].is_string()) {
    name = v["name"].get<std::string>();
    cfg = v.value("configuration", nlohmann::json::object());
    if (!cfg.is_object())
      return invalid_metadata(std::string("'") + field + "' configuration must be an object");
    return {};
  }
  return invalid_metadata(std::string("field '") + field +
                          "' must be a name or an object with a 'name', got " + v.dump());
}

// Unknown top-level keys are fine only as extensions marked {"must_understand": false}.
Status check_extensions(const nlohmann::json& doc, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : doc.items()) {
    bool is_known = false;
    for (const char* k : known) is_known = is_known || key == k;
    if (is_known) continue;
    if (value.is_object() && value.contains("must_understand") && value["must_understand"] == false)
      continue;
    return unimplemented("unknown extension '" + key +
                         "' must be understood (it is not marked \"must_understand\": false)");
  }
  return {};
}

Status expect_format(const nlohmann::json& doc, int format) {
  if (!doc.is_object())
    return invalid_metadata("metadata must be a JSON object, got " + doc.dump().substr(0, 80));
  auto it = doc.find("zarr_format");
  if (it == doc.end()) return invalid_metadata("missing required field 'zarr_format'");
  if (!it->is_number_integer() || it->get<int>() != format)
    return invalid_metadata("field 'zarr_format' must be " + std::to_string(format) + ", got " +
                            it->dump());
  return {};
}

const nlohmann::json& member_or_null(const nlohmann::json& doc, const char* key) {
  static const nlohmann::json null_json;
  if (!doc.is_object()) return null_json;
  auto it = doc.find(key);
  return it == doc.end() ? null_json : *it;
}

// Runs a parser, turning a JSON type error that escaped it into kInvalidMetadata (the parsers
// check each field's type before reading it; this keeps a missed case from becoming an
// exception).
template <typename F>
auto guarded(F&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const nlohmann::json::exception& e) {
    return invalid_metadata(std::string("malformed metadata: ") + e.what());
  }
}

Result<nlohmann::json> attributes_of(const nlohmann::json& doc) {
  auto it = doc.find("attributes");
  if (it == doc.end() || it->is_null()) return nlohmann::json::object();
  if (!it->is_object()) return invalid_metadata("field 'attributes' must be an object");
  return *it;
}

}  // namespace

std::string ChunkKeyEncoding::key(const Shape& chunk) const {
  std::string k = kind == Kind::kDefault ? "c" : "";
  if (chunk.empty()) return kind == Kind::kDefault ? "c" : "0";
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    if (kind == Kind::kDefault || i > 0) k += separator;
    k += std::to_string(chunk[i]);
  }
  return k;
}

std::optional<Shape> ChunkKeyEncoding::parse(std::string_view key, std::size_t ndim) const {
  if (ndim == 0)
    return key == (kind == Kind::kDefault ? "c" : "0") ? std::optional(Shape{}) : std::nullopt;
  if (kind == Kind::kDefault) {
    if (key.size() < 2 || key[0] != 'c' || key[1] != separator) return std::nullopt;
    key.remove_prefix(2);
  }
  Shape out;
  while (true) {
    const std::size_t end = std::min(key.find(separator), key.size());
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(key.data(), key.data() + end, v);
    if (ec != std::errc() || p != key.data() + end || end == 0 || v < 0) return std::nullopt;
    out.push_back(v);
    if (end == key.size()) break;
    key.remove_prefix(end + 1);
  }
  if (out.size() != ndim) return std::nullopt;
  return out;
}

Result<nlohmann::json> parse_json(std::string_view text) {
  return parse_json_document(text, JsonLimits{});
}

namespace {

Result<ArrayMetadata> unguarded_parse_array_v3(const nlohmann::json& doc) {
  ZF_RETURN_IF_ERROR(expect_format(doc, 3));
  if (doc.value("node_type", nlohmann::json()) != "array")
    return invalid_metadata("field 'node_type' must be \"array\"");
  ZF_RETURN_IF_ERROR(check_extensions(
      doc, {"zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding",
            "fill_value", "codecs", "attributes", "dimension_names", "storage_transformers"}));
  ArrayMetadata md;
  md.zarr_format = 3;
  md.raw = doc;
  ZF_ASSIGN_OR_RETURN(md.shape, parse_dims(doc, "shape", false));

  if (!doc.contains("data_type")) return invalid_metadata("missing required field 'data_type'");
  std::string name;
  nlohmann::json cfg;
  ZF_RETURN_IF_ERROR(split_extension(doc["data_type"], "data_type", name, cfg));
  ZF_ASSIGN_OR_RETURN(ParsedDataType parsed, parse_v3_dtype(doc["data_type"]));
  md.dtype = parsed.dtype;
  md.dtype_fields = std::move(parsed.fields);
  md.dtype_json = name;

  if (!doc.contains("chunk_grid")) return invalid_metadata("missing required field 'chunk_grid'");
  ZF_RETURN_IF_ERROR(split_extension(doc["chunk_grid"], "chunk_grid", name, cfg));
  if (name != "regular") return unimplemented("chunk_grid '" + name + "' is not supported");
  ZF_ASSIGN_OR_RETURN(md.chunk_shape, parse_dims(cfg, "chunk_shape", true));
  ZF_RETURN_IF_ERROR(check_sizes(md.shape, md.chunk_shape, md.dtype));

  if (!doc.contains("chunk_key_encoding"))
    return invalid_metadata("missing required field 'chunk_key_encoding'");
  ZF_RETURN_IF_ERROR(split_extension(doc["chunk_key_encoding"], "chunk_key_encoding", name, cfg));
  if (name == "default") {
    md.key_encoding = {ChunkKeyEncoding::Kind::kDefault, '/'};
  } else if (name == "v2") {
    md.key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
  } else {
    return unimplemented("chunk_key_encoding '" + name + "' is not supported");
  }
  if (cfg.contains("separator")) {
    const auto& sep = cfg["separator"];
    if (sep != "/" && sep != ".")
      return invalid_metadata("chunk_key_encoding separator must be \"/\" or \".\", got " +
                              sep.dump());
    md.key_encoding.separator = sep.get<std::string>()[0];
  }

  if (!doc.contains("fill_value")) return invalid_metadata("missing required field 'fill_value'");
  md.fill_value_json = doc["fill_value"];
  ZF_ASSIGN_OR_RETURN(md.fill_value, parse_fill_value(md.fill_value_json, md.dtype, 3));

  if (!doc.contains("codecs")) return invalid_metadata("missing required field 'codecs'");
  md.codecs_json = doc["codecs"];
  if (!md.codecs_json.is_array()) return invalid_metadata("field 'codecs' must be an array");
  ZF_ASSIGN_OR_RETURN(md.attributes, attributes_of(doc));

  if (auto it = doc.find("dimension_names"); it != doc.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != md.shape.size())
      return invalid_metadata("field 'dimension_names' must be an array of " +
                              std::to_string(md.shape.size()) + " names or nulls, got " +
                              it->dump());
    std::vector<std::optional<std::string>> names;
    for (const auto& n : *it) {
      if (n.is_null()) {
        names.emplace_back();
      } else if (n.is_string()) {
        names.emplace_back(n.get<std::string>());
      } else {
        return invalid_metadata("field 'dimension_names' entries must be strings or null, got " +
                                n.dump());
      }
    }
    md.dimension_names = std::move(names);
  }
  if (auto it = doc.find("storage_transformers"); it != doc.end()) {
    if (!it->is_array()) return invalid_metadata("field 'storage_transformers' must be an array");
    if (!it->empty())
      return unimplemented("storage transformers are not supported (" + it->dump() + ")");
  }
  return md;
}

Result<ArrayMetadata> unguarded_parse_array_v2(const nlohmann::json& doc,
                                               const nlohmann::json& zattrs) {
  ZF_RETURN_IF_ERROR(expect_format(doc, 2));
  ArrayMetadata md;
  md.zarr_format = 2;
  md.raw = {{".zarray", doc}, {".zattrs", zattrs}};
  ZF_ASSIGN_OR_RETURN(md.shape, parse_dims(doc, "shape", false));
  ZF_ASSIGN_OR_RETURN(md.chunk_shape, parse_dims(doc, "chunks", true));

  auto dt = doc.find("dtype");
  if (dt == doc.end()) return invalid_metadata("missing required field 'dtype'");
  const auto compressor = doc.value("compressor", nlohmann::json());
  const auto filters = doc.value("filters", nlohmann::json());
  ZF_ASSIGN_OR_RETURN(ParsedDataType parsed,
                      parse_v2_dtype(*dt, v2_object_codec(filters, compressor)));
  md.dtype_json = dt->is_string() ? dt->get<std::string>() : dt->dump();
  md.dtype = parsed.dtype;
  md.dtype_fields = std::move(parsed.fields);
  md.v2_endian = parsed.endian;
  ZF_RETURN_IF_ERROR(check_sizes(md.shape, md.chunk_shape, md.dtype));

  std::string order = "C";
  if (auto it = doc.find("order"); it != doc.end()) {
    if (*it != "C" && *it != "F")
      return invalid_metadata("field 'order' must be \"C\" or \"F\", got " + it->dump());
    order = it->get<std::string>();
  }
  md.v2_order = order[0];

  md.key_encoding = {ChunkKeyEncoding::Kind::kV2, '.'};
  if (auto it = doc.find("dimension_separator"); it != doc.end() && !it->is_null()) {
    if (*it != "." && *it != "/")
      return invalid_metadata("field 'dimension_separator' must be \".\" or \"/\", got " +
                              it->dump());
    md.key_encoding.separator = it->get<std::string>()[0];
  }

  md.fill_value_json = doc.value("fill_value", nlohmann::json());
  ZF_ASSIGN_OR_RETURN(md.fill_value, parse_fill_value(md.fill_value_json, md.dtype, 2));

  if (!compressor.is_null() &&
      !(compressor.is_object() && compressor.contains("id") && compressor["id"].is_string()))
    return invalid_metadata("field 'compressor' must be null or an object with an 'id', got " +
                            compressor.dump());
  if (!filters.is_null() && !filters.is_array())
    return invalid_metadata("field 'filters' must be null or an array, got " + filters.dump());
  md.codecs_json = {
      {"compressor", compressor}, {"filters", filters}, {"order", order}, {"dtype", md.dtype_json}};

  if (!zattrs.is_null() && !zattrs.is_object())
    return invalid_metadata(".zattrs must be a JSON object");
  md.attributes = zattrs.is_object() ? zattrs : nlohmann::json::object();
  if (auto it = md.attributes.find("_ARRAY_DIMENSIONS"); it != md.attributes.end()) {
    if (it->is_array() && it->size() == md.shape.size() &&
        std::all_of(it->begin(), it->end(), [](const auto& n) { return n.is_string(); })) {
      std::vector<std::optional<std::string>> names;
      for (const auto& n : *it) names.emplace_back(n.template get<std::string>());
      md.dimension_names = std::move(names);
    }
  }
  return md;
}

Result<GroupMetadata> unguarded_parse_group_v3(const nlohmann::json& doc) {
  ZF_RETURN_IF_ERROR(expect_format(doc, 3));
  if (doc.value("node_type", nlohmann::json()) != "group")
    return invalid_metadata("field 'node_type' must be \"group\"");
  ZF_RETURN_IF_ERROR(
      check_extensions(doc, {"zarr_format", "node_type", "attributes", "consolidated_metadata"}));
  GroupMetadata g;
  g.zarr_format = 3;
  ZF_ASSIGN_OR_RETURN(g.attributes, attributes_of(doc));
  if (auto it = doc.find("consolidated_metadata"); it != doc.end() && !it->is_null()) {
    if (!it->is_object() || it->value("kind", nlohmann::json()) != "inline" ||
        !it->contains("metadata") || !(*it)["metadata"].is_object())
      return invalid_metadata(
          "field 'consolidated_metadata' must be {\"kind\": \"inline\", "
          "\"metadata\": {...}}");
    g.consolidated = (*it)["metadata"];
  }
  return g;
}

Result<GroupMetadata> unguarded_parse_group_v2(const nlohmann::json& zgroup,
                                               const nlohmann::json& zattrs,
                                               const nlohmann::json* zmetadata) {
  ZF_RETURN_IF_ERROR(expect_format(zgroup, 2));
  GroupMetadata g;
  g.zarr_format = 2;
  if (!zattrs.is_null() && !zattrs.is_object())
    return invalid_metadata(".zattrs must be a JSON object");
  if (zattrs.is_object()) g.attributes = zattrs;
  if (zmetadata != nullptr) {
    if (!zmetadata->is_object() || !zmetadata->contains("metadata") ||
        !(*zmetadata)["metadata"].is_object())
      return invalid_metadata(".zmetadata must be {\"metadata\": {...}}");
    // Regroup "a/b/.zarray" keys into {"a/b": {".zarray": ...}}.
    nlohmann::json by_node = nlohmann::json::object();
    for (const auto& [key, doc] : (*zmetadata)["metadata"].items()) {
      const auto slash = key.rfind('/');
      const std::string node = slash == std::string::npos ? "" : key.substr(0, slash);
      const std::string file = slash == std::string::npos ? key : key.substr(slash + 1);
      if (node.empty()) continue;  // the group's own .zgroup/.zattrs
      by_node[node][file] = doc;
    }
    g.consolidated = std::move(by_node);
  }
  return g;
}

}  // namespace

Result<ArrayMetadata> parse_array_v3(const nlohmann::json& doc) {
  return guarded([&] { return unguarded_parse_array_v3(doc); });
}

Result<ArrayMetadata> parse_array_v2(const nlohmann::json& zarray, const nlohmann::json& zattrs) {
  return guarded([&] { return unguarded_parse_array_v2(zarray, zattrs); });
}

Result<GroupMetadata> parse_group_v3(const nlohmann::json& doc) {
  return guarded([&] { return unguarded_parse_group_v3(doc); });
}

Result<GroupMetadata> parse_group_v2(const nlohmann::json& zgroup, const nlohmann::json& zattrs,
                                     const nlohmann::json* zmetadata) {
  return guarded([&] { return unguarded_parse_group_v2(zgroup, zattrs, zmetadata); });
}

std::string numpy_dtype_string(const ArrayMetadata& md) {
  if (md.dtype.kind == DTypeKind::kStructured && md.dtype_fields.is_array())
    return md.dtype_fields.dump();
  return md.dtype.numpy_str();
}

Result<CodecChain> build_codec_chain(const ArrayMetadata& md) {
  const ChunkSpec spec{md.dtype, md.chunk_shape, md.fill_value};
  if (md.zarr_format == 3) return CodecChain::from_v3_json(md.codecs_json, spec);

  std::vector<std::shared_ptr<const Codec>> codecs;
  if (md.v2_order == 'F' && md.chunk_shape.size() > 1) {
    std::vector<std::int64_t> order;
    for (std::size_t i = md.chunk_shape.size(); i-- > 0;)
      order.push_back(static_cast<std::int64_t>(i));
    ZF_ASSIGN_OR_RETURN(auto t, make_transpose(std::move(order), md.chunk_shape.size()));
    codecs.push_back(std::move(t));
  }
  const nlohmann::json& filters = member_or_null(md.codecs_json, "filters");
  const nlohmann::json& compressor = member_or_null(md.codecs_json, "compressor");
  // Object arrays: the object codec (a filter, or the compressor) turns elements into bytes, in
  // place of the `bytes` codec; only bytes→bytes filters may follow it.
  const std::string object =
      md.dtype.is_variable_length() ? v2_object_codec(filters, compressor) : std::string();
  if (object.empty()) {
    nlohmann::json bytes_cfg = nlohmann::json::object();
    if (md.v2_endian != Endian::kNotApplicable)
      bytes_cfg["endian"] = md.v2_endian == Endian::kBig ? "big" : "little";
    ZF_ASSIGN_OR_RETURN(auto bytes, CodecRegistry::v3().create("bytes", bytes_cfg, spec));
    codecs.push_back(std::move(bytes));
  }
  bool object_seen = object.empty();
  auto add_v2 = [&](const nlohmann::json& cfg, const char* role) -> Status {
    if (!cfg.is_object() || !cfg.contains("id") || !cfg["id"].is_string())
      return invalid_metadata(std::string(role) + " must be an object with an 'id', got " +
                              cfg.dump());
    const std::string id = cfg["id"].get<std::string>();
    if (!object_seen && id != object)
      return unimplemented(std::string(role) + " '" + id + "' before the object codec '" + object +
                           "' is not supported");
    object_seen = object_seen || id == object;
    auto made = CodecRegistry::v2().create(id, cfg, spec);
    if (!made.ok()) return std::move(made).take_status().annotate(role);
    codecs.push_back(std::move(made).value());
    return {};
  };
  if (filters.is_array())
    for (const auto& f : filters) ZF_RETURN_IF_ERROR(add_v2(f, "filter"));
  if (!compressor.is_null()) ZF_RETURN_IF_ERROR(add_v2(compressor, "compressor"));
  return CodecChain::from_codecs(std::move(codecs), spec);
}

}  // namespace zarrflow
