#include "zarrflow/store/icechunk/format.h"

#include <zstd.h>

#include <cstring>
#include <memory>
#include <new>
#include <optional>

#include "zarrflow/core/prefault.h"
#include "zarrflow/store/icechunk/manifest_generated.h"
#include "zarrflow/store/icechunk/repo_generated.h"
#include "zarrflow/store/icechunk/snapshot_generated.h"

namespace zarrflow::icechunk {

namespace {

constexpr unsigned char kMagic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                      0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};  // ICE🧊CHUNK
constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
// Payloads at least this large are decompressed into huge-page-backed memory.
constexpr std::uint64_t kLargePayload = std::uint64_t{4} << 20;

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

std::uint64_t stored_size_cap(std::uint64_t cap) {
  return kHeaderSize + ZSTD_COMPRESSBOUND(std::min(cap, kMaxPayloadBytes));
}

namespace {

Status over_cap(std::string_view what, std::string_view verb, std::uint64_t bytes,
                const SizeCap& cap) {
  return corrupt_data(std::string(what) + ": the payload " + std::string(verb) + " " +
                      (bytes > cap.bytes ? std::to_string(bytes) + " bytes, " : "") +
                      "more than the " + std::to_string(cap.bytes) + " bytes allowed (the " +
                      std::string(cap.name) + " limit)");
}

// Streams the frame into a buffer that doubles as it fills, up to cap.bytes: for frames whose
// size cannot be bounded from their headers.
Result<Buffer> decompress_growing(ZSTD_DCtx* dctx, ConstByteSpan frame, std::uint64_t first,
                                  std::string_view what, const SizeCap& cap) {
  const std::string w(what);
  Buffer out(static_cast<std::size_t>(std::min(std::max<std::uint64_t>(first, 64), cap.bytes)));
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  std::size_t written = 0;
  for (;;) {
    if (written == out.size()) {
      if (out.size() >= cap.bytes) return over_cap(what, "decompresses to", 0, cap);
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(out.size() * 2, cap.bytes)));
    }
    ZSTD_outBuffer o{out.data(), out.size(), written};
    const std::size_t r = ZSTD_decompressStream(dctx, &o, &in);
    if (ZSTD_isError(r)) return corrupt_data(w + ": zstd: " + ZSTD_getErrorName(r));
    written = o.pos;
    if (r == 0) break;
    if (in.pos == in.size && o.pos < o.size)
      return corrupt_data(w + ": the zstd payload is truncated");
  }
  out.resize(written);
  return out;
}

}  // namespace

