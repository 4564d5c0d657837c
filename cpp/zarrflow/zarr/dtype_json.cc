#include "zarrflow/zarr/dtype_json.h"

#include <set>

namespace zarrflow {
namespace {

// Structured types nest; deeper documents than this are refused rather than recursed into.
constexpr int kMaxNesting = 16;

constexpr const char* kObjectCodecs[] = {"vlen-utf8", "vlen-bytes", "vlen-array",
                                         "pickle",    "json2",      "msgpack2"};

std::string quoted(const nlohmann::json& v, std::size_t max = 120) {
  std::string s = v.dump();
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

// The non-negative integer `cfg[field]` (required).
Result<std::uint64_t> required_count(const nlohmann::json& cfg, const char* field,
                                     const std::string& type) {
  auto it = cfg.find(field);
  if (it == cfg.end())
    return invalid_metadata("data_type '" + type + "' needs configuration field '" + field + "'");
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(it->get<std::int64_t>());
  return invalid_metadata("data_type '" + type + "': configuration field '" + field +
                          "' must be a non-negative integer, got " + quoted(*it));
}

Result<DataType> v3_time_type(DTypeKind kind, const nlohmann::json& cfg, const std::string& name) {
  auto unit = cfg.find("unit");
  if (unit == cfg.end() || !unit->is_string())
    return invalid_metadata("data_type '" + name +
                            "': configuration field 'unit' must be a string such as \"ns\", got " +
                            (unit == cfg.end() ? std::string("nothing") : quoted(*unit)));
  auto scale = cfg.find("scale_factor");
  if (scale == cfg.end() || !scale->is_number_integer())
    return invalid_metadata("data_type '" + name +
                            "': configuration field 'scale_factor' must be an integer, got " +
                            (scale == cfg.end() ? std::string("nothing") : quoted(*scale)));
  const std::int64_t factor = scale->is_number_unsigned() && scale->get<std::uint64_t>() > INT64_MAX
                                  ? INT64_MAX
                                  : scale->get<std::int64_t>();
  auto t = time_type(kind, unit->get_ref<const std::string&>(), factor);
  if (!t.ok()) return std::move(t).take_status().annotate("data_type '" + name + "'");
  return t;
}

// Adds a field of `size` bytes × `count` to a structured type's size, bounded by kMaxItemSize.
Status add_field_size(std::uint64_t& total, std::uint64_t size, std::uint64_t count) {
  if (count != 0 && size > kMaxItemSize / count)
    return unimplemented("structured elements exceed NumPy's limit of " +
                         std::to_string(kMaxItemSize) + " bytes");
  total += size * count;
  if (total > kMaxItemSize)
    return unimplemented("structured elements exceed NumPy's limit of " +
                         std::to_string(kMaxItemSize) + " bytes");
  return {};
}

// The name of field `f` ([name, type, ...]), checked unique.
Result<std::string> field_name(const nlohmann::json& f, std::set<std::string>& seen) {
  if (!f.is_array() || f.size() < 2 || !f[0].is_string())
    return invalid_metadata("a structured field must be [name, type], got " + quoted(f));
  const std::string& name = f[0].get_ref<const std::string&>();
  if (!seen.insert(name).second)
    return invalid_metadata("structured field '" + name + "' occurs more than once");
  return name;
}

Result<ParsedDataType> v3_at(const nlohmann::json& v, int depth);

Result<ParsedDataType> v3_structured(const nlohmann::json& cfg, int depth) {
  auto it = cfg.find("fields");
  if (it == cfg.end() || !it->is_array() || it->empty())
    return invalid_metadata(
        "data_type 'structured': configuration field 'fields' must be a non-empty array of "
        "[name, data_type]");
  ParsedDataType out;
  out.fields = nlohmann::json::array();
  std::set<std::string> seen;
  std::uint64_t total = 0;
  for (const auto& f : *it) {
    ZF_ASSIGN_OR_RETURN(std::string name, field_name(f, seen));
    if (f.size() != 2)
      return invalid_metadata("a structured field must be [name, data_type], got " + quoted(f));
    auto inner = v3_at(f[1], depth + 1);
    if (!inner.ok())
      return std::move(inner).take_status().annotate("structured field '" + name + "'");
    const DataType& t = inner->dtype;
    if (t.is_variable_length() || t.kind == DTypeKind::kBFloat16)
      return unimplemented("structured field '" + name + "': " + t.v3_name() +
                           " fields are not supported");
    out.fields.push_back(
        {name, t.kind == DTypeKind::kStructured ? inner->fields : nlohmann::json(t.numpy_str())});
    ZF_RETURN_IF_ERROR(add_field_size(total, t.size, 1));
  }
  ZF_ASSIGN_OR_RETURN(out.dtype, fixed_length_type(DTypeKind::kStructured, total));
  return out;
}

Result<ParsedDataType> v3_at(const nlohmann::json& v, int depth) {
  if (depth > kMaxNesting)
    return unimplemented("structured types nested deeper than " + std::to_string(kMaxNesting) +
                         " levels are not supported");
  std::string name;
  nlohmann::json cfg = nlohmann::json::object();
  if (v.is_string()) {
    name = v.get<std::string>();
  } else if (v.is_object() && v.contains("name") && v["name"].is_string()) {
    name = v["name"].get<std::string>();
    if (auto c = v.find("configuration"); c != v.end() && !c->is_null()) {
      if (!c->is_object())
        return invalid_metadata("data_type '" + name +
                                "': 'configuration' must be an object, got " + quoted(*c));
      cfg = *c;
    }
  } else {
    return invalid_metadata("field 'data_type' must be a name or an object with a 'name', got " +
                            quoted(v));
  }
  ParsedDataType out;
  if (name == "fixed_length_utf32" || name == "null_terminated_bytes" || name == "raw_bytes") {
    ZF_ASSIGN_OR_RETURN(std::uint64_t n, required_count(cfg, "length_bytes", name));
    const DTypeKind kind = name == "fixed_length_utf32"      ? DTypeKind::kString
                           : name == "null_terminated_bytes" ? DTypeKind::kBytes
                                                             : DTypeKind::kRaw;
    auto t = fixed_length_type(kind, n);
    if (!t.ok()) return std::move(t).take_status().annotate("data_type '" + name + "'");
    out.dtype = *t;
  } else if (name == "numpy.datetime64" || name == "numpy.timedelta64") {
    ZF_ASSIGN_OR_RETURN(out.dtype, v3_time_type(name == "numpy.datetime64" ? DTypeKind::kDateTime
                                                                           : DTypeKind::kTimeDelta,
                                                cfg, name));
  } else if (name == "structured") {
    return v3_structured(cfg, depth);
  } else {
    ZF_ASSIGN_OR_RETURN(out.dtype, parse_v3_data_type(name));
  }
  return out;
}

Result<ParsedDataType> v2_structured(const nlohmann::json& fields, int depth);

// One v2 structured field's type ([name, typestr(, shape)] or [name, [fields]]): its NumPy form
// and size.
Result<std::pair<nlohmann::json, std::uint64_t>> v2_field(const nlohmann::json& f,
                                                          const std::string& name, int depth) {
  if (f.size() > 3)
    return invalid_metadata("structured field '" + name +
                            "' must be [name, type] or [name, type, shape], got " + quoted(f));
  std::uint64_t count = 1;
  if (f.size() == 3) {
    const nlohmann::json& shape = f[2];
    std::vector<nlohmann::json> dims;
    if (shape.is_array()) {
      dims.assign(shape.begin(), shape.end());
    } else {
      dims.push_back(shape);
    }
    for (const auto& d : dims) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0 ||
          (d.is_number_unsigned() && d.get<std::uint64_t>() > kMaxItemSize))
        return invalid_metadata("structured field '" + name +
                                "': the shape must be non-negative integers, got " + quoted(shape));
      const auto n = static_cast<std::uint64_t>(d.get<std::int64_t>());
      if (n != 0 && count > kMaxItemSize / n)
        return unimplemented("structured field '" + name + "' exceeds NumPy's size limit");
      count *= n;
    }
  }
  const nlohmann::json& type = f[1];
  std::uint64_t size = 0;
  nlohmann::json numpy;
  if (type.is_array()) {
    auto inner = v2_structured(type, depth + 1);
    if (!inner.ok())
      return std::move(inner).take_status().annotate("structured field '" + name + "'");
    size = inner->dtype.size;
    numpy = inner->fields;
  } else if (type.is_string()) {
    auto te = parse_numpy_typestr(type.get_ref<const std::string&>());
    if (!te.ok()) return std::move(te).take_status().annotate("structured field '" + name + "'");
    size = te->dtype.size;
    numpy = type;
  } else {
    return invalid_metadata("structured field '" + name + "': the type must be a typestr or a " +
                            "field list, got " + quoted(type));
  }
  std::uint64_t total = 0;
  ZF_RETURN_IF_ERROR(add_field_size(total, size, count));
  nlohmann::json out = nlohmann::json::array({name, numpy});
  if (f.size() == 3) out.push_back(f[2]);
  return std::pair{std::move(out), total};
}

Result<ParsedDataType> v2_structured(const nlohmann::json& fields, int depth) {
  if (depth > kMaxNesting)
    return unimplemented("structured types nested deeper than " + std::to_string(kMaxNesting) +
                         " levels are not supported");
  if (fields.empty())
    return invalid_metadata("field 'dtype': a structured type needs at least one field");
  ParsedDataType out;
  out.fields = nlohmann::json::array();
  std::set<std::string> seen;
  std::uint64_t total = 0;
  for (const auto& f : fields) {
    ZF_ASSIGN_OR_RETURN(std::string name, field_name(f, seen));
    ZF_ASSIGN_OR_RETURN(auto field, v2_field(f, name, depth));
    ZF_RETURN_IF_ERROR(add_field_size(total, field.second, 1));
    out.fields.push_back(std::move(field.first));
  }
  ZF_ASSIGN_OR_RETURN(out.dtype, fixed_length_type(DTypeKind::kStructured, total));
  return out;
}

}  // namespace

