// `blosc` (bytes→bytes): c-blosc 1.x chunks (a 16-byte header, a table of block offsets, then
// blocks that are shuffled and compressed with blosclz, lz4, lz4hc, snappy, zlib or zstd).
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/blosc/index.html
// Format: https://github.com/Blosc/c-blosc/blob/main/README_HEADER.rst
// Example: {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5,
//           "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}
// Zarr v2 (numcodecs.Blosc): {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1,
//                             "blocksize": 0}   (shuffle: -1 auto, 0 none, 1 byte, 2 bit)
//
// The configuration only says how chunks were written; decoding reads everything from the chunk
// header. c-blosc trusts that header, so it is validated here first (see parse_blosc_header) and
// corrupt input is an error naming the bad field, never an out-of-bounds access. Decoding then
// runs blosc_decompress_ctx single-threaded (the caller parallelises across chunks) straight
// into the destination -- except for blosclz, whose decoder in c-blosc 1.21 overflows a 32-bit
// match length on crafted streams and crashes: those chunks are planned and decoded by the same
// bounds-checked decoder the GPU path uses (codec/gpu/blosc_host_decode.h), which accepts and
// produces exactly what c-blosc does on every well-formed and corrupt stream its tests try.
#include "zarrflow/codec/blosc.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <new>

#include <blosc.h>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/gpu/blosc_host_decode.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow {
namespace {

constexpr const char* kFormatNames[] = {"blosclz", "lz4", "snappy", "zlib", "zstd"};

// Whether this c-blosc build can decompress inner-codec format `f` (computed once).
bool format_supported(int f) {
  static const auto supported = [] {
    std::array<bool, 5> s{};
    for (int i = 0; i < 5; ++i) {
      // One compressor name per format (lz4hc shares lz4's).
      s[i] = blosc_get_complib_info(kFormatNames[i], nullptr, nullptr) >= 0;
    }
    return s;
  }();
  return f >= 0 && f < 5 && supported[f];
}

Status bad(std::string msg) { return corrupt_data("blosc: " + std::move(msg)); }

}  // namespace

Result<BloscHeader> parse_blosc_header(ConstByteSpan chunk) {
  if (chunk.size() < BLOSC_MIN_HEADER_LENGTH)
    return bad("chunk is " + std::to_string(chunk.size()) +
               " bytes, shorter than the 16-byte header");
  const std::byte* p = chunk.data();
  BloscHeader h;
  h.version = static_cast<std::uint8_t>(p[0]);
  h.versionlz = static_cast<std::uint8_t>(p[1]);
  h.flags = static_cast<std::uint8_t>(p[2]);
  h.typesize = static_cast<std::uint8_t>(p[3]);
  h.nbytes = load_le32(p + 4);
  h.blocksize = load_le32(p + 8);
  h.cbytes = load_le32(p + 12);

  if (h.cbytes != chunk.size())
    return bad("header says " + std::to_string(h.cbytes) + " compressed bytes but the chunk has " +
               std::to_string(chunk.size()));
  if (h.version != BLOSC_VERSION_FORMAT)
    return bad("header format version " + std::to_string(h.version) +
               " is not supported (c-blosc 1.x reads version " +
               std::to_string(BLOSC_VERSION_FORMAT) + "; later versions are Blosc2)");
  if (h.nbytes > static_cast<std::uint32_t>(BLOSC_MAX_BUFFERSIZE))
    return bad("header says " + std::to_string(h.nbytes) + " decoded bytes, more than Blosc's " +
               std::to_string(BLOSC_MAX_BUFFERSIZE) + "-byte limit");
  if (h.nbytes == 0) return h;  // c-blosc decodes nothing, whatever the rest says

  if (h.flags & 0x08) {
    char flags[8];
    std::snprintf(flags, sizeof flags, "0x%02X", h.flags);
    return bad(std::string("header flags ") + flags + " use reserved bit 3");
  }
  if (h.typesize == 0) return bad("header typesize is 0");
  if (h.blocksize == 0 || h.blocksize > h.nbytes ||
      h.blocksize > static_cast<std::uint32_t>(BLOSC_MAX_BLOCKSIZE))
    return bad("header blocksize " + std::to_string(h.blocksize) + " is invalid for " +
               std::to_string(h.nbytes) + " decoded bytes");

  if (h.memcpyed()) {
    if (std::uint64_t{h.nbytes} + BLOSC_MIN_HEADER_LENGTH != h.cbytes)
      return bad("uncompressed (memcpyed) chunk of " + std::to_string(h.nbytes) +
                 " bytes should be " + std::to_string(h.nbytes + BLOSC_MIN_HEADER_LENGTH) +
                 " bytes long, not " + std::to_string(h.cbytes));
    return h;
  }

  const int format = h.compformat();
  if (format > 4) return bad("header names unknown inner codec " + std::to_string(format));
  if (!format_supported(format))
    return unimplemented(std::string("blosc: chunk uses ") + kFormatNames[format] +
                         ", which this c-blosc build does not include");
  if (h.versionlz != 1)
    return bad(std::string(kFormatNames[format]) + " format version " +
               std::to_string(h.versionlz) + " is not supported (expected 1)");

  // c-blosc splits a full block into `typesize` streams (flag 0x10 unset, typesize <= 16, at
  // least 128 elements) and, when the block is not a multiple of typesize, leaves its last bytes
  // unwritten instead of failing: such a chunk would decode to stale memory.
  const bool splits = !(h.flags & 0x10) && h.typesize <= 16 && h.blocksize / h.typesize >= 128 &&
                      h.nbytes / h.blocksize > 0;
  if (splits && h.blocksize % h.typesize != 0)
    return bad("header blocksize " + std::to_string(h.blocksize) +
               " is split into streams of the typesize " + std::to_string(h.typesize) +
               " but is not a multiple of it");

  const std::uint64_t nblocks = h.nblocks();
  const std::uint64_t data_start = BLOSC_MIN_HEADER_LENGTH + 4 * nblocks;
  if (data_start > h.cbytes)
    return bad("table of " + std::to_string(nblocks) + " block offsets does not fit in " +
               std::to_string(h.cbytes) + " bytes");
  for (std::uint64_t j = 0; j < nblocks; ++j) {
    const std::uint32_t start = load_le32(p + BLOSC_MIN_HEADER_LENGTH + 4 * j);
    // Each block begins with the 4-byte compressed size of its first stream.
    if (start < data_start || std::uint64_t{start} + 4 > h.cbytes)
      return bad("block " + std::to_string(j) + " starts at byte " + std::to_string(start) +
                 ", outside the chunk's data (bytes " + std::to_string(data_start) + ".." +
                 std::to_string(h.cbytes) + ")");
  }
  return h;
}

