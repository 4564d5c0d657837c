#include "zarrflow/codec/json_config.h"

#include <algorithm>
#include <cstring>

namespace zarrflow::config {
namespace {

Status wrong_type(const char* field, const char* expected, const nlohmann::json& got) {
  return invalid_metadata(std::string("field '") + field + "': expected " + expected + ", got " +
                          got.dump());
}

const nlohmann::json* find(const nlohmann::json& cfg, const char* field) {
  if (!cfg.is_object()) return nullptr;
  auto it = cfg.find(field);
  return it == cfg.end() ? nullptr : &*it;
}

Status missing(const char* field) {
  return invalid_metadata(std::string("missing required field '") + field + "'");
}

}  // namespace

Status expect_object(const nlohmann::json& cfg) {
  if (cfg.is_object() || cfg.is_null()) return {};
  return invalid_metadata("configuration must be a JSON object, got " + cfg.dump());
}

Result<std::int64_t> get_int(const nlohmann::json& cfg, const char* field,
                             std::optional<std::int64_t> fallback) {
  const auto* v = find(cfg, field);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return missing(field);
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_unsigned()) {
    auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return wrong_type(field, "an int64", *v);
    return static_cast<std::int64_t>(u);
  }
  return wrong_type(field, "an integer", *v);
}

Result<double> get_number(const nlohmann::json& cfg, const char* field,
                          std::optional<double> fallback) {
  const auto* v = find(cfg, field);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return missing(field);
  }
  if (v->is_number()) return v->get<double>();
  return wrong_type(field, "a number", *v);
}

Result<std::string> get_string(const nlohmann::json& cfg, const char* field,
                               std::optional<std::string> fallback) {
  const auto* v = find(cfg, field);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return missing(field);
  }
  if (v->is_string()) return v->get<std::string>();
  return wrong_type(field, "a string", *v);
}

Result<bool> get_bool(const nlohmann::json& cfg, const char* field, std::optional<bool> fallback) {
  const auto* v = find(cfg, field);
  if (v == nullptr || (v->is_null() && fallback)) {
    if (fallback) return *fallback;
    return missing(field);
  }
  if (v->is_boolean()) return v->get<bool>();
  return wrong_type(field, "a boolean", *v);
}

Status reject_unknown_fields(const nlohmann::json& cfg,
                             std::initializer_list<const char*> allowed) {
  if (!cfg.is_object()) return {};
  for (const auto& item : cfg.items()) {
    const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one
    bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
    if (!ok) return invalid_metadata("unknown configuration field '" + key + "'");
  }
  return {};
}

}  // namespace zarrflow::config
