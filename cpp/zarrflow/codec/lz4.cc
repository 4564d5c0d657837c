// `lz4` (bytes→bytes), numcodecs framing: the uncompressed size as a 4-byte little-endian
// integer, then one raw LZ4 block (not the LZ4 frame format).
// Spec: https://numcodecs.readthedocs.io/en/stable/compression/lz4.html (numcodecs/lz4.pyx)
// Example (Zarr v2): {"id": "lz4", "acceleration": 1}
// Example (Zarr v3, zarr-python): {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}
//
// numcodecs reads the size as a signed 32-bit int and refuses 0; zarrflow also decodes the empty
// block numcodecs writes for 0 bytes. The size header is checked against the expected size, and
// when that is unknown, against the most an LZ4 block of this length can produce (255× + slack),
// before anything is allocated.
#include "zarrflow/codec/lz4.h"

#include <climits>
#include <new>

#include <lz4.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {
namespace {

class Lz4Codec final : public BytesToBytesCodec {
 public:
  explicit Lz4Codec(int acceleration) : acceleration_(acceleration) {}

  [[nodiscard]] std::string name() const override { return "lz4"; }
  [[nodiscard]] std::string describe() const override {
    return "lz4(acceleration=" + std::to_string(acceleration_) + ")";
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    ZF_ASSIGN_OR_RETURN(std::size_t size, header_size(in));
    if (decoded_size) {
      ZF_RETURN_IF_ERROR(check_header(size, *decoded_size));
    } else {
      // Every compressed byte yields at most 255 decoded bytes (a run-length extension byte).
      const std::uint64_t bound = (std::uint64_t{in.size()} - 4) * 255 + 64;
      if (size > bound)
        return corrupt_data("lz4: header says " + std::to_string(size) + " bytes, more than " +
                            std::to_string(in.size()) + " compressed bytes can hold");
    }
    ZF_RETURN_IF_ERROR(resize_scratch("lz4", scratch, size));
    ZF_RETURN_IF_ERROR(decompress(in, scratch.span()));
    return ConstByteSpan(scratch.span());
  }

  // The 4-byte size header plus LZ4_compressBound: n + n/255 + 16 (the formula of
  // LZ4_COMPRESSBOUND, kept in 64 bits: inputs past LZ4_MAX_INPUT_SIZE are not encodable, but a
  // bound for them must not wrap).
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size(
      std::uint64_t decoded) const override {
    return add_bounds(decoded, decoded / 255 + 16 + 4);
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_ASSIGN_OR_RETURN(std::size_t size, header_size(in));
    ZF_RETURN_IF_ERROR(check_header(size, out.size()));
    return decompress(in, out);
  }

 private:
  static Result<std::size_t> header_size(ConstByteSpan in) {
    if (in.size() < 4)
      return corrupt_data("lz4: chunk is " + std::to_string(in.size()) +
                          " bytes, shorter than the 4-byte size header");
    const std::uint32_t size = load_le32(in.data());
    if (size > static_cast<std::uint32_t>(INT_MAX))
      return corrupt_data("lz4: header size " + std::to_string(size) +
                          " is negative as numcodecs' signed 32-bit size");
    if (in.size() - 4 > static_cast<std::size_t>(INT_MAX))
      return corrupt_data("lz4: compressed block of " + std::to_string(in.size() - 4) +
                          " bytes exceeds LZ4's 2 GiB limit");
    return static_cast<std::size_t>(size);
  }

  static Status check_header(std::size_t header, std::size_t expected) {
    if (header == expected) return {};
    return corrupt_data("lz4: header says " + std::to_string(header) + " bytes, expected " +
                        std::to_string(expected));
  }

  // Decodes the block after the header into exactly out.size() bytes.
  static Status decompress(ConstByteSpan in, ByteSpan out) {
    char dummy = 0;
    char* dst = out.empty() ? &dummy : reinterpret_cast<char*>(out.data());
    const int r =
        LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()) + 4, dst,
                            static_cast<int>(in.size() - 4), static_cast<int>(out.size()));
    if (r < 0)
      return corrupt_data("lz4: malformed block (decoder stopped at compressed byte " +
                          std::to_string(-static_cast<std::int64_t>(r) - 1 + 4) + ")");
    if (static_cast<std::size_t>(r) != out.size())
      return corrupt_data("lz4: block decodes to " + std::to_string(r) +
                          " bytes but the header says " + std::to_string(out.size()));
    return {};
  }

  int acceleration_;
};

Result<std::shared_ptr<const Codec>> make(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "acceleration"}));
  ZF_ASSIGN_OR_RETURN(std::int64_t acceleration, config::get_int(cfg, "acceleration", 1));
  if (acceleration < INT_MIN || acceleration > INT_MAX)
    return invalid_metadata("field 'acceleration': " + std::to_string(acceleration) +
                            " is out of range");
  return std::shared_ptr<const Codec>(make_lz4_codec(static_cast<int>(acceleration)));
}

}  // namespace

std::shared_ptr<const BytesToBytesCodec> make_lz4_codec(int acceleration) {
  return std::make_shared<Lz4Codec>(acceleration);
}

void register_lz4_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v3.add("numcodecs.lz4", make);
  v2.add("lz4", make);
}

}  // namespace zarrflow
