// The job tables of the GPU read path's batched kernels (kernels.h): one entry per stream,
// block or checksum, built on the host and copied up. Plain C++ (builds and is tested everywhere).
// Every job reports into its own int status slot: 0 = OK, negative = error code (see below).
#pragma once

#include <cstdint>

namespace zarrflow::gpu {

enum StreamKind : std::uint8_t { kStreamCopy = 0, kStreamLz4 = 1, kStreamBlosclz = 2 };

struct StreamJob {
  const std::uint8_t* src;
  std::uint8_t* dst;
  std::uint32_t src_size;
  std::uint32_t dst_size;  // exact decoded size expected
  std::uint32_t kind;      // StreamKind
  std::uint32_t status;    // index of this job's slot in the status array
};

struct UnshuffleJob {
  const std::uint8_t* src;  // shuffled block
  std::uint8_t* dst;        // un-shuffled block
  std::uint32_t size;       // block bytes
  std::uint32_t typesize;
  std::uint32_t bitshuffle;  // 0 byte shuffle, 1 bit shuffle
};

// Error codes written to status slots by zarrflow's kernels (nvCOMP writes its own, positive).
enum KernelError : int {
  kKernelOk = 0,
  kErrTruncated = -1,     // input ended inside a token
  kErrOverflow = -2,      // output would exceed the expected size
  kErrBadOffset = -3,     // match offset points before the output start
  kErrSizeMismatch = -4,  // decoded a different number of bytes than expected
  kErrUnknownKind = -5,
  kErrChecksum = -9,      // the decoded bytes do not match the stream's checksum
  kErrCorrupt = -10,      // malformed zstd frame
  kErrUnsupported = -11,  // a zstd frame left to the host (zstd_frame.h)
};

enum ChecksumKind : std::uint32_t {
  kChecksumAdler32 = 0,  // zlib: Adler-32, big-endian
  kChecksumCrc32 = 1,    // gzip: CRC-32, little-endian
};

struct ChecksumJob {
  const std::uint8_t* data;     // the decoded bytes
  const std::uint8_t* trailer;  // the checksum as stored (device memory)
  std::uint64_t size;           // decoded bytes
  std::uint32_t kind;           // ChecksumKind
  std::uint32_t status;         // the inflate job's status slot (d_status is the inflates')
};

}  // namespace zarrflow::gpu
