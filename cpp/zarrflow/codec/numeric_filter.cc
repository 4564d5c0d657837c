#include "zarrflow/codec/numeric_filter.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/json_config.h"

namespace zarrflow {

double half_to_double(std::uint16_t h) {
  const std::uint64_t sign = std::uint64_t{h & 0x8000u} << 48;
  const unsigned exp = (h >> 10) & 0x1Fu;
  const std::uint64_t man = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: man × 2^-24
    const double v = std::ldexp(static_cast<double>(man), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<double>(sign | 0x7FF0000000000000ull | man << 42);
  return std::bit_cast<double>(sign | std::uint64_t{exp - 15 + 1023} << 52 | man << 42);
}

std::uint16_t double_to_half(double d) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(d);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & 0x8000u);
  const int exp = static_cast<int>((bits >> 52) & 0x7FF);
  const std::uint64_t man = bits & 0xFFFFFFFFFFFFFull;
  if (exp == 0x7FF) {
    if (man == 0) return sign | 0x7C00u;  // ±inf
    const auto payload = static_cast<std::uint16_t>(man >> 42);
    return sign | 0x7C00u | (payload ? payload : 1u);  // NaN stays NaN
  }
  const int e = exp - 1023;
  if (e > 15) return sign | 0x7C00u;  // overflow
  // Rounds `sig >> shift` to nearest, ties to even.
  auto round_shift = [](std::uint64_t sig, int shift) {
    const std::uint64_t kept = sig >> shift;
    const std::uint64_t rest = sig & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    return kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
  };
  if (e >= -14) {  // normal half; a carry out of the mantissa bumps the exponent (maybe to inf)
    const std::uint64_t h = (std::uint64_t(e + 15) << 10) + round_shift(man, 42);
    return static_cast<std::uint16_t>(sign | h);
  }
  if (e < -25) return sign;  // below half the smallest subnormal (2^-25): ±0
  // Subnormal half: the value in units of 2^-24 is (2^52 + man) >> (28 - e).
  return static_cast<std::uint16_t>(sign | round_shift((std::uint64_t{1} << 52) | man, 28 - e));
}

namespace numeric {

Result<Elem> parse_elem_string(const std::string& s, const char* field, std::string_view codec) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"int8", "|i1"},    {"int16", "<i2"},   {"int32", "<i4"},  {"int64", "<i8"},
      {"uint8", "|u1"},   {"uint16", "<u2"},  {"uint32", "<u4"}, {"uint64", "<u8"},
      {"float16", "<f2"}, {"float32", "<f4"}, {"float64", "<f8"}};
  std::string typestr = s;
  for (const auto& [name, ts] : kNames)
    if (s == name) typestr = ts;
  if (!typestr.empty() && typestr[0] != '<' && typestr[0] != '>' && typestr[0] != '|' &&
      typestr[0] != '=')
    typestr = "<" + typestr;
  auto parsed = parse_numpy_typestr(typestr);
  if (!parsed.ok()) {
    if (parsed.status().code() == ErrorCode::kUnimplemented)
      return unimplemented(std::string(codec) + ": field '" + field + "': dtype '" + s +
                           "' is not supported (integer and float types only)");
    return invalid_metadata(std::string("field '") + field + "': " + parsed.status().message());
  }
  const DataType t = parsed->dtype;
  Elem e;
  e.str = s;
  e.swap = parsed->endian == Endian::kBig;
  if (t.kind == DTypeKind::kInt) {
    e.num = signed_of_size(static_cast<int>(t.size));
  } else if (t.kind == DTypeKind::kUInt) {
    e.num = t.size == 1 ? Num::kU1 : t.size == 2 ? Num::kU2 : t.size == 4 ? Num::kU4 : Num::kU8;
  } else if (t.kind == DTypeKind::kFloat) {
    e.num = float_of_size(static_cast<int>(t.size));
  } else {
    return unimplemented(std::string(codec) + ": field '" + field + "': dtype '" + s +
                         "' is not supported (integer and float types only)");
  }
  return e;
}

Result<Elem> parse_elem(const nlohmann::json& cfg, const char* field, std::string_view codec,
                        std::optional<std::string> fallback) {
  ZF_ASSIGN_OR_RETURN(std::string s, config::get_string(cfg, field, fallback));
  return parse_elem_string(s, field, codec);
}

std::string typestr(const Elem& e, bool big_endian) {
  const int size = num_size(e.num);
  const char kind = num_float(e.num) ? 'f' : num_signed(e.num) ? 'i' : 'u';
  const char order = size == 1 ? '|' : big_endian ? '>' : '<';
  return std::string{order, kind} + std::to_string(size);
}

std::optional<std::int64_t> ElementwiseFilter::encoded_size(std::int64_t decoded) const {
  const auto d = static_cast<std::int64_t>(dec_.size());
  if (decoded < 0 || decoded % d != 0) return std::nullopt;
  return decoded / d * static_cast<std::int64_t>(enc_.size());
}

Result<ConstByteSpan> ElementwiseFilter::decode(ConstByteSpan in,
                                                std::optional<std::size_t> decoded_size,
                                                Buffer& scratch) const {
  ZF_ASSIGN_OR_RETURN(std::size_t n, count(in));
  const std::size_t out_size = n * dec_.size();
  if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size(name_, out_size, *decoded_size));
  ZF_RETURN_IF_ERROR(resize_scratch(name_, scratch, out_size));
  run(in.data(), scratch.data(), n);
  return ConstByteSpan(scratch.span());
}

Status ElementwiseFilter::decode_into(ConstByteSpan in, ByteSpan out) const {
  ZF_ASSIGN_OR_RETURN(std::size_t n, count(in));
  ZF_RETURN_IF_ERROR(check_decoded_size(name_, n * dec_.size(), out.size()));
  run(in.data(), out.data(), n);
  return {};
}

Result<std::size_t> ElementwiseFilter::count(ConstByteSpan in) const {
  if (in.size() % enc_.size() != 0)
    return corrupt_data(name_ + ": " + std::to_string(in.size()) +
                        " bytes is not a whole number of '" + enc_.str + "' elements");
  return in.size() / enc_.size();
}

void cast_elements(const Elem& from, const Elem& to, const std::byte* in, std::byte* out,
                   std::size_t n) {
  if (from.num == to.num && from.swap == to.swap) {
    if (n) std::memcpy(out, in, n * from.size());
    return;
  }
  const bool si = from.swap, so = to.swap;
  visit(from.num, [&]<typename In>(std::type_identity<In>) {
    visit(to.num, [&]<typename Out>(std::type_identity<Out>) {
      for (std::size_t i = 0; i < n; ++i)
        store<Out>(out + i * sizeof(Out), cast<Out>(load<In>(in + i * sizeof(In), si)), so);
    });
  });
}

}  // namespace numeric
}  // namespace zarrflow
