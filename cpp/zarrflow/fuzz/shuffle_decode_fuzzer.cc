// libFuzzer target: the numcodecs Shuffle filter's decoder (byte un-transpose) for element sizes
// 0..255 on arbitrary bytes.
// Input: u8 elementsize | u8 flags | u32 declared size | bytes (fuzz_util.h).
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow::fuzz;
  InputReader in(data, size);
  const auto codec = make_v2_codec({{"id", "shuffle"}, {"elementsize", in.u8()}});
  if (codec) check_bytes_to_bytes_decoder(*codec, in);
  return 0;
}
