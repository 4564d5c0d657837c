#include "zarrflow/store/icechunk/format.h"

#include <zstd.h>

#include <cstring>
#include <memory>
#include <optional>

#include "zarrflow/store/icechunk/manifest_generated.h"
#include "zarrflow/store/icechunk/repo_generated.h"
#include "zarrflow/store/icechunk/snapshot_generated.h"

namespace zarrflow::icechunk {

namespace {

constexpr unsigned char kMagic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                      0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};  // ICE🧊CHUNK
constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
// FlatBuffers buffers are below 2 GiB (32-bit offsets).
constexpr std::uint64_t kMaxFlatBuffer = (std::uint64_t{1} << 31) - 1;

// The most a single zstd frame can decompress to, from its block headers (a compressed block
// regenerates at most 128 KiB, raw and RLE blocks exactly their size); nullopt when the frame
// cannot be walked (it is then decoded with a growing buffer, which reports the error).
std::optional<std::uint64_t> frame_size_bound(ConstByteSpan frame) {
  const auto* p = reinterpret_cast<const unsigned char*>(frame.data());
  const std::size_t n = frame.size();
  // Frame header (RFC 8878 3.1.1): magic, descriptor, [window], [dictionary id], [content size].
  if (n < 5 || p[0] != 0x28 || p[1] != 0xB5 || p[2] != 0x2F || p[3] != 0xFD) return std::nullopt;
  const unsigned fhd = p[4];
  const bool single_segment = (fhd >> 5) & 1;
  const unsigned fcs_flag = fhd >> 6;
  constexpr std::size_t kDidSize[4] = {0, 1, 2, 4};
  constexpr std::size_t kFcsSize[4] = {0, 2, 4, 8};
  const std::size_t header = 5 + (single_segment ? 0 : 1) + kDidSize[fhd & 3] +
                             (fcs_flag == 0 ? (single_segment ? 1 : 0) : kFcsSize[fcs_flag]);
  std::uint64_t bound = 0;
  for (std::size_t pos = header; pos + 3 <= n;) {
    const std::uint32_t h = p[pos] | (p[pos + 1] << 8) | (std::uint32_t(p[pos + 2]) << 16);
    const bool last = h & 1;
    const std::uint32_t type = (h >> 1) & 3, size = h >> 3;
    pos += 3;
    if (type == 0) {  // raw
      bound += size;
      pos += size;
    } else if (type == 1) {  // RLE: one byte, repeated `size` times
      bound += size;
      pos += 1;
    } else if (type == 2) {  // compressed
      bound += 128 << 10;
      pos += size;
    } else {
      return std::nullopt;
    }
    if (last) return bound;
  }
  return std::nullopt;
}

struct DctxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

std::string_view file_type_name(FileType t) {
  switch (t) {
    case FileType::kSnapshot:
      return "snapshot";
    case FileType::kManifest:
      return "manifest";
    case FileType::kTransactionLog:
      return "transaction log";
    case FileType::kRepoInfo:
      return "repo info";
  }
  return "unknown";
}

Result<FileHeader> parse_header(ConstByteSpan bytes, FileType expected, std::string_view what) {
  const std::string w(what);
  if (bytes.size() < kHeaderSize)
    return corrupt_data(w + ": " + std::to_string(bytes.size()) +
                        " bytes, shorter than an Icechunk file header (" +
                        std::to_string(kHeaderSize) + ")");
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0)
    return corrupt_data(w + ": not an Icechunk file (wrong magic bytes)");
  FileHeader h;
  h.implementation.assign(reinterpret_cast<const char*>(p + 12), 24);
  while (!h.implementation.empty() &&
         (h.implementation.back() == ' ' || h.implementation.back() == '\0'))
    h.implementation.pop_back();
  h.spec_version = p[36];
  if (h.spec_version != 1 && h.spec_version != 2)
    return unimplemented(w + ": Icechunk spec version " + std::to_string(h.spec_version) +
                         " (written by '" + h.implementation +
                         "'); zarrflow reads spec versions 1 and 2");
  const int type = p[37];
  if (type != static_cast<int>(expected))
    return corrupt_data(w + ": file type " + std::to_string(type) + ", expected " +
                        std::to_string(static_cast<int>(expected)) + " (" +
                        std::string(file_type_name(expected)) + ")");
  h.type = expected;
  h.compression = p[38];
  if (h.compression != 0 && h.compression != 1)
    return corrupt_data(w + ": unknown compression " + std::to_string(h.compression) +
                        " (0 none, 1 zstd)");
  return h;
}

