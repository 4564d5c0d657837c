#include "zarrflow/zarr/fill_value.h"

#include "zarrflow/codec/numeric_filter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace zarrflow {
namespace {

template <typename T>
std::vector<std::byte> bytes_of(T v) {
  std::vector<std::byte> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

Status bad(const nlohmann::json& v, const DataType& t, const std::string& why = "") {
  return invalid_metadata("fill_value " + v.dump() + " is not valid for " + t.v3_name() +
                          (why.empty() ? "" : " (" + why + ")"));
}

std::uint16_t bfloat16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // quiet, keep sign
  u += 0x7fff + ((u >> 16) & 1);                                           // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

// A float-kind scalar of `size` bytes (2: float16 or bfloat16, 4, 8) from one JSON value.
Result<std::vector<std::byte>> float_scalar(const nlohmann::json& v, DTypeKind kind,
                                            std::uint32_t size, const DataType& t) {
  double d;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "NaN") {
      d = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "Infinity") {
      d = std::numeric_limits<double>::infinity();
    } else if (s == "-Infinity") {
      d = -std::numeric_limits<double>::infinity();
    } else if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      // Bit pattern, e.g. "0x7fc00001" for a float32 NaN with payload.
      if (s.size() - 2 != size * 2)
        return bad(v, t, "hex fill needs " + std::to_string(size * 2) + " digits");
      std::uint64_t bits = 0;
      for (std::size_t i = 2; i < s.size(); ++i) {
        const char c = s[i];
        int x = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (x < 0) return bad(v, t, "invalid hex digit");
        bits = (bits << 4) | static_cast<std::uint64_t>(x);
      }
      std::vector<std::byte> b(size);
      std::memcpy(b.data(), &bits, size);  // little-endian host: low bytes first
      return b;
    } else {
      return bad(v, t);
    }
  } else {
    return bad(v, t);
  }
  switch (size) {
    case 2:
      if (kind == DTypeKind::kBFloat16) return bytes_of(bfloat16_bits(static_cast<float>(d)));
      return bytes_of(double_to_half(d));  // as NumPy rounds
    case 4:
      return bytes_of(static_cast<float>(d));
    case 8:
      return bytes_of(d);
    default:
      return bad(v, t);
  }
}

template <typename T>
Result<std::vector<std::byte>> int_scalar(const nlohmann::json& v, const DataType& t) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
      return bad(v, t, "out of range");
    return bytes_of(static_cast<T>(u));
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if constexpr (std::is_signed_v<T>) {
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
        return bad(v, t, "out of range");
    } else {
      if (i < 0 || static_cast<std::uint64_t>(i) > std::numeric_limits<T>::max())
        return bad(v, t, "out of range");
    }
    return bytes_of(static_cast<T>(i));
  }
  if (v.is_number_float()) {  // some writers store integral fills as 0.0
    const double d = v.get<double>();
    // The upper bound as a power of two, exact in double (max() itself, 2^63 - 1, rounds up to
    // 2^63, which would pass and then overflow the cast).
    const double end = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (std::trunc(d) != d || d < static_cast<double>(std::numeric_limits<T>::lowest()) || d >= end)
      return bad(v, t, "not an integer in range");
    return bytes_of(static_cast<T>(d));
  }
  return bad(v, t);
}

Result<std::vector<std::byte>> base64_decode(const std::string& s, const nlohmann::json& v,
                                             const DataType& t) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<std::byte> out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    const int x = val(c);
    if (x < 0) return bad(v, t, "invalid base64");
    acc = (acc << 6) | static_cast<std::uint32_t>(x);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::byte>((acc >> bits) & 0xff));
    }
  }
  return out;
}

// The code points of UTF-8 text (JSON strings are valid UTF-8 once parsed).
Result<std::vector<std::uint32_t>> utf8_code_points(const std::string& s, const nlohmann::json& v,
                                                    const DataType& t) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80           ? 1
                  : (c >> 5) == 0x6  ? 2
                  : (c >> 4) == 0xe  ? 3
                  : (c >> 3) == 0x1e ? 4
                                     : 0;
    if (n == 0 || i + n > s.size()) return bad(v, t, "invalid UTF-8");
    std::uint32_t cp = n == 1 ? c : c & (0x7f >> n);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// Text as NumPy stores it in "<U<n>": UTF-32LE code units, truncated or zero-padded to the
// element (NumPy truncates a longer value when it fills an array, and so does zarr-python).
Result<std::vector<std::byte>> utf32_scalar(const nlohmann::json& v, const DataType& t) {
  if (!v.is_string()) return bad(v, t, "text fill values are strings");
  ZF_ASSIGN_OR_RETURN(auto cps, utf8_code_points(v.get_ref<const std::string&>(), v, t));
  std::vector<std::byte> b(t.size, std::byte{0});
  for (std::size_t i = 0; i < cps.size() && 4 * i < t.size; ++i) std::memcpy(&b[4 * i], &cps[i], 4);
  return b;
}

