// libFuzzer target: the zstd (Zarr v3 `zstd`, numcodecs Zstd) decoder on arbitrary bytes,
// through both decode() and decode_into().
// Input: u8 flags | u32 declared size | encoded bytes (fuzz_util.h).
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow::fuzz;
  static const auto codec = make_v2_codec({{"id", "zstd"}});
  InputReader in(data, size);
  check_bytes_to_bytes_decoder(*codec, in);
  return 0;
}
