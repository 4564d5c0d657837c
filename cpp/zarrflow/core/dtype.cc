#include "zarrflow/core/dtype.h"

#include <charconv>

namespace zarrflow {
namespace {

struct NamedType {
  std::string_view name;
  DataType type;
};

constexpr NamedType kV3Types[] = {
    {"bool", {DTypeKind::kBool, 1}},           {"int8", {DTypeKind::kInt, 1}},
    {"int16", {DTypeKind::kInt, 2}},           {"int32", {DTypeKind::kInt, 4}},
    {"int64", {DTypeKind::kInt, 8}},           {"uint8", {DTypeKind::kUInt, 1}},
    {"uint16", {DTypeKind::kUInt, 2}},         {"uint32", {DTypeKind::kUInt, 4}},
    {"uint64", {DTypeKind::kUInt, 8}},         {"float16", {DTypeKind::kFloat, 2}},
    {"float32", {DTypeKind::kFloat, 4}},       {"float64", {DTypeKind::kFloat, 8}},
    {"bfloat16", {DTypeKind::kBFloat16, 2}},   {"complex64", {DTypeKind::kComplex, 8}},
    {"complex128", {DTypeKind::kComplex, 16}},
};

}  // namespace

std::string DataType::v3_name() const {
  if (kind == DTypeKind::kRaw) return "r" + std::to_string(size * 8);
  for (const auto& t : kV3Types)
    if (t.type == *this) return std::string(t.name);
  return "invalid";
}

std::string DataType::numpy_str() const {
  const std::string n = std::to_string(size);
  switch (kind) {
    case DTypeKind::kBool:
      return "|b1";
    case DTypeKind::kInt:
      return (size == 1 ? "|i" : "<i") + n;
    case DTypeKind::kUInt:
      return (size == 1 ? "|u" : "<u") + n;
    case DTypeKind::kFloat:
      return "<f" + n;
    case DTypeKind::kBFloat16:
      return "bfloat16";
    case DTypeKind::kComplex:
      return "<c" + n;
    case DTypeKind::kRaw:
      return "|V" + n;
  }
  return "invalid";
}

std::uint32_t DataType::swap_unit() const {
  switch (kind) {
    case DTypeKind::kComplex:
      return size / 2;
    case DTypeKind::kRaw:
    case DTypeKind::kBool:
      return 1;
    default:
      return size;
  }
}

Result<DataType> parse_v3_data_type(std::string_view name) {
  for (const auto& t : kV3Types)
    if (t.name == name) return t.type;
  if (name.size() > 1 && name[0] == 'r') {
    std::uint32_t bits = 0;
    auto [p, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), bits);
    if (ec == std::errc() && p == name.data() + name.size() && bits > 0 && bits % 8 == 0)
      return DataType{DTypeKind::kRaw, bits / 8};
    return invalid_metadata("data_type '" + std::string(name) +
                            "': raw types need a positive multiple of 8 bits");
  }
  return unimplemented("data_type '" + std::string(name) + "' is not supported");
}

Result<TypedEndian> parse_numpy_typestr(std::string_view s) {
  const std::string quoted = "dtype '" + std::string(s) + "'";
  if (s.size() >= 2 && std::string_view("OUSMma").find(s[1]) != std::string_view::npos)
    return unimplemented(quoted +
                         " is not supported (strings, objects and datetimes are not "
                         "readable)");
  if (s.size() < 3) return invalid_metadata(quoted + " is not a NumPy typestr");
  Endian endian;
  switch (s[0]) {
    case '<':
      endian = Endian::kLittle;
      break;
    case '>':
      endian = Endian::kBig;
      break;
    case '|':
      endian = Endian::kNotApplicable;
      break;
    case '=':
      endian = Endian::kLittle;
      break;  // native, and zarrflow runs on little-endian hosts
    default:
      return invalid_metadata(quoted + " must start with '<', '>' or '|'");
  }
  std::uint32_t size = 0;
  auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), size);
  if (ec != std::errc() || p != s.data() + s.size() || size == 0)
    return invalid_metadata(quoted + " has no valid item size");
  DataType t;
  t.size = size;
  switch (s[1]) {
    case 'b':
      t.kind = DTypeKind::kBool;
      if (size != 1) return invalid_metadata(quoted + ": bool must be 1 byte");
      break;
    case 'i':
      t.kind = DTypeKind::kInt;
      break;
    case 'u':
      t.kind = DTypeKind::kUInt;
      break;
    case 'f':
      t.kind = DTypeKind::kFloat;
      break;
    case 'c':
      t.kind = DTypeKind::kComplex;
      break;
    case 'V':
      t.kind = DTypeKind::kRaw;
      break;
    default:
      return unimplemented(quoted +
                           " is not supported (strings, objects and datetimes are not "
                           "readable)");
  }
  const bool int_ok = size == 1 || size == 2 || size == 4 || size == 8;
  if ((t.kind == DTypeKind::kInt || t.kind == DTypeKind::kUInt) && !int_ok)
    return unimplemented(quoted + ": integer size not supported");
  if (t.kind == DTypeKind::kFloat && size != 2 && size != 4 && size != 8)
    return unimplemented(quoted + ": float size not supported");
  if (t.kind == DTypeKind::kComplex && size != 8 && size != 16)
    return unimplemented(quoted + ": complex size not supported");
  if (t.swap_unit() == 1) endian = Endian::kNotApplicable;
  return TypedEndian{t, endian};
}

}  // namespace zarrflow
