#include "zarrflow/codec/numcodecs_v3.h"

#include <array>
#include <string_view>

#include "zarrflow/codec/numeric_filter.h"

namespace zarrflow {
namespace {

using numeric::Elem;

constexpr std::array<std::string_view, 6> kFilters = {
    "numcodecs.delta",    "numcodecs.fixedscaleoffset", "numcodecs.astype",
    "numcodecs.quantize", "numcodecs.bitround",         "numcodecs.packbits"};
// zarr-python's numcodecs codecs that are array→bytes.
constexpr std::array<std::string_view, 2> kArrayToBytes = {"numcodecs.pcodec", "numcodecs.zfpy"};

template <std::size_t N>
bool one_of(std::string_view s, const std::array<std::string_view, N>& set) {
  for (auto x : set)
    if (x == s) return true;
  return false;
}

std::string codec_name(const nlohmann::json& c) {
  if (c.is_string()) return c.get<std::string>();
  if (c.is_object() && c.contains("name") && c["name"].is_string())
    return c["name"].get<std::string>();
  return {};
}

nlohmann::json codec_config(const nlohmann::json& c) {
  if (c.is_object() && c.contains("configuration") && c["configuration"].is_object())
    return c["configuration"];
  return nlohmann::json::object();
}

// A dtype the filters' element machinery handles (integers and floats), or bool (packbits).
struct Typed {
  bool is_bool = false;
  Elem elem;
};

Result<Typed> typed(const DataType& t, std::string_view codec) {
  if (t.kind == DTypeKind::kBool) return Typed{true, {}};
  ZF_ASSIGN_OR_RETURN(Elem e, numeric::parse_elem_string(t.numpy_str(), "dtype", codec));
  return Typed{false, e};
}

bool same(const Elem& a, const Elem& b) { return a.num == b.num; }

// One filter's decoded (`dec`) and encoded (`enc`) element types, given the chunk's dtype before
// it (`cur`). Fills the configuration's dtype fields in with explicit byte orders: native for the
// decoded side, `stored_big` for the encoded side when this filter reads what `bytes` stored.
Result<Typed> lower_filter(const std::string& name, nlohmann::json& cfg, const Typed& cur,
                           bool reads_stored, bool stored_big) {
  auto dtype_field = [&](const char* field) -> Result<Elem> {
    if (cur.is_bool) return unimplemented(name + " on a bool array is not supported");
    if (!cfg.contains(field) || cfg[field].is_null()) return cur.elem;
    ZF_ASSIGN_OR_RETURN(Elem e, numeric::parse_elem(cfg, field, name));
    if (!same(e, cur.elem))
      return invalid_metadata(name + ": field '" + field + "' is '" + e.str +
                              "', but the chunk it decodes to is '" + cur.elem.str + "'");
    return e;
  };
  auto encoded_field = [&](const char* field, const Elem& fallback) -> Result<Elem> {
    if (!cfg.contains(field) || cfg[field].is_null()) return fallback;
    return numeric::parse_elem(cfg, field, name);
  };
  auto set = [&](const char* field, const Elem& e, bool big) {
    cfg[field] = numeric::typestr(e, big);
  };
  const bool enc_big = reads_stored && stored_big;

  if (name == "numcodecs.delta" || name == "numcodecs.fixedscaleoffset") {
    ZF_ASSIGN_OR_RETURN(Elem dec, dtype_field("dtype"));
    ZF_ASSIGN_OR_RETURN(Elem enc, encoded_field("astype", dec));
    set("dtype", dec, false);
    set("astype", enc, enc_big);
    return Typed{false, enc};
  }
  if (name == "numcodecs.astype") {
    ZF_ASSIGN_OR_RETURN(Elem dec, dtype_field("decode_dtype"));
    ZF_ASSIGN_OR_RETURN(Elem enc, numeric::parse_elem(cfg, "encode_dtype", name));
    set("decode_dtype", dec, false);
    set("encode_dtype", enc, enc_big);
    return Typed{false, enc};
  }
  if (name == "numcodecs.quantize") {
    // zarr-python keeps the chunk's dtype through Quantize whatever `astype` says, so it can
    // only read its own output when the two agree.
    ZF_ASSIGN_OR_RETURN(Elem dec, dtype_field("dtype"));
    ZF_ASSIGN_OR_RETURN(Elem enc, encoded_field("astype", dec));
    if (!same(enc, dec))
      return unimplemented(name + " with 'astype' ('" + enc.str + "') other than 'dtype' ('" +
                           dec.str + "') in Zarr v3 (zarr-python cannot read it back either)");
    set("dtype", dec, false);
    set("astype", enc, enc_big);
    return Typed{false, enc};
  }
  if (name == "numcodecs.bitround") {
    if (cur.is_bool || !numeric::num_float(cur.elem.num))
      return unimplemented(name + " on a non-float array is not supported");
    return cur;  // decoding is the identity (see bitround.cc)
  }
  // numcodecs.packbits: bool elements to bits in bytes.
  if (!cur.is_bool) return unimplemented(name + " on a non-bool array is not supported");
  Elem u8;
  u8.num = numeric::Num::kU1;
  u8.str = "|u1";
  return Typed{false, u8};
}

}  // namespace

Result<nlohmann::json> lower_numcodecs_filters(const nlohmann::json& codecs,
                                               const ChunkSpec& spec) {
  if (!codecs.is_array()) return codecs;
  // The array→bytes codec: the first entry that is neither a transpose nor a numcodecs codec
  // (every numcodecs.* name is array→array or bytes→bytes, but those of kArrayToBytes).
  std::size_t a2b = codecs.size();
  bool any_filter = false;
  for (std::size_t i = 0; i < codecs.size(); ++i) {
    const std::string name = codec_name(codecs[i]);
    if (name == "transpose") continue;
    if (name.starts_with("numcodecs.") && !one_of(name, kArrayToBytes)) {
      if (!one_of(name, kFilters))
        return unimplemented("array→array codec '" + name + "' is not supported");
      any_filter = true;
      continue;
    }
    a2b = i;
    break;
  }
  if (!any_filter || a2b == codecs.size())
    return codecs;  // (no array→bytes codec: the chain
                    // reports it)
  const std::string a2b_name = codec_name(codecs[a2b]);
  if (a2b_name != "bytes" && a2b_name != "endian") {
    for (std::size_t i = 0; i < a2b; ++i)
      if (const std::string n = codec_name(codecs[i]); one_of(n, kFilters))
        return unimplemented("codec '" + n + "' before '" + a2b_name +
                             "' is not supported (zarr-python writes filters inside the shard)");
  }
  const nlohmann::json bytes_cfg = codec_config(codecs[a2b]);
  const bool stored_big = bytes_cfg.contains("endian") && bytes_cfg["endian"] == "big";

  std::size_t last_filter = 0;
  for (std::size_t i = 0; i < a2b; ++i)
    if (one_of(codec_name(codecs[i]), kFilters)) last_filter = i;

  nlohmann::json views = nlohmann::json::array(), filters = nlohmann::json::array();
  ZF_ASSIGN_OR_RETURN(Typed cur, typed(spec.dtype, "numcodecs filter"));
  bool order_matters = false;  // a delta or packbits came before
  for (std::size_t i = 0; i < a2b; ++i) {
    const std::string name = codec_name(codecs[i]);
    if (name == "transpose") {
      if (order_matters)
        return unimplemented(
            "a transpose after an order-dependent numcodecs filter (delta, "
            "packbits) is not supported");
      views.push_back(codecs[i]);
      continue;
    }
    nlohmann::json cfg = codec_config(codecs[i]);
    auto lowered = lower_filter(name, cfg, cur, i == last_filter, stored_big);
    if (!lowered.ok()) return std::move(lowered).take_status().annotate("codec '" + name + "'");
    order_matters = order_matters || name == "numcodecs.delta" || name == "numcodecs.packbits";
    if (name == "numcodecs.bitround" && i == last_filter && stored_big && cur.elem.size() > 1) {
      // Decoding bitround is the identity, so here it only has to undo the stored byte order.
      filters.push_back({{"name", "numcodecs.astype"},
                         {"configuration",
                          {{"encode_dtype", numeric::typestr(cur.elem, true)},
                           {"decode_dtype", numeric::typestr(cur.elem, false)}}}});
    } else {
      filters.push_back({{"name", name}, {"configuration", cfg}});
    }
    cur = *lowered;
  }
  nlohmann::json out = std::move(views);
  nlohmann::json bytes = {{"name", "bytes"}};
  if (spec.dtype.swap_unit() > 1) bytes["configuration"] = {{"endian", "little"}};
  out.push_back(std::move(bytes));
  for (auto& f : filters) out.push_back(std::move(f));
  for (std::size_t i = a2b + 1; i < codecs.size(); ++i) out.push_back(codecs[i]);
  return out;
}

}  // namespace zarrflow
