// Host reference driver of the GPU Blosc path (see blosc_host_decode.h). The two loops below are
// the two batched kernels: "decode every stream" (one warp per stream; each stream's status is
// its decoder's result compared with dst_size) and then "un-shuffle every planned block" (one
// thread block per block, reading the scratch buffer, writing the output).
#include "zarrflow/codec/gpu/blosc_host_decode.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>

#include <libdeflate.h>
#include <zstd.h>

#include "zarrflow/codec/gpu/blosclz_block.h"
#include "zarrflow/codec/gpu/lz4_block.h"
#include "zarrflow/codec/gpu/unshuffle.h"

namespace zarrflow::gpu {
namespace {

struct ZstdDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
struct DeflateDeleter {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

const std::uint8_t* u8(const std::byte* p) { return reinterpret_cast<const std::uint8_t*>(p); }
std::uint8_t* u8(std::byte* p) { return reinterpret_cast<std::uint8_t*>(p); }

}  // namespace

Status execute_blosc_plan(const BloscPlan& plan, ConstByteSpan chunk, ByteSpan out,
                          ByteSpan scratch) {
  if (chunk.size() != plan.header.cbytes)
    return invalid_argument("blosc: the plan was made for a chunk of " +
                            std::to_string(plan.header.cbytes) + " bytes, not " +
                            std::to_string(chunk.size()));
  if (out.size() != plan.nbytes)
    return invalid_argument("blosc: output is " + std::to_string(out.size()) +
                            " bytes, the chunk decodes to " + std::to_string(plan.nbytes));
  if (plan.needs_scratch() && scratch.size() < plan.nbytes)
    return invalid_argument("blosc: scratch buffer is too small");

  std::unique_ptr<ZSTD_DCtx, ZstdDeleter> zstd;
  std::unique_ptr<libdeflate_decompressor, DeflateDeleter> zlib;

  // Kernel 1: every stream on its own.
  for (const BloscStream& s : plan.streams) {
    const std::uint8_t* src = u8(chunk.data()) + s.src_offset;
    std::uint8_t* dst = u8((s.to_scratch ? scratch : out).data()) + s.dst_offset;
    std::int64_t got = 0;
    std::string error;
    switch (s.kind) {
      case BloscStreamKind::kMemcpy:
        // The planner only makes stored streams with src_size == dst_size.
        std::memcpy(dst, src, s.dst_size);
        got = s.dst_size;
        break;
      case BloscStreamKind::kLz4:
        got = lz4_decode_block(src, s.src_size, dst, s.dst_size, 0, 1);
        break;
      case BloscStreamKind::kBlosclz:
        got = blosclz_decode_block(src, s.src_size, dst, s.dst_size, 0, 1);
        break;
      case BloscStreamKind::kZstd: {
        if (!zstd) zstd.reset(ZSTD_createDCtx());
        if (!zstd) return resource_exhausted("blosc: cannot allocate a zstd context");
        const std::size_t r = ZSTD_decompressDCtx(zstd.get(), dst, s.dst_size, src, s.src_size);
        if (ZSTD_isError(r)) {
          error = ZSTD_getErrorName(r);
        } else {
          got = static_cast<std::int64_t>(r);
        }
        break;
      }
      case BloscStreamKind::kZlib: {
        if (!zlib) zlib.reset(libdeflate_alloc_decompressor());
        if (!zlib) return resource_exhausted("blosc: cannot allocate a zlib decompressor");
        std::size_t n = 0;
        const libdeflate_result r =
            libdeflate_zlib_decompress(zlib.get(), src, s.src_size, dst, s.dst_size, &n);
        if (r != LIBDEFLATE_SUCCESS) {
          error = r == LIBDEFLATE_INSUFFICIENT_SPACE ? "output overflow" : "invalid data";
        } else {
          got = static_cast<std::int64_t>(n);
        }
        break;
      }
      case BloscStreamKind::kSnappy:
        return unimplemented("blosc: snappy streams are not supported on the GPU decode path");
    }
    const std::string name = blosc_stream_kind_name(s.kind);
    const std::string at = "blosc: block " + std::to_string(s.block) + " stream " +
                           std::to_string(s.split) + ": " + name + ": ";
    if (!error.empty()) return corrupt_data(at + error);
    if (got < 0) return corrupt_data(at + decode_status_name(static_cast<int>(got)));
    if (got != s.dst_size)
      return corrupt_data(at + "decoded " + std::to_string(got) + " bytes, expected " +
                          std::to_string(s.dst_size));
  }

  // Kernel 2: every block that needs it, un-shuffled from the scratch into the output.
  for (const std::uint32_t b : plan.unshuffled) {
    const BloscBlock& blk = plan.blocks[b];
    const std::uint8_t* src = u8(scratch.data()) + blk.dst_offset;
    std::uint8_t* dst = u8(out.data()) + blk.dst_offset;
    if (blk.unshuffle == BloscUnshuffle::kByte) {
      byte_unshuffle(src, dst, plan.typesize, blk.size, 0, 1);
    } else {
      bit_unshuffle(src, dst, plan.typesize, blk.size, 0, 1);
    }
  }
  return {};
}

Status decode_blosc_via_plan(ConstByteSpan chunk, ByteSpan out) {
  ZF_ASSIGN_OR_RETURN(BloscPlan plan, make_blosc_plan(chunk));
  if (out.size() != plan.nbytes)
    return corrupt_data("blosc: header says " + std::to_string(plan.nbytes) +
                        " decoded bytes, expected " + std::to_string(out.size()));
  Buffer scratch;
  try {
    if (plan.needs_scratch()) scratch = Buffer(plan.nbytes);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("blosc: cannot allocate " + std::to_string(plan.nbytes) + " bytes");
  }
  return execute_blosc_plan(plan, chunk, out, scratch.span());
}

}  // namespace zarrflow::gpu
