// `gzip` and `zlib` (bytes→bytes): DEFLATE (RFC 1951) in a gzip (RFC 1952) or zlib (RFC 1950)
// wrapper, decoded with libdeflate.
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/gzip/index.html
// Example: {"name": "gzip", "configuration": {"level": 5}}
// Zarr v2 (numcodecs.GZip, numcodecs.Zlib): {"id": "gzip", "level": 1}, {"id": "zlib", "level": 1}
// Zarr v3 name zarr-python gives numcodecs.Zlib:
//   {"name": "numcodecs.zlib", "configuration": {"level": 1}}
//
// Like Python's gzip module (which numcodecs uses), gzip input may hold several members, and zero
// bytes may pad the end; each member's CRC-32 and size are verified. Like zlib.decompress, bytes
// after the end of a zlib stream are ignored. When the decoded size is unknown the output buffer
// grows by doubling, never beyond 1032× the input (DEFLATE's maximum ratio).
#include "zarrflow/codec/deflate.h"

#include <algorithm>
#include <memory>
#include <new>

#include <libdeflate.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {
namespace {

// DEFLATE cannot expand data by more than 258 bytes per 2 bits (a length-258 match): 1032×.
std::uint64_t max_output(std::size_t n) {
  return std::min<std::uint64_t>(std::uint64_t{1} << 40, std::uint64_t{n} * 1032 + 4096);
}

struct DecompressorDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// Decompressors are not thread-safe: one per thread, reused.
Result<libdeflate_decompressor*> thread_decompressor(std::string_view codec) {
  thread_local std::unique_ptr<libdeflate_decompressor, DecompressorDeleter> d(
      libdeflate_alloc_decompressor());
  if (!d) return internal_error(std::string(codec) + ": cannot allocate a decompressor");
  return d.get();
}

class DeflateCodec final : public BytesToBytesCodec {
 public:
  DeflateCodec(DeflateWrapper wrapper, int level) : wrapper_(wrapper), level_(level) {}

  [[nodiscard]] std::string name() const override {
    return wrapper_ == DeflateWrapper::kGzip ? "gzip" : "zlib";
  }
  [[nodiscard]] std::string describe() const override {
    return name() + "(level=" + std::to_string(level_) + ")";
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    if (decoded_size) return decode_known_size(*this, in, *decoded_size, scratch);
    // Unknown size: start from a guess (gzip records the last member's size mod 2^32) and double
    // the buffer whenever a member does not fit.
    const std::uint64_t limit = max_output(in.size());
    std::uint64_t guess = std::uint64_t{in.size()} * 4;
    if (wrapper_ == DeflateWrapper::kGzip && in.size() >= 18)
      guess = std::max<std::uint64_t>(guess, load_le32(in.data() + in.size() - 4));
    std::size_t cap = static_cast<std::size_t>(std::clamp<std::uint64_t>(guess, 4096, limit));
    ZF_RETURN_IF_ERROR(resize(scratch, cap));
    auto grow = [&](ByteSpan& out) -> Status {
      if (cap >= limit)
        return corrupt_data(name() + ": data decompresses to more than " + std::to_string(limit) +
                            " bytes, impossible for " + std::to_string(in.size()) +
                            " compressed bytes");
      cap = static_cast<std::size_t>(std::min<std::uint64_t>(limit, std::uint64_t{cap} * 2));
      ZF_RETURN_IF_ERROR(resize(scratch, cap));
      out = scratch.span();
      return {};
    };
    ZF_ASSIGN_OR_RETURN(std::size_t produced, inflate(in, scratch.span(), grow));
    scratch.resize(produced);
    return ConstByteSpan(scratch.span());
  }

  // zlib's compressBound (n + n/4096 + n/16384 + n/2^25 + 13, its 6-byte zlib wrapper
  // included); gzip's wrapper is 12 bytes longer (10-byte header, 8-byte trailer).
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size(
      std::uint64_t decoded) const override {
    const std::uint64_t wrapper = wrapper_ == DeflateWrapper::kGzip ? 13 + 12 : 13;
    return add_bounds(decoded, (decoded >> 12) + (decoded >> 14) + (decoded >> 25) + wrapper);
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    auto too_small = [&](ByteSpan&) -> Status {
      return corrupt_data(name() + ": data decompresses to more than the expected " +
                          std::to_string(out.size()) + " bytes");
    };
    ZF_ASSIGN_OR_RETURN(std::size_t produced, inflate(in, out, too_small));
    return check_decoded_size(name(), produced, out.size());
  }

