// numcodecs `fixedscaleoffset` (Zarr v2 filter; Zarr v3 `numcodecs.fixedscaleoffset`, an
// array→array codec decoded as a bytes→bytes filter after `bytes`, see numcodecs_v3.h).
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/fixedscaleoffset.html
//       (numcodecs/fixedscaleoffset.py)
// Examples:
//   Zarr v2: {"id": "fixedscaleoffset", "offset": 1000, "scale": 10, "dtype": "<f8",
//             "astype": "|u1"}
//   Zarr v3: {"name": "numcodecs.fixedscaleoffset",
//             "configuration": {"offset": 10, "scale": 100, "dtype": "float64", "astype": "int16"}}
//
// numcodecs decodes (enc / scale) + offset with scale and offset as "weak" Python scalars
// (NEP 50): in float64 for an integer astype, in astype itself for a float astype; then
// .astype(dtype).
#include <charconv>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/numeric_filter.h"

namespace zarrflow {
namespace {

using namespace numeric;

class FixedScaleOffsetCodec final : public ElementwiseFilter {
 public:
  FixedScaleOffsetCodec(Elem dtype, Elem astype, double scale, double offset)
      : ElementwiseFilter("fixedscaleoffset", std::move(dtype), std::move(astype)),
        scale_(scale),
        offset_(offset) {}
  [[nodiscard]] std::string describe() const override {
    // Shortest round-trip form: 1000 rather than 1000.0, 0.1 rather than 0.10000000000000001.
    auto num = [](double v) {
      char buf[32];
      return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
    };
    return "fixedscaleoffset(scale=" + num(scale_) + ", offset=" + num(offset_) + ", dtype='" +
           dec_.str + "', astype='" + enc_.str + "')";
  }

 protected:
  void run(const std::byte* in, std::byte* out, std::size_t n) const override {
    const bool si = enc_.swap, so = dec_.swap;
    visit(enc_.num, [&]<typename In>(std::type_identity<In>) {
      visit(dec_.num, [&]<typename Out>(std::type_identity<Out>) {
        // enc / scale + offset with Python scalars: computed in astype if it is a float type,
        // else in float64; the scalars are first converted to that type.
        using C = std::conditional_t<kIsFloat<In>, In, double>;
        const C scale = cast<C>(scale_), offset = cast<C>(offset_);
        for (std::size_t i = 0; i < n; ++i) {
          const C v = cast<C>(load<In>(in + i * sizeof(In), si));
          store<Out>(out + i * sizeof(Out), cast<Out>(add(divide(v, scale), offset)), so);
        }
      });
    });
  }

 private:
  double scale_, offset_;
};

Result<std::shared_ptr<const Codec>> make_fixedscaleoffset(const nlohmann::json& cfg,
                                                           const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(
      config::reject_unknown_fields(cfg, {"id", "offset", "scale", "dtype", "astype"}));
  ZF_ASSIGN_OR_RETURN(double offset, config::get_number(cfg, "offset"));
  ZF_ASSIGN_OR_RETURN(double scale, config::get_number(cfg, "scale"));
  ZF_ASSIGN_OR_RETURN(Elem dtype, parse_elem(cfg, "dtype", "fixedscaleoffset"));
  ZF_ASSIGN_OR_RETURN(Elem astype, parse_elem(cfg, "astype", "fixedscaleoffset", dtype.str));
  return std::shared_ptr<const Codec>(
      std::make_shared<FixedScaleOffsetCodec>(dtype, astype, scale, offset));
}

}  // namespace

void register_fixedscaleoffset_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("fixedscaleoffset", make_fixedscaleoffset);
  v3.add("numcodecs.fixedscaleoffset", make_fixedscaleoffset);
}

}  // namespace zarrflow
