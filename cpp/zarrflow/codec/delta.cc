// numcodecs `delta` (Zarr v2 filter; Zarr v3 `numcodecs.delta`, an array→array codec that
// zarr-python writes before `bytes` and zarrflow decodes as a bytes→bytes filter after it, see
// numcodecs_v3.h): decoding is a running sum.
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/delta.html (numcodecs/delta.py)
// Examples:
//   Zarr v2: {"id": "delta", "dtype": "<i4", "astype": "<i2"}
//   Zarr v3: {"name": "numcodecs.delta", "configuration": {"dtype": "int32", "astype": "int16"}}
//
// numcodecs decodes with np.cumsum(enc, out=dec): the running sum is kept in
// np.promote_types(astype, dtype) (int16+uint16 → int32, uint64+int64 → float64, int16+float16 →
// float32, ...), each encoded value is cast to it, and each partial sum is cast to dtype.
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/numeric_filter.h"

namespace zarrflow {
namespace {

using namespace numeric;

class DeltaCodec final : public ElementwiseFilter {
 public:
  DeltaCodec(Elem dtype, Elem astype)
      : ElementwiseFilter("delta", std::move(dtype), std::move(astype)) {}
  [[nodiscard]] std::string describe() const override {
    return "delta(dtype='" + dec_.str + "', astype='" + enc_.str + "')";
  }

 protected:
  void run(const std::byte* in, std::byte* out, std::size_t n) const override {
    const bool si = enc_.swap, so = dec_.swap;
    visit(enc_.num, [&]<typename In>(std::type_identity<In>) {
      visit(dec_.num, [&]<typename Out>(std::type_identity<Out>) {
        using Acc = num_t<promote(num_of<In>(), num_of<Out>())>;
        Acc acc{};
        for (std::size_t i = 0; i < n; ++i) {
          const Acc v = cast<Acc>(load<In>(in + i * sizeof(In), si));
          acc = i == 0 ? v : add(acc, v);
          store<Out>(out + i * sizeof(Out), cast<Out>(acc), so);
        }
      });
    });
  }
};

Result<std::shared_ptr<const Codec>> make_delta(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "dtype", "astype"}));
  ZF_ASSIGN_OR_RETURN(Elem dtype, parse_elem(cfg, "dtype", "delta"));
  ZF_ASSIGN_OR_RETURN(Elem astype, parse_elem(cfg, "astype", "delta", dtype.str));
  return std::shared_ptr<const Codec>(std::make_shared<DeltaCodec>(dtype, astype));
}

}  // namespace

void register_delta_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("delta", make_delta);
  v3.add("numcodecs.delta", make_delta);
}

}  // namespace zarrflow