 private:
  Status resize(Buffer& b, std::size_t n) const { return resize_scratch(name(), b, n); }

  // Decompresses all of `in` into `out` and returns the number of bytes written. When a stream
  // does not fit, `grow(out)` either enlarges `out` (keeping its contents) or returns the error.
  template <typename Grow>
  Result<std::size_t> inflate(ConstByteSpan in, ByteSpan out, Grow&& grow) const {
    ZF_ASSIGN_OR_RETURN(libdeflate_decompressor * d, thread_decompressor(name()));
    if (in.empty()) return corrupt_data(name() + ": input is empty");
    std::byte dummy{};
    std::size_t pos = 0, produced = 0;
    // zlib: one stream, trailing bytes ignored. gzip: members until the end of the input, each
    // optionally followed by zero padding.
    while (pos < in.size()) {
      std::byte* dst = out.empty() ? &dummy : out.data() + produced;
      std::size_t used = 0, got = 0;
      const auto r = wrapper_ == DeflateWrapper::kGzip
                         ? libdeflate_gzip_decompress_ex(d, in.data() + pos, in.size() - pos, dst,
                                                         out.size() - produced, &used, &got)
                         : libdeflate_zlib_decompress_ex(d, in.data() + pos, in.size() - pos, dst,
                                                         out.size() - produced, &used, &got);
      if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
        ZF_RETURN_IF_ERROR(grow(out));
        continue;  // retry this stream with the larger buffer
      }
      if (r != LIBDEFLATE_SUCCESS) {
        if (wrapper_ == DeflateWrapper::kZlib)
          return corrupt_data(
              "zlib: corrupt or truncated stream (bad header, DEFLATE data or "
              "Adler-32 checksum)");
        return corrupt_data("gzip: member at byte " + std::to_string(pos) +
                            " is corrupt or truncated (bad header, DEFLATE data, CRC-32 or "
                            "size)");
      }
      pos += used;
      produced += got;
      if (wrapper_ == DeflateWrapper::kZlib) break;
      while (pos < in.size() && in[pos] == std::byte{0}) ++pos;
    }
    return produced;
  }

  DeflateWrapper wrapper_;
  int level_;
};

Result<std::shared_ptr<const Codec>> make(DeflateWrapper wrapper, const nlohmann::json& cfg,
                                          bool with_id) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  if (with_id) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "level"}));
  } else {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"level"}));
  }
  // numcodecs defaults to level 1; the v3 gzip spec requires the field but readers need not care.
  ZF_ASSIGN_OR_RETURN(std::int64_t level, config::get_int(cfg, "level", 1));
  if (level < -1 || level > 9)
    return invalid_metadata("field 'level': expected -1..9, got " + std::to_string(level));
  return std::shared_ptr<const Codec>(make_deflate_codec(wrapper, static_cast<int>(level)));
}

}  // namespace

std::shared_ptr<const BytesToBytesCodec> make_deflate_codec(DeflateWrapper wrapper, int level) {
  return std::make_shared<DeflateCodec>(wrapper, level);
}

void register_deflate_codecs(CodecRegistry& v3, CodecRegistry& v2) {
  using W = DeflateWrapper;
  v3.add("gzip",
         [](const nlohmann::json& c, const ChunkSpec&) { return make(W::kGzip, c, false); });
  v3.add("numcodecs.gzip",
         [](const nlohmann::json& c, const ChunkSpec&) { return make(W::kGzip, c, true); });
  v3.add("numcodecs.zlib",
         [](const nlohmann::json& c, const ChunkSpec&) { return make(W::kZlib, c, true); });
  v2.add("gzip", [](const nlohmann::json& c, const ChunkSpec&) { return make(W::kGzip, c, true); });
  v2.add("zlib", [](const nlohmann::json& c, const ChunkSpec&) { return make(W::kZlib, c, true); });
}

}  // namespace zarrflow