Result<Buffer> payload(ConstByteSpan bytes, const FileHeader& header, std::string_view what,
                       SizeCap cap) {
  const std::string w(what);
  cap.bytes = std::min(cap.bytes, kMaxPayloadBytes);
  const ConstByteSpan body = bytes.subspan(kHeaderSize);
  if (header.compression == 0) {
    if (body.size() > cap.bytes) return over_cap(what, "has", body.size(), cap);
    return Buffer::copy_of(body);
  }
  const std::uint64_t declared = ZSTD_getFrameContentSize(body.data(), body.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR)
    return corrupt_data(w + ": the zstd payload has no valid frame header");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared > cap.bytes)
    return over_cap(what, "declares", declared, cap);
  const std::size_t frame_size = ZSTD_findFrameCompressedSize(body.data(), body.size());
  if (ZSTD_isError(frame_size))
    return corrupt_data(w + ": the zstd payload is truncated or corrupt (" +
                        ZSTD_getErrorName(frame_size) + ")");
  if (frame_size != body.size())
    return corrupt_data(w + ": bytes after the end of the zstd payload");
  const ConstByteSpan frame = body.first(frame_size);
  std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) return internal_error("ZSTD_createDCtx failed");
  // icechunk 1.x's frames do not record their size; the block headers bound it (each block
  // regenerates at most 128 KiB), so the payload goes straight into one buffer of that size.
  const std::optional<std::uint64_t> bound =
      declared != ZSTD_CONTENTSIZE_UNKNOWN ? std::optional(declared) : frame_size_bound(frame);
  if (!bound || *bound > cap.bytes) {
    try {
      return decompress_growing(dctx.get(), frame, bound.value_or(frame.size() * 4), what, cap);
    } catch (const std::bad_alloc&) {
      return resource_exhausted(w + ": no memory to decompress its payload");
    }
  }
  const auto n_alloc = static_cast<std::size_t>(std::max<std::uint64_t>(*bound, 1));
  Buffer out;
  try {
    out = *bound >= kLargePayload ? Buffer::huge_page_aligned(n_alloc) : Buffer(n_alloc);
  } catch (const std::bad_alloc&) {
    return resource_exhausted(w + ": no memory for its " + std::to_string(n_alloc) +
                              "-byte payload");
  }
  std::size_t n = 0;
  {
    // zstd writes the buffer front to back; its pages are faulted in on another core meanwhile.
    const PrefaultAhead prefault(out.data(), out.size());
    n = ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), frame.data(), frame.size());
  }
  if (ZSTD_isError(n)) return corrupt_data(w + ": zstd: " + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

namespace {

flatbuffers::Verifier::Options verifier_options(std::size_t buffer_size) {
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 64;
  // Every table takes at least 4 bytes: a bound that admits any honest buffer.
  opts.max_tables = static_cast<flatbuffers::uoffset_t>(buffer_size / 4 + 16);
  return opts;
}

flatbuffers::Verifier verifier_of(ConstByteSpan buffer) {
  return flatbuffers::Verifier(reinterpret_cast<const std::uint8_t*>(buffer.data()), buffer.size(),
                               verifier_options(buffer.size()));
}

// The generated tables derive privately from flatbuffers::Table; the verifier's per-field
// checks are reached through the Table they are.
const flatbuffers::Table* as_table(const void* t) {
  return reinterpret_cast<const flatbuffers::Table*>(t);
}

// generated::ArrayManifest::Verify without the loop over its chunk references.
bool verify_array_manifest_table(flatbuffers::Verifier& v, const generated::ArrayManifest* a) {
  using A = generated::ArrayManifest;
  const flatbuffers::Table* t = as_table(a);
  return t->VerifyTableStart(v) &&
         t->VerifyFieldRequired<generated::ObjectId8>(v, A::VT_NODE_ID, 1) &&
         t->VerifyOffsetRequired(v, A::VT_REFS) && v.VerifyVector(a->refs()) &&
         t->VerifyOffset(v, A::VT_EXTRA) && v.VerifyVector(a->extra()) && v.EndTable();
}

// generated::Manifest::Verify, each ArrayManifest verified as above.
bool verify_manifest_table(flatbuffers::Verifier& v, const std::uint8_t* buf) {
  using M = generated::Manifest;
  const auto root = v.VerifyOffset(0);
  if (root == 0) return false;
  const auto* m = reinterpret_cast<const M*>(buf + root);
  const flatbuffers::Table* t = as_table(m);
  if (!(t->VerifyTableStart(v) && t->VerifyFieldRequired<generated::ObjectId12>(v, M::VT_ID, 1) &&
        t->VerifyOffsetRequired(v, M::VT_ARRAYS) && v.VerifyVector(m->arrays())))
    return false;
  for (const auto* a : *m->arrays())
    if (!verify_array_manifest_table(v, a)) return false;
  return t->VerifyOffset(v, M::VT_LOCATION_DICTIONARY) &&
         v.VerifyVector(m->location_dictionary()) &&
         t->VerifyField<std::uint8_t>(v, M::VT_COMPRESSION_ALGORITHM, 1) &&
         t->VerifyOffset(v, M::VT_EXTRA) && v.VerifyVector(m->extra()) && v.EndTable();
}

Status corrupt_file(std::string_view what, FileType type) {
  return corrupt_data(std::string(what) + ": the " + std::string(file_type_name(type)) +
                      " is corrupt (FlatBuffers verification failed)");
}

}  // namespace

Status verify(ConstByteSpan buffer, FileType type, std::string_view what) {
  if (buffer.size() > kMaxPayloadBytes) return corrupt_data(std::string(what) + ": too large");
  flatbuffers::Verifier v = verifier_of(buffer);
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
  if (!ok) return corrupt_file(what, type);
  return {};
}

Status verify_manifest_tables(ConstByteSpan buffer, std::string_view what) {
  if (buffer.size() > kMaxPayloadBytes) return corrupt_data(std::string(what) + ": too large");
  // The root offset and the smallest table.
  if (buffer.size() < 2 * sizeof(flatbuffers::uoffset_t))
    return corrupt_file(what, FileType::kManifest);
  flatbuffers::Verifier v = verifier_of(buffer);
  if (!verify_manifest_table(v, reinterpret_cast<const std::uint8_t*>(buffer.data())))
    return corrupt_file(what, FileType::kManifest);
  return {};
}

bool chunk_ref_verified(ConstByteSpan buffer, const generated::ChunkRef* ref) {
  flatbuffers::Verifier v = verifier_of(buffer);
  return ref->Verify(v);
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
