// `zstd` (bytes→bytes): Zstandard frames (RFC 8878).
// Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/zstd
// Example: {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
// Zarr v2 (numcodecs.Zstd): {"id": "zstd", "level": 1, "checksum": false}
//
// Decoding accepts any number of concatenated frames (and skippable frames), with or without a
// content size in their headers, like numcodecs. A frame checksum, when present, is verified by
// libzstd. The expected size, when known, is enforced exactly; otherwise the declared content size
// is used, or the frames are streamed into a growing buffer, never beyond what zstd can possibly
// produce from the input (at most 128 KiB per 3-byte block header).
#include "zarrflow/codec/zstd.h"

#include <algorithm>
#include <memory>
#include <new>

#include <zstd.h>
#include <zstd_errors.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/json_config.h"

namespace zarrflow {
namespace {

constexpr std::uint64_t kMaxOutput = std::uint64_t{1} << 40;

// The most bytes valid zstd data of `n` bytes can decode to: every block has a 3-byte header and
// yields at most 128 KiB (ZSTD_BLOCKSIZE_MAX).
std::uint64_t max_output(std::size_t n) {
  return std::min<std::uint64_t>(kMaxOutput, (std::uint64_t{n} / 3 + 1) * ZSTD_BLOCKSIZE_MAX);
}

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

// Contexts are not thread-safe and are costly to create: one per thread, reused.
Result<ZSTD_DCtx*> thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) return internal_error("zstd: cannot create a decompression context");
  return ctx.get();
}

Status zstd_error(std::size_t code, std::string_view context) {
  const ZSTD_ErrorCode ec = ZSTD_getErrorCode(code);
  if (ec == ZSTD_error_checksum_wrong)
    return checksum_mismatch("zstd: frame checksum does not match the decompressed data");
  std::string msg = "zstd: " + std::string(context) + ": " + ZSTD_getErrorName(code);
  if (ec == ZSTD_error_frameParameter_windowTooLarge)
    msg += " (the frame needs a window larger than 128 MiB)";
  if (ec == ZSTD_error_memory_allocation) return internal_error(std::move(msg));
  return corrupt_data(std::move(msg));
}

Status resize(Buffer& b, std::size_t n) { return resize_scratch("zstd", b, n); }

// Sum of the content sizes declared by the frames in `in`; nullopt when any frame omits it.
// Also rejects input that is not a sequence of whole frames.
Result<std::optional<std::uint64_t>> declared_size(ConstByteSpan in) {
  if (in.empty()) return corrupt_data("zstd: input is empty (no frame)");
  std::uint64_t total = 0;
  bool known = true;
  std::size_t off = 0;
  while (off < in.size()) {
    const void* p = in.data() + off;
    const std::size_t frame = ZSTD_findFrameCompressedSize(p, in.size() - off);
    if (ZSTD_isError(frame))
      return zstd_error(frame, "frame at byte " + std::to_string(off) + " is truncated or invalid");
    const unsigned long long content = ZSTD_getFrameContentSize(p, frame);
    if (content == ZSTD_CONTENTSIZE_ERROR)
      return corrupt_data("zstd: invalid frame header at byte " + std::to_string(off));
    if (content == ZSTD_CONTENTSIZE_UNKNOWN) {
      known = false;
    } else {
      total += content;
      if (total > kMaxOutput)
        return corrupt_data("zstd: frame headers declare more than 2^40 bytes");
    }
    off += frame;
  }
  if (!known) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(total);
}

class ZstdCodec final : public BytesToBytesCodec {
 public:
  ZstdCodec(int level, bool checksum) : level_(level), checksum_(checksum) {}

  [[nodiscard]] std::string name() const override { return "zstd"; }
  [[nodiscard]] std::string describe() const override {
    return "zstd(level=" + std::to_string(level_) + (checksum_ ? ", checksum)" : ")");
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    if (decoded_size) return decode_known_size(*this, in, *decoded_size, scratch);
    ZF_ASSIGN_OR_RETURN(std::optional<std::uint64_t> declared, declared_size(in));
    if (declared) {
      if (*declared > max_output(in.size()))
        return corrupt_data("zstd: frame headers declare " + std::to_string(*declared) +
                            " bytes, more than " + std::to_string(in.size()) +
                            " compressed bytes can hold");
      ZF_RETURN_IF_ERROR(resize(scratch, static_cast<std::size_t>(*declared)));
      ZF_RETURN_IF_ERROR(decompress_exact(in, scratch.span(), declared));
      return ConstByteSpan(scratch.span());
    }
    return stream(in, scratch);
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_ASSIGN_OR_RETURN(std::optional<std::uint64_t> declared, declared_size(in));
    return decompress_exact(in, out, declared);
  }

