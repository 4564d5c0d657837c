#include "zarrflow/codec/gpu/framing.h"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader (exported by the shared libzstd too)
#include <zstd.h>

#include <cstdio>

#include "zarrflow/codec/crc32c.h"
#include "zarrflow/core/byte_order.h"

namespace zarrflow::gpu {
namespace {

Payload cpu(std::string reason) {
  Payload p;
  p.cpu = true;
  p.reason = std::move(reason);
  return p;
}

Result<Payload> zstd_payload(ConstByteSpan in, std::uint64_t decoded_size) {
  const std::size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
  if (ZSTD_isError(frame)) return corrupt_data(std::string("zstd: ") + ZSTD_getErrorName(frame));
  if (frame != in.size()) return cpu("several zstd frames in one chunk");
  ZSTD_frameHeader h;
  const std::size_t r = ZSTD_getFrameHeader(&h, in.data(), in.size());
  if (ZSTD_isError(r) || r != 0) return corrupt_data("zstd: invalid frame header");
  if (h.frameType != ZSTD_frame) return cpu("skippable zstd frame");
  if (h.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN && h.frameContentSize != decoded_size)
    return corrupt_data("zstd: frame holds " + std::to_string(h.frameContentSize) +
                        " bytes, expected " + std::to_string(decoded_size));
  if (h.checksumFlag) return cpu("zstd frame with a content checksum (verified on the CPU)");
  return Payload{0, in.size()};
}

Result<Payload> zlib_payload(ConstByteSpan in) {
  if (in.size() < 6) return corrupt_data("zlib: stream of " + std::to_string(in.size()) + " bytes");
  const auto cmf = std::uint8_t(in[0]), flg = std::uint8_t(in[1]);
  if ((cmf & 0x0f) != 8 || (cmf >> 4) > 7 || ((cmf << 8) | flg) % 31 != 0)
    return corrupt_data("zlib: invalid stream header");
  if (flg & 0x20) return cpu("zlib stream with a preset dictionary");
  return Payload{2, in.size() - 6};  // the Adler-32 trailer is checked after the GPU inflates
}

Result<Payload> gzip_payload(ConstByteSpan in, std::uint64_t decoded_size) {
  auto bad = [](const std::string& m) { return corrupt_data("gzip: " + m); };
  if (in.size() < 18) return bad("member of " + std::to_string(in.size()) + " bytes");
  if (std::uint8_t(in[0]) != 0x1f || std::uint8_t(in[1]) != 0x8b || std::uint8_t(in[2]) != 8)
    return bad("invalid header");
  const auto flags = std::uint8_t(in[3]);
  if (flags & 0xe0) return bad("reserved header flags set");
  std::size_t pos = 10;
  if (flags & 0x04) {  // FEXTRA
    if (pos + 2 > in.size()) return bad("truncated header");
    pos += 2 + (std::size_t(std::uint8_t(in[pos])) | std::size_t(std::uint8_t(in[pos + 1])) << 8);
  }
  for (std::uint8_t f : {std::uint8_t{0x08}, std::uint8_t{0x10}}) {  // FNAME, FCOMMENT
    if (!(flags & f)) continue;
    while (pos < in.size() && in[pos] != std::byte{0}) ++pos;
    ++pos;
  }
  if (flags & 0x02) pos += 2;  // FHCRC
  if (pos + 8 > in.size()) return bad("truncated header");
  // One member is assumed: its trailer's size must be the chunk's (mod 2^32). Anything else
  // (several members, padding) goes to the CPU decoder, which handles every case.
  if (load_le32(in.data() + in.size() - 4) != static_cast<std::uint32_t>(decoded_size))
    return cpu("gzip stream with several members or trailing bytes");
  return Payload{pos, in.size() - 8 - pos};
}

Result<Payload> lz4_payload(ConstByteSpan in, std::uint64_t decoded_size) {
  if (in.size() < 4) return corrupt_data("lz4: chunk shorter than its 4-byte size header");
  const std::uint32_t n = load_le32(in.data());
  if (n != decoded_size)
    return corrupt_data("lz4: header says " + std::to_string(n) + " bytes, expected " +
                        std::to_string(decoded_size));
  return Payload{4, in.size() - 4};
}

}  // namespace

const char* gpu_codec_name(GpuCodec c) {
  switch (c) {
    case GpuCodec::kNone:
      return "raw";
    case GpuCodec::kZstd:
      return "zstd";
    case GpuCodec::kDeflate:
      return "deflate";
    case GpuCodec::kLz4:
      return "lz4";
    case GpuCodec::kBlosc:
      return "blosc";
  }
  return "?";
}

ChainProgram analyze_chain(const CodecChain& chain) {
  ChainProgram p;
  const ArrayToBytesCodec& a2b = chain.array_to_bytes();
  if (a2b.name() != "bytes") {
    p.reason = a2b.name() == "sharding_indexed"
                   ? a2b.name() + " inside a chunk"
                   : "codec '" + a2b.describe() + "' has no GPU decoder";
    return p;
  }
  const ChunkSpec& spec = chain.array_to_bytes_spec();
  p.swap_unit = a2b.is_native_layout(spec) ? 1 : spec.dtype.swap_unit();
  const auto& b2b = chain.bytes_to_bytes();
  std::size_t n = b2b.size();
  if (n > 0 && b2b[n - 1]->describe() == "crc32c") {  // a v3 crc32c trailer (not location=start)
    p.crc32c = true;
    --n;
  }
  if (n > 1) {
    p.reason = "codec chain " + chain.describe();
    return p;
  }
  if (n == 1) {
    const std::string name = b2b[0]->name();
    if (name == "zstd") {
      p.codec = GpuCodec::kZstd;
    } else if (name == "gzip" || name == "zlib") {
      p.codec = GpuCodec::kDeflate;
      p.gzip = name == "gzip";
    } else if (name == "lz4") {
      p.codec = GpuCodec::kLz4;
    } else if (name == "blosc") {
      p.codec = GpuCodec::kBlosc;
    } else {
      p.reason = "codec '" + b2b[0]->describe() + "' has no GPU decoder";
      return p;
    }
  }
  p.gpu = true;
  return p;
}

Result<Payload> locate_payload(const ChainProgram& program, ConstByteSpan stored,
                               std::uint64_t decoded_size) {
  ConstByteSpan in = stored;
  if (program.crc32c) {
    if (in.size() < 4) return corrupt_data("crc32c: chunk shorter than its 4-byte checksum");
    const std::uint32_t want = load_le32(in.data() + in.size() - 4);
    in = in.first(in.size() - 4);
    const std::uint32_t got = crc32c(in);
    if (got != want) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "crc32c: checksum 0x%08x does not match the stored 0x%08x",
                    got, want);
      return checksum_mismatch(buf);
    }
  }
  switch (program.codec) {
    case GpuCodec::kNone:
      if (in.size() != decoded_size)
        return corrupt_data("bytes: chunk has " + std::to_string(in.size()) + " bytes, expected " +
                            std::to_string(decoded_size));
      return Payload{0, in.size()};
    case GpuCodec::kZstd:
      return zstd_payload(in, decoded_size);
    case GpuCodec::kDeflate:
      return program.gzip ? gzip_payload(in, decoded_size) : zlib_payload(in);
    case GpuCodec::kLz4:
      return lz4_payload(in, decoded_size);
    case GpuCodec::kBlosc:
      return Payload{0, in.size()};  // planned by blosc_plan
  }
  return internal_error("unknown GPU codec");
}

}  // namespace zarrflow::gpu
