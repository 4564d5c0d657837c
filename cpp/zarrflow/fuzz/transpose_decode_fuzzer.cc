// libFuzzer target: the `transpose` codec (array→array) in front of `bytes`: any order (valid
// permutations and invalid ones), any selection, C-order or reversed destination strides.
// Input: u8 data type (index into kV3DataTypes) | shape | per dimension u8 order entry (modulo
//        ndim + 1, so invalid orders occur) | selection | u8 destination order | chunk bytes.
// With a valid order, a chunk decodes exactly when its size is the chunk's byte size.
#include "zarrflow/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow;
  using namespace zarrflow::fuzz;
  InputReader in(data, size);
  const char* dtype = kV3DataTypes[in.u8() % kNumV3DataTypes];
  const Shape shape = read_shape(in, 4, 8);
  nlohmann::json order = nlohmann::json::array();
  for (std::size_t i = 0; i < shape.size(); ++i) order.push_back(in.u8() % (shape.size() + 1));
  const Selection sel = read_selection(in, shape);
  const bool reversed = (in.u8() & 1) != 0;

  auto type = parse_v3_data_type(dtype);
  require(type.ok(), "a data type name in kV3DataTypes is not supported");
  const ChunkSpec spec{*type, shape, std::vector<std::byte>(type->size)};
  const nlohmann::json codecs = {{{"name", "transpose"}, {"configuration", {{"order", order}}}},
                                 {{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}};
  auto chain = CodecChain::from_v3_json(codecs, spec);
  if (!chain.ok()) return 0;  // not a permutation
  Destination dest = make_destination(sel.count, type->size, reversed);
  const Status s = decode_selection(*chain, in.rest(), sel, dest);
  require(s.ok() == (in.rest().size() == static_cast<std::size_t>(spec.nbytes())),
          "transpose: a chunk of the right size failed, or one of another size decoded");
  return 0;
}
