#include "zarrflow/core/normalize.h"

#include <cmath>
#include <cstring>

namespace zarrflow {
namespace {

inline std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// Branch-free so that the loops below vectorise. bfloat16: the upper half of the float, rounded
// to nearest even by adding 0x7fff plus the lowest kept bit (carries into the exponent round up
// to the next binade or to infinity, as they should).
inline std::uint16_t bf16(float y) {
  const std::uint32_t u = bits(y);
  const std::uint16_t r = std::uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return y != y ? std::uint16_t(0x7fff) : r;
}

#if defined(__FLT16_MANT_DIG__)  // the compiler has _Float16 (GCC; clang from 15 on x86-64)
inline std::uint16_t f16(float y) {
  const _Float16 h = static_cast<_Float16>(y);  // IEEE conversion: round to nearest even
  std::uint16_t r;
  std::memcpy(&r, &h, 2);
  return y != y ? std::uint16_t(0x7fff) : r;
}
#else
// The same conversion in integer arithmetic: round to nearest even, overflow to infinity.
inline std::uint16_t f16(float y) {
  const std::uint32_t u = bits(y), a = u & 0x7fffffffu;
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const auto round_shift = [](std::uint32_t v, int shift) {  // v >> shift, ties to even
    const std::uint32_t kept = v >> shift, rest = v & ((1u << shift) - 1u), half = 1u << (shift - 1);
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
  };
  if (a > 0x7f800000u) return 0x7fff;                   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;          // 65520 and above round to infinity
  if (a <= 0x33000000u) return sign;                    // 2^-25 and below round to zero
  if (a < 0x38800000u) {                                // below 2^-14: a subnormal half
    const int shift = 126 - static_cast<int>(a >> 23);  // the value in units of 2^-24
    return static_cast<std::uint16_t>(sign | round_shift((a & 0x7fffffu) | 0x800000u, shift));
  }
  return static_cast<std::uint16_t>(sign | round_shift(a - 0x38000000u, 13));  // rebias 127 → 15
}
#endif

// On x86-64 with GCC, compiled for AVX-512 and AVX2 (with F16C) as well as the baseline, picked at
// load time: the loader's host threads convert up to ~8 G elements/s for a 71-channel batch
// stream. Elsewhere (aarch64, clang) the compiler's own vectorisation of the plain loops.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZF_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ZF_CLONES
#endif

template <typename Out, typename Conv>
inline std::uint64_t run(const float* __restrict in, Out* __restrict out, std::size_t n, float m,
                         float k, Conv conv) {
  std::uint64_t nans = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = in[i];
    nans += x != x;
    out[i] = conv((x - m) * k);
  }
  return nans;
}

ZF_CLONES std::uint64_t to_f32(const float* __restrict in, float* __restrict out, std::size_t n,
                               float m, float k) {
  return run(in, out, n, m, k, [](float y) { return y; });
}
ZF_CLONES std::uint64_t to_bf16(const float* __restrict in, std::uint16_t* __restrict out,
                                std::size_t n, float m, float k) {
  return run(in, out, n, m, k, bf16);
}
ZF_CLONES std::uint64_t to_f16(const float* __restrict in, std::uint16_t* __restrict out,
                               std::size_t n, float m, float k) {
  return run(in, out, n, m, k, f16);
}

}  // namespace

std::uint16_t float_to_bf16_bits(float x) { return bf16(x); }
std::uint16_t float_to_f16_bits(float x) { return f16(x); }

std::uint64_t normalize_cast(const float* in, void* out, std::size_t n,
                             const ElementTransform& tf) {
  switch (tf.out) {
    case OutType::kFloat32:
      return to_f32(in, static_cast<float*>(out), n, tf.mean, tf.inv_std);
    case OutType::kBFloat16:
      return to_bf16(in, static_cast<std::uint16_t*>(out), n, tf.mean, tf.inv_std);
    case OutType::kFloat16:
      return to_f16(in, static_cast<std::uint16_t*>(out), n, tf.mean, tf.inv_std);
    case OutType::kStored:
      break;
  }
  return 0;
}

}  // namespace zarrflow
