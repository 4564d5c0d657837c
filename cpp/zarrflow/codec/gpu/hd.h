// Host/device portability for the GPU decode primitives (lz4_block.h, blosclz_block.h,
// unshuffle.h, zstd_*.h): the same source runs in CUDA kernels and in host tests and reference
// drivers.
//
//   ZF_HD            __host__ __device__ under nvcc, nothing for a plain C++ compiler.
//   ZF_SYNC_LANES()  __syncwarp() in device code (all 32 lanes of the warp must reach it), nothing
//                    on the host, where a decode runs as lane 0 of 1.
//   DecodeStatus     the negative codes the decoders return. -1..-4, -10 and -11 (the zstd
//                    decoder's, zstd_frame.h) have the meaning of the kernels' KernelError codes
//                    (kernel_jobs.h); -5 and -9 are left to the kernels (unknown kind, checksum
//                    mismatch).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define ZF_HD __host__ __device__
#else
#define ZF_HD
#endif

#if defined(__CUDA_ARCH__)
#define ZF_SYNC_LANES() __syncwarp()
#else
#define ZF_SYNC_LANES() ((void)0)
#endif

namespace zarrflow::gpu {

// What a block decoder returns when it fails (success is the number of bytes written, >= 0).
enum DecodeStatus : int {
  kDecodeTruncated = -1,          // the input ends inside a token or before the end-of-block
  kDecodeOverflow = -2,           // the output would grow past dst_size
  kDecodeOffsetBeforeStart = -3,  // a match reaches back before the start of dst
  kDecodeSizeMismatch = -4,       // the output is not the size expected (zstd)
  kDecodeEndOfBlock = -6,         // an LZ4 match too close to the end of the output
  kDecodeTrailingGarbage = -7,    // input remains after what must be the last sequence
  kDecodeTooLarge = -8,           // dst_size does not fit the int return value
  kDecodeCorrupt = -10,           // a zstd frame breaks the format's rules
  kDecodeUnsupported = -11,       // a zstd frame the GPU decoder leaves to the host (zstd_frame.h)
};

ZF_HD inline const char* decode_status_name(int status) {
  switch (status) {
    case kDecodeTruncated:
      return "truncated input";
    case kDecodeOverflow:
      return "output overflow";
    case kDecodeOffsetBeforeStart:
      return "match offset before the start of the output";
    case kDecodeSizeMismatch:
      return "decoded size differs from the expected";
    case kDecodeEndOfBlock:
      return "match within the last 5 bytes of the output";
    case kDecodeTrailingGarbage:
      return "input left after the last sequence";
    case kDecodeTooLarge:
      return "output larger than 2 GiB";
    case kDecodeCorrupt:
      return "malformed zstd frame";
    case kDecodeUnsupported:
      return "zstd frame left to the host decoder";
    default:
      return status >= 0 ? "ok" : "unknown error";
  }
}

// The default lane barrier of the decoders. Host tests substitute one that makes real threads
// wait for each other, to check that every cross-lane read is preceded by a barrier.
struct WarpSync {
  ZF_HD void operator()() const { ZF_SYNC_LANES(); }
};

}  // namespace zarrflow::gpu
