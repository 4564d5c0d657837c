// The training loader's per-channel normalisation and dtype cast of float32 elements:
//   y = cast((x - mean) * inv_std)   to float32, bfloat16 or float16, rounded to nearest even.
// One definition of the arithmetic for both sides: the GPU scatter kernel applies it while
// copying chunks into a batch (codec/gpu/kernels.cu), and the host threads apply it to chunks
// they decoded themselves before copying them up (zarr/gpu/device_read_cuda.cc), so a batch's
// bytes do not depend on where each chunk was decoded. NaNs are counted; a 16-bit NaN is
// written as 0x7fff, the canonical NaN CUDA's conversions produce.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zarrflow {

// kStored: elements as stored (no transform).
enum class OutType : std::uint32_t { kStored = 0, kFloat32 = 1, kBFloat16 = 2, kFloat16 = 3 };

constexpr std::uint32_t out_type_size(OutType t) {
  return t == OutType::kBFloat16 || t == OutType::kFloat16 ? 2 : 4;
}

struct ElementTransform {
  OutType out = OutType::kStored;
  float mean = 0.f, inv_std = 1.f;
};

// Host version: `n` float32 at `in` → `n` outputs of `tf.out` at `out` (not overlapping `in`;
// any alignment). Returns the number of NaN inputs. tf.out must not be kStored.
std::uint64_t normalize_cast(const float* in, void* out, std::size_t n, const ElementTransform& tf);

// The 16-bit conversions on their own (round to nearest even; NaN → 0x7fff).
std::uint16_t float_to_bf16_bits(float x);
std::uint16_t float_to_f16_bits(float x);

}  // namespace zarrflow
