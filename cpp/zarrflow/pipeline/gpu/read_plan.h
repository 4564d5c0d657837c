// The read plan of a GPU read: requests → leaf chunks (read_item.h) → who decodes each → their
// stored sizes → pieces. Plain C++ (builds and is tested everywhere); read_op.h runs it.
//
//   check_requests       regions inside their arrays, one element transform per request
//   gather_items         a request's chunks; for sharded arrays, the inner chunks each shard index
//                        points at (indexes read in parallel, or taken from a ShardIndexes)
//   group_duplicates     items that read the same stored chunk: the later ones share the first
//                        one's bytes and decoded copy, and move right behind it
//   choose_decoders      GPU or host threads, per chain and gpu_decode; host_share's split
//   measure_stored_sizes whole values' sizes (missing values become fills)
//   PiecePlanner         the read's internal batches ("pieces"), bounded and of about equal size
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "zarrflow/codec/shard_indexes.h"
#include "zarrflow/pipeline/gpu/read_item.h"

namespace zarrflow::gpu {

enum class GpuDecode : std::uint8_t { kAuto, kOn, kOff };

// What planning takes from the read's options (DeviceReadOptions).
struct PlanOptions {
  ThreadPool* pool = nullptr;             // shard index reads, size queries (local stores)
  BufferPool* buffers = nullptr;          // scratch of shard index reads
  ShardIndexes* shard_indexes = nullptr;  // optional: shard indexes kept across reads
  GpuDecode decode = GpuDecode::kAuto;
  double host_share = 0.0;  // see DeviceReadOptions::host_share
};

// Each codec chain's GPU program (analyze_chain), analysed once per read.
class ChainPrograms {
 public:
  const ChainProgram* of(const CodecChain* chain);
  // True when one of the chains analysed decodes with `codec` on the GPU.
  [[nodiscard]] bool has(GpuCodec codec) const;

