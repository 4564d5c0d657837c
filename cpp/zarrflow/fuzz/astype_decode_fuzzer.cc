// libFuzzer target: the numcodecs AsType filter's decoder (NumPy casts between every supported
// pair of integer and float types, NaN and out-of-range values included) on arbitrary bytes.
// Input: u8 encode_dtype | u8 decode_dtype (indices into kTypestrs) | u8 flags | u32 declared
//        size | bytes.
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow::fuzz;
  InputReader in(data, size);
  const char* encode = kTypestrs[in.u8() % kNumTypestrs];
  const char* decode = kTypestrs[in.u8() % kNumTypestrs];
  const auto codec =
      make_v2_codec({{"id", "astype"}, {"encode_dtype", encode}, {"decode_dtype", decode}});
  if (codec) check_bytes_to_bytes_decoder(*codec, in);
  return 0;
}