// What Python's str() gives for a float (repr's shortest round-trip digits, its notation rules):
// zarr-python turns a numeric fill value of a variable-length string array into str(value).
std::string python_float_str(double d) {
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, end);  // "-1.2345e+16"
  const bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  const std::size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;  // digits "123", decpt 2: 12.3
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
    } else if (static_cast<std::size_t>(decpt) >= digits.size()) {
      out += digits + std::string(decpt - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  const int x = decpt - 1;
  out += x < 0 ? "e-" : "e+";
  const std::string xs = std::to_string(x < 0 ? -x : x);
  out += (xs.size() < 2 ? "0" : "") + xs;
  return out;
}

// A variable-length text fill value: its UTF-8 bytes. zarr-python accepts a string or a number
// and uses str(value); a missing v2 value reads as "".
Result<std::vector<std::byte>> vlen_text_scalar(const nlohmann::json& v, const DataType& t) {
  std::string s;
  if (v.is_string()) {
    s = v.get_ref<const std::string&>();
  } else if (v.is_boolean()) {
    s = v.get<bool>() ? "True" : "False";
  } else if (v.is_number_integer()) {
    s = v.dump();
  } else if (v.is_number_float()) {
    s = python_float_str(v.get<double>());
  } else {
    return bad(v, t, "text fill values are strings or numbers");
  }
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// A time fill value: an int64 count of the type's unit, or "NaT".
Result<std::vector<std::byte>> time_scalar(const nlohmann::json& v, const DataType& t) {
  if (v.is_string() && v.get_ref<const std::string&>() == "NaT")
    return bytes_of(std::numeric_limits<std::int64_t>::min());
  if (v.is_number()) return int_scalar<std::int64_t>(v, t);
  return bad(v, t, "time fill values are integers or \"NaT\"");
}

// Base64 text decoded, for byte-valued types.
Result<std::vector<std::byte>> base64_scalar(const nlohmann::json& v, const DataType& t) {
  if (!v.is_string()) return bad(v, t, "byte fill values are base64 strings");
  return base64_decode(v.get_ref<const std::string&>(), v, t);
}

}  // namespace

Result<std::vector<std::byte>> parse_fill_value(const nlohmann::json& v, const DataType& t,
                                                int zarr_format) {
  if (v.is_null()) {
    if (zarr_format != 2) return invalid_metadata("fill_value must not be null in Zarr v3");
    // zarr-python reads a missing v2 fill value as the type's default: NaT for times, empty
    // text and bytes, zeros otherwise.
    if (t.is_time()) return bytes_of(std::numeric_limits<std::int64_t>::min());
    return std::vector<std::byte>(t.size, std::byte{0});
  }
  switch (t.kind) {
    case DTypeKind::kBool:
      if (v.is_boolean())
        return std::vector<std::byte>{std::byte{v.get<bool>() ? std::uint8_t{1} : std::uint8_t{0}}};
      if (v.is_number_integer() && (v == 0 || v == 1))
        return std::vector<std::byte>{std::byte{v.get<int>() ? std::uint8_t{1} : std::uint8_t{0}}};
      return bad(v, t);
    case DTypeKind::kInt:
      switch (t.size) {
        case 1:
          return int_scalar<std::int8_t>(v, t);
        case 2:
          return int_scalar<std::int16_t>(v, t);
        case 4:
          return int_scalar<std::int32_t>(v, t);
        default:
          return int_scalar<std::int64_t>(v, t);
      }
    case DTypeKind::kUInt:
      switch (t.size) {
        case 1:
          return int_scalar<std::uint8_t>(v, t);
        case 2:
          return int_scalar<std::uint16_t>(v, t);
        case 4:
          return int_scalar<std::uint32_t>(v, t);
        default:
          return int_scalar<std::uint64_t>(v, t);
      }
    case DTypeKind::kFloat:
    case DTypeKind::kBFloat16:
      return float_scalar(v, t.kind, t.size, t);
    case DTypeKind::kComplex: {
      if (!v.is_array() || v.size() != 2) {
        if (zarr_format == 2 && (v.is_number() || v.is_string())) {  // real-only shorthand
          ZF_ASSIGN_OR_RETURN(auto re, float_scalar(v, DTypeKind::kFloat, t.size / 2, t));
          re.resize(t.size, std::byte{0});
          return re;
        }
        return bad(v, t, "complex fill values are [real, imaginary] pairs");
      }
      ZF_ASSIGN_OR_RETURN(auto re, float_scalar(v[0], DTypeKind::kFloat, t.size / 2, t));
      ZF_ASSIGN_OR_RETURN(auto im, float_scalar(v[1], DTypeKind::kFloat, t.size / 2, t));
      re.insert(re.end(), im.begin(), im.end());
      return re;
    }
    case DTypeKind::kRaw: {
      std::vector<std::byte> b;
      if (v.is_array()) {
        for (const auto& x : v) {
          if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > 255)
            return bad(v, t, "raw fill values are arrays of bytes");
          b.push_back(static_cast<std::byte>(x.get<int>()));
        }
      } else if (v.is_string()) {  // v2, and zarr-python's v3 raw_bytes
        ZF_ASSIGN_OR_RETURN(b, base64_scalar(v, t));
      } else if (v.is_number_integer() && v == 0) {
        b.assign(t.size, std::byte{0});
      } else {
        return bad(v, t);
      }
      if (b.size() != t.size) return bad(v, t, "needs " + std::to_string(t.size) + " bytes");
      return b;
    }
    case DTypeKind::kStructured: {
      ZF_ASSIGN_OR_RETURN(auto b, base64_scalar(v, t));
      if (b.size() != t.size) return bad(v, t, "needs " + std::to_string(t.size) + " bytes");
      return b;
    }
    case DTypeKind::kString:
      return utf32_scalar(v, t);
    case DTypeKind::kBytes: {
      // NumPy pads a shorter value with zeros and truncates a longer one.
      ZF_ASSIGN_OR_RETURN(auto b, base64_scalar(v, t));
      b.resize(t.size, std::byte{0});
      return b;
    }
    case DTypeKind::kDateTime:
    case DTypeKind::kTimeDelta:
      return time_scalar(v, t);
    case DTypeKind::kVlenString:
      return vlen_text_scalar(v, t);
    case DTypeKind::kVlenBytes:
      return base64_scalar(v, t);
    case DTypeKind::kVlenArray:
      // numcodecs' arrays have no fill value of their own; the Python layer reads the JSON.
      return std::vector<std::byte>();
  }
  return bad(v, t);
}

}  // namespace zarrflow