namespace {

enum class Shuffle : std::int8_t { kAuto = -1, kNone = 0, kByte = 1, kBit = 2 };

struct BloscSettings {
  std::string cname = "lz4";
  int clevel = 5;
  Shuffle shuffle = Shuffle::kByte;
  std::int64_t typesize = 0;  // 0: not given
  std::int64_t blocksize = 0;
};

class BloscCodec final : public BytesToBytesCodec {
 public:
  explicit BloscCodec(BloscSettings s) : s_(std::move(s)) {}

  [[nodiscard]] std::string name() const override { return "blosc"; }
  [[nodiscard]] std::string describe() const override {
    static const char* kShuffle[] = {"autoshuffle", "noshuffle", "shuffle", "bitshuffle"};
    std::string d = "blosc(" + s_.cname + ", " + kShuffle[static_cast<int>(s_.shuffle) + 1] +
                    ", clevel=" + std::to_string(s_.clevel);
    if (s_.typesize) d += ", typesize=" + std::to_string(s_.typesize);
    if (s_.blocksize) d += ", blocksize=" + std::to_string(s_.blocksize);
    return d + ")";
  }

  Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                               Buffer& scratch) const override {
    ZF_ASSIGN_OR_RETURN(BloscHeader h, parse_blosc_header(in));
    if (decoded_size) {
      ZF_RETURN_IF_ERROR(check_size(h, *decoded_size));
    } else if (!h.memcpyed() && std::uint64_t{h.nbytes} > std::uint64_t{in.size()} * 32768) {
      // No inner codec expands data by more than 32768× (zstd RLE blocks), so the header lies.
      return bad("header says " + std::to_string(h.nbytes) + " decoded bytes, more than " +
                 std::to_string(in.size()) + " compressed bytes can hold");
    }
    ZF_RETURN_IF_ERROR(resize_scratch("blosc", scratch, h.nbytes));
    ZF_RETURN_IF_ERROR(decompress(in, scratch.span()));
    return ConstByteSpan(scratch.span());
  }

  // c-blosc stores a chunk it cannot shrink verbatim after the header: never more than
  // BLOSC_MAX_OVERHEAD (16) bytes over its input.
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size(
      std::uint64_t decoded) const override {
    return add_bounds(decoded, BLOSC_MAX_OVERHEAD);
  }

  Status decode_into(ConstByteSpan in, ByteSpan out) const override {
    ZF_ASSIGN_OR_RETURN(BloscHeader h, parse_blosc_header(in));
    ZF_RETURN_IF_ERROR(check_size(h, out.size()));
    return decompress(in, out);
  }

 private:
  static Status check_size(const BloscHeader& h, std::size_t expected) {
    if (h.nbytes == expected) return {};
    return bad("header says " + std::to_string(h.nbytes) + " decoded bytes, expected " +
               std::to_string(expected));
  }

  // `in` has a validated header and out.size() == nbytes.
  static Status decompress(ConstByteSpan in, ByteSpan out) {
    if (out.empty()) return {};
    const auto flags = static_cast<std::uint8_t>(in[2]);
    if (!(flags & 0x02) && (flags >> 5) == 0) return gpu::decode_blosc_via_plan(in, out);
    const int r = blosc_decompress_ctx(in.data(), out.data(), out.size(), 1);
    if (r < 0) return bad("corrupt compressed data (c-blosc error " + std::to_string(r) + ")");
    if (static_cast<std::size_t>(r) != out.size())
      return bad("decoded " + std::to_string(r) + " bytes, header says " +
                 std::to_string(out.size()));
    return {};
  }