Result<Buffer> payload(ConstByteSpan bytes, const FileHeader& header, std::string_view what,
                       std::uint64_t max_bytes) {
  const std::string w(what);
  max_bytes = std::min(max_bytes, kMaxFlatBuffer);
  const ConstByteSpan body = bytes.subspan(kHeaderSize);
  if (header.compression == 0) {
    if (body.size() > max_bytes) return corrupt_data(w + ": payload too large");
    return Buffer::copy_of(body);
  }
  // zstd, streamed into a growing buffer: the frame's declared size is only a first guess.
  std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) return internal_error("ZSTD_createDCtx failed");
  std::uint64_t guess = ZSTD_getFrameContentSize(body.data(), body.size());
  if (guess == ZSTD_CONTENTSIZE_ERROR)
    return corrupt_data(w + ": the zstd payload has no valid frame header");
  // Icechunk's frames do not record their size: bound it from the block headers, so that the
  // payload is decompressed into one allocation (no regrowth copies of a 100 MB manifest).
  if (guess == ZSTD_CONTENTSIZE_UNKNOWN) guess = frame_size_bound(body).value_or(body.size() * 4);
  Buffer out(static_cast<std::size_t>(
      std::min<std::uint64_t>(std::max<std::uint64_t>(guess, 64), max_bytes)));
  ZSTD_inBuffer in{body.data(), body.size(), 0};
  std::size_t written = 0;
  for (;;) {
    if (written == out.size()) {
      if (out.size() >= max_bytes)
        return corrupt_data(w + ": the payload decompresses to more than " +
                            std::to_string(max_bytes) + " bytes");
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(out.size() * 2, max_bytes)));
    }
    ZSTD_outBuffer o{out.data(), out.size(), written};
    const std::size_t r = ZSTD_decompressStream(dctx.get(), &o, &in);
    if (ZSTD_isError(r)) return corrupt_data(w + ": zstd: " + ZSTD_getErrorName(r));
    written = o.pos;
    if (r == 0) {
      if (in.pos != in.size) return corrupt_data(w + ": bytes after the end of the zstd payload");
      break;
    }
    if (in.pos == in.size && o.pos < o.size)
      return corrupt_data(w + ": the zstd payload is truncated");
  }
  out.resize(written);
  return out;
}

Status verify(ConstByteSpan buffer, FileType type, std::string_view what) {
  if (buffer.size() > kMaxFlatBuffer) return corrupt_data(std::string(what) + ": too large");
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  // Every table takes at least 4 bytes: a bound that admits any honest buffer.
  opts.max_tables = static_cast<flatbuffers::uoffset_t>(buffer.size() / 4 + 16);
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(buffer.data()), buffer.size(),
                          opts);
  bool ok = false;
  switch (type) {
    case FileType::kSnapshot:
      ok = generated::VerifySnapshotBuffer(v);
      break;
    case FileType::kManifest:
      ok = generated::VerifyManifestBuffer(v);
      break;
    case FileType::kRepoInfo:
      ok = generated::VerifyRepoBuffer(v);
      break;
    case FileType::kTransactionLog:
      return unimplemented("transaction logs are not read");
  }
  if (!ok)
    return corrupt_data(std::string(what) + ": the " + std::string(file_type_name(type)) +
                        " is corrupt (FlatBuffers verification failed)");
  return {};
}

std::string encode_id(ConstByteSpan id) {
  std::string out;
  out.reserve((id.size() * 8 + 4) / 5);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::byte b : id) {
    acc = (acc << 8) | static_cast<std::uint8_t>(b);
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out.push_back(kCrockford[(acc >> bits) & 31]);
    }
  }
  if (bits > 0) out.push_back(kCrockford[(acc << (5 - bits)) & 31]);
  return out;
}

Result<std::array<std::uint8_t, 12>> decode_id12(std::string_view text) {
  auto bad = [&] {
    return invalid_argument("'" + std::string(text) +
                            "' is not a snapshot id (20 Crockford base-32 characters)");
  };
  if (text.size() != 20) return bad();
  std::array<std::uint8_t, 12> out{};
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t n = 0;
  for (char c : text) {
    char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (u == 'I' || u == 'L') u = '1';
    if (u == 'O') u = '0';
    const char* at = std::strchr(kCrockford, u);
    if (u == '\0' || at == nullptr) return bad();
    acc = (acc << 5) | static_cast<std::uint32_t>(at - kCrockford);
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      if (n == out.size()) return bad();
      out[n++] = static_cast<std::uint8_t>((acc >> bits) & 0xff);
    }
  }
  // 20 × 5 = 100 bits: 96 of data and 4 zero bits of padding.
  if (n != out.size() || (acc & ((1u << bits) - 1)) != 0) return bad();
  return out;
}

}  // namespace zarrflow::icechunk
