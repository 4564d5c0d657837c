// libFuzzer target: the numcodecs FixedScaleOffset filter's decoder (enc / scale + offset, cast
// as NumPy casts, out-of-range and NaN values included) for every supported (dtype, astype) pair
// and any scale and offset (bit patterns of doubles: zero, subnormal, huge, inf, NaN).
// Input: u8 dtype | u8 astype | u32 scale lo | u32 scale hi | u32 offset lo | u32 offset hi |
//        u8 flags | u32 declared size | bytes.
#include <bit>

#include "zarrflow/fuzz/fuzz_util.h"

namespace {

double read_double(zarrflow::fuzz::InputReader& in) {
  const std::uint64_t lo = in.u32();
  return std::bit_cast<double>(lo | std::uint64_t{in.u32()} << 32);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow::fuzz;
  InputReader in(data, size);
  const char* dtype = kTypestrs[in.u8() % kNumTypestrs];
  const char* astype = kTypestrs[in.u8() % kNumTypestrs];
  const double scale = read_double(in);
  const double offset = read_double(in);
  const auto codec = make_v2_codec({{"id", "fixedscaleoffset"},
                                    {"dtype", dtype},
                                    {"astype", astype},
                                    {"scale", scale},
                                    {"offset", offset}});
  if (codec) check_bytes_to_bytes_decoder(*codec, in);
  return 0;
}
