// numcodecs `quantize` (Zarr v2 filter; Zarr v3 `numcodecs.quantize`, an array→array codec decoded
// as a bytes→bytes filter after `bytes`, see numcodecs_v3.h). The rounding to `digits` decimal
// digits happens when encoding; decoding is enc.astype(dtype) from `astype` (both float types).
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/quantize.html (numcodecs/quantize.py)
// Examples:
//   Zarr v2: {"id": "quantize", "digits": 2, "dtype": "<f8", "astype": "<f4"}
//   Zarr v3 (zarr-python): {"name": "numcodecs.quantize",
//                           "configuration": {"digits": 2, "dtype": "float64"}}
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/numeric_filter.h"

namespace zarrflow {
namespace {

using namespace numeric;

class QuantizeCodec final : public ElementwiseFilter {
 public:
  QuantizeCodec(Elem dtype, Elem astype, std::int64_t digits)
      : ElementwiseFilter("quantize", std::move(dtype), std::move(astype)), digits_(digits) {}
  [[nodiscard]] std::string describe() const override {
    return "quantize(digits=" + std::to_string(digits_) + ", dtype='" + dec_.str + "', astype='" +
           enc_.str + "')";
  }

 protected:
  void run(const std::byte* in, std::byte* out, std::size_t n) const override {
    cast_elements(enc_, dec_, in, out, n);
  }

 private:
  std::int64_t digits_;
};

Result<std::shared_ptr<const Codec>> make_quantize(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "digits", "dtype", "astype"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t digits, config::get_int(cfg, "digits"));
  ZF_ASSIGN_OR_RETURN(Elem dtype, parse_elem(cfg, "dtype", "quantize"));
  ZF_ASSIGN_OR_RETURN(Elem astype, parse_elem(cfg, "astype", "quantize", dtype.str));
  if (!num_float(dtype.num) || !num_float(astype.num))
    return invalid_metadata("quantize: 'dtype' and 'astype' must be float types, got '" +
                            dtype.str + "' and '" + astype.str + "'");
  return std::shared_ptr<const Codec>(std::make_shared<QuantizeCodec>(dtype, astype, digits));
}

}  // namespace

void register_quantize_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("quantize", make_quantize);
  v3.add("numcodecs.quantize", make_quantize);
}

}  // namespace zarrflow