Result<ParsedDataType> parse_v3_dtype(const nlohmann::json& data_type) {
  return v3_at(data_type, 0);
}

Result<ParsedDataType> parse_v2_dtype(const nlohmann::json& dtype,
                                      const std::string& object_codec) {
  if (dtype.is_array()) {
    if (!object_codec.empty())
      return unimplemented("structured types with object fields are not supported");
    return v2_structured(dtype, 0);
  }
  if (!dtype.is_string())
    return invalid_metadata("field 'dtype' must be a typestr or a structured field list, got " +
                            quoted(dtype));
  const std::string& s = dtype.get_ref<const std::string&>();
  const bool object = s.size() == 2 && s[1] == 'O';
  ParsedDataType out;
  if (object && !object_codec.empty()) {
    if (object_codec == "vlen-utf8") {
      out.dtype = {DTypeKind::kVlenString, 0};
    } else if (object_codec == "vlen-bytes") {
      out.dtype = {DTypeKind::kVlenBytes, 0};
    } else if (object_codec == "vlen-array") {
      out.dtype = {DTypeKind::kVlenArray, 0};
    } else {
      return unimplemented("object arrays encoded with '" + object_codec +
                           "' are not supported (zarrflow reads vlen-utf8, vlen-bytes and "
                           "vlen-array)");
    }
    return out;
  }
  if (!object && !object_codec.empty())
    return invalid_metadata("object codec '" + object_codec +
                            "' encodes object arrays ('|O'), the dtype is '" + s + "'");
  ZF_ASSIGN_OR_RETURN(TypedEndian te, parse_numpy_typestr(s));
  out.dtype = te.dtype;
  out.endian = te.endian;
  return out;
}

std::string v2_object_codec(const nlohmann::json& filters, const nlohmann::json& compressor) {
  auto id_of = [](const nlohmann::json& c) -> std::string {
    if (!c.is_object()) return "";
    auto it = c.find("id");
    if (it == c.end() || !it->is_string()) return "";
    for (const char* k : kObjectCodecs)
      if (*it == k) return k;
    return "";
  };
  if (filters.is_array())
    for (const auto& f : filters)
      if (auto id = id_of(f); !id.empty()) return id;
  return id_of(compressor);
}

}  // namespace zarrflow
