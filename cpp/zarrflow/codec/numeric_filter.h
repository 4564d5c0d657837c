// Shared machinery of the numcodecs element-wise filters (delta, fixedscaleoffset, astype,
// quantize): NumPy typestr-typed elements ('<' / '>' byte order honoured), loaded, cast and stored
// exactly as NumPy 2 does it on x86-64, for int8..64, uint8..64 and float16/32/64.
// Casts: integer→integer wraps; to float rounds to nearest even; float→integer truncates toward
// zero, and out-of-range or NaN values give what NumPy gives on x86-64 (cvttsd2si's "integer
// indefinite", e.g. int32 → INT32_MIN, int8 → 0, uint32 via the 2^31 bias trick).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include <nlohmann/json_fwd.hpp>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// IEEE 754 binary16 <-> binary64, exactly as NumPy converts: half→double is exact; double→half
// rounds to nearest even, overflows to ±inf, and keeps a NaN's sign and top payload bits.
double half_to_double(std::uint16_t h);
std::uint16_t double_to_half(double d);

namespace numeric {

struct Half {
  std::uint16_t bits = 0;
};

enum class Num : std::uint8_t { kI1, kI2, kI4, kI8, kU1, kU2, kU4, kU8, kF2, kF4, kF8 };

// The C++ type of each Num, in enum order.
using NumTypes = std::tuple<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                            std::uint16_t, std::uint32_t, std::uint64_t, Half, float, double>;
template <Num N>
using num_t = std::tuple_element_t<static_cast<std::size_t>(N), NumTypes>;

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, Half> || std::is_floating_point_v<T>;

template <typename T>
constexpr Num num_of() {
  if constexpr (std::is_same_v<T, Half>)
    return Num::kF2;
  else if constexpr (std::is_same_v<T, float>)
    return Num::kF4;
  else if constexpr (std::is_same_v<T, double>)
    return Num::kF8;
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1   ? Num::kI1
           : sizeof(T) == 2 ? Num::kI2
           : sizeof(T) == 4 ? Num::kI4
                            : Num::kI8;
  else
    return sizeof(T) == 1   ? Num::kU1
           : sizeof(T) == 2 ? Num::kU2
           : sizeof(T) == 4 ? Num::kU4
                            : Num::kU8;
}

constexpr int num_size(Num n) {
  switch (n) {
    case Num::kI1:
    case Num::kU1:
      return 1;
    case Num::kI2:
    case Num::kU2:
    case Num::kF2:
      return 2;
    case Num::kI4:
    case Num::kU4:
    case Num::kF4:
      return 4;
    default:
      return 8;
  }
}
constexpr bool num_float(Num n) { return n == Num::kF2 || n == Num::kF4 || n == Num::kF8; }
constexpr bool num_signed(Num n) {
  return n == Num::kI1 || n == Num::kI2 || n == Num::kI4 || n == Num::kI8;
}
constexpr Num signed_of_size(int size) {
  return size == 1 ? Num::kI1 : size == 2 ? Num::kI2 : size == 4 ? Num::kI4 : Num::kI8;
}
constexpr Num float_of_size(int size) {
  return size <= 2 ? Num::kF2 : size == 4 ? Num::kF4 : Num::kF8;
}

// np.promote_types restricted to these types.
constexpr Num promote(Num a, Num b) {
  if (a == b) return a;
  const int sa = num_size(a), sb = num_size(b);
  if (num_float(a) && num_float(b)) return sa >= sb ? a : b;
  if (num_float(a) || num_float(b)) {
    const Num f = num_float(a) ? a : b;
    const int isize = num_float(a) ? sb : sa;
    // The smallest float NumPy deems able to hold the integer: f2 ≥ 8-bit, f4 ≥ 16-bit, else f8.
    const int need = isize == 1 ? 2 : isize == 2 ? 4 : 8;
    return float_of_size(std::max(num_size(f), need));
  }
  if (num_signed(a) == num_signed(b)) return sa >= sb ? a : b;
  const int ss = num_signed(a) ? sa : sb;  // signed size
  const int us = num_signed(a) ? sb : sa;  // unsigned size
  if (us < ss) return signed_of_size(ss);
  if (us < 8) return signed_of_size(2 * us);
  return Num::kF8;  // int64 with uint64
}

template <typename F>
decltype(auto) visit(Num n, F&& f) {
  switch (n) {
    case Num::kI1:
      return f(std::type_identity<std::int8_t>{});
    case Num::kI2:
      return f(std::type_identity<std::int16_t>{});
    case Num::kI4:
      return f(std::type_identity<std::int32_t>{});
    case Num::kI8:
      return f(std::type_identity<std::int64_t>{});
    case Num::kU1:
      return f(std::type_identity<std::uint8_t>{});
    case Num::kU2:
      return f(std::type_identity<std::uint16_t>{});
    case Num::kU4:
      return f(std::type_identity<std::uint32_t>{});
    case Num::kU8:
      return f(std::type_identity<std::uint64_t>{});
    case Num::kF2:
      return f(std::type_identity<Half>{});
    case Num::kF4:
      return f(std::type_identity<float>{});
    case Num::kF8:
      break;
  }
  return f(std::type_identity<double>{});
}

// ---- loads, stores, casts, arithmetic ----------------------------------------------------------

template <std::size_t N>
struct UIntOf;
template <>
struct UIntOf<1> {
  using type = std::uint8_t;
};
template <>
struct UIntOf<2> {
  using type = std::uint16_t;
};
template <>
struct UIntOf<4> {
  using type = std::uint32_t;
};
template <>
struct UIntOf<8> {
  using type = std::uint64_t;
};

template <typename U>
U bswap(U u) {
  if constexpr (sizeof(U) == 1)
    return u;
  else if constexpr (sizeof(U) == 2)
    return __builtin_bswap16(u);
  else if constexpr (sizeof(U) == 4)
    return __builtin_bswap32(u);
  else
    return __builtin_bswap64(u);
}

template <typename T>
T load(const std::byte* p, bool swap) {
  typename UIntOf<sizeof(T)>::type u;
  std::memcpy(&u, p, sizeof u);
  if (swap) u = bswap(u);
  return std::bit_cast<T>(u);
}

template <typename T>
void store(std::byte* p, T v, bool swap) {
  auto u = std::bit_cast<typename UIntOf<sizeof(T)>::type>(v);
  if (swap) u = bswap(u);
  std::memcpy(p, &u, sizeof u);
}

template <typename T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return half_to_double(v.bits);
  else
    return static_cast<double>(v);
}

