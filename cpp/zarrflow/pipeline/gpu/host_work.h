// What the host threads do for one item of a GPU read (plain C++: builds and is tested
// everywhere): read its stored bytes into staging (or read and convert them at once), check the
// bytes before a GPU decoder sees them, and decode on the host what the GPU does not.
// Each function works on one item; the read runs them on its pools, many items at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "zarrflow/pipeline/gpu/batch_layout.h"
#include "zarrflow/pipeline/gpu/read_plan.h"

namespace zarrflow::gpu {

// numcodecs LZ4 stores a chunk as one LZ4 block, which zarrflow's kernel decodes on one warp, in
// order, at tens of MB/s; a 256 MB batch holds ~60 chunks of 4 MB, a few GB/s in all, where the
// host's cores decode several times that (docs/design_measurements.md, "numcodecs LZ4 chunks over
// 1 MiB decoded on the host"). Matching the host takes hundreds of warps at once, i.e. chunks
// well under a megabyte, so with gpu_decode=auto larger chunks go to the host threads.
// (Blosc-LZ4 is cut into small blocks and streams.)
constexpr std::uint64_t kLz4GpuMaxBlock = std::uint64_t{1} << 20;

// Reads the item's stored bytes into `slot` (its staging slot: 4 KiB-aligned, with room for an
// O_DIRECT read of the aligned superset): through the store's LocalFiles with O_DIRECT when `io`
// asks for it, else the store's own reads. A value deleted since its size was taken becomes a
// fill; `direct_reads` counts reads O_DIRECT served.
Status read_stored(Item& it, std::byte* slot, IoPath io, std::atomic<std::int64_t>& direct_reads);

// Reads an uncompressed chunk and converts it at once into `dst` (streams_to_host_tf), adding
// the NaNs it wrote to `nans`.
Status read_converted(Item& it, std::byte* dst, std::atomic<std::uint64_t>& nans);

// What the GPU can decode in this read.
struct GpuDecoders {
  GpuDecode decode = GpuDecode::kAuto;
  bool nvcomp = false;         // nvCOMP is loaded (deflate; zstd when zstd_nvcomp)
  std::string nvcomp_missing;  // why not
  bool zstd_nvcomp = false;    // nvCOMP decodes zstd frames rather than zarrflow's decoder
};

// Checks a GPU item's stored bytes (at `staged` + its staging offset) before any GPU decoder
// sees them: framing and checksums (locate_payload), Blosc's plan and inner streams. Malformed
// bytes are an error naming the chunk; bytes the GPU decoders cannot take (and large numcodecs
// LZ4 blocks under gpu_decode=auto, and deflate without nvCOMP) go to the host threads,
// the reason in Item::cpu_reason.
Status check_gpu_item(Item& it, const std::byte* staged, const GpuDecoders& gpu);

// Decodes the item's selected block from its stored bytes (at `staged` + its staging offset)
// into `out`, C order, the array's element type.
Status decode_on_host(const Item& it, const std::byte* staged, ByteSpan out, BufferPool* buffers);

}  // namespace zarrflow::gpu