 private:
  std::map<const CodecChain*, ChainProgram> programs_;
};

// Every region lies inside its array and fits its destination; `transforms` is empty or one per
// request, each reading its array's data type.
Status check_requests(std::span<const ReadRequest> requests,
                      std::span<const ElementTransform> transforms);

// Appends the leaf chunks of `request` (tf: its element transform, or null) to `items`.
Status gather_items(const ReadRequest& request, const ElementTransform* tf,
                    const PlanOptions& options, std::vector<Item>& items);

// Sets Item::dup_of of every item that reads the same stored chunk through the same chain as an
// earlier one, and moves it right behind that first occurrence (the others keep their order), so
// that no piece boundary falls between them: a duplicate in a later piece than its first
// occurrence would be read and decoded again (x at t+1 is y at t, requested far apart).
void group_duplicates(std::vector<Item>& items);

// Sets each item's program and mode: the host threads decode chains the GPU cannot (the reason
// noted in Item::cpu_reason) and everything under gpu_decode=off. host_share > 0 then sends every
// k-th GPU-decodable compressed chunk to them, spread evenly (an accumulator, so the split depends
// neither on chunk sizes nor on the order of completion). Uncompressed chunks stay: read whole
// (and converted while read, where they can be), they have no decoding to move. A duplicate goes
// where its first occurrence went: it takes that one's decoded block.
void choose_decoders(std::vector<Item>& items, ChainPrograms& programs, const PlanOptions& options);

// Stored sizes of the items that still need one: inner chunks of shards know theirs from the
// index; whole values are measured (one size query each, in parallel on `pool`, or the store's
// I/O pool). Missing values become fills; a value larger than its codecs can produce is refused
// before anything of its size is allocated.
Status measure_stored_sizes(std::vector<Item>& items, ThreadPool* pool);

// Which decoder takes zstd frames on the GPU, for the whole process (the Python package sets it
// from ZARRFLOW_GPU_ZSTD): zarrflow's own (codec/gpu/zstd_kernels.cu), nvCOMP's (where it is
// loaded), or kAuto: nvCOMP's where it is loaded -- it takes less GPU time from a model
// (docs/settings.md) -- else zarrflow's.
enum class ZstdDecoder { kAuto, kZarrflow, kNvcomp };
void set_zstd_decoder(ZstdDecoder d);
ZstdDecoder zstd_decoder();
// Whether nvCOMP's decoder takes zstd frames, given whether nvCOMP is loaded.
bool zstd_by_nvcomp(bool nvcomp_loaded);
// "auto", "zarrflow" or "nvcomp"; false for anything else.
bool parse_zstd_decoder(std::string_view name, ZstdDecoder* d);

// How many streams a read spreads its pieces over, `asked` being the reader's setting
// (ZARRFLOW_GPU_READ_STREAMS), `most` the largest it takes. Reads nvCOMP decodes keep one: its
// calls are latency-bound and do not overlap, and two side by side hold SMs twice over. Reads
// zarrflow's zstd decoder takes keep twice as many: its blocks decode one after another, so a
// piece decodes in about four times the time the host takes to stage the next
// (docs/settings.md, "GPU read streams"), and three pieces in flight leave the GPU short of
// work. One asked stays one: it keeps pieces from overlapping.
int read_lanes(int asked, bool nvcomp, bool zarrflow_zstd, int most);

// The most staged (compressed) and decoded bytes one piece may hold.
struct PieceBounds {
  std::uint64_t staged, decoded;
};

// Decoded bytes of one piece of chunks nvCOMP decodes (zstd, deflate). A call costs about one
// chunk's serial decode whatever its size, and calls do not overlap each other
// (benchmarks/bench_nvcomp_calls.py; docs/settings.md, "GPU read pieces"), so pieces are as
// large as memory allows: 1/24 of the GPU (`gpu_total`), at most 8 GB, at least 256 MB. Within
// that, `read_budget` (bytes this read may hold, a loader worker's share of zarrflow's memory limit
// beside its batches) when given, else an eighth of `available` (free or idle under the limit:
// other readers may read at once). A piece holds up to kNvcompPieceFootprint times its decoded
// bytes: two in flight with their staging and decoded chunks, and nvCOMP's zstd scratch (3.05x).
inline constexpr std::uint64_t kNvcompPieceFootprint = 7;
std::uint64_t nvcomp_piece_bytes(std::uint64_t gpu_total, std::uint64_t available,
                                 std::uint64_t read_budget);

// The decoded bytes an item adds to its piece. Chunks from the GPU cache count half: a piece of
// them stages nothing and has no reading to overlap, so the fixed cost of each extra call shows
// in full (docs/design_measurements.md, "GPU-cache hits count half a chunk").
std::uint64_t counted_decoded(const Item& item);

// Cuts the read into pieces: as few as the bounds allow, and of about equal size. A call to
// nvCOMP costs a fixed latency (one chunk's decode time), so a small last piece pays it for
// little work, and a large first piece leaves the GPU nothing to overlap with its reading. Pieces
// are counted by filling them greedily, then each one gets an equal share of what remains of the
// dimension (staged or decoded bytes) that needed more pieces. Both bounds matter: edge chunks
// that are mostly fill value compress to almost nothing (2 GB of them decoded to 28 GB).
// Duplicates follow their first occurrence (group_duplicates) and a piece closes only before an
// item it reads, so a duplicate always lands in its first occurrence's piece; that one is marked
// Item::shared. Pieces are cut one at a time, as the read reaches them.
class PiecePlanner {
 public:
  PiecePlanner(std::vector<Item>& items, PieceBounds bounds);

  [[nodiscard]] bool done() const { return next_ >= items_.size(); }
  // The next piece's item indices; `decoded` receives the decoded bytes of its non-fill chunks.
  std::vector<std::size_t> next(std::uint64_t* decoded);

 private:
  [[nodiscard]] bool exceeds(std::uint64_t staged, std::uint64_t decoded, const Item& it) const;

  std::vector<Item>& items_;
  PieceBounds bounds_;
  std::uint64_t pieces_ = 0;     // counted greedily
  bool decoded_binds_ = false;   // decoded bytes needed more pieces than staged bytes
  std::uint64_t remaining_ = 0;  // of the binding dimension
  std::uint64_t made_ = 0;
  std::size_t next_ = 0;
};

}  // namespace zarrflow::gpu
