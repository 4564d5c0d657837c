// Batched CUDA kernels of the GPU read path (CUDA builds only). Each launcher takes an array of
// jobs in device memory and processes all of them in one launch, on the given stream.
//
//   decode_streams   one warp per LZ4 / blosclz / stored stream (zarrflow's own decoders, so
//                    Blosc-LZ4 and numcodecs-LZ4 decode on the GPU even without nvCOMP)
//   unshuffle        one thread block per Blosc block: byte or bit un-shuffle
//   scatter          strided N-d copy of decoded chunks into the destination (edge clipping,
//                    transpose, byte swap) or fill of missing chunks with the fill value;
//                    optionally CF-decoded, normalised and cast on the way (training batches)
//   check_sizes      compares nvCOMP's actual output sizes with the expected ones
//   verify_checksums one thread block per inflated zlib / gzip stream: its Adler-32 / CRC-32
//                    against the stream's trailer (nvCOMP ignores trailers; codec/gpu/checksum.h)
// Every job reports into its own int status slot: 0 = OK, negative = error code (see below).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "zarrflow/core/normalize.h"

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

constexpr int kMaxScatterDims = 8;  // after merging contiguous dimensions (more → host path)

struct ScatterJob {
  const std::uint8_t* src;  // null: fill with `fill`
  std::uint8_t* dst;
  std::int64_t count;  // elements
  std::int32_t ndim;
  std::uint32_t elem;       // bytes per source element (<= 32)
  std::uint32_t swap_unit;  // > 1: reverse the bytes of each swap_unit-sized scalar
  // tf.out == kStored: bytes as decoded. Otherwise elements of type tf.in (elem bytes) are
  // written as cast(normalize_element(decode_element(v))) (core/normalize.h), NaNs counted: the
  // loader's CF decoding and normalisation fused into the copy, so a batch is written once, in
  // its training dtype.
  ElementTransform tf;
  std::int64_t shape[kMaxScatterDims];
  std::int64_t src_strides[kMaxScatterDims];  // bytes
  std::int64_t dst_strides[kMaxScatterDims];  // bytes
  std::uint8_t fill[32];
};

// Error codes written to status slots by zarrflow's kernels (nvCOMP writes its own, positive).
enum KernelError : int {
  kKernelOk = 0,
  kErrTruncated = -1,     // input ended inside a token
  kErrOverflow = -2,      // output would exceed the expected size
  kErrBadOffset = -3,     // match offset points before the output start
  kErrSizeMismatch = -4,  // decoded a different number of bytes than expected
  kErrUnknownKind = -5,
  kErrChecksum = -9,  // the decoded bytes do not match the stream's Adler-32 / CRC-32 trailer
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

cudaError_t launch_decode_streams(const StreamJob* d_jobs, std::uint32_t n, int* d_status,
                                  cudaStream_t stream);
cudaError_t launch_unshuffle(const UnshuffleJob* d_jobs, std::uint32_t n, cudaStream_t stream);
// `d_tile_starts[i]` is the first tile of job i (tiles of kScatterTile elements), n + 1 entries.
// `d_nans` (device, may be null when no job transforms) is incremented by the number of NaN
// source elements of the transforming jobs.
constexpr std::int64_t kScatterTile = 4096;
cudaError_t launch_scatter(const ScatterJob* d_jobs, std::uint32_t n,
                           const std::int64_t* d_tile_starts, std::int64_t total_tiles,
                           unsigned long long* d_nans, cudaStream_t stream);
// status[i] = (actual[i] == expected[i]) ? status[i] : kErrSizeMismatch, for nvCOMP batches.
cudaError_t launch_check_sizes(const std::size_t* d_actual, const std::size_t* d_expected,
                               int* d_status, std::uint32_t n, cudaStream_t stream);
// status[job.status] = kErrChecksum where a job's checksum differs from its trailer and the slot
// still says OK (an inflate error or a size mismatch already reported stays).
cudaError_t launch_verify_checksums(const ChecksumJob* d_jobs, std::uint32_t n, int* d_status,
                                    cudaStream_t stream);

}  // namespace zarrflow::gpu
