#include "zarrflow/codec/checksum32.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {
namespace {

std::string hex32(std::uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

}  // namespace

Result<ConstByteSpan> Checksum32Codec::decode(ConstByteSpan in,
                                              std::optional<std::size_t> decoded_size,
                                              Buffer& /*scratch*/) const {
  if (in.size() < 4)
    return corrupt_data(name_ + ": chunk is " + std::to_string(in.size()) +
                        " bytes, shorter than the 4-byte checksum");
  const ConstByteSpan payload = at_start_ ? in.subspan(4) : in.first(in.size() - 4);
  if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size(name_, payload.size(), *decoded_size));
  const std::uint32_t stored = load_le32(at_start_ ? in.data() : in.data() + in.size() - 4);
  const std::uint32_t actual = checksum_(payload);
  if (stored != actual)
    return checksum_mismatch(name_ + ": stored checksum " + hex32(stored) +
                             " does not match the computed " + hex32(actual) + " over " +
                             std::to_string(payload.size()) + " bytes");
  return payload;
}

Result<bool> parse_checksum_location(const nlohmann::json& cfg, bool default_at_start) {
  ZF_ASSIGN_OR_RETURN(std::string location,
                      config::get_string(cfg, "location", default_at_start ? "start" : "end"));
  if (location != "end" && location != "start")
    return invalid_metadata("field 'location': expected \"start\" or \"end\", got \"" + location +
                            "\"");
  return location == "start";
}

}  // namespace zarrflow
