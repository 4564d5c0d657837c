// numcodecs `fletcher32` (bytes→bytes): HDF5's Fletcher-32 of the payload, stored as 4
// little-endian bytes after it.
// Spec: https://numcodecs.readthedocs.io/en/stable/checksum32.html#fletcher32
//       (numcodecs/fletcher32.pyx, after H5_checksum_fletcher32 in HDF5's H5checksum.c)
// Examples:
//   Zarr v2: {"id": "fletcher32"}
//   Zarr v3 (zarr-python): {"name": "numcodecs.fletcher32", "configuration": {}}
//
// The data is read as big-endian 16-bit words (an odd last byte is the high byte of a final word);
// both running sums are folded to 16 bits plus carry every 360 words and twice at the end.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/checksum32.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

constexpr std::uint32_t fold(std::uint32_t s) { return (s & 0xFFFF) + (s >> 16); }

Result<std::shared_ptr<const Codec>> make_fletcher32(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id"}));
  auto sum = [](ConstByteSpan d) { return fletcher32(d); };
  return std::shared_ptr<const Codec>(
      std::make_shared<Checksum32Codec>("fletcher32", sum, /*at_start=*/false, ""));
}

}  // namespace

std::uint32_t fletcher32(ConstByteSpan data) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
  std::size_t words = data.size() / 2;
  std::uint32_t sum1 = 0, sum2 = 0;
  while (words > 0) {
    // One block word by word is sum1 += w; sum2 += sum1. In closed form (which vectorises):
    // sum2 gains n * sum1 plus each word weighted by how many running sums include it, and both
    // wrap modulo 2^32 exactly as the word-by-word sums do.
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(words, 360));
    std::uint32_t block = 0, weighted = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t w = std::uint32_t{p[2 * i]} << 8 | p[2 * i + 1];
      block += w;
      weighted += (n - i) * w;
    }
    p += 2 * std::size_t{n};
    words -= n;
    sum2 += n * sum1 + weighted;
    sum1 += block;
    sum1 = fold(sum1);
    sum2 = fold(sum2);
  }
  if (data.size() % 2 != 0) {
    sum1 += std::uint32_t{p[0]} << 8;
    sum2 += sum1;
    sum1 = fold(sum1);
    sum2 = fold(sum2);
  }
  sum1 = fold(sum1);
  sum2 = fold(sum2);
  return sum2 << 16 | sum1;
}

void register_fletcher32_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("fletcher32", make_fletcher32);
  v3.add("numcodecs.fletcher32", make_fletcher32);
}

}  // namespace zarrflow
