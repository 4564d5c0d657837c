// libFuzzer target: the crc32c checksum codec (Zarr v3 `crc32c`: trailer; numcodecs CRC32C with
// location "start" or "end") on arbitrary bytes, through both decode() and decode_into().
// Input: u8 location (bit 0: start) | u8 flags | u32 declared size | bytes (fuzz_util.h).
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow::fuzz;
  static const auto at_end = make_v2_codec({{"id", "crc32c"}, {"location", "end"}});
  static const auto at_start = make_v2_codec({{"id", "crc32c"}, {"location", "start"}});
  InputReader in(data, size);
  check_bytes_to_bytes_decoder((in.u8() & 1) ? *at_start : *at_end, in);
  return 0;
}
