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

struct NamedUnit {
  std::string_view name;
  TimeUnit unit;
};

constexpr NamedUnit kTimeUnits[] = {
    {"generic", TimeUnit::kGeneric},
    {"Y", TimeUnit::kYear},
    {"M", TimeUnit::kMonth},
    {"W", TimeUnit::kWeek},
    {"D", TimeUnit::kDay},
    {"h", TimeUnit::kHour},
    {"m", TimeUnit::kMinute},
    {"s", TimeUnit::kSecond},
    {"ms", TimeUnit::kMillisecond},
    {"us", TimeUnit::kMicrosecond},
    {"\u03bcs", TimeUnit::kMicrosecond},
    {"ns", TimeUnit::kNanosecond},
    {"ps", TimeUnit::kPicosecond},
    {"fs", TimeUnit::kFemtosecond},
    {"as", TimeUnit::kAttosecond},
};

// "<M8[10s]"'s "[10s]" part: empty for the generic unit.
std::string time_suffix(const DataType& t) {
  if (t.unit == TimeUnit::kGeneric) return "";
  return "[" + (t.scale == 1 ? std::string() : std::to_string(t.scale)) +
         std::string(time_unit_name(t.unit)) + "]";
}

// "[10s]" / "[ns]" / "" of a NumPy datetime typestr into a type of `kind`.
Result<DataType> parse_time_suffix(DTypeKind kind, std::string_view suffix,
                                   const std::string& quoted) {
  if (suffix.empty()) return time_type(kind, "generic", 1);
  if (suffix.size() < 3 || suffix.front() != '[' || suffix.back() != ']')
    return invalid_metadata(quoted + " has no valid time unit (e.g. '<M8[ns]')");
  suffix = suffix.substr(1, suffix.size() - 2);
  std::size_t digits = 0;
  while (digits < suffix.size() && suffix[digits] >= '0' && suffix[digits] <= '9') ++digits;
  std::int64_t scale = 1;
  if (digits > 0) {
    auto [p, ec] = std::from_chars(suffix.data(), suffix.data() + digits, scale);
    if (ec != std::errc()) return invalid_metadata(quoted + ": time unit multiplier too large");
  }
  auto t = time_type(kind, suffix.substr(digits), scale);
  if (!t.ok()) return std::move(t).take_status().annotate(quoted);
  return t;
}

}  // namespace

std::string_view time_unit_name(TimeUnit unit) {
  if (unit == TimeUnit::kMicrosecond) return "us";
  for (const auto& u : kTimeUnits)
    if (u.unit == unit) return u.name;
  return "generic";
}

Result<DataType> time_type(DTypeKind kind, std::string_view unit, std::int64_t scale) {
  if (kind != DTypeKind::kDateTime && kind != DTypeKind::kTimeDelta)
    return internal_error("time_type: not a time kind");
  const NamedUnit* found = nullptr;
  for (const auto& u : kTimeUnits)
    if (u.name == unit) found = &u;
  if (found == nullptr)
    return invalid_metadata("unknown time unit '" + std::string(unit) +
                            "' (NumPy's units: Y, M, W, D, h, m, s, ms, us, ns, ps, fs, as, "
                            "generic)");
  if (scale < 1 || scale > 0x7fffffff)
    return invalid_metadata("time unit multiplier " + std::to_string(scale) +
                            " must be between 1 and 2^31-1");
  if (found->unit == TimeUnit::kGeneric && scale != 1)
    return invalid_metadata("the generic time unit takes no multiplier");
  return DataType{kind, 8, found->unit, static_cast<std::uint32_t>(scale)};
}

Result<DataType> fixed_length_type(DTypeKind kind, std::uint64_t length_bytes) {
  const bool fixed = kind == DTypeKind::kString || kind == DTypeKind::kBytes ||
                     kind == DTypeKind::kRaw || kind == DTypeKind::kStructured;
  if (!fixed) return internal_error("fixed_length_type: not a fixed-length kind");
  if (length_bytes == 0) return invalid_metadata("a fixed-length type needs at least 1 byte");
  if (kind == DTypeKind::kString && length_bytes % 4 != 0)
    return invalid_metadata("fixed-length UTF-32 text needs a multiple of 4 bytes, got " +
                            std::to_string(length_bytes));
  if (length_bytes > kMaxItemSize)
    return unimplemented("elements of " + std::to_string(length_bytes) +
                         " bytes exceed NumPy's limit of " + std::to_string(kMaxItemSize));
  return DataType{kind, static_cast<std::uint32_t>(length_bytes)};
}

