// `bytes` (array→bytes): elements in C order, little- or big-endian.
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/bytes/index.html
// Example: {"name": "bytes", "configuration": {"endian": "little"}}
// Decoding is one strided copy from the chunk bytes into the destination (with a byte swap for
// big-endian data); when nothing needs swapping, bytes→bytes codecs decode straight into place.
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

class BytesCodec final : public ArrayToBytesCodec {
 public:
  BytesCodec(Endian endian, std::uint32_t swap_unit) : endian_(endian), swap_unit_(swap_unit) {}

  [[nodiscard]] std::string name() const override { return "bytes"; }
  [[nodiscard]] GpuDecoder gpu_decoder() const override { return GpuDecoder::kElements; }
  [[nodiscard]] std::string describe() const override {
    return endian_ == Endian::kBig ? "bytes(big)" : "bytes";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(const ChunkSpec& spec) const override {
    return spec.nbytes();
  }
  [[nodiscard]] bool is_native_layout(const ChunkSpec&) const override { return swap_unit_ <= 1; }

  Status decode_into(ConstByteSpan encoded, const ChunkSpec& spec, const Selection& sel,
                     const StridedView& dest, const DecodeContext&) const override {
    const auto expected = static_cast<std::size_t>(spec.nbytes());
    if (encoded.size() != expected)
      return corrupt_data("bytes: chunk has " + std::to_string(encoded.size()) +
                          " bytes, expected " + std::to_string(expected));
    const std::int64_t elem = spec.dtype.size;
    Shape strides = c_strides(spec.shape, elem);
    const std::byte* src = encoded.data();
    for (std::size_t i = 0; i < strides.size(); ++i) {
      src += sel.start[i] * strides[i];
      strides[i] *= sel.step[i];
    }
    copy_strided(src, strides, dest.data, dest.strides, sel.count, elem, swap_unit_);
    return {};
  }

 private:
  Endian endian_;
  std::uint32_t swap_unit_;  // > 1 when decoding swaps bytes
};

Result<std::shared_ptr<const Codec>> make_bytes(const nlohmann::json& cfg, const ChunkSpec& spec) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"endian"}));
  if (spec.dtype.is_variable_length())
    return invalid_metadata(spec.dtype.v3_name() +
                            " elements have no fixed size: they need the vlen-utf8 or vlen-bytes "
                            "codec");
  const bool needs_endian = spec.dtype.swap_unit() > 1;
  ZF_ASSIGN_OR_RETURN(std::string e, config::get_string(cfg, "endian", std::string()));
  Endian endian;
  if (e == "little") {
    endian = Endian::kLittle;
  } else if (e == "big") {
    endian = Endian::kBig;
  } else if (e.empty()) {
    if (needs_endian) return invalid_metadata("'endian' is required for " + spec.dtype.v3_name());
    endian = Endian::kNotApplicable;
  } else {
    return invalid_metadata("field 'endian': expected \"little\" or \"big\", got \"" + e + "\"");
  }
  const std::uint32_t swap = (endian == Endian::kBig && needs_endian) ? spec.dtype.swap_unit() : 1;
  return std::shared_ptr<const Codec>(std::make_shared<BytesCodec>(endian, swap));
}

}  // namespace

void register_bytes_codec(CodecRegistry& v3, CodecRegistry&) {
  v3.add("bytes", make_bytes);
  v3.add("endian", make_bytes);  // name used by early v3 drafts and zarr-python < 3.0
}

}  // namespace zarrflow
