// numcodecs `adler32` (bytes→bytes): the Adler-32 of zlib.adler32 (starting value 1), stored as 4
// little-endian bytes at the start of the chunk (numcodecs' default) or at its end.
// Spec: https://numcodecs.readthedocs.io/en/stable/checksum32.html#adler32
//       (numcodecs/checksum32.py)
// Examples:
//   Zarr v2: {"id": "adler32", "location": "start"}
//   Zarr v3 (zarr-python): {"name": "numcodecs.adler32", "configuration": {}}
// Computed with libdeflate's vectorised Adler-32.
#include <libdeflate.h>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

Result<std::shared_ptr<const Codec>> make_adler32(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "location"}));
  ZF_ASSIGN_OR_RETURN(bool at_start, parse_checksum_location(cfg, /*default_at_start=*/true));
  auto adler = [](ConstByteSpan d) { return libdeflate_adler32(1, d.data(), d.size()); };
  return std::shared_ptr<const Codec>(std::make_shared<Checksum32Codec>(
      "adler32", adler, at_start, at_start ? "" : "location=end"));
}

}  // namespace

void register_adler32_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("adler32", make_adler32);
  v3.add("numcodecs.adler32", make_adler32);
}

}  // namespace zarrflow