  // ZSTD_compressBound: one frame, header and checksum included (the formula of
  // ZSTD_COMPRESSBOUND in 64 bits, as ZSTD_compressBound refuses sizes past ZSTD_MAX_INPUT_SIZE).
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size(
      std::uint64_t decoded) const override {
    constexpr std::uint64_t kSmall = std::uint64_t{128} << 10;
    const std::uint64_t margin = decoded < kSmall ? (kSmall - decoded) >> 11 : 0;
    return add_bounds(decoded, (decoded >> 8) + margin);
  }

 private:
  // One-shot decompression of all frames into exactly out.size() bytes.
  static Status decompress_exact(ConstByteSpan in, ByteSpan out,
                                 std::optional<std::uint64_t> declared) {
    if (declared && *declared != out.size()) {
      return corrupt_data("zstd: frame header says " + std::to_string(*declared) +
                          " bytes, expected " + std::to_string(out.size()));
    }
    ZF_ASSIGN_OR_RETURN(ZSTD_DCtx * dctx, thread_dctx());
    std::byte dummy{};
    void* dst = out.empty() ? &dummy : out.data();
    const std::size_t r = ZSTD_decompressDCtx(dctx, dst, out.size(), in.data(), in.size());
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
        return corrupt_data("zstd: data decompresses to more than the expected " +
                            std::to_string(out.size()) + " bytes");
      return zstd_error(r, "cannot decompress");
    }
    return check_decoded_size("zstd", r, out.size());
  }

  // Frames without a declared content size: stream into a growing buffer.
  static Result<ConstByteSpan> stream(ConstByteSpan in, Buffer& scratch) {
    ZF_ASSIGN_OR_RETURN(ZSTD_DCtx * dctx, thread_dctx());
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    const std::uint64_t limit = max_output(in.size());
    std::size_t cap = static_cast<std::size_t>(std::min<std::uint64_t>(
        limit, std::max<std::uint64_t>(std::uint64_t{in.size()} * 4, ZSTD_DStreamOutSize())));
    ZF_RETURN_IF_ERROR(resize(scratch, cap));
    ZSTD_inBuffer src{in.data(), in.size(), 0};
    ZSTD_outBuffer dst{scratch.data(), cap, 0};
    for (;;) {
      const std::size_t in_before = src.pos, out_before = dst.pos;
      const std::size_t r = ZSTD_decompressStream(dctx, &dst, &src);
      if (ZSTD_isError(r)) return zstd_error(r, "cannot decompress");
      if (r == 0 && src.pos == src.size) break;  // every frame complete and flushed
      if (dst.pos == dst.size) {
        if (cap >= limit)
          return corrupt_data("zstd: data decompresses to more than " + std::to_string(limit) +
                              " bytes, impossible for " + std::to_string(in.size()) +
                              " compressed bytes");
        cap = static_cast<std::size_t>(std::min<std::uint64_t>(limit, std::uint64_t{cap} * 2));
        ZF_RETURN_IF_ERROR(resize(scratch, cap));
        dst.dst = scratch.data();
        dst.size = cap;
        continue;
      }
      if (src.pos == src.size && src.pos == in_before && dst.pos == out_before)
        return corrupt_data("zstd: input ends in the middle of a frame");
    }
    scratch.resize(dst.pos);
    return ConstByteSpan(scratch.span());
  }

  int level_;
  bool checksum_;
};

Result<int> parse_level(const nlohmann::json& cfg) {
  ZF_ASSIGN_OR_RETURN(std::int64_t level, config::get_int(cfg, "level", 0));
  if (level < INT32_MIN || level > INT32_MAX)
    return invalid_metadata("field 'level': " + std::to_string(level) + " is out of range");
  return static_cast<int>(level);
}

Result<std::shared_ptr<const Codec>> make(const nlohmann::json& cfg, bool v2) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  if (v2) {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"id", "level", "checksum"}));
  } else {
    ZF_RETURN_IF_ERROR(config::reject_unknown_fields(cfg, {"level", "checksum"}));
  }
  ZF_ASSIGN_OR_RETURN(int level, parse_level(cfg));
  ZF_ASSIGN_OR_RETURN(bool checksum, config::get_bool(cfg, "checksum", false));
  return std::shared_ptr<const Codec>(make_zstd_codec(level, checksum));
}

}  // namespace

std::shared_ptr<const BytesToBytesCodec> make_zstd_codec(int level, bool checksum) {
  return std::make_shared<ZstdCodec>(level, checksum);
}

void register_zstd_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v3.add("zstd", [](const nlohmann::json& cfg, const ChunkSpec&) { return make(cfg, false); });
  // zarr-python's numcodecs wrapper: the numcodecs configuration without (or with) "id".
  v3.add("numcodecs.zstd",
         [](const nlohmann::json& cfg, const ChunkSpec&) { return make(cfg, true); });
  v2.add("zstd", [](const nlohmann::json& cfg, const ChunkSpec&) { return make(cfg, true); });
}

}  // namespace zarrflow