  BloscSettings s_;
};

Status check_cname(const std::string& cname) {
  static const char* kNames[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
  for (const char* n : kNames)
    if (cname == n) return {};
  return invalid_metadata("field 'cname': unknown compressor \"" + cname +
                          "\" (expected blosclz, lz4, lz4hc, snappy, zlib or zstd)");
}

Result<std::shared_ptr<const Codec>> make_v3(const nlohmann::json& cfg, const ChunkSpec& spec) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(
      config::reject_unknown_fields(cfg, {"cname", "clevel", "shuffle", "typesize", "blocksize"}));
  BloscSettings s;
  ZF_ASSIGN_OR_RETURN(s.cname, config::get_string(cfg, "cname", "zstd"));
  ZF_RETURN_IF_ERROR(check_cname(s.cname));
  ZF_ASSIGN_OR_RETURN(std::int64_t clevel, config::get_int(cfg, "clevel", 5));
  if (clevel < 0 || clevel > 9)
    return invalid_metadata("field 'clevel': expected 0..9, got " + std::to_string(clevel));
  s.clevel = static_cast<int>(clevel);
  ZF_ASSIGN_OR_RETURN(std::string shuffle, config::get_string(cfg, "shuffle", "noshuffle"));
  if (shuffle == "noshuffle") {
    s.shuffle = Shuffle::kNone;
  } else if (shuffle == "shuffle") {
    s.shuffle = Shuffle::kByte;
  } else if (shuffle == "bitshuffle") {
    s.shuffle = Shuffle::kBit;
  } else {
    return invalid_metadata(
        "field 'shuffle': expected \"noshuffle\", \"shuffle\" or "
        "\"bitshuffle\", got \"" +
        shuffle + "\"");
  }
  ZF_ASSIGN_OR_RETURN(s.typesize, config::get_int(cfg, "typesize", spec.dtype.size));
  if (s.typesize < 1)
    return invalid_metadata("field 'typesize': expected a positive integer, got " +
                            std::to_string(s.typesize));
  ZF_ASSIGN_OR_RETURN(s.blocksize, config::get_int(cfg, "blocksize", 0));
  if (s.blocksize < 0)
    return invalid_metadata("field 'blocksize': expected 0 or more, got " +
                            std::to_string(s.blocksize));
  return std::shared_ptr<const Codec>(std::make_shared<BloscCodec>(std::move(s)));
}

// numcodecs.Blosc: shuffle is an integer; typesize (numcodecs >= 0.16) is optional.
Result<std::shared_ptr<const Codec>> make_v2(const nlohmann::json& cfg, const ChunkSpec&) {
  ZF_RETURN_IF_ERROR(config::expect_object(cfg));
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(
      cfg, {"id", "cname", "clevel", "shuffle", "blocksize", "typesize"}));
  BloscSettings s;
  ZF_ASSIGN_OR_RETURN(s.cname, config::get_string(cfg, "cname", "lz4"));
  ZF_RETURN_IF_ERROR(check_cname(s.cname));
  ZF_ASSIGN_OR_RETURN(std::int64_t clevel, config::get_int(cfg, "clevel", 5));
  if (clevel < INT32_MIN || clevel > INT32_MAX)
    return invalid_metadata("field 'clevel': " + std::to_string(clevel) + " is out of range");
  s.clevel = static_cast<int>(clevel);
  ZF_ASSIGN_OR_RETURN(std::int64_t shuffle, config::get_int(cfg, "shuffle", 1));
  if (shuffle < -1 || shuffle > 2)
    return invalid_metadata("field 'shuffle': expected -1 (auto), 0, 1 or 2, got " +
                            std::to_string(shuffle));
  s.shuffle = static_cast<Shuffle>(shuffle);
  ZF_ASSIGN_OR_RETURN(s.blocksize, config::get_int(cfg, "blocksize", 0));
  if (s.blocksize < 0)
    return invalid_metadata("field 'blocksize': expected 0 or more, got " +
                            std::to_string(s.blocksize));
  // typesize absent or null: numcodecs uses the buffer's itemsize (0 here, meaning "not given").
  ZF_ASSIGN_OR_RETURN(s.typesize, config::get_int(cfg, "typesize", 0));
  const bool given = cfg.is_object() && cfg.contains("typesize") && !cfg.at("typesize").is_null();
  if (given && s.typesize < 1)
    return invalid_metadata("field 'typesize': expected a positive integer, got " +
                            std::to_string(s.typesize));
  return std::shared_ptr<const Codec>(std::make_shared<BloscCodec>(std::move(s)));
}

}  // namespace

void register_blosc_codec(CodecRegistry& v3, CodecRegistry& v2) {
  v3.add("blosc", make_v3);
  v3.add("numcodecs.blosc", make_v2);
  v2.add("blosc", make_v2);
}

}  // namespace zarrflow
