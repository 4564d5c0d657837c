// numcodecs filters (Zarr v2 `filters`), decoded bit-exactly like numcodecs 0.16 on NumPy 2.
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/index.html (numcodecs/delta.py,
//       fixedscaleoffset.py, astype.py, shuffle.py)
// Examples:
//   {"id": "delta", "dtype": "<i4", "astype": "<i2"}
//   {"id": "fixedscaleoffset", "offset": 1000, "scale": 10, "dtype": "<f8", "astype": "|u1"}
//   {"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}
//   {"id": "shuffle", "elementsize": 4}
//   Zarr v3 (zarr-python): {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}
//
// Each works on a flat buffer of NumPy typestr-typed elements ('<' / '>' byte order honoured on
// both sides), supporting int8..64, uint8..64 and float16/32/64. What NumPy does, reproduced:
//   delta: np.cumsum(enc, out=dec) keeps the running sum in np.promote_types(astype, dtype)
//     (int16+uint16 → int32, uint64+int64 → float64, int16+float16 → float32, ...), casts each
//     encoded value to it, and casts each partial sum to dtype.
//   fixedscaleoffset: (enc / scale) + offset with scale and offset as "weak" Python scalars
//     (NEP 50): in float64 for integer astype, in astype itself for float astype; then
//     .astype(dtype).
//   astype: enc.astype(decode_dtype).
//   shuffle: the byte transpose of numcodecs._shuffle; elementsize <= 1 copies.
// Casts: integer→integer wraps; to float rounds to nearest even; float→integer truncates toward
// zero, and out-of-range or NaN values give what NumPy gives on x86-64 (cvttsd2si's "integer
// indefinite", e.g. int32 → INT32_MIN, int8 → 0, uint32 via the 2^31 bias trick).
#include "zarrflow/codec/filters.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
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

namespace {

// ---- element types ---------------------------------------------------------------------------

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
std::int32_t cvtt32(double x) {
  if (!(x > -2147483649.0 && x < 2147483648.0)) return std::numeric_limits<std::int32_t>::min();
  return static_cast<std::int32_t>(x);
}
std::int64_t cvtt64(double x) {
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

// ---- dtype parsing -----------------------------------------------------------------------------

struct Elem {
  Num num = Num::kU1;
  bool swap = false;  // big-endian on disk
  std::string str;    // as written, for messages
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(num_size(num)); }
};

// A NumPy dtype as numcodecs writes it ("<i4", ">f8", "|u1"); plain names ("int16", "f4") are
// accepted as native (little-endian).
Result<Elem> parse_elem(const nlohmann::json& cfg, const char* field, std::string_view codec,
                        std::optional<std::string> fallback = std::nullopt) {
  ZF_ASSIGN_OR_RETURN(std::string s, config::get_string(cfg, field, fallback));
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

// ---- the codecs ------------------------------------------------------------------------------

// Shared shape of the element-wise filters: `in` holds elements of `enc_`, the output the same
// number of elements of `dec_`.
class ElementwiseFilter : public BytesToBytesCodec {
 public:
  ElementwiseFilter(std::string name, Elem dec, Elem enc)
      : name_(std::move(name)), dec_(std::move(dec)), enc_(std::move(enc)) {}

  [[nodiscard]] std::string name() const override { return name_; }
  // Same element count on both sides.
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    const auto d = static_cast<std::int64_t>(dec_.size());
    if (decoded < 0 || decoded % d != 0) return std::nullopt;
    return decoded / d * static_cast<std::int64_t>(enc_.size());
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    ZF_ASSIGN_OR_RETURN(std::size_t n, count(in));
    const std::size_t out_size = n * dec_.size();
    if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size(name_, out_size, *decoded_size));
    scratch.resize(out_size);
    run(in.data(), scratch.data(), n);
    return ConstByteSpan(scratch.span());
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_ASSIGN_OR_RETURN(std::size_t n, count(in));
    ZF_RETURN_IF_ERROR(check_decoded_size(name_, n * dec_.size(), out.size()));
    run(in.data(), out.data(), n);
    return {};
  }

 protected:
  virtual void run(const std::byte* in, std::byte* out, std::size_t n) const = 0;

  std::string name_;
  Elem dec_, enc_;

 private:
  Result<std::size_t> count(ConstByteSpan in) const {
    if (in.size() % enc_.size() != 0)
      return corrupt_data(name_ + ": " + std::to_string(in.size()) +
                          " bytes is not a whole number of '" + enc_.str + "' elements");
    return in.size() / enc_.size();
  }
};

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

class AsTypeCodec final : public ElementwiseFilter {
 public:
  AsTypeCodec(Elem decode_dtype, Elem encode_dtype)
      : ElementwiseFilter("astype", std::move(decode_dtype), std::move(encode_dtype)) {}
  [[nodiscard]] std::string describe() const override {
    return "astype(encode_dtype='" + enc_.str + "', decode_dtype='" + dec_.str + "')";
  }

 protected:
  void run(const std::byte* in, std::byte* out, std::size_t n) const override {
    if (enc_.num == dec_.num && enc_.swap == dec_.swap) {
      if (n) std::memcpy(out, in, n * enc_.size());
      return;
    }
    const bool si = enc_.swap, so = dec_.swap;
    visit(enc_.num, [&]<typename In>(std::type_identity<In>) {
      visit(dec_.num, [&]<typename Out>(std::type_identity<Out>) {
        for (std::size_t i = 0; i < n; ++i)
          store<Out>(out + i * sizeof(Out), cast<Out>(load<In>(in + i * sizeof(In), si)), so);
      });
    });
  }
};

class ShuffleCodec final : public BytesToBytesCodec {
 public:
  explicit ShuffleCodec(std::int64_t elementsize) : elementsize_(elementsize) {}

  [[nodiscard]] std::string name() const override { return "shuffle"; }
  [[nodiscard]] std::string describe() const override {
    return "shuffle(elementsize=" + std::to_string(elementsize_) + ")";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    return decoded;
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size("shuffle", in.size(), *decoded_size));
    ZF_RETURN_IF_ERROR(check(in));
    if (elementsize_ <= 1) return in;  // numcodecs copies; a view is the same bytes
    scratch.resize(in.size());
    unshuffle(in, scratch.span());
    return ConstByteSpan(scratch.span());
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_RETURN_IF_ERROR(check_decoded_size("shuffle", in.size(), out.size()));
    ZF_RETURN_IF_ERROR(check(in));
    if (elementsize_ <= 1) {
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
    } else {
      unshuffle(in, out);
    }
    return {};
  }

 private:
  Status check(ConstByteSpan in) const {
    if (elementsize_ > 1 && in.size() % static_cast<std::size_t>(elementsize_) != 0)
      return corrupt_data("shuffle: " + std::to_string(in.size()) +
                          " bytes is not a multiple of elementsize " +
                          std::to_string(elementsize_));
    return {};
  }

  // numcodecs._shuffle._doUnshuffle: byte j of element i comes from in[j * count + i].
  void unshuffle(ConstByteSpan in, ByteSpan out) const {
    const auto es = static_cast<std::size_t>(elementsize_);
    const std::size_t count = in.size() / es;
    if (count == 0) return;  // an empty chunk: its buffers may have no memory at all (null data)
    for (std::size_t j = 0; j < es; ++j) {
      const std::byte* src = in.data() + j * count;
      std::byte* dst = out.data() + j;
      for (std::size_t i = 0; i < count; ++i) dst[i * es] = src[i];
    }
  }

  std::int64_t elementsize_;
};

