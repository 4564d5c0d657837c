// numcodecs `crc32` (bytes→bytes): the CRC-32 of zlib.crc32 (the gzip/PNG polynomial), stored as
// 4 little-endian bytes at the start of the chunk (numcodecs' default) or at its end.
// Spec: https://numcodecs.readthedocs.io/en/stable/checksum32.html#crc32 (numcodecs/checksum32.py)
// Examples:
//   Zarr v2: {"id": "crc32", "location": "start"}
//   Zarr v3 (zarr-python): {"name": "numcodecs.crc32", "configuration": {}}
// Computed with libdeflate's vectorised CRC-32.
#include <libdeflate.h>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

Result<std::shared_ptr<const Codec>> make_crc32(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "location"}));
  ZF_ASSIGN_OR_RETURN(bool at_start, parse_checksum_location(cfg, /*default_at_start=*/true));
  auto crc = [](ConstByteSpan d) { return libdeflate_crc32(0, d.data(), d.size()); };
  return std::shared_ptr<const Codec>(
      std::make_shared<Checksum32Codec>("crc32", crc, at_start, at_start ? "" : "location=end"));
}

}  // namespace

void register_crc32_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("crc32", make_crc32);
  v3.add("numcodecs.crc32", make_crc32);
}

}  // namespace zarrflow
