// `transpose` (array→array): the chunk is stored with its dimensions permuted.
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/transpose/index.html
// Example: {"name": "transpose", "configuration": {"order": [2, 0, 1]}}
// Encoded dimension j is decoded dimension order[j]. Decoding copies nothing: a read is rewritten
// into the encoded coordinates by permuting the selection and the destination's strides. Zarr v2
// "order": "F" is the same codec with the order reversed.
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/transpose.h"

namespace zarrflow {
namespace {

class TransposeCodec final : public ArrayToArrayCodec {
 public:
  explicit TransposeCodec(std::vector<std::int64_t> order) : order_(std::move(order)) {}

  [[nodiscard]] std::string name() const override { return "transpose"; }
  [[nodiscard]] std::string describe() const override {
    std::string s = "transpose(";
    for (std::size_t i = 0; i < order_.size(); ++i) s += (i ? "," : "") + std::to_string(order_[i]);
    return s + ")";
  }

  [[nodiscard]] ChunkSpec encoded_spec(const ChunkSpec& decoded) const override {
    ChunkSpec e = decoded;
    for (std::size_t j = 0; j < order_.size(); ++j) e.shape[j] = decoded.shape[order_[j]];
    return e;
  }

  void to_encoded(Selection& sel, StridedView& dest) const override {
    Selection s = sel;
    StridedView d = dest;
    for (std::size_t j = 0; j < order_.size(); ++j) {
      const auto o = static_cast<std::size_t>(order_[j]);
      s.start[j] = sel.start[o];
      s.count[j] = sel.count[o];
      s.step[j] = sel.step[o];
      d.shape[j] = dest.shape[o];
      d.strides[j] = dest.strides[o];
    }
    sel = std::move(s);
    dest = std::move(d);
  }

 private:
  std::vector<std::int64_t> order_;
};

}  // namespace

Result<std::shared_ptr<const Codec>> make_transpose(std::vector<std::int64_t> order,
                                                    std::size_t ndim) {
  if (order.size() != ndim)
    return invalid_metadata("'order' has " + std::to_string(order.size()) + " entries for a " +
                            std::to_string(ndim) + "-d chunk");
  std::vector<bool> seen(ndim, false);
  for (auto o : order) {
    if (o < 0 || static_cast<std::size_t>(o) >= ndim || seen[static_cast<std::size_t>(o)])
      return invalid_metadata("'order' is not a permutation of 0.." + std::to_string(ndim - 1));
    seen[static_cast<std::size_t>(o)] = true;
  }
  return std::shared_ptr<const Codec>(std::make_shared<TransposeCodec>(std::move(order)));
}

namespace {

Result<std::shared_ptr<const Codec>> make_transpose_json(const nlohmann::json& cfg,
                                                         const ChunkSpec& spec) {
  if (!cfg.is_object() || !cfg.contains("order"))
    return invalid_metadata("missing required field 'order'");
  for (const auto& [k, v] : cfg.items())
    if (k != "order") return invalid_metadata("unknown configuration field '" + k + "'");
  const auto& o = cfg["order"];
  const std::size_t nd = spec.shape.size();
  std::vector<std::int64_t> order;
  if (o.is_string() && (o == "C" || o == "F")) {  // shorthand of early drafts
    for (std::size_t i = 0; i < nd; ++i) order.push_back(o == "C" ? i : nd - 1 - i);
  } else if (o.is_array()) {
    for (const auto& x : o) {
      if (!x.is_number_integer())
        return invalid_metadata("field 'order': expected integers, got " + o.dump());
      order.push_back(x.get<std::int64_t>());
    }
  } else {
    return invalid_metadata("field 'order': expected an array of integers, got " + o.dump());
  }
  return make_transpose(std::move(order), nd);
}

}  // namespace

void register_transpose_codec(CodecRegistry& v3, CodecRegistry&) {
  v3.add("transpose", make_transpose_json);
}

}  // namespace zarrflow
