// numcodecs `astype` (Zarr v2 filter; Zarr v3 `numcodecs.astype`, an array→array codec decoded as
// a bytes→bytes filter after `bytes`, see numcodecs_v3.h): decoding is enc.astype(decode_dtype).
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/astype.html (numcodecs/astype.py)
// Examples:
//   Zarr v2: {"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}
//   Zarr v3: {"name": "numcodecs.astype",
//             "configuration": {"encode_dtype": "float32", "decode_dtype": "float64"}}
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/numeric_filter.h"

namespace zarrflow {
namespace {

using namespace numeric;

class AsTypeCodec final : public ElementwiseFilter {
 public:
  AsTypeCodec(Elem decode_dtype, Elem encode_dtype)
      : ElementwiseFilter("astype", std::move(decode_dtype), std::move(encode_dtype)) {}
  [[nodiscard]] std::string describe() const override {
    return "astype(encode_dtype='" + enc_.str + "', decode_dtype='" + dec_.str + "')";
  }

 protected:
  void run(const std::byte* in, std::byte* out, std::size_t n) const override {
    cast_elements(enc_, dec_, in, out, n);
  }
};

Result<std::shared_ptr<const Codec>> make_astype(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "encode_dtype", "decode_dtype"}));
  ZF_ASSIGN_OR_RETURN(Elem enc, parse_elem(cfg, "encode_dtype", "astype"));
  ZF_ASSIGN_OR_RETURN(Elem dec, parse_elem(cfg, "decode_dtype", "astype"));
  return std::shared_ptr<const Codec>(std::make_shared<AsTypeCodec>(dec, enc));
}

}  // namespace

void register_astype_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("astype", make_astype);
  v3.add("numcodecs.astype", make_astype);
}

}  // namespace zarrflow