std::string DataType::v3_name() const {
  switch (kind) {
    case DTypeKind::kRaw:
      return "r" + std::to_string(std::uint64_t{size} * 8);
    case DTypeKind::kString:
      return "fixed_length_utf32";
    case DTypeKind::kBytes:
      return "null_terminated_bytes";
    case DTypeKind::kDateTime:
      return "numpy.datetime64";
    case DTypeKind::kTimeDelta:
      return "numpy.timedelta64";
    case DTypeKind::kStructured:
      return "structured";
    case DTypeKind::kVlenString:
      return "string";
    case DTypeKind::kVlenBytes:
      return "variable_length_bytes";
    case DTypeKind::kVlenArray:
      return "vlen-array";
    default:
      break;
  }
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
    case DTypeKind::kStructured:
      return "|V" + n;
    case DTypeKind::kString:
      return "<U" + std::to_string(size / 4);
    case DTypeKind::kBytes:
      return "|S" + n;
    case DTypeKind::kDateTime:
      return "<M8" + time_suffix(*this);
    case DTypeKind::kTimeDelta:
      return "<m8" + time_suffix(*this);
    case DTypeKind::kVlenString:
      return "T";
    case DTypeKind::kVlenBytes:
    case DTypeKind::kVlenArray:
      return "|O";
  }
  return "invalid";
}

std::uint32_t DataType::swap_unit() const {
  switch (kind) {
    case DTypeKind::kComplex:
      return size / 2;
    case DTypeKind::kString:
      return 4;
    case DTypeKind::kRaw:
    case DTypeKind::kBool:
    case DTypeKind::kBytes:
    case DTypeKind::kStructured:
    case DTypeKind::kVlenString:
    case DTypeKind::kVlenBytes:
    case DTypeKind::kVlenArray:
      return 1;
    default:
      return size;
  }
}

Result<DataType> parse_v3_data_type(std::string_view name) {
  for (const auto& t : kV3Types)
    if (t.name == name) return t.type;
  if (name == "string") return DataType{DTypeKind::kVlenString, 0};
  if (name == "variable_length_bytes" || name == "bytes") return DataType{DTypeKind::kVlenBytes, 0};
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
  if (s.size() < 2) return invalid_metadata(quoted + " is not a NumPy typestr");
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
      return invalid_metadata(quoted + " must start with '<', '>', '|' or '='");
  }
  const char code = s[1];
  if (code == 'O')
    return unimplemented(quoted +
                         " (Python objects) is readable only with a vlen-utf8, vlen-bytes or "
                         "vlen-array object codec");
  if (code == 'M' || code == 'm') {
    if (s.size() < 3 || s[2] != '8') return invalid_metadata(quoted + ": datetimes are 8 bytes");
    ZF_ASSIGN_OR_RETURN(
        DataType t, parse_time_suffix(code == 'M' ? DTypeKind::kDateTime : DTypeKind::kTimeDelta,
                                      s.substr(3), quoted));
    return TypedEndian{t, endian};
  }
  if (s.size() < 3) return invalid_metadata(quoted + " is not a NumPy typestr");
  std::uint64_t count = 0;
  auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), count);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && count > kMaxItemSize))
    return unimplemented(quoted + ": elements exceed NumPy's limit of " +
                         std::to_string(kMaxItemSize) + " bytes");
  if (ec != std::errc() || p != s.data() + s.size() || count == 0)
    return invalid_metadata(quoted + " has no valid item size");
  if (code == 'U' || code == 'S') {
    // "<U5" counts code points of 4 bytes; "|S5" counts bytes.
    const std::uint64_t bytes = code == 'U' ? count * 4 : count;
    auto t = fixed_length_type(code == 'U' ? DTypeKind::kString : DTypeKind::kBytes, bytes);
    if (!t.ok()) return std::move(t).take_status().annotate(quoted);
    return TypedEndian{*t, code == 'U' ? endian : Endian::kNotApplicable};
  }
  const auto size = static_cast<std::uint32_t>(count);
  DataType t;
  t.size = size;
  switch (code) {
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
      return unimplemented(quoted + " is not supported");
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
