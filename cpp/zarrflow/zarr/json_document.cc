#include "zarrflow/zarr/json_document.h"

#include <new>
#include <string>

namespace zarrflow {

std::size_t json_nesting_depth(std::string_view text, std::size_t stop_above, std::size_t* at) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character (a quote, or the 'u' of \uXXXX) cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) {
        deepest = depth;
        if (at != nullptr) *at = i;
        if (deepest > stop_above) return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Result<nlohmann::json> parse_json_document(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    return invalid_metadata("document of " + std::to_string(text.size()) +
                            " bytes is larger than the limit of " +
                            std::to_string(limits.max_bytes) + " (max_metadata_bytes)");
  std::size_t at = 0;
  if (json_nesting_depth(text, limits.max_depth, &at) > limits.max_depth)
    return invalid_metadata("JSON nests deeper than " + std::to_string(limits.max_depth) +
                            " levels (at byte " + std::to_string(at) + "; max_metadata_depth)");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 21e308
    return invalid_metadata(std::string("malformed JSON: ") + e.what());
  } catch (const std::bad_alloc&) {
    return resource_exhausted("out of memory parsing a " + std::to_string(text.size()) +
                              "-byte JSON document");
  }
}

}  // namespace zarrflow
