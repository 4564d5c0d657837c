// Host-side preparation of chunks for GPU decoding (plain C++: builds and is tested everywhere).
//
// nvCOMP treats malformed input as undefined behaviour, so every chunk is checked on the host
// before its bytes reach a GPU decoder: the container framing (zlib/gzip headers and trailers,
// numcodecs' LZ4 size prefix, zstd frame structure, crc32c trailers) is parsed and validated, and
// only the raw payload goes to the GPU. Chunks the GPU decoders cannot take (zstd frames with a
// content checksum or several frames, zlib preset dictionaries, multi-member gzip) are reported
// as "CPU" with the reason, not as errors.
#pragma once

#include <cstdint>
#include <string>

#include "zarrflow/codec/codec_chain.h"

namespace zarrflow::gpu {

enum class GpuCodec : std::uint8_t { kNone, kZstd, kDeflate, kLz4, kBlosc };

const char* gpu_codec_name(GpuCodec c);

// What the GPU path does with the chunks of one codec chain.
struct ChainProgram {
  bool gpu = false;    // false: decode on the CPU, then copy
  std::string reason;  // why not, when gpu == false
  GpuCodec codec = GpuCodec::kNone;
  bool gzip = false;            // kDeflate: gzip framing (else zlib)
  bool crc32c = false;          // a crc32c trailer to verify and strip on the host first
  std::uint32_t swap_unit = 1;  // bytes codec: > 1 for big-endian data
};

// Decides, once per chain, whether its chunks can decode on the GPU, from the decoders its codecs
// declare (Codec::gpu_decoder): array→array views, an array→bytes codec whose bytes are the
// elements (`bytes`, either endian), at most one bytes→bytes codec with a GPU decoder (zstd, gzip,
// zlib, numcodecs LZ4, Blosc), and optionally a trailing checksum (crc32c) last.
ChainProgram analyze_chain(const CodecChain& chain);

struct Payload {
  std::uint64_t offset = 0;  // within the stored chunk
  std::uint64_t size = 0;
  bool cpu = false;  // the GPU cannot decode this chunk (reason says why)
  std::string reason;
};

// Validates a stored chunk for `program` and locates the bytes the GPU decoder consumes.
// `decoded_size` is the chunk's exact decoded size. Malformed framing is kCorruptData (the same
// chunk would fail on the CPU too); a crc32c mismatch is kChecksumMismatch.
Result<Payload> locate_payload(const ChainProgram& program, ConstByteSpan stored,
                               std::uint64_t decoded_size);

}  // namespace zarrflow::gpu
