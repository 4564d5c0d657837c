// libFuzzer target: the `bytes` codec (array→bytes: elements in C order, either endian) reading a
// strided selection of a chunk of any supported data type into a strided destination.
// Input: u8 data type (index into kV3DataTypes) | u8 endian (0 little, 1 big, 2 absent) | shape |
//        selection (fuzz_util.h) | u8 destination order | stored chunk bytes.
// A chunk decodes exactly when its size is the chunk's byte size.
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow;
  using namespace zarrflow::fuzz;
  InputReader in(data, size);
  const char* dtype = kV3DataTypes[in.u8() % kNumV3DataTypes];
  const int endian = in.u8() % 3;
  const Shape shape = read_shape(in, 3, 16);
  const Selection sel = read_selection(in, shape);
  const bool reversed = (in.u8() & 1) != 0;

  nlohmann::json bytes = {{"name", "bytes"}, {"configuration", nlohmann::json::object()}};
  if (endian < 2) bytes["configuration"]["endian"] = endian == 0 ? "little" : "big";
  auto type = parse_v3_data_type(dtype);
  require(type.ok(), "a data type name in kV3DataTypes is not supported");
  const ChunkSpec spec{*type, shape, std::vector<std::byte>(type->size)};
  auto chain = CodecChain::from_v3_json(nlohmann::json::array({bytes}), spec);
  if (!chain.ok()) return 0;  // e.g. no endian for a multi-byte type
  Destination dest = make_destination(sel.count, type->size, reversed);
  const Status s = decode_selection(*chain, in.rest(), sel, dest);
  require(s.ok() == (in.rest().size() == static_cast<std::size_t>(spec.nbytes())),
          "bytes: a chunk of the right size failed, or one of another size decoded");
  return 0;
}
