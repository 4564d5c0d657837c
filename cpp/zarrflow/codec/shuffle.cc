// numcodecs `shuffle` (bytes→bytes): the byte transpose of numcodecs._shuffle; elementsize <= 1
// copies. Zarr v2 filter id `shuffle`; Zarr v3 `numcodecs.shuffle` (bytes→bytes there too).
// Spec: https://numcodecs.readthedocs.io/en/stable/filter/shuffle.html (numcodecs/shuffle.py)
// Examples:
//   Zarr v2: {"id": "shuffle", "elementsize": 4}
//   Zarr v3: {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}}
#include <cstring>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

class ShuffleCodec final : public BytesToBytesCodec {
 public:
  explicit ShuffleCodec(std::int64_t elementsize) : elementsize_(elementsize) {}

  [[nodiscard]] std::string name() const override { return "shuffle"; }
  [[nodiscard]] std::string describe() const override {
    return "shuffle(elementsize=" + std::to_string(elementsize_) + ")";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(std::int64_t decoded) const override {
    return decoded;
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    if (decoded_size) ZF_RETURN_IF_ERROR(check_decoded_size("shuffle", in.size(), *decoded_size));
    ZF_RETURN_IF_ERROR(check(in));
    if (elementsize_ <= 1) return in;  // numcodecs copies; a view is the same bytes
    ZF_RETURN_IF_ERROR(resize_scratch("shuffle", scratch, in.size()));
    unshuffle(in, scratch.span());
    return ConstByteSpan(scratch.span());
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_RETURN_IF_ERROR(check_decoded_size("shuffle", in.size(), out.size()));
    ZF_RETURN_IF_ERROR(check(in));
    if (elementsize_ <= 1) {
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
    } else {
      unshuffle(in, out);
    }
    return {};
  }

 private:
  Status check(ConstByteSpan in) const {
    if (elementsize_ > 1 && in.size() % static_cast<std::size_t>(elementsize_) != 0)
      return corrupt_data("shuffle: " + std::to_string(in.size()) +
                          " bytes is not a multiple of elementsize " +
                          std::to_string(elementsize_));
    return {};
  }

  // numcodecs._shuffle._doUnshuffle: byte j of element i comes from in[j * count + i].
  void unshuffle(ConstByteSpan in, ByteSpan out) const {
    const auto es = static_cast<std::size_t>(elementsize_);
    const std::size_t count = in.size() / es;
    if (count == 0) return;  // an empty chunk: its buffers may have no memory at all (null data)
    for (std::size_t j = 0; j < es; ++j) {
      const std::byte* src = in.data() + j * count;
      std::byte* dst = out.data() + j;
      for (std::size_t i = 0; i < count; ++i) dst[i * es] = src[i];
    }
  }

  std::int64_t elementsize_;
};

Result<std::shared_ptr<const Codec>> make_shuffle(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "elementsize"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t es, config::get_int(cfg, "elementsize", 4));
  return std::shared_ptr<const Codec>(std::make_shared<ShuffleCodec>(es));
}

}  // namespace

void register_shuffle_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v2.add("shuffle", make_shuffle);
  v3.add("numcodecs.shuffle", make_shuffle);
}

}  // namespace zarrflow
