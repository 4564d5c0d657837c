// libFuzzer target: the numcodecs Delta filter's decoder (running sums with NumPy's type
// promotion) for every supported (dtype, astype) pair, on arbitrary bytes.
// Input: u8 dtype | u8 astype (indices into kTypestrs) | u8 flags | u32 declared size | bytes.
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow::fuzz;
  InputReader in(data, size);
  const char* dtype = kTypestrs[in.u8() % kNumTypestrs];
  const char* astype = kTypestrs[in.u8() % kNumTypestrs];
  const auto codec = make_v2_codec({{"id", "delta"}, {"dtype", dtype}, {"astype", astype}});
  if (codec) check_bytes_to_bytes_decoder(*codec, in);
  return 0;
}
