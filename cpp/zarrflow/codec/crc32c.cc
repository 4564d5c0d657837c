// `crc32c` (bytes→bytes): a 4-byte little-endian CRC-32C of the preceding bytes, appended.
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/crc32c/index.html
// Example: {"name": "crc32c"}
// Also numcodecs' `crc32c` checksum codec (Zarr v2 id `crc32c`, v3 `numcodecs.crc32c`), whose
// `location` ("end" by default, or "start") says where the 4 bytes sit:
//   {"id": "crc32c", "location": "end"}
// Decoding verifies the checksum and returns a view of the payload: no copy.
#include "zarrflow/codec/crc32c.h"

#include <algorithm>
#include <cstdio>

#include <isa-l/crc.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {

std::uint32_t crc32c(ConstByteSpan data) {
  // ISA-L takes an int length and returns the raw (un-inverted) register, so long inputs are fed
  // in pieces of 1 GiB, chaining the running value.
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  std::uint32_t crc = 0xFFFFFFFFu;
  while (!data.empty()) {
    const std::size_t n = std::min(kPiece, data.size());
    crc = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data())),
                      static_cast<int>(n), crc);
    data = data.subspan(n);
  }
  return ~crc;
}

namespace {

std::string hex32(std::uint32_t v) {
  char buf[11];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

class Crc32cCodec final : public BytesToBytesCodec {
 public:
  explicit Crc32cCodec(bool at_start) : at_start_(at_start) {}

  [[nodiscard]] std::string name() const override { return "crc32c"; }
  [[nodiscard]] std::string describe() const override {
    return at_start_ ? "crc32c(location=start)" : "crc32c";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    return decoded + 4;
  }
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size(
      std::uint64_t decoded) const override {
    return add_bounds(decoded, 4);
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& /*scratch*/) const override {
    if (in.size() < 4) {
      return corrupt_data("crc32c: chunk is " + std::to_string(in.size()) +
                          " bytes, shorter than the 4-byte checksum");
    }
    const ConstByteSpan payload = at_start_ ? in.subspan(4) : in.first(in.size() - 4);
    if (decoded_size)
      ZF_RETURN_IF_ERROR(check_decoded_size("crc32c", payload.size(), *decoded_size));
    const std::uint32_t stored = load_le32(at_start_ ? in.data() : in.data() + in.size() - 4);
    const std::uint32_t actual = crc32c(payload);
    if (stored != actual) {
      return checksum_mismatch("crc32c: stored checksum " + hex32(stored) +
                               " does not match the computed " + hex32(actual) + " over " +
                               std::to_string(payload.size()) + " bytes");
    }
    return payload;
  }

 private:
  bool at_start_;
};

Result<std::shared_ptr<const Codec>> make_v3(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {}));
  return std::shared_ptr<const Codec>(std::make_shared<Crc32cCodec>(false));
}

// numcodecs.checksum32.CRC32C: {"id": "crc32c", "location": "start" | "end"}.
Result<std::shared_ptr<const Codec>> make_numcodecs(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "location"}));
  ZF_ASSIGN_OR_RETURN(std::string location, config::get_string(cfg, "location", "end"));
  if (location != "end" && location != "start")
    return invalid_metadata("field 'location': expected \"start\" or \"end\", got \"" + location +
                            "\"");
  return std::shared_ptr<const Codec>(std::make_shared<Crc32cCodec>(location == "start"));
}

}  // namespace

void register_crc32c_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v3.add("crc32c", make_v3);
  v3.add("numcodecs.crc32c", make_numcodecs);
  v2.add("crc32c", make_numcodecs);
}

}  // namespace zarrflow
