// The job table of the GPU zstd decoder (zstd_kernels.cu): one entry per frame, built on the host
// and copied up, with the frame's scratch in device memory. Plain C++ (builds everywhere).
#pragma once

#include <cstddef>
#include <cstdint>

#include "zarrflow/codec/gpu/zstd_frame.h"

namespace zarrflow::gpu {

struct ZstdFrameJob {
  const std::uint8_t* src;
  std::uint8_t* dst;
  std::uint64_t dst_size;  // exact decoded size expected
  std::uint32_t src_size;
  std::uint32_t status;  // index of the frame's status slot
  ZstdFrameRoom room;
  ZstdBlockPlan* blocks;     // room.blocks entries
  std::uint8_t* literals;    // dst_size bytes
  std::uint64_t* sequences;  // room.sequences entries
  ZstdFramePlan frame;       // set on the GPU by the walk
};

constexpr std::size_t zstd_align(std::size_t n) { return (n + 255) & ~std::size_t(255); }

// Device scratch of one frame: its block plans, literals and sequences.
inline std::size_t zstd_scratch_bytes(std::uint64_t src_size, std::uint64_t dst_size) {
  const ZstdFrameRoom room = zstd_frame_room(src_size, dst_size);
  return zstd_align(room.blocks * sizeof(ZstdBlockPlan)) + zstd_align(dst_size + 8) +
         zstd_align(room.sequences * sizeof(std::uint64_t));
}

// A job for the frame src[0, src_size) -> dst[0, dst_size) whose scratch starts at `scratch`
// (zstd_scratch_bytes of device memory, 256-byte aligned).
inline ZstdFrameJob make_zstd_job(const void* src, std::uint64_t src_size, void* dst,
                                  std::uint64_t dst_size, std::uint32_t status,
                                  std::byte* scratch) {
  ZstdFrameJob j{};
  j.src = static_cast<const std::uint8_t*>(src);
  j.dst = static_cast<std::uint8_t*>(dst);
  j.dst_size = dst_size;
  // Larger inputs are left to the host by the walk (it sees a truncated frame otherwise).
  j.src_size = std::uint32_t(src_size < (1ull << 31) ? src_size : 0);
  j.status = status;
  j.room = zstd_frame_room(src_size, dst_size);
  j.blocks = reinterpret_cast<ZstdBlockPlan*>(scratch);
  scratch += zstd_align(j.room.blocks * sizeof(ZstdBlockPlan));
  j.literals = reinterpret_cast<std::uint8_t*>(scratch);
  scratch += zstd_align(dst_size + 8);
  j.sequences = reinterpret_cast<std::uint64_t*>(scratch);
  return j;
}

}  // namespace zarrflow::gpu
