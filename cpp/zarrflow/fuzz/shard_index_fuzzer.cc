// libFuzzer target: `sharding_indexed` shards — the index (at the start or the end, with or
// without its crc32c), its entries (empty, overlapping, out of range) and the inner chunks they
// point to — read both ways zarrflow reads shards: decoding the whole shard held in memory, and
// the partial read that fetches the index and then only the inner chunks the selection needs
// (nested shards through windows). Both must agree: same success, same bytes.
// Input: u8 flags | u8 data type | u8 ndim | per dimension u8 inner extent, u8 inner chunks |
//        selection (fuzz_util.h) | u8 destination order | shard bytes.
//   flags: bit 0 index at the start; bit 1 index codecs without crc32c; bits 2-3 inner codecs
//   (0 bytes, 1 bytes+crc32c, 2 bytes+zstd, 3 bytes+gzip); bit 4 inner chunks are themselves
//   shards of 1-element chunks.
#include <cstring>

#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/byte_reader.h"

namespace {

using namespace zarrflow;
using nlohmann::json;

json inner_codecs(int choice) {
  json codecs = json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
  if (choice == 1) codecs.push_back({{"name", "crc32c"}});
  if (choice == 2) codecs.push_back({{"name", "zstd"}, {"configuration", {{"level", 1}}}});
  if (choice == 3) codecs.push_back({{"name", "gzip"}, {"configuration", {{"level", 1}}}});
  return codecs;
}

json sharding(const Shape& inner, json codecs, bool index_at_start, bool index_crc32c) {
  json index = json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
  if (index_crc32c) index.push_back({{"name", "crc32c"}});
  return {{"name", "sharding_indexed"},
          {"configuration",
           {{"chunk_shape", inner},
            {"codecs", std::move(codecs)},
            {"index_codecs", std::move(index)},
            {"index_location", index_at_start ? "start" : "end"}}}};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::InputReader in(data, size);
  const std::uint8_t flags = in.u8();
  static const char* const kTypes[] = {"uint8", "uint16", "float32", "float64"};
  auto dtype = parse_v3_data_type(kTypes[in.u8() % 4]);
  Shape inner(static_cast<std::size_t>(1 + in.u8() % 3)), shard(inner.size());
  for (std::size_t i = 0; i < inner.size(); ++i) {
    inner[i] = 1 + in.u8() % 4;
    shard[i] = inner[i] * (1 + in.u8() % 4);
  }
  const Selection sel = fuzz::read_selection(in, shard);
  const bool reversed = (in.u8() & 1) != 0;
  const ConstByteSpan bytes = in.rest();

  json codecs = inner_codecs((flags >> 2) & 3);
  if (flags & 16) codecs = json::array({sharding(Shape(inner.size(), 1), codecs, false, true)});
  const ChunkSpec spec{*dtype, shard, std::vector<std::byte>(dtype->size)};
  auto chain = CodecChain::from_v3_json(
      json::array({sharding(inner, std::move(codecs), flags & 1, !(flags & 2))}), spec);
  fuzz::require_ok(chain.status(), "a valid sharding configuration was rejected");

  fuzz::Destination whole = fuzz::make_destination(sel.count, dtype->size, reversed);
  const Status whole_status = fuzz::decode_selection(*chain, bytes, sel, whole);

  fuzz::Destination partial = fuzz::make_destination(sel.count, dtype->size, reversed);
  MemoryReader reader(bytes, "shard");
  bool found = false;
  const Status partial_status =
      chain->partial_decode_into(reader, sel, partial.view, DecodeContext{}, found);
  fuzz::note("partial_decode_into", partial_status);
  fuzz::require_not_internal(partial_status);
  fuzz::require(whole_status.ok() == partial_status.ok(),
                "whole-shard and partial reads disagree on whether the shard is valid");
  if (whole_status.ok())
    fuzz::require(whole.bytes == partial.bytes, "whole-shard and partial reads differ");
  return 0;
}
