// numcodecs `bitround` (Zarr v2 filter; Zarr v3 `numcodecs.bitround`, an array→array codec decoded
// as a bytes→bytes filter after `bytes`, see numcodecs_v3.h). Dropping mantissa bits happens when
// encoding; numcodecs' decode only reinterprets the buffer (the same bytes, float-typed), so
// decoding returns the input unchanged, without a copy.
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/bitround.html (numcodecs/bitround.py)
// Examples:
//   Zarr v2: {"id": "bitround", "keepbits": 6}
//   Zarr v3 (zarr-python): {"name": "numcodecs.bitround", "configuration": {"keepbits": 6}}
#include <cstring>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

class BitRoundCodec final : public BytesToBytesCodec {
 public:
  explicit BitRoundCodec(std::int64_t keepbits) : keepbits_(keepbits) {}

  [[nodiscard]] std::string name() const override { return "bitround"; }
  [[nodiscard]] std::string describe() const override {
    return "bitround(keepbits=" + std::to_string(keepbits_) + ")";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    return decoded;
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer&) const override {
    if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size("bitround", in.size(), *decoded_size));
    return in;
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_RETURN_IF_ERROR(check_decoded_size("bitround", in.size(), out.size()));
    if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
    return {};
  }

 private:
  std::int64_t keepbits_;
};

Result<std::shared_ptr<const Codec>> make_bitround(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "keepbits"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t keepbits, config::get_int(cfg, "keepbits"));
  if (keepbits < 0)
    return invalid_metadata("field 'keepbits': must be zero or positive, got " +
                            std::to_string(keepbits));
  return std::shared_ptr<const Codec>(std::make_shared<BitRoundCodec>(keepbits));
}

}  // namespace

void register_bitround_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("bitround", make_bitround);
  v3.add("numcodecs.bitround", make_bitround);
}

}  // namespace zarrflow
