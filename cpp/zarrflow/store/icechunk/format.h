// The framing every Icechunk metadata file shares (spec versions 1 and 2), and object ids.
//
// A snapshot, manifest, transaction log or (spec 2) repo info file is
//   magic "ICE🧊CHUNK" (12 bytes) | implementation name (24 bytes, space-padded UTF-8) |
//   spec version (1 byte: 1 or 2) | file type (1 byte: 1 snapshot, 2 manifest,
//   4 transaction log, 6 repo info) | compression (1 byte: 0 none, 1 zstd) | payload
// and the payload, once decompressed, is one FlatBuffers buffer of the file type's root table.
// parse_header() checks every header field; payload() decompresses within a size cap, checked
// before anything is allocated; verify() runs flatbuffers::Verifier over the result before
// anything reads it, so truncated or corrupt files are errors (kCorruptData) naming the file,
// never reads out of bounds. Manifests are verified in two steps (verify_manifest_tables(), then
// chunk_ref_verified() for each chunk reference before it is read): a manifest of a million
// chunk references is a million tables, and a read needs about twenty of them.
// Object ids (12-byte snapshot / manifest / chunk ids, 8-byte node ids) appear in file names as
// Crockford base 32, uppercase, unpadded.
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"

namespace generated {  // the FlatBuffers tables, manifest_generated.h
struct ChunkRef;
}  // namespace generated

namespace zarrflow::icechunk {

enum class FileType : std::uint8_t {
  kSnapshot = 1,
  kManifest = 2,
  kTransactionLog = 4,
  kRepoInfo = 6,
};
std::string_view file_type_name(FileType t);

inline constexpr std::size_t kHeaderSize = 12 + 24 + 3;
// FlatBuffers buffers are below 2 GiB (32-bit offsets): no payload can be larger.
inline constexpr std::uint64_t kMaxPayloadBytes = (std::uint64_t{1} << 31) - 1;

// How many bytes one metadata file may make zarrflow read and allocate: its stored size and
// its decompressed payload are both checked against `bytes` before the buffer holding them is
// allocated. `name` is the option that sets it (open(limits={name: ...})), quoted in errors.
struct SizeCap {
  std::uint64_t bytes = kMaxPayloadBytes;
  std::string_view name = "max_payload_bytes";
};

struct FileHeader {
  std::string implementation;  // trailing spaces removed
  int spec_version = 0;
  FileType type = FileType::kSnapshot;
  int compression = 0;
};

// Checks the header of `bytes` (named `what` in errors): the magic, a known spec version (1, 2),
// the expected file type and a known compression.
Result<FileHeader> parse_header(ConstByteSpan bytes, FileType expected, std::string_view what);

// The most bytes a file of `cap` decompressed bytes can take in storage (zstd's bound for
// incompressible data, plus the header).
std::uint64_t stored_size_cap(std::uint64_t cap);

// The decompressed FlatBuffers payload after the header (not yet verified). A zstd frame that
// declares more than cap.bytes, or decompresses to more, is kCorruptData naming `what` and the
// limit; nothing larger than cap.bytes is allocated. Frames are decompressed in one pass into
// one buffer sized from the frame (its declared size, or a bound read from its block headers).
Result<Buffer> payload(ConstByteSpan bytes, const FileHeader& header, std::string_view what,
                       SizeCap cap = {});

// Runs the FlatBuffers verifier for `type`'s root table over `buffer` (kCorruptData naming
// `what` if any offset, vector or string is out of bounds or a required field is missing).
Status verify(ConstByteSpan buffer, FileType type, std::string_view what);

// Verifies a manifest down to, not including, its chunk references: the Manifest table, each
// ArrayManifest table and the vector of chunk-reference offsets of each.
Status verify_manifest_tables(ConstByteSpan buffer, std::string_view what);
// Verifies one chunk reference of a buffer verify_manifest_tables() accepted (`ref`: an element
// of one of its refs vectors): its table, index, inline bytes, location strings and checksums.
bool chunk_ref_verified(ConstByteSpan buffer, const ::generated::ChunkRef* ref);

// Crockford base 32 of an id (uppercase, no padding; 12 bytes → 20 characters).
std::string encode_id(ConstByteSpan id);
template <std::size_t N>
std::string encode_id(const std::array<std::uint8_t, N>& id) {
  return encode_id(ConstByteSpan(reinterpret_cast<const std::byte*>(id.data()), N));
}
// Decodes a 12-byte id (case-insensitive; Crockford's I/L → 1, O → 0); kInvalidArgument if
// `text` is not 20 base-32 characters.
Result<std::array<std::uint8_t, 12>> decode_id12(std::string_view text);

}  // namespace zarrflow::icechunk