// ---- factories -------------------------------------------------------------------------------

using Ptr = Result<std::shared_ptr<const Codec>>;

Ptr make_delta(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "dtype", "astype"}));
  ZF_ASSIGN_OR_RETURN(Elem dtype, parse_elem(cfg, "dtype", "delta"));
  ZF_ASSIGN_OR_RETURN(Elem astype, parse_elem(cfg, "astype", "delta", dtype.str));
  return std::shared_ptr<const Codec>(std::make_shared<DeltaCodec>(dtype, astype));
}

Ptr make_fixedscaleoffset(const nlohmann::json& cfg, const ChunkSpec&) {
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

Ptr make_astype(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "encode_dtype", "decode_dtype"}));
  ZF_ASSIGN_OR_RETURN(Elem enc, parse_elem(cfg, "encode_dtype", "astype"));
  ZF_ASSIGN_OR_RETURN(Elem dec, parse_elem(cfg, "decode_dtype", "astype"));
  return std::shared_ptr<const Codec>(std::make_shared<AsTypeCodec>(dec, enc));
}

Ptr make_shuffle(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "elementsize"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t es, config::get_int(cfg, "elementsize", 4));
  return std::shared_ptr<const Codec>(std::make_shared<ShuffleCodec>(es));
}

}  // namespace

void register_v2_filters(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("delta", make_delta);
  v2.add("fixedscaleoffset", make_fixedscaleoffset);
  v2.add("astype", make_astype);
  v2.add("shuffle", make_shuffle);
  // In Zarr v3, zarr-python wraps delta/fixedscaleoffset/astype as array→array codecs; only the
  // byte shuffle is bytes→bytes.
  v3.add("numcodecs.shuffle", make_shuffle);
}

}  // namespace zarrflow
