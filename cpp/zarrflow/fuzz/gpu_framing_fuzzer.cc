// libFuzzer target: the GPU read path's host-side framing checks (codec/gpu/framing.h), which
// vet every chunk before its bytes reach a GPU decoder: zstd frame headers, zlib and gzip
// headers and trailers, numcodecs' LZ4 size prefix and crc32c trailers. Guarantees checked:
//   * the payload handed to the GPU lies inside the stored chunk (its checksum excluded);
//   * a chunk the framing rejects as corrupt is rejected by the CPU decoder too (the GPU path
//     must not refuse data the CPU path reads).
// Input: u8 codec chain (index into kChains) | u8 data type | u16 elements | stored chunk bytes.
#include "zarrflow/codec/gpu/framing.h"
#include "zarrflow/fuzz/fuzz_util.h"

namespace {

using namespace zarrflow;
using nlohmann::json;

const char* const kChains[] = {
    R"([])",
    R"([{"name": "crc32c"}])",
    R"([{"name": "zstd", "configuration": {"level": 1}}])",
    R"([{"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}])",
    R"([{"name": "gzip", "configuration": {"level": 1}}])",
    R"([{"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}])",
    R"([{"name": "numcodecs.zlib", "configuration": {"level": 1}}])",
    R"([{"name": "numcodecs.lz4"}])",
    R"([{"name": "numcodecs.lz4"}, {"name": "crc32c"}])",
    R"([{"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "shuffle"}}])",
};
constexpr std::size_t kNumChains = sizeof(kChains) / sizeof(kChains[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::InputReader in(data, size);
  json codecs = json::parse(kChains[in.u8() % kNumChains]);
  const int type = in.u8() % 3;  // uint8, little-endian uint16, big-endian uint16
  const std::int64_t elements = 1 + in.u16() % 4096;
  const ConstByteSpan stored = in.rest();

  const DataType dtype{DTypeKind::kUInt, type == 0 ? 1u : 2u};
  const json bytes = {{"name", "bytes"},
                      {"configuration", {{"endian", type == 2 ? "big" : "little"}}}};
  codecs.insert(codecs.begin(), bytes);
  const ChunkSpec spec{dtype, {elements}, std::vector<std::byte>(dtype.size)};
  auto chain = CodecChain::from_v3_json(codecs, spec);
  fuzz::require_ok(chain.status(), "a GPU-decodable chain was rejected");
  const gpu::ChainProgram program = gpu::analyze_chain(*chain);
  fuzz::require(program.gpu, "analyze_chain sent a GPU-decodable chain to the CPU");

  const auto decoded_size = static_cast<std::uint64_t>(spec.nbytes());
  auto payload = gpu::locate_payload(program, stored, decoded_size);
  fuzz::note(payload.ok() && payload->cpu ? "locate_payload (CPU)" : "locate_payload",
             payload.status());
  if (payload.ok()) {
    const std::uint64_t framed = stored.size() - (program.crc32c ? 4 : 0);
    fuzz::require(
        payload->cpu || (payload->offset <= framed && payload->size <= framed - payload->offset),
        "the GPU payload lies outside the stored chunk");
    return 0;
  }
  fuzz::require_not_internal(payload.status());
  fuzz::Destination dest = fuzz::make_destination({elements}, dtype.size, false);
  const Status cpu = fuzz::decode_selection(*chain, stored, Selection::full({elements}), dest);
  fuzz::require(!cpu.ok(), "the framing check rejects a chunk the CPU decoder reads");
  return 0;
}
