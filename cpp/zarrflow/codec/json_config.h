// Typed access to codec configuration JSON with errors that name the field.
// Missing optional fields take the given default; a present field of the wrong type or out of
// range is kInvalidMetadata ("field 'level': expected an integer, got \"3\"").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "zarrflow/core/status.h"

namespace zarrflow::config {

// The object itself, or an error if `cfg` is neither an object nor null (null → empty object).
Status expect_object(const nlohmann::json& cfg);
Result<std::int64_t> get_int(const nlohmann::json& cfg, const char* field,
                             std::optional<std::int64_t> fallback = std::nullopt);
Result<double> get_number(const nlohmann::json& cfg, const char* field,
                          std::optional<double> fallback = std::nullopt);
Result<std::string> get_string(const nlohmann::json& cfg, const char* field,
                               std::optional<std::string> fallback = std::nullopt);
Result<bool> get_bool(const nlohmann::json& cfg, const char* field,
                      std::optional<bool> fallback = std::nullopt);
// Fails if `cfg` has a key not in `allowed` (v3 codecs must reject unknown configuration).
Status reject_unknown_fields(const nlohmann::json& cfg, std::initializer_list<const char*> allowed);

}  // namespace zarrflow::config