// x86-64 cvttsd2si: truncation, or the "integer indefinite" value when out of range or NaN.
inline std::int32_t cvtt32(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(x);
}
inline std::int64_t cvtt64(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
    return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(x);
}

// A float (exactly widened to double) cast to integer type `To` as NumPy does on x86-64.
template <typename To>
To float_to_int(double x) {
  if constexpr (sizeof(To) < 4) {
    return static_cast<To>(static_cast<std::uint32_t>(cvtt32(x)));
  } else if constexpr (std::is_same_v<To, std::int32_t>) {
    return cvtt32(x);
  } else if constexpr (std::is_same_v<To, std::uint32_t>) {
    if (x >= 2147483648.0)
      return static_cast<std::uint32_t>(cvtt32(x - 2147483648.0)) ^ 0x80000000u;
    return static_cast<std::uint32_t>(cvtt32(x));
  } else if constexpr (std::is_same_v<To, std::int64_t>) {
    return cvtt64(x);
  } else {
    static_assert(std::is_same_v<To, std::uint64_t>);
    if (x >= 9223372036854775808.0)
      return static_cast<std::uint64_t>(cvtt64(x - 9223372036854775808.0)) ^
             (std::uint64_t{1} << 63);
    return static_cast<std::uint64_t>(cvtt64(x));
  }
}

// `v.astype(To)` in NumPy.
template <typename To, typename From>
To cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsFloat<From>) {
    const double d = to_double(v);  // exact
    if constexpr (std::is_same_v<To, Half>)
      return Half{double_to_half(d)};
    else if constexpr (std::is_floating_point_v<To>)
      return static_cast<To>(d);
    else
      return float_to_int<To>(d);
  } else {  // integer source
    if constexpr (std::is_same_v<To, Half>)
      return Half{double_to_half(static_cast<double>(v))};
    else
      return static_cast<To>(v);  // wraps (C++20), or rounds to nearest for float/double
  }
}

template <typename T>
T add(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    // NumPy adds halves in float32 and rounds; both roundings agree with one exact rounding.
    return Half{double_to_half(half_to_double(a.bits) + half_to_double(b.bits))};
  } else if constexpr (std::is_floating_point_v<T>) {
    return a + b;
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  }
}

template <typename T>
T divide(T a, T b) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{double_to_half(half_to_double(a.bits) / half_to_double(b.bits))};
  } else {
    return a / b;
  }
}

// ---- typed elements --------------------------------------------------------------------------

// One element type as a filter configuration names it.
struct Elem {
  Num num = Num::kU1;
  bool swap = false;  // big-endian on disk
  std::string str;    // as written, for messages
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(num_size(num)); }
};

// A NumPy dtype as numcodecs writes it ("<i4", ">f8", "|u1"); plain names ("int16", "f4") are
// native (little-endian). Missing → `fallback` (or kInvalidMetadata when there is none); other
// kinds (bool, complex, strings, ...) are kUnimplemented naming `codec` and the field.
Result<Elem> parse_elem(const nlohmann::json& cfg, const char* field, std::string_view codec,
                        std::optional<std::string> fallback = std::nullopt);
// The same for a dtype string `s` (the value of `field`).
Result<Elem> parse_elem_string(const std::string& s, const char* field, std::string_view codec);
// The NumPy typestr of `e` in the given byte order ("<i2", ">f8", "|u1").
std::string typestr(const Elem& e, bool big_endian);

// Shared shape of the element-wise filters: the input holds elements of `enc_`, the output the
// same number of elements of `dec_`. Subclasses implement `run` over `n` elements.
class ElementwiseFilter : public BytesToBytesCodec {
 public:
  ElementwiseFilter(std::string name, Elem dec, Elem enc)
      : name_(std::move(name)), dec_(std::move(dec)), enc_(std::move(enc)) {}

  [[nodiscard]] std::string name() const override { return name_; }
  // Same element count on both sides.
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override;
  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override;
  Status decode_into(ConstByteSpan in, ByteSpan out) const override;

 protected:
  virtual void run(const std::byte* in, std::byte* out, std::size_t n) const = 0;

  std::string name_;
  Elem dec_, enc_;

 private:
  Result<std::size_t> count(ConstByteSpan in) const;
};

// `in` cast element by element from `from` to `to` (NumPy's astype), n elements.
void cast_elements(const Elem& from, const Elem& to, const std::byte* in, std::byte* out,
                   std::size_t n);

}  // namespace numeric
}  // namespace zarrflow
