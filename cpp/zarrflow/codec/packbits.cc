// numcodecs `packbits` (Zarr v2 filter; Zarr v3 `numcodecs.packbits`, an array→array codec decoded
// as a bytes→bytes filter after `bytes`, see numcodecs_v3.h): booleans packed 8 to a byte.
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/packbits.html (numcodecs/packbits.py)
// Examples:
//   Zarr v2: {"id": "packbits"}
//   Zarr v3 (zarr-python): {"name": "numcodecs.packbits", "configuration": {}}
//
// The first byte is the number of padding bits in the last byte; the rest are np.packbits of the
// flattened array (most significant bit first). Decoding is np.unpackbits of the rest without the
// last `padding` bits, as bool bytes (0 or 1). As in NumPy, a padding count larger than the bits
// present leaves nothing.
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

class PackBitsCodec final : public BytesToBytesCodec {
 public:
  [[nodiscard]] std::string name() const override { return "packbits"; }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    if (decoded < 0) return std::nullopt;
    return 1 + (decoded + 7) / 8;
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    ZF_ASSIGN_OR_RETURN(std::size_t n, count(in));
    if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size("packbits", n, *decoded_size));
    ZF_RETURN_IF_ERROR(resize_scratch("packbits", scratch, n));
    unpack(in, scratch.span());
    return ConstByteSpan(scratch.span());
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_ASSIGN_OR_RETURN(std::size_t n, count(in));
    ZF_RETURN_IF_ERROR(check_decoded_size("packbits", n, out.size()));
    unpack(in, out);
    return {};
  }

 private:
  // The number of booleans `in` holds.
  static Result<std::size_t> count(ConstByteSpan in) {
    if (in.empty()) return corrupt_data("packbits: chunk is empty (no padding byte)");
    const std::size_t bits = (in.size() - 1) * 8;
    const auto padding = static_cast<std::size_t>(in[0]);
    return padding >= bits ? 0 : bits - padding;
  }

  static void unpack(ConstByteSpan in, ByteSpan out) {
    const auto* packed = reinterpret_cast<const std::uint8_t*>(in.data()) + 1;
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<std::byte>((packed[i / 8] >> (7 - i % 8)) & 1);
  }
};

Result<std::shared_ptr<const Codec>> make_packbits(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id"}));
  return std::shared_ptr<const Codec>(std::make_shared<PackBitsCodec>());
}

}  // namespace

void register_packbits_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("packbits", make_packbits);
  v3.add("numcodecs.packbits", make_packbits);
}

}  // namespace zarrflow
