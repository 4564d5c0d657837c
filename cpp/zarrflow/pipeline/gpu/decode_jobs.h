// The GPU work of one piece of a read as job tables (plain C++: builds and is tested everywhere):
// nvCOMP batches (zstd, deflate), zarrflow's stream decoder (LZ4, blosclz, stored Blosc
// streams), Blosc un-shuffles, zlib/gzip checksum checks and the scatter into the destinations,
// each a table of jobs that one call or launch runs (codec/gpu/kernel_jobs.h, scatter_job.h).
// Built from the items, their placements (batch_layout.h) and the piece's device buffers; then
// packed into one buffer that is copied up once (JobTables).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zarrflow/codec/gpu/kernel_jobs.h"
#include "zarrflow/codec/gpu/zstd_jobs.h"
#include "zarrflow/pipeline/gpu/batch_layout.h"
#include "zarrflow/pipeline/gpu/scatter_job.h"

namespace zarrflow::gpu {

// One nvCOMP batched call's arguments, per job.
struct NvcompJobs {
  std::vector<const void*> src;
  std::vector<std::size_t> src_bytes, capacity;
  std::vector<void*> dst;
  std::vector<std::uint32_t> item;  // per job: the item it belongs to
  std::size_t max_out = 0, total_out = 0;

  void add(const std::byte* from, std::uint64_t size, std::byte* to, std::uint64_t decoded,
           std::uint32_t of_item);
  [[nodiscard]] std::size_t size() const { return src.size(); }
};

// The piece's device buffers the jobs point into (null where the piece has none).
struct DeviceAreas {
  std::byte* staging = nullptr;   // compressed bytes, at the items' staging offsets
  std::byte* direct = nullptr;    // cuFile reads, at Item::direct_offset
  std::byte* cpu = nullptr;       // host-decoded blocks to scatter, at Item::cpu_offset
  std::byte* out = nullptr;       // decoded-chunk scratch, at Placement::out_offset
  std::byte* shuffled = nullptr;  // Blosc scratch, at Placement::shuffled_offset
};

struct DecodeJobs {
  NvcompJobs zstd, deflate;
  // The zstd frames as zarrflow's decoder takes them (empty when nvCOMP decodes them), built from
  // `zstd` once their scratch is known (ReadOp::prepare_zstd).
  std::vector<ZstdFrameJob> zstd_frames;
  // Frames a launch of zarrflow's decoder takes: all, or fewer when their scratch did not fit
  // (the launches then share one scratch, one after another on the piece's stream).
  std::size_t zstd_frames_per_launch = 0;
  // Inflated zlib / gzip streams whose trailers the GPU checks; `status` is the index of the
  // stream's deflate job among the deflate jobs' status slots.
  std::vector<ChecksumJob> checksums;
  std::vector<StreamJob> streams;
  std::vector<std::uint32_t> stream_item;  // per stream: the item it belongs to
  std::vector<UnshuffleJob> unshuffles;
  std::vector<ScatterJob> scatters;
  // The piece's items by who decoded them (the read's report counts them).
  std::int64_t gpu_decoded = 0, cpu_decoded = 0, deduplicated = 0;

  // Status slots: zstd jobs, deflate jobs, then streams; each slot's item.
  [[nodiscard]] std::size_t slots() const { return zstd.size() + deflate.size() + streams.size(); }
  [[nodiscard]] std::vector<std::uint32_t> slot_items() const;
};

// The jobs of the piece's items; sets Item::d_decoded of each GPU-decoded item (where its whole
// decoded chunk lies, for duplicates to scatter from) and numbers the streams' status slots.
Status build_decode_jobs(std::vector<Item>& items, std::span<const std::size_t> piece,
                         const OutputLayout& layout, const DeviceAreas& areas, DecodeJobs& jobs);

// Where a piece's NaN count follows its `nslots` int status slots in the pinned results.
constexpr std::size_t nans_offset(std::size_t nslots) { return align_up(nslots * sizeof(int), 8); }

// The piece's tables packed into one buffer (each at a 16-byte boundary), copied up once:
// the jobs, the scatter's tile starts, zeroed status slots and NaN counter, and room for
// nvCOMP's actual output sizes. Offsets are bytes into the buffer. Holds pointers into `jobs`,
// which must outlive it.
class JobTables {
 public:
  struct Nvcomp {
    std::size_t src, src_bytes, capacity, dst, actual;
  };

  explicit JobTables(const DecodeJobs& jobs);

  [[nodiscard]] std::size_t size() const { return std::max<std::size_t>(end_, 16); }
  void pack(std::byte* host) const;

  Nvcomp zstd{}, deflate{};
  std::size_t streams = 0, unshuffles = 0, scatters = 0, tile_starts = 0, status = 0, nans = 0,
              checksums = 0, zstd_frames = 0;
  std::int64_t total_tiles = 0;  // of the scatter
  bool any_transform = false;    // some scatter job transforms (its NaNs are counted)

 private:
  template <typename T>
  std::size_t add(const std::vector<T>& v);
  std::size_t reserve(std::size_t bytes);  // device-only space (nvCOMP's actual sizes)
  Nvcomp add_nvcomp(const NvcompJobs& jobs);

  struct Part {
    std::size_t at;
    const std::byte* data;
    std::size_t size;
  };
  std::vector<Part> parts_;
  std::size_t end_ = 0;
  std::vector<std::int64_t> tiles_;
  std::vector<int> zero_status_;
  std::vector<unsigned long long> zero_nans_;
};

}  // namespace zarrflow::gpu
