// Host reference driver of the GPU Blosc path: decodes a chunk exactly as the CUDA kernels do --
// plan (blosc_plan.h), then every stream independently (lz4_decode_block / blosclz_decode_block
// as lane 0 of 1, libzstd / libdeflate for zstd / zlib streams, memcpy for stored ones), then
// every planned block un-shuffled from the scratch buffer into the output (unshuffle.h). Tests
// compare it with c-blosc byte for byte; it also documents the algorithm for the kernel author.
// Thread-safety: stateless; safe from many threads at once.
#pragma once

#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"

namespace zarrflow::gpu {

// Decodes `chunk` (a whole c-blosc 1.x chunk) into `out`, whose size must be the chunk's decoded
// size. kCorruptData names the block and stream that failed; kUnimplemented for snappy.
Status decode_blosc_via_plan(ConstByteSpan chunk, ByteSpan out);

// The execution half: runs `plan` (made from `chunk`) into `out` (plan.nbytes bytes), using
// `scratch` (plan.nbytes bytes, or empty when !plan.needs_scratch()) for shuffled blocks.
Status execute_blosc_plan(const BloscPlan& plan, ConstByteSpan chunk, ByteSpan out,
                          ByteSpan scratch);

}  // namespace zarrflow::gpu
