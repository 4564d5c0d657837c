// The GPU read path; see device_read.h for the stages and why they are shaped so.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/codec/gpu/framing.h"
#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/core/gpu/nvtx.h"
#include "zarrflow/core/normalize.h"
#include "zarrflow/store/file_store.h"
#include "zarrflow/store/gpu/cufile.h"
#include "zarrflow/zarr/gpu/device_read.h"

namespace zarrflow::gpu {
namespace {

constexpr std::uint64_t kStagingAlign = 256;  // satisfies every nvCOMP alignment
// numcodecs LZ4 stores a chunk as one LZ4 block, which zarrflow's kernel decodes on one warp, in
// order, at tens of MB/s; a 256 MB batch holds ~60 chunks of 4 MB, and 2 GB of them came to
// 2.8-3 GB/s on an H100 and an H200, where 16-32 host cores decode 14-23 GB/s. Matching the host
// takes hundreds of warps at once, i.e. chunks well under a megabyte, so with gpu_decode=auto
// larger chunks go to the host threads. (Blosc-LZ4 is cut into small blocks and streams.)
constexpr std::uint64_t kLz4GpuMaxBlock = std::uint64_t{1} << 20;

constexpr std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

// Where a batch's NaN count follows its `nslots` int status slots in the pinned results.
constexpr std::size_t nans_offset(std::size_t nslots) { return align_up(nslots * sizeof(int), 8); }

enum class Mode : std::uint8_t { kFill, kGpu, kCpu };

// One leaf chunk of the read: a whole chunk, or one inner chunk of a shard.
struct Item {
  const Array* arr = nullptr;      // the array it belongs to
  std::string key;                 // store key of the value holding it
  std::optional<ByteRange> range;  // its bytes within the value (inner chunks of shards)
  const CodecChain* chain = nullptr;
  const ChainProgram* program = nullptr;
  Selection sel;     // decoded coordinates
  StridedView dest;  // device memory, decoded coordinates
  // Where it is, for error messages (formatted only then: a read has up to ~10^5 items).
  Shape chunk;  // the array's chunk (shard)
  Shape inner;  // the inner chunk within the shard; empty when not sharded
  const std::vector<std::byte>* fill = nullptr;
  const ElementTransform* tf = nullptr;  // null: elements as stored
  // The host threads apply `tf` into the batch's pinned converted blocks at this offset (chunks
  // they decoded, or uncompressed ones they read, whose destination is dense; see
  // converted_block); the result is copied up as is.
  bool host_tf = false;
  std::uint64_t host_tf_offset = 0;
  bool shared = false;  // a later item of the same batch scatters from this one's decoded copy
  // A CPU-decoded duplicate selecting the same block with the same transform: it uses its first
  // occurrence's host block (cpu_offset, host_tf_offset) instead of decoding again.
  bool reuses_block = false;
  // NaNs the host threads wrote converting this item's block (host_tf, decoded on the CPU); an
  // item that reuses_block writes its first occurrence's block again, with as many NaNs.
  std::uint64_t host_tf_nans = 0;

  Mode mode = Mode::kGpu;
  std::string cpu_reason;
  std::uint64_t stored_size = 0;
  std::uint64_t staging_offset = 0;
  Payload payload;
  std::optional<BloscPlan> blosc;
  std::uint64_t cpu_offset = 0;  // CPU-decoded block in the batch's pinned/device cpu area
  bool direct = false;           // read by cuFile straight into device memory (uncompressed)
  std::uint64_t direct_offset = 0;
  // Another item reads the same stored chunk earlier in the same batch: fetch and decode it once
  // (x at t+1 is y at t) and scatter from the first one's decoded copy.
  std::int64_t dup_of = -1;
  std::byte* d_decoded = nullptr;  // the whole decoded chunk on the GPU (set while enqueuing)
  std::shared_ptr<const CachedChunk> cached;       // its stored bytes are already on the GPU
  std::shared_ptr<const CachedChunk> host_cached;  // ... or in pinned host memory
  std::string cache_key;
};
// Items are moved as the read's vector grows and is regrouped; a copy would cost strings.
static_assert(std::is_nothrow_move_constructible_v<Item>);

// "chunk 'c/0/1'" or "chunk 'c/0': inner chunk [0,3]".
std::string where(const Array& arr, const Shape& chunk, const Shape& inner = {}) {
  std::string s = "chunk '" + arr.relative_chunk_key(chunk) + "'";
  if (!inner.empty()) s += ": inner chunk " + format_coords(inner);
  return s;
}
std::string where(const Item& it) { return where(*it.arr, it.chunk, it.inner); }

bool same_transform(const ElementTransform& a, const ElementTransform& b) {
  if (a.out != b.out || a.mean != b.mean || a.inv_std != b.inv_std || a.in != b.in ||
      a.packed != b.packed || a.masks != b.masks || a.scale != b.scale || a.offset != b.offset)
    return false;
  for (int i = 0; i < kMaxMasks; ++i)
    if (a.mask[i] != b.mask[i]) return false;
  return true;
}

// Two items of one stored chunk want the same decoded block, converted the same way.
bool same_block(const Item& a, const Item& b) {
  const bool same_tf =
      (a.tf == nullptr) == (b.tf == nullptr) && (a.tf == nullptr || same_transform(*a.tf, *b.tf));
  return same_tf && a.host_tf == b.host_tf && a.sel.start == b.sel.start &&
         a.sel.count == b.sel.count && a.sel.step == b.sel.step;
}

std::uint64_t decoded_size(const Item& it) {
  return static_cast<std::uint64_t>(it.chain->array_to_bytes_spec().nbytes());
}

// Elements of the selected block.
std::uint64_t block_elements(const Item& it) {
  std::uint64_t elems = 1;
  for (auto c : it.sel.count) elems *= std::uint64_t(c);
  return elems;
}

// Bytes of the selected block when decoded on the CPU (C order, the array's element type).
std::uint64_t cpu_block_bytes(const Item& it) {
  return block_elements(it) * it.chain->spec().dtype.size;
}

// Bytes of the selected block once transformed (Item::tf set): elements in the output type.
std::uint64_t converted_block_bytes(const Item& it) {
  return block_elements(it) * out_type_size(it.tf->out);
}

// A scatter job copying `sel` of a C-order chunk of `chunk_shape` at `src` (device) into `dest`;
// src == nullptr fills with `fill`; `tf` (may be null) transforms the elements on the way.
// nullopt when the views need more than kMaxScatterDims.
std::optional<ScatterJob> make_scatter(const std::byte* src, const Shape& chunk_shape,
                                       const Selection& sel, const StridedView& dest,
                                       std::uint32_t elem, std::uint32_t swap_unit,
                                       const std::vector<std::byte>* fill,
                                       const ElementTransform* tf) {
  ScatterJob j{};
  if (tf != nullptr) j.tf = *tf;
  Shape src_strides(sel.count.size(), 0);
  const std::byte* base = src;
  if (src != nullptr) {
    const Shape cs = c_strides(chunk_shape, elem);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      base += sel.start[i] * cs[i];
      src_strides[i] = cs[i] * sel.step[i];
    }
  }
  const MergedDims d = merge_dims(sel.count, src_strides, dest.strides);
  if (d.n > kMaxScatterDims) return std::nullopt;
  j.src = reinterpret_cast<const std::uint8_t*>(base);
  j.dst = reinterpret_cast<std::uint8_t*>(dest.data);
  j.ndim = d.n;
  j.elem = elem;
  j.swap_unit = swap_unit;
  j.count = 1;
  for (int i = 0; i < d.n; ++i) {
    j.shape[i] = d.shape[i];
    j.src_strides[i] = d.src[i];
    j.dst_strides[i] = d.dst[i];
    j.count *= d.shape[i];
  }
  if (fill != nullptr) std::memcpy(j.fill, fill->data(), std::min<std::size_t>(fill->size(), 32));
  for (auto c : sel.count)
    if (c == 0) j.count = 0;
  return j;
}

// Host tables of one batch, packed into one pinned buffer and copied up once.
class TableBuilder {
 public:
  template <typename T>
  std::size_t add(const std::vector<T>& v) {
    offset_ = align_up(offset_, 16);
    const std::size_t at = offset_;
    parts_.push_back({at, reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(T)});
    offset_ += v.size() * sizeof(T);
    return at;
  }
  std::size_t reserve(std::size_t bytes) {  // device-only space (e.g. nvCOMP actual sizes)
    offset_ = align_up(offset_, 16);
    const std::size_t at = offset_;
    offset_ += bytes;
    return at;
  }
  [[nodiscard]] std::size_t size() const { return std::max<std::size_t>(offset_, 16); }
  void pack(std::byte* host) const {
    for (const auto& p : parts_)
      if (p.size) std::memcpy(host + p.at, p.data, p.size);
  }

 private:
  struct Part {
    std::size_t at;
    const std::byte* data;
    std::size_t size;
  };
  std::vector<Part> parts_;
  std::size_t offset_ = 0;
};

struct NvcompBatch {
  std::vector<const void*> src;
  std::vector<std::size_t> src_bytes, capacity;
  std::vector<void*> dst;
  std::vector<std::uint32_t> item;  // per job: the item it belongs to
  std::size_t max_out = 0, total_out = 0;
};

// Everything one batch owns until its GPU work has finished and its statuses were checked.
struct Batch {
  std::vector<std::size_t> items;  // indices into the read's items
  GpuBuffer staging;               // pinned compressed bytes
  GpuBuffer cpu_host;              // pinned CPU-decoded blocks
  // Pinned blocks the host normalised and cast (Item::host_tf): uncompressed chunks converted
  // as they were read (fetch), CPU-decoded blocks (prepare).
  GpuBuffer host_read, host_out;
  GpuBuffer d_staging, d_direct, d_cpu, d_out, d_shuffled, d_tables;
  // nvCOMP's scratch, shared with the read's other batches (ReadOp::nvcomp_temp_): held here
  // until this batch's work is done, so a larger replacement never frees it under a kernel.
  std::shared_ptr<GpuBuffer> d_temp[4];  // by NvcompAlgo
  GpuBuffer h_tables, h_status;          // pinned
  std::vector<std::uint32_t> slot_item;  // status slot → item index
  Event done;
  Event t0, t1, t2;  // timing: before the copies up, after them, after decoding
  // Chunks to add to the GPU cache once this batch has completed (and decoded without error).
  std::vector<std::pair<std::size_t, std::shared_ptr<CachedChunk>>> to_cache;
  bool enqueued = false;
};

// An allocation for batch `b`; a failure says what it was for and how big the batch was (an
// out-of-memory error alone does not tell a user which setting to change).
Result<GpuBuffer> named(Result<GpuBuffer> r, std::string_view what, const Batch& b) {
  if (r.ok()) return r;
  return std::move(r).take_status().annotate(std::string(what) + " for a batch of " +
                                             std::to_string(b.items.size()) + " chunks");
}

// Where the host put an Item::host_tf item's converted block: uncompressed chunks (still kGpu)
// were converted while fetched, CPU-decoded blocks after decoding.
std::byte* converted_block(Batch& b, const Item& it) {
  return (it.mode == Mode::kCpu ? b.host_out : b.host_read).data() + it.host_tf_offset;
}

class ReadOp {
 public:
  ReadOp(const DeviceReadOptions& opt, DeviceReadReport& report, GpuMemoryPool& pinned,
         GpuMemoryPool& device)
      : opt_(opt), report_(report), pinned_(pinned), device_(device) {}
  // A read that failed part-way may still have copies and kernels running on the stream over
  // the buffers its batches are about to give back to the pools, where another read (another
  // loader worker) would take them at once: a kernel reading job tables rewritten under it
  // faults (an illegal address, seen in training). So they are released only after the stream
  // has drained.
  ~ReadOp() {
    if (!settled_ && (in_flight_ || filling_) && cudaStreamSynchronize(opt_.stream) != cudaSuccess)
      cudaGetLastError();  // the error was reported already, or is sticky
  }
  ReadOp(const ReadOp&) = delete;
  ReadOp& operator=(const ReadOp&) = delete;

  Status run(std::span<const DeviceReadRequest> requests);

 private:
  Status gather(const Array& arr, const Selection& region, const StridedView& dest,
                const ElementTransform* tf);
  void mark_duplicates();
  const ChainProgram* program_for(const CodecChain* chain);
  void note(const std::string& why);
  Status fetch(Batch& b);
  Status prepare(Batch& b);
  Status prepare_item(Item& it, const std::byte* staged, const Nvcomp* nvcomp);
  Status enqueue(Batch& b);
  Status finish(Batch& b);
  struct PieceBounds {
    std::uint64_t staged, decoded;
  };
  PieceBounds piece_bounds() const;
  static std::uint64_t counted_decoded(const Item& it);
  Status cpu_decode(const Item& it, const std::byte* staged, ByteSpan out) const;
  bool streams_to_host_tf(const Item& it) const;
  Status read_converted(Item& it, std::byte* dst, std::atomic<std::uint64_t>& nans) const;
  Status upload_cpu_decoded(const Item& it, const std::byte* staged);
  Status annotate(const Item& it, Status s) const {
    return std::move(s).annotate(it.arr->describe() + ": " + where(it));
  }

  const DeviceReadOptions& opt_;
  DeviceReadReport& report_;
  GpuMemoryPool& pinned_;
  GpuMemoryPool& device_;
  std::vector<Item> items_;
  std::map<const CodecChain*, ChainProgram> programs_;
  std::set<std::string> noted_;
  std::mutex mu_;
  const Nvcomp* nvcomp_ = nullptr;
  std::string nvcomp_missing_;
  // One scratch buffer per nvCOMP algorithm for all of this read's batches: they decode one
  // after another on one stream, so they can share it. nvCOMP's zstd asks for 3.05x the
  // decoded bytes of a call (9 GB for a 2 GB batch of zstd chunks); one per batch in flight
  // was the largest allocation a 71-channel loader made.
  std::shared_ptr<GpuBuffer> nvcomp_temp_[4];  // by NvcompAlgo
  Event last_done_;  // the previous batch's end on the GPU, for report_.gpu_idle_ms
  // The batch whose GPU work may still run while the next one is fetched and enqueued, and the
  // one being fetched and enqueued (members, not locals: see ~ReadOp).
  std::optional<Batch> in_flight_, filling_;
  bool settled_ = false;  // run() finished every batch it enqueued
  Result<GpuBuffer> device_buffer(std::uint64_t size, std::string_view what, const Batch& b,
                                  bool wait = true);
};

// Milliseconds since `t0` (host wall clock).
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void ReadOp::note(const std::string& why) {
  std::lock_guard lock(mu_);
  if (noted_.insert(why).second) report_.notes.push_back(why);
}

// Device memory for batch `b`. When the GPU is full and the previous batch's work is still in
// flight (its buffers, and the other loader workers' batches, take the memory), wait for it: its
// buffers go back to the pool, which gives its idle memory back and tries again. A failure then
// names the buffer and the batch (named).
Result<GpuBuffer> ReadOp::device_buffer(std::uint64_t size, std::string_view what, const Batch& b,
                                        bool wait) {
  auto r = device_.acquire(size);
  if (!r.ok() && in_flight_) {
    ZF_RETURN_IF_ERROR(finish(*in_flight_));
    in_flight_.reset();
    r = device_.acquire(size);
  }
  // Under zarrflow's memory limit the rest is mostly other reads' pieces (the loader's other
  // workers, a validation loader), which go back within a piece's time: wait for them, bounded,
  // rather than fail the batch. Beyond kLimitWait the memory is held for good (batches in flight)
  // and the error stands. (`wait` false: the caller has a smaller fallback to try first.)
  if (!r.ok() && wait && device_.limit() != 0) {
    double waited = 0;
    r = device_.acquire_waiting(size, kLimitWaitMs, &waited);
    if (r.ok()) {
      std::lock_guard lock(mu_);
      report_.limit_wait_ms += waited;
    }
  }
  return named(std::move(r), what, b);
}

// Remote stores bring their own I/O pool (one thread per request in flight); local ones use ours.
ThreadPool* fetch_pool(const Store& store, ThreadPool* fallback) {
  return store.io_pool() != nullptr ? store.io_pool() : fallback;
}

const ChainProgram* ReadOp::program_for(const CodecChain* chain) {
  auto it = programs_.find(chain);
  if (it == programs_.end()) it = programs_.emplace(chain, analyze_chain(*chain)).first;
  return &it->second;
}

Status ReadOp::gather(const Array& arr_, const Selection& region, const StridedView& dest,
                      const ElementTransform* tf) {
  const CodecChain& chain = arr_.codecs();
  const auto blocks = chunk_blocks(region, arr_.metadata().chunk_shape);
  const auto* fill = &chain.spec().fill_value;
  const auto item = [&](const ChunkBlock& b) {
    Item it;
    it.arr = &arr_;
    it.chain = &chain;
    it.chunk = b.chunk;
    it.fill = fill;
    it.tf = tf;
    return it;
  };
  // (No exact reserve here: a batch gathers many requests, and growing by exactly each one's
  // items would move the whole vector every time.)
  if (!chain.supports_partial_read()) {
    for (const auto& b : blocks) {
      Item& it = items_.emplace_back(item(b));
      it.key = arr_.chunk_key(b.chunk);
      it.sel = b.in_chunk;
      it.dest = block_view(dest, b);
    }
    return {};
  }
  // Sharded: read every shard's index (in parallel; or take it from the options' index cache),
  // then one item per inner chunk.
  std::vector<std::vector<Item>> per_shard(blocks.size());
  DecodeContext ctx{nullptr, opt_.buffers, arr_.store().coalescing()};
  ctx.shard_indexes = opt_.shard_indexes;
  ThreadPool* pool = fetch_pool(arr_.store(), opt_.pool);
  ZF_RETURN_IF_ERROR(parallel_for(pool, blocks.size(), [&](std::size_t i) -> Status {
    const ChunkBlock& b = blocks[i];
    const std::string key = arr_.chunk_key(b.chunk);
    StoreKeyReader reader(arr_.store(), key);
    std::vector<LeafRead> reads;
    std::vector<StridedView> fills;
    bool found = true;
    const StridedView view = block_view(dest, b);
    Status s = chain.plan_partial_read(reader, b.in_chunk, view, ctx, reads, fills, found);
    if (!s.ok()) return std::move(s).annotate(arr_.describe() + ": " + where(arr_, b.chunk));
    auto& out = per_shard[i];
    if (!found) fills.push_back(view);
    out.reserve(fills.size() + reads.size());
    for (const auto& f : fills) {
      Item& it = out.emplace_back(item(b));
      it.mode = Mode::kFill;
      it.dest = f;
      it.sel.count = f.shape;
    }
    for (auto& r : reads) {
      Item& it = out.emplace_back(item(b));
      it.key = key;
      it.range = r.range;
      it.chain = r.chain;
      it.sel = std::move(r.sel);
      it.dest = std::move(r.dest);
      it.inner = std::move(r.inner);
    }
    return {};
  }));
  for (auto& v : per_shard)
    for (auto& it : v) items_.push_back(std::move(it));
  return {};
}

// Items are the same stored chunk when their store, key and byte range agree.
struct StoredChunkId {
  const Store* store;
  std::string_view key;
  std::uint64_t offset, length;
  bool operator==(const StoredChunkId&) const = default;
};

StoredChunkId stored_chunk(const Item& it) {
  return {&it.arr->store(), it.key, it.range ? it.range->offset : 0,
          it.range ? it.range->length : ~std::uint64_t{0}};
}

std::size_t hash_of(const StoredChunkId& k) {
  std::size_t h = std::hash<std::string_view>()(k.key);
  for (std::uint64_t v :
       {std::uint64_t(reinterpret_cast<std::uintptr_t>(k.store)), k.offset, k.length})
    h ^= std::hash<std::uint64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

void ReadOp::mark_duplicates() {
  if (opt_.io == IoPath::kCuFile) return;  // cuFile reads go to device memory: no shared staging
  // (hash, index) sorted: equal stored chunks are neighbours, earliest first. (No hash map: a
  // batch has up to ~10^5 items, and a node per item cost more than the rest of this.)
  std::vector<std::pair<std::size_t, std::size_t>> order;
  order.reserve(items_.size());
  for (std::size_t i = 0; i < items_.size(); ++i)
    if (items_[i].mode != Mode::kFill) order.emplace_back(hash_of(stored_chunk(items_[i])), i);
  std::sort(order.begin(), order.end());
  bool any = false;
  for (std::size_t run = 0; run < order.size();) {
    std::size_t end = run + 1;
    while (end < order.size() && order[end].first == order[run].first) ++end;
    // Each item's first occurrence is the earliest one with the same id (hashes may collide);
    // it is a duplicate when that one is decoded by the same chain.
    for (std::size_t j = run + 1; j < end; ++j) {
      Item& it = items_[order[j].second];
      const StoredChunkId id = stored_chunk(it);
      for (std::size_t k = run; k < j; ++k) {
        const Item& first = items_[order[k].second];
        if (first.dup_of >= 0 || !(stored_chunk(first) == id)) continue;
        if (first.chain == it.chain) {
          it.dup_of = std::int64_t(order[k].second);
          any = true;
        }
        break;
      }
    }
    run = end;
  }
  if (!any) return;
  // Each duplicate moves right behind its first occurrence (the others keep their order), so
  // that no internal batch boundary falls between them: a duplicate in a later batch than its
  // first occurrence is read and decoded again (x at t+1 is y at t, requested far apart).
  std::vector<std::vector<std::size_t>> dups(items_.size());
  for (std::size_t i = 0; i < items_.size(); ++i)
    if (items_[i].dup_of >= 0) dups[std::size_t(items_[i].dup_of)].push_back(i);
  std::vector<Item> grouped;
  grouped.reserve(items_.size());
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].dup_of >= 0) continue;
    const auto at = std::int64_t(grouped.size());
    grouped.push_back(std::move(items_[i]));
    for (std::size_t d : dups[i]) {
      grouped.push_back(std::move(items_[d]));
      grouped.back().dup_of = at;
    }
  }
  items_ = std::move(grouped);
}

Status ReadOp::run(std::span<const DeviceReadRequest> requests) {
  const auto t_plan = std::chrono::steady_clock::now();
  for (const auto& r : requests) ZF_RETURN_IF_ERROR(r.array->validate_region(r.region, r.dest));
  const auto& tfs = opt_.transforms;
  if (!tfs.empty() && tfs.size() != requests.size())
    return invalid_argument(std::to_string(tfs.size()) + " element transforms for " +
                            std::to_string(requests.size()) + " requests");
  for (std::size_t i = 0; i < tfs.size(); ++i) {
    const DataType& dt = requests[i].array->dtype();
    if (tfs[i].out != OutType::kStored && in_type_of(dt) != tfs[i].in)
      return invalid_argument(requests[i].array->describe() +
                              ": the element transform reads another type than the array's " +
                              dt.v3_name());
  }
  auto nv = Nvcomp::get();
  if (nv.ok()) {
    nvcomp_ = *nv;
  } else {
    nvcomp_missing_ = nv.status().message();
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    const ElementTransform* tf = !tfs.empty() && tfs[i].out != OutType::kStored ? &tfs[i] : nullptr;
    if (!r.region.empty()) ZF_RETURN_IF_ERROR(gather(*r.array, r.region, r.dest, tf));
  }
  mark_duplicates();
  for (auto& it : items_) {
    if (it.mode == Mode::kFill) continue;
    it.program = program_for(it.chain);
    if (opt_.decode == GpuDecode::kOff) {
      it.mode = Mode::kCpu;
      it.cpu_reason = "gpu_decode=off";
    } else if (!it.program->gpu) {
      it.mode = Mode::kCpu;
      it.cpu_reason = it.program->reason;
    }
  }
  // host_share: every k-th GPU-decodable compressed chunk goes to the host threads, spread
  // evenly (an accumulator, so the split does not depend on chunk sizes or order of completion).
  // Uncompressed chunks stay: read whole (and converted while read, where they can be), they
  // have no decoding to move, and the host path for decoded blocks would copy them once more.
  // A duplicate goes where its first occurrence went: it takes that one's decoded block.
  if (opt_.host_share > 0) {
    double acc = 0;
    for (auto& it : items_) {
      if (it.mode != Mode::kGpu || it.program->codec == GpuCodec::kNone) continue;
      if (it.dup_of >= 0) {
        it.mode = items_[std::size_t(it.dup_of)].mode;
        continue;
      }
      acc += std::min(opt_.host_share, 1.0);
      if (acc >= 1.0 - 1e-9) {
        acc -= 1.0;
        it.mode = Mode::kCpu;  // cpu_reason stays empty: asked for, nothing to report
      }
    }
  }
  // GPU cache hits need no read, no host work and no copy; pinned-cache hits no read and no
  // host validation.
  if (opt_.cache != nullptr || opt_.host_cache != nullptr) {
    for (auto& it : items_) {
      if (it.mode != Mode::kGpu || it.dup_of >= 0) continue;
      it.cache_key = it.arr->store().describe_key(it.key);
      if (it.range)
        it.cache_key +=
            "#" + std::to_string(it.range->offset) + "+" + std::to_string(it.range->length);
      if (opt_.cache != nullptr) it.cached = opt_.cache->find(it.cache_key);
      if (!it.cached && opt_.host_cache != nullptr)
        it.host_cached = opt_.host_cache->find(it.cache_key);
      const auto& hit = it.cached ? it.cached : it.host_cached;
      if (hit) {
        it.payload = hit->payload;
        it.blosc = hit->blosc;
        if (it.host_cached) it.stored_size = hit->stored_size;  // staged again from the cache
        ++(it.cached ? report_.cache_hits : report_.host_cache_hits);
      }
    }
  }
  // Sizes of whole values (one fstat each, in parallel); missing values become fills. Inner
  // chunks of shards know theirs from the index: only the rest go to the pool (a task per item
  // costs about a microsecond, and a 71-channel batch of 103-row chunks has 15,904).
  std::vector<std::size_t> unsized;
  for (std::size_t i = 0; i < items_.size(); ++i) {
    Item& it = items_[i];
    if (it.mode == Mode::kFill || it.cached || it.host_cached) continue;
    if (it.range) {
      it.stored_size = it.range->length;
    } else {
      unsized.push_back(i);
    }
  }
  ThreadPool* io = items_.empty() ? opt_.pool : fetch_pool(items_.front().arr->store(), opt_.pool);
  ZF_RETURN_IF_ERROR(parallel_for(io, unsized.size(), [&](std::size_t u) -> Status {
    Item& it = items_[unsized[u]];
    auto size = it.arr->store().size(it.key);
    if (!size.ok()) return annotate(it, std::move(size).take_status());
    if (!*size) {
      it.mode = Mode::kFill;
    } else if (**size > it.arr->max_stored_chunk_bytes()) {
      // Staged whole: a chunk larger than its codecs can produce is refused before allocation.
      return annotate(it, value_too_large(it.arr->store().describe_key(it.key), **size,
                                          it.arr->max_stored_chunk_bytes()));
    } else {
      it.stored_size = **size;
    }
    return {};
  }));
  // The read runs in internal batches ("pieces"), double-buffered: the host fetches piece i+1
  // while the GPU decodes piece i. Each piece holds at most `batch_bytes` staged bytes and
  // `decoded_bytes` of decoded chunks; both bounds matter (edge chunks that are mostly fill
  // value compress to almost nothing: 2 GB of them decoded to 28 GB).
  const PieceBounds bounds = piece_bounds();
  // As few pieces as the bounds allow, and of about equal size: a call to nvCOMP costs a fixed
  // latency (one chunk's decode time), so a small last piece pays it for little work, and a
  // large first piece leaves the GPU nothing to overlap with its reading. Pieces are counted by
  // filling them greedily, then each one gets an equal share of what remains of the dimension
  // (staged or decoded bytes) that needed more pieces.
  const auto exceeds = [&](std::uint64_t staged, std::uint64_t decoded, const Item& it) {
    return staged + it.stored_size > bounds.staged ||
           decoded + counted_decoded(it) > bounds.decoded;
  };
  std::uint64_t total_staged = 0, total_decoded = 0, pieces = 0;
  {
    std::uint64_t staged = 0, decoded = 0;
    for (const auto& it : items_) {
      if (it.dup_of >= 0) continue;
      if (pieces == 0 || exceeds(staged, decoded, it)) {
        ++pieces;
        staged = decoded = 0;
      }
      staged += it.stored_size;
      decoded += counted_decoded(it);
      total_staged += it.stored_size;
      total_decoded += counted_decoded(it);
    }
  }
  const bool decoded_binds =
      total_decoded * double(bounds.staged) >= total_staged * double(bounds.decoded);
  std::uint64_t remaining = decoded_binds ? total_decoded : total_staged;
  std::size_t i = 0;
  std::uint64_t made = 0;  // pieces so far
  report_.plan_ms += ms_since(t_plan);
  report_.io = opt_.io == IoPath::kDirect ? "O_DIRECT → pinned staging → H2D copy per batch"
                                          : "pread → pinned staging → H2D copy per batch";
  while (i < items_.size()) {
    Batch& b = filling_.emplace();
    std::uint64_t staged = 0, decoded = 0, actual = 0;
    const std::uint64_t pieces_left = made < pieces ? pieces - made : 1;
    const std::uint64_t target = (remaining + pieces_left - 1) / pieces_left;
    const auto filled = [&] { return decoded_binds ? decoded : staged; };
    while (i < items_.size()) {
      Item& it = items_[i];
      // Duplicates follow their first occurrence (mark_duplicates) and a piece closes only
      // before an item it reads, so a duplicate always lands in its first occurrence's piece
      // and scatters from its decoded copy.
      if (it.dup_of >= 0) {
        items_[std::size_t(it.dup_of)].shared = true;
        b.items.push_back(i++);
        continue;
      }
      if (!b.items.empty() && ((target > 0 && filled() >= target) || exceeds(staged, decoded, it)))
        break;
      staged += it.stored_size;
      decoded += counted_decoded(it);
      if (it.mode != Mode::kFill) actual += decoded_size(it);
      b.items.push_back(i++);
    }
    remaining -= std::min(remaining, filled());
    ++made;
    report_.max_batch_decoded = std::max(report_.max_batch_decoded, actual);
    auto t = std::chrono::steady_clock::now();
    ZF_RETURN_IF_ERROR(fetch(b));
    ZF_RETURN_IF_ERROR(prepare(b));
    report_.fetch_ms += ms_since(t);
    t = std::chrono::steady_clock::now();
    ZF_RETURN_IF_ERROR(enqueue(b));
    report_.enqueue_ms += ms_since(t);
    ++report_.batches;
    if (in_flight_) ZF_RETURN_IF_ERROR(finish(*in_flight_));
    in_flight_ = std::move(b);
    filling_.reset();
  }
  if (in_flight_) ZF_RETURN_IF_ERROR(finish(*in_flight_));
  in_flight_.reset();
  settled_ = true;
  return {};
}

// nvCOMP's zstd and deflate decode each chunk on one unit of the GPU, so a call costs about one
// chunk's decode time (~35 ms for a 4 MB zstd chunk on an H200) plus its bytes at ~120 GB/s: on
// an H200, calls of 0.7, 2.7 and 7.9 GB of 4 MB chunks took 43, 56 and 100 ms. Their pieces are
// therefore as large as memory allows: 1/24 of the GPU's memory in decoded chunks (5.9 GB on an
// H200, 3.3 GB on an H100; at most 8 GB, and less when little is free), and as many staged bytes.
// nvCOMP's zstd scratch is 3.05x the decoded bytes of a call, shared by the read's pieces; with two
// pieces in flight a read then holds about a fifth of the GPU. zarrflow's own kernels (Blosc, LZ4,
// uncompressed) have no such latency: small pieces (256 MB staged, 2 GB decoded) overlap reading
// with decoding best. An explicit batch_bytes sets the staged bound, and twice it the decoded one.
ReadOp::PieceBounds ReadOp::piece_bounds() const {
  if (opt_.batch_bytes != 0) return {opt_.batch_bytes, 2 * opt_.batch_bytes};
  PieceBounds b{std::uint64_t{256} << 20, std::uint64_t{2} << 30};
  for (const auto& [chain, program] : programs_) {
    if (program.codec != GpuCodec::kZstd && program.codec != GpuCodec::kDeflate) continue;
    std::size_t free = 0, total = 0;
    std::uint64_t d = std::uint64_t{3} << 30;  // if the GPU's size cannot be had
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
      // Less when the GPU is full (a model, other workers' batches): an eighth of what is free
      // or idle in the pool (within its limit, if set), since a piece needs ~5.5x its decoded
      // bytes (scratch, decoded chunks, staging) and the loader's workers read at once.
      const std::uint64_t avail =
          std::min<std::uint64_t>(free + device_.cached_bytes(), device_.room());
      d = std::clamp<std::uint64_t>(std::min<std::uint64_t>(total / 24, avail / 8),
                                    std::uint64_t{256} << 20, std::uint64_t{8} << 30);
    } else {
      cudaGetLastError();
    }
    return {d, d};
  }
  return b;
}

// The decoded bytes an item adds to its piece. Chunks from the GPU cache count half: a piece of
// them stages nothing and has no reading to overlap, so the fixed cost of each extra call shows
// in full (71-channel batches of hits, one worker, H200: 78 GB/s in one call, 61 in two, 50 in
// three).
std::uint64_t ReadOp::counted_decoded(const Item& it) {
  if (it.mode == Mode::kFill) return 0;
  return it.cached ? decoded_size(it) / 2 : decoded_size(it);
}

Status ReadOp::fetch(Batch& b) {
  NvtxRange nvtx("zarrflow fetch");
  // cuFile takes uncompressed whole chunks of local files straight to the GPU; everything else
  // is read into pinned staging (compressed bytes are validated on the host first).
  const CuFile* cufile = nullptr;
  if (opt_.io == IoPath::kCuFile) {
    auto c = CuFile::get();
    if (!c.ok()) return std::move(c).take_status().annotate("io=cufile");
    cufile = *c;
  }
  std::uint64_t total = 0, direct_total = 0, converted_total = 0;
  for (std::size_t idx : b.items) {
    Item& it = items_[idx];
    if (it.mode == Mode::kFill || it.dup_of >= 0 || it.cached) continue;
    it.host_tf = streams_to_host_tf(it);
    if (it.host_tf) {  // read in pieces and converted: no staging slot
      it.host_tf_offset = converted_total;
      converted_total = align_up(converted_total + converted_block_bytes(it), 256);
      continue;
    }
    it.direct = cufile != nullptr && it.mode == Mode::kGpu && !it.range &&
                dynamic_cast<const FileStore*>(&it.arr->store()) != nullptr &&
                it.program->codec == GpuCodec::kNone && !it.program->crc32c;
    if (it.direct) {
      if (it.stored_size != decoded_size(it))
        return annotate(it, corrupt_data("bytes: chunk has " + std::to_string(it.stored_size) +
                                         " bytes, expected " + std::to_string(decoded_size(it))));
      it.direct_offset = direct_total;
      direct_total = align_up(direct_total + it.stored_size, kStagingAlign);
      continue;
    }
    // 4 KiB-aligned slots with room for an O_DIRECT read of the aligned superset.
    const std::uint64_t lead = it.range ? it.range->offset % 4096 : 0;
    it.staging_offset = total;
    total += align_up(lead + it.stored_size, 4096);
  }
  ZF_ASSIGN_OR_RETURN(
      b.staging, named(pinned_.acquire(std::max<std::uint64_t>(total, 1)), "pinned staging", b));
  if (converted_total) {
    ZF_ASSIGN_OR_RETURN(b.host_read, named(pinned_.acquire(converted_total),
                                           "pinned blocks converted while read", b));
  }
  std::atomic<std::uint64_t> converted_nans{0};
  if (direct_total) {
    ZF_ASSIGN_OR_RETURN(b.d_direct, device_buffer(direct_total, "cuFile reads", b));
    report_.io = "cuFile " + cufile->mode() +
                 " for uncompressed chunks; pread → pinned → H2D "
                 "for the rest";
  }
  std::byte* base = b.staging.data();
  std::atomic<std::int64_t> direct_reads{0};
  ThreadPool* io =
      b.items.empty() ? opt_.pool : fetch_pool(items_[b.items.front()].arr->store(), opt_.pool);
  ZF_RETURN_IF_ERROR(parallel_for(io, b.items.size(), [&](std::size_t k) -> Status {
    Item& it = items_[b.items[k]];
    if (it.mode == Mode::kFill || it.dup_of >= 0 || it.cached) return {};
    if (it.host_tf) return read_converted(it, converted_block(b, it), converted_nans);
    if (it.host_cached) {
      std::memcpy(base + it.staging_offset, it.host_cached->bytes.data(), it.stored_size);
      return {};
    }
    const auto* files = dynamic_cast<const FileStore*>(&it.arr->store());
    if (it.direct)
      return annotate(it, cufile->read(files->root() + "/" + it.key,
                                       b.d_direct.data() + it.direct_offset, it.stored_size, 0));
    const std::uint64_t offset = it.range ? it.range->offset : 0;
    Result<bool> r = false;
    if (files != nullptr && opt_.io == IoPath::kDirect) {
      const std::uint64_t slot = align_up(offset % 4096 + it.stored_size, 4096);
      bool direct = false;
      r = files->read_direct(it.key, offset, it.stored_size,
                             ByteSpan(base + it.staging_offset, slot), &direct);
      if (direct) ++direct_reads;
      // A whole value must be exactly its size (it may have changed since it was measured).
      if (r.ok() && *r && !it.range) {
        auto now = it.arr->store().size(it.key);
        if (now.ok() && *now && **now != it.stored_size)
          r = corrupt_data("chunk changed size while it was read");
      }
    } else {
      ByteSpan dst(base + it.staging_offset, it.stored_size);
      r = it.range ? it.arr->store().read_range_into(it.key, offset, dst)
                   : it.arr->store().read_exact(it.key, dst);
    }
    if (!r.ok()) return annotate(it, std::move(r).take_status());
    if (!*r) it.mode = Mode::kFill;  // deleted since its size was taken
    return {};
  }));
  report_.direct_reads += direct_reads.load();
  report_.nans += converted_nans.load();
  for (std::size_t idx : b.items) {  // duplicates share their first occurrence's bytes
    Item& it = items_[idx];
    if (it.dup_of < 0) continue;
    const Item& first = items_[std::size_t(it.dup_of)];
    it.staging_offset = first.staging_offset;
    it.stored_size = first.stored_size;
    if (first.mode == Mode::kFill) it.mode = Mode::kFill;
  }
  for (std::size_t idx : b.items) {
    const Item& it = items_[idx];
    ++report_.chunks;
    if (it.mode == Mode::kFill) {
      ++report_.missing;
    } else {
      report_.stored_bytes += it.stored_size;
    }
  }
  return {};
}

Status ReadOp::prepare_item(Item& it, const std::byte* staged, const Nvcomp* nvcomp) {
  const ConstByteSpan stored(staged + it.staging_offset, it.stored_size);
  const std::uint64_t n = decoded_size(it);
  auto payload = locate_payload(*it.program, stored, n);
  if (!payload.ok()) return annotate(it, std::move(payload).take_status());
  it.payload = *payload;
  auto to_cpu = [&](std::string why) {
    it.mode = Mode::kCpu;
    it.cpu_reason = std::move(why);
    return Status();
  };
  if (it.payload.cpu) return to_cpu(it.payload.reason);
  const GpuCodec codec = it.program->codec;
  if (codec == GpuCodec::kLz4 && opt_.decode == GpuDecode::kAuto && n > kLz4GpuMaxBlock)
    return to_cpu(
        "numcodecs LZ4 chunks over 1 MiB are single LZ4 blocks, which the host threads "
        "decode several times faster than one GPU warp each (gpu_decode='on' keeps "
        "them on the GPU)");
  if ((codec == GpuCodec::kZstd || codec == GpuCodec::kDeflate) && nvcomp == nullptr)
    return to_cpu(nvcomp_missing_);
  if (codec == GpuCodec::kBlosc) {
    auto plan = make_blosc_plan(stored.subspan(it.payload.offset, it.payload.size));
    if (!plan.ok()) {
      if (plan.status().code() == ErrorCode::kUnimplemented) return to_cpu(plan.status().message());
      return annotate(it, std::move(plan).take_status());
    }
    if (plan->nbytes != n)
      return annotate(it, corrupt_data("blosc: header says " + std::to_string(plan->nbytes) +
                                       " decoded bytes, expected " + std::to_string(n)));
    for (const auto& s : plan->streams) {
      if (s.kind != BloscStreamKind::kZstd && s.kind != BloscStreamKind::kZlib) continue;
      if (nvcomp == nullptr) return to_cpu(nvcomp_missing_);
      // Inner zstd/zlib streams get the same host validation as whole chunks.
      ChainProgram inner;
      inner.codec = s.kind == BloscStreamKind::kZstd ? GpuCodec::kZstd : GpuCodec::kDeflate;
      auto p = locate_payload(inner, stored.subspan(it.payload.offset + s.src_offset, s.src_size),
                              s.dst_size);
      if (!p.ok()) return annotate(it, std::move(p).take_status());
      if (p->cpu) return to_cpu("blosc " + p->reason);
    }
    it.blosc = std::move(plan).value();
  }
  return {};
}

Status ReadOp::prepare(Batch& b) {
  NvtxRange nvtx("zarrflow host checks");
  const std::byte* staged = b.staging.data();
  ThreadPool* work = opt_.decode_pool != nullptr ? opt_.decode_pool : opt_.pool;
  ZF_RETURN_IF_ERROR(parallel_for(work, b.items.size(), [&](std::size_t k) -> Status {
    Item& it = items_[b.items[k]];
    if (it.mode != Mode::kGpu || it.direct || it.dup_of >= 0 || it.cached || it.host_cached ||
        it.host_tf)
      return {};
    return prepare_item(it, staged, nvcomp_);
  }));
  for (std::size_t idx : b.items) {
    Item& it = items_[idx];
    if (it.dup_of < 0 || it.mode == Mode::kFill) continue;
    const Item& first = items_[std::size_t(it.dup_of)];
    it.mode = first.mode;
    it.cpu_reason = first.cpu_reason;
    it.payload = first.payload;
  }
  if (opt_.decode == GpuDecode::kOn) {
    for (std::size_t idx : b.items)
      if (items_[idx].mode == Mode::kCpu)
        return annotate(items_[idx], unimplemented("gpu_decode=on but this chunk cannot decode on "
                                                   "the GPU: " +
                                                   items_[idx].cpu_reason));
  }
  // CPU fallbacks: decode into pinned memory shaped like their destination block. Blocks with
  // an element transform and a dense destination are then normalised and cast by the same
  // thread (the block still in its caches) into `host_out`, and copied up at the output size:
  // half the PCIe bytes for 16-bit batches, and no kernel taking SMs from a model.
  std::uint64_t cpu_total = 0, out_total = 0;
  for (std::size_t idx : b.items) {
    Item& it = items_[idx];
    if (it.mode != Mode::kCpu) continue;
    if (!it.cpu_reason.empty()) note(it.cpu_reason);
    it.host_tf = it.tf != nullptr && it.dest.is_c_contiguous(out_type_size(it.tf->out));
    // x at t+1 is y at t: a duplicate that wants the same block, converted the same way, is
    // decoded once and copied up twice. Other duplicates (another part of the chunk, another
    // transform) decode the shared stored bytes again into a block of their own.
    if (it.dup_of >= 0) {
      const Item& first = items_[std::size_t(it.dup_of)];
      if (first.mode == Mode::kCpu && same_block(first, it)) {
        it.reuses_block = true;
        it.cpu_offset = first.cpu_offset;
        it.host_tf_offset = first.host_tf_offset;
        continue;
      }
    }
    it.cpu_offset = cpu_total;
    cpu_total = align_up(cpu_total + cpu_block_bytes(it), 256);
    if (it.host_tf) {
      it.host_tf_offset = out_total;
      out_total = align_up(out_total + converted_block_bytes(it), 256);
    }
  }
  if (cpu_total > 0) {
    ZF_ASSIGN_OR_RETURN(b.cpu_host,
                        named(pinned_.acquire(cpu_total), "pinned host-decoded blocks", b));
    if (out_total > 0) {
      ZF_ASSIGN_OR_RETURN(b.host_out, named(pinned_.acquire(out_total),
                                            "pinned host-decoded blocks, converted", b));
    }
    std::byte* cpu = b.cpu_host.data();
    ZF_RETURN_IF_ERROR(parallel_for(work, b.items.size(), [&](std::size_t k) -> Status {
      Item& it = items_[b.items[k]];
      if (it.mode != Mode::kCpu || it.reuses_block) return {};
      ZF_RETURN_IF_ERROR(
          cpu_decode(it, staged, ByteSpan(cpu + it.cpu_offset, cpu_block_bytes(it))));
      if (it.host_tf)
        it.host_tf_nans =
            normalize_cast(cpu + it.cpu_offset, converted_block(b, it), block_elements(it), *it.tf);
      return {};
    }));
    // NaNs are counted per element written into a destination, as on the CPU path and in the
    // scatter kernel: a block copied up twice writes its NaNs twice.
    for (std::size_t idx : b.items) {
      const Item& it = items_[idx];
      if (it.mode == Mode::kCpu && it.host_tf)
        report_.nans +=
            it.reuses_block ? items_[std::size_t(it.dup_of)].host_tf_nans : it.host_tf_nans;
    }
  }
  for (std::size_t idx : b.items)
    report_.host_transformed += items_[idx].host_tf && !items_[idx].reuses_block;
  return {};
}

// Uncompressed chunks of local stores that are read whole into a dense destination with an
// element transform are converted as they are read: in pieces through a small per-thread buffer
// that stays in the core's cache, so the chunk's stored bytes never land in pinned memory and
// the host moves 4 + 2 bytes per float32 element instead of 4 + 4 (+ 4 for the copy up). Not when
// either cache wants the stored bytes, a later item scatters from this one, or O_DIRECT was asked
// for.
bool ReadOp::streams_to_host_tf(const Item& it) const {
  if (it.tf == nullptr || it.mode != Mode::kGpu || it.program->codec != GpuCodec::kNone ||
      it.program->crc32c || it.program->swap_unit > 1 || it.shared || it.host_cached ||
      opt_.cache != nullptr || opt_.host_cache != nullptr || opt_.io != IoPath::kAuto ||
      it.stored_size != decoded_size(it) ||
      it.arr->store().io_pool() != nullptr)  // remote: one request per chunk, not per piece
    return false;
  const ChunkSpec& spec = it.chain->array_to_bytes_spec();
  Selection sel = it.sel;
  StridedView dest = it.dest;
  it.chain->to_encoded(sel, dest);
  return sel.is_full(spec.shape) && dest.is_c_contiguous(out_type_size(it.tf->out));
}

Status ReadOp::read_converted(Item& it, std::byte* dst, std::atomic<std::uint64_t>& nans) const {
  // Bytes read, then converted from the cache: a whole number of elements of every type.
  constexpr std::uint64_t kPiece = 256 << 10;
  thread_local std::unique_ptr<std::uint64_t[]> piece(new std::uint64_t[kPiece / 8]);
  const std::uint64_t base = it.range ? it.range->offset : 0;
  const std::uint32_t osize = out_type_size(it.tf->out);
  const std::uint32_t elem = in_type_size(it.tf->in);
  std::uint64_t found = 0;
  for (std::uint64_t at = 0; at < it.stored_size; at += kPiece) {
    const std::uint64_t n = std::min(kPiece, it.stored_size - at);
    auto r = it.arr->store().read_range_into(
        it.key, base + at, ByteSpan(reinterpret_cast<std::byte*>(piece.get()), n));
    if (!r.ok()) return annotate(it, std::move(r).take_status());
    if (!*r) {  // deleted since its size was taken: the fill value, like any missing chunk
      it.mode = Mode::kFill;
      it.host_tf = false;
      return {};
    }
    found += normalize_cast(piece.get(), dst + at / elem * osize, n / elem, *it.tf);
  }
  nans += found;
  return {};
}

Status ReadOp::cpu_decode(const Item& it, const std::byte* staged, ByteSpan out) const {
  const ConstByteSpan stored(staged + it.staging_offset, it.stored_size);
  StridedView host{out.data(), it.sel.count, c_strides(it.sel.count, it.chain->spec().dtype.size)};
  const DecodeContext ctx{nullptr, opt_.buffers, it.arr->store().coalescing()};
  return annotate(it, it.chain->decode_into(stored, it.sel, host, ctx));
}

Status ReadOp::enqueue(Batch& b) {
  NvtxRange nvtx("zarrflow enqueue");
  const cudaStream_t stream = opt_.stream;
  const std::byte* staged = b.staging.data();
  std::uint64_t staged_total = 0, out_total = 0, shuffled_total = 0;
  // Where each GPU item decodes: in place into the destination, or into scratch then scattered.
  // Blocks already decoded on the host (uncompressed chunks read whole, CPU-decoded blocks) whose
  // destination is dense are copied up straight into it: one copy-engine transfer each, no
  // device staging or scratch and no scatter kernel taking SMs from a model.
  struct Target {
    std::uint64_t out_offset = 0;
    bool in_place = false;
    bool copy_up = false;
    std::uint64_t shuffled_offset = 0;
    Selection enc_sel;
    StridedView enc_dest;
  };
  std::vector<Target> targets(b.items.size());
  bool any_cpu_scatter = false;
  for (std::size_t k = 0; k < b.items.size(); ++k) {
    const Item& it = items_[b.items[k]];
    Target& t = targets[k];
    if (it.host_tf) {  // normalised and cast on the host: copied up below as it is
      t.copy_up = true;
      continue;
    }
    if (it.mode == Mode::kCpu) {  // decoded into pinned memory shaped like its destination
      t.copy_up = it.tf == nullptr && it.dest.is_c_contiguous(it.chain->spec().dtype.size);
      any_cpu_scatter = any_cpu_scatter || !t.copy_up;
      continue;
    }
    if (it.mode != Mode::kGpu) continue;
    t.enc_sel = it.sel;
    t.enc_dest = it.dest;
    it.chain->to_encoded(t.enc_sel, t.enc_dest);
    const ChunkSpec& spec = it.chain->array_to_bytes_spec();
    const std::uint64_t n = decoded_size(it);
    // A transformed item is never dense: its elements change size or value on the way.
    const bool dense = it.tf == nullptr && it.program->swap_unit <= 1 &&
                       t.enc_sel.is_full(spec.shape) && t.enc_dest.is_c_contiguous(spec.dtype.size);
    if (it.dup_of >= 0) continue;  // scatters from its first occurrence's decoded chunk
    const auto addr = reinterpret_cast<std::uintptr_t>(t.enc_dest.data);
    t.copy_up = dense && it.program->codec == GpuCodec::kNone && !it.cached && !it.direct &&
                opt_.cache == nullptr && it.payload.size == n;
    t.in_place = dense && it.program->codec != GpuCodec::kNone && addr % 16 == 0;
    if (!t.in_place && it.program->codec != GpuCodec::kNone) {
      t.out_offset = out_total;
      out_total = align_up(out_total + n, 256);
    }
    if (it.blosc && it.blosc->needs_scratch()) {
      t.shuffled_offset = shuffled_total;
      shuffled_total = align_up(shuffled_total + n, 256);
    }
  }
  // Device staging mirrors the pinned staging for the items decoded from it.
  bool any_staged = false;
  for (std::size_t k = 0; k < b.items.size(); ++k) {
    const Item& it = items_[b.items[k]];
    if (it.mode == Mode::kGpu && !it.direct && !it.cached && it.dup_of < 0 && !targets[k].copy_up) {
      staged_total = std::max(staged_total, it.staging_offset + it.stored_size);
      any_staged = true;
    }
  }
  ZF_ASSIGN_OR_RETURN(b.d_staging,
                      device_buffer(std::max<std::uint64_t>(staged_total, 1), "device staging", b));
  if (out_total) {
    ZF_ASSIGN_OR_RETURN(b.d_out, device_buffer(out_total, "decoded chunks", b));
  }
  if (shuffled_total) {
    ZF_ASSIGN_OR_RETURN(b.d_shuffled, device_buffer(shuffled_total, "Blosc scratch", b));
  }
  if (any_cpu_scatter) {  // CPU-decoded blocks that are scattered go up into d_cpu first
    ZF_ASSIGN_OR_RETURN(
        b.d_cpu, device_buffer(b.cpu_host.size(), "device copies of host-decoded blocks", b));
  }

  // Job tables.
  NvcompBatch zstd, deflate, lz4;
  std::vector<StreamJob> streams;
  std::vector<std::uint32_t> stream_item;
  std::vector<UnshuffleJob> unshuffles;
  std::vector<ScatterJob> scatters;
  // Inflated zlib / gzip streams whose trailers the GPU checks; `status` is the index of the
  // stream's deflate job among the deflate jobs' status slots.
  std::vector<ChecksumJob> checksums;
  const auto u8 = [](const std::byte* p) { return reinterpret_cast<const std::uint8_t*>(p); };
  const auto w8 = [](std::byte* p) { return reinterpret_cast<std::uint8_t*>(p); };
  auto add_nvcomp = [](NvcompBatch& nb, const std::byte* src, std::uint64_t src_size,
                       std::byte* dst, std::uint64_t dst_size, std::uint32_t item) {
    nb.src.push_back(src);
    nb.src_bytes.push_back(src_size);
    nb.capacity.push_back(dst_size);
    nb.dst.push_back(dst);
    nb.item.push_back(item);
    nb.max_out = std::max<std::size_t>(nb.max_out, dst_size);
    nb.total_out += dst_size;
  };
  for (std::size_t k = 0; k < b.items.size(); ++k) {
    const std::size_t idx = b.items[k];
    Item& it = items_[idx];
    const std::uint32_t elem = it.chain->spec().dtype.size;
    if (it.mode == Mode::kFill) {
      auto j = make_scatter(nullptr, it.sel.count, Selection::full(it.sel.count), it.dest, elem, 1,
                            it.fill, it.tf);
      if (!j) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
      if (j->count) scatters.push_back(*j);
      continue;
    }
    if (it.mode == Mode::kCpu) {
      ++(it.reuses_block ? report_.deduplicated : report_.cpu_decoded);
      if (targets[k].copy_up) continue;
      auto j = make_scatter(b.d_cpu.data() + it.cpu_offset, it.sel.count,
                            Selection::full(it.sel.count), it.dest, elem, 1, nullptr, it.tf);
      if (!j) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
      if (j->count) scatters.push_back(*j);
      continue;
    }
    const Target& t = targets[k];
    const ChunkSpec& spec = it.chain->array_to_bytes_spec();
    if (it.dup_of >= 0) {
      const Item& first = items_[std::size_t(it.dup_of)];
      if (first.d_decoded == nullptr)
        return annotate(it, internal_error("shared chunk has no decoded copy"));
      auto j = make_scatter(first.d_decoded, spec.shape, t.enc_sel, t.enc_dest, elem,
                            it.program->swap_unit, nullptr, it.tf);
      if (!j) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
      if (j->count) scatters.push_back(*j);
      ++report_.deduplicated;
      continue;
    }
    ++report_.gpu_decoded;
    const std::uint64_t n = decoded_size(it);
    const std::byte* src = it.cached   ? it.cached->bytes.data() + it.payload.offset
                           : it.direct ? b.d_direct.data() + it.direct_offset
                                       : b.d_staging.data() + it.staging_offset + it.payload.offset;
    std::byte* out = t.in_place ? t.enc_dest.data : b.d_out.data() + t.out_offset;
    const auto item = static_cast<std::uint32_t>(idx);
    switch (it.program->codec) {
      case GpuCodec::kNone:
        if (t.copy_up) {  // copied below (as stored, or converted by the host) into place
          out = it.dest.data;
          break;
        }
        out = const_cast<std::byte*>(src);  // the stored bytes are the elements
        break;
      case GpuCodec::kZstd:
        add_nvcomp(zstd, src, it.payload.size, out, n, item);
        break;
      case GpuCodec::kDeflate:  // the trailer follows the payload: CRC-32 (gzip) or Adler-32
        checksums.push_back({w8(out), u8(src + it.payload.size), n,
                             it.program->gzip ? kChecksumCrc32 : kChecksumAdler32,
                             std::uint32_t(deflate.src.size())});
        add_nvcomp(deflate, src, it.payload.size, out, n, item);
        break;
      case GpuCodec::kLz4:
        // zarrflow's own decoder, not nvCOMP's: measured on an H200, nvCOMP's LZ4 decoded
        // corrupted blocks without reporting an error (25 of 25 fuzzed chunks that liblz4
        // rejects) and was slower on 4 MB single-block chunks (5 vs 12 GB/s).
        streams.push_back(
            {u8(src), w8(out), std::uint32_t(it.payload.size), std::uint32_t(n), kStreamLz4, 0});
        stream_item.push_back(item);
        break;
      case GpuCodec::kBlosc: {
        const BloscPlan& plan = *it.blosc;
        std::byte* shuffled =
            plan.needs_scratch() ? b.d_shuffled.data() + t.shuffled_offset : nullptr;
        for (const auto& s : plan.streams) {
          const std::byte* ssrc = src + s.src_offset;
          std::byte* sdst = (s.to_scratch ? shuffled : out) + s.dst_offset;
          switch (s.kind) {
            case BloscStreamKind::kZstd:
              add_nvcomp(zstd, ssrc, s.src_size, sdst, s.dst_size, item);
              break;
            case BloscStreamKind::kZlib:  // strip the zlib wrapper: raw deflate inside
              checksums.push_back({w8(sdst), u8(ssrc + s.src_size - 4), s.dst_size,
                                   kChecksumAdler32, std::uint32_t(deflate.src.size())});
              add_nvcomp(deflate, ssrc + 2, s.src_size - 6, sdst, s.dst_size, item);
              break;
            default: {
              const std::uint32_t kind = s.kind == BloscStreamKind::kLz4       ? kStreamLz4
                                         : s.kind == BloscStreamKind::kBlosclz ? kStreamBlosclz
                                                                               : kStreamCopy;
              streams.push_back({u8(ssrc), w8(sdst), s.src_size, s.dst_size, kind, 0});
              stream_item.push_back(item);
            }
          }
        }
        for (std::uint32_t bi : plan.unshuffled) {
          const BloscBlock& blk = plan.blocks[bi];
          unshuffles.push_back({u8(shuffled + blk.dst_offset), w8(out + blk.dst_offset), blk.size,
                                plan.typesize, blk.unshuffle == BloscUnshuffle::kBit ? 1u : 0u});
        }
        break;
      }
    }
    it.d_decoded = out;
    if (!t.in_place && !t.copy_up) {
      auto j = make_scatter(out, spec.shape, t.enc_sel, t.enc_dest, elem, it.program->swap_unit,
                            nullptr, it.tf);
      if (!j) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
      if (j->count) scatters.push_back(*j);
    }
  }
  // Status slots: zstd jobs, deflate jobs, lz4 jobs, then streams.
  const std::size_t nz = zstd.src.size(), nd = deflate.src.size(), nl = lz4.src.size(),
                    ns = streams.size();
  const std::size_t nslots = nz + nd + nl + ns;
  b.slot_item.clear();
  for (const auto* v : {&zstd.item, &deflate.item, &lz4.item, &stream_item})
    b.slot_item.insert(b.slot_item.end(), v->begin(), v->end());
  for (std::size_t s = 0; s < ns; ++s) streams[s].status = std::uint32_t(nz + nd + nl + s);
  std::vector<std::int64_t> tile_starts(scatters.size() + 1, 0);
  for (std::size_t s = 0; s < scatters.size(); ++s)
    tile_starts[s + 1] = tile_starts[s] + (scatters[s].count + kScatterTile - 1) / kScatterTile;
  const std::vector<int> zero_status(nslots, 0);
  const std::vector<unsigned long long> zero_nans(1, 0);
  const bool any_transform = std::any_of(scatters.begin(), scatters.end(), [](const ScatterJob& j) {
    return j.tf.out != OutType::kStored;
  });

  TableBuilder tb;
  const std::size_t o_zsrc = tb.add(zstd.src), o_zsb = tb.add(zstd.src_bytes),
                    o_zcap = tb.add(zstd.capacity), o_zdst = tb.add(zstd.dst);
  const std::size_t o_dsrc = tb.add(deflate.src), o_dsb = tb.add(deflate.src_bytes),
                    o_dcap = tb.add(deflate.capacity), o_ddst = tb.add(deflate.dst);
  const std::size_t o_lsrc = tb.add(lz4.src), o_lsb = tb.add(lz4.src_bytes),
                    o_lcap = tb.add(lz4.capacity), o_ldst = tb.add(lz4.dst);
  const std::size_t o_streams = tb.add(streams), o_unsh = tb.add(unshuffles),
                    o_scat = tb.add(scatters), o_tiles = tb.add(tile_starts),
                    o_status = tb.add(zero_status), o_nans = tb.add(zero_nans),
                    o_checks = tb.add(checksums);
  const std::size_t o_zact = tb.reserve(nz * sizeof(std::size_t)),
                    o_dact = tb.reserve(nd * sizeof(std::size_t)),
                    o_lact = tb.reserve(nl * sizeof(std::size_t));
  ZF_ASSIGN_OR_RETURN(b.h_tables, pinned_.acquire(tb.size()));
  tb.pack(b.h_tables.data());
  ZF_ASSIGN_OR_RETURN(b.d_tables, device_buffer(tb.size(), "job tables", b));
  std::byte* dt = b.d_tables.data();
  // Pinned results: the status slots, then the NaN count of the transformed elements.
  ZF_ASSIGN_OR_RETURN(b.h_status,
                      pinned_.acquire(nans_offset(nslots) + sizeof(unsigned long long)));

  // Copies up: compressed bytes, CPU-decoded blocks, tables.
  ZF_ASSIGN_OR_RETURN(b.t0, Event::create(true));
  ZF_ASSIGN_OR_RETURN(b.t1, Event::create(true));
  ZF_ASSIGN_OR_RETURN(b.t2, Event::create(true));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.t0.get(), stream));
  if (staged_total > b.staging.capacity())
    return internal_error("staging overrun: " + std::to_string(staged_total) + " bytes staged, " +
                          std::to_string(b.staging.capacity()) + " allocated");
  if (any_staged) {  // only the GPU-decoded chunks' compressed bytes travel
    ZF_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(b.d_staging.data(), staged, staged_total, cudaMemcpyHostToDevice, stream));
    report_.h2d_bytes += staged_total;
  }
  for (std::size_t k = 0; k < b.items.size(); ++k) {  // blocks the host has ready
    const Item& it = items_[b.items[k]];
    const Target& t = targets[k];
    const std::byte* from = nullptr;
    std::byte* to = nullptr;
    std::uint64_t bytes = 0;
    if (it.host_tf) {  // dense: the encoded order only permutes shape and strides
      from = converted_block(b, it);
      to = it.dest.data;
      bytes = converted_block_bytes(it);
    } else if (it.mode == Mode::kCpu) {
      from = b.cpu_host.data() + it.cpu_offset;
      to = t.copy_up ? it.dest.data : b.d_cpu.data() + it.cpu_offset;
      bytes = cpu_block_bytes(it);
    } else if (t.copy_up) {
      from = staged + it.staging_offset + it.payload.offset;
      to = t.enc_dest.data;
      bytes = it.payload.size;
    } else {
      continue;
    }
    ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream));
    report_.h2d_bytes += bytes;
  }
  if (opt_.cache != nullptr) {  // keep copies of the compressed bytes on the GPU
    for (std::size_t idx : b.items) {
      const Item& it = items_[idx];
      if (it.mode != Mode::kGpu || it.cached || it.direct || it.dup_of >= 0 || it.cache_key.empty())
        continue;
      auto buf = device_.acquire(std::max<std::uint64_t>(it.stored_size, 1));
      if (!buf.ok()) break;  // no room: read these again next time
      ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buf->data(), b.d_staging.data() + it.staging_offset,
                                              it.stored_size, cudaMemcpyDeviceToDevice, stream));
      auto c = std::make_shared<CachedChunk>();
      c->bytes = std::move(buf).value();
      c->stored_size = it.stored_size;
      c->payload = it.payload;
      c->blosc = it.blosc;
      b.to_cache.emplace_back(idx, std::move(c));
    }
  }
  ZF_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dt, b.h_tables.data(), tb.size(), cudaMemcpyHostToDevice, stream));
  int* d_status = reinterpret_cast<int*>(dt + o_status);
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.t1.get(), stream));

  auto run_nvcomp = [&](NvcompAlgo algo, const NvcompBatch& nb, std::size_t o_src, std::size_t o_sb,
                        std::size_t o_cap, std::size_t o_dst, std::size_t o_act,
                        int* status) -> Status {
    if (nb.src.empty()) return {};
    const std::size_t n = nb.src.size();
    // Scratch for the whole call, or, when the GPU cannot hold it even after the batch in flight
    // has finished (device_buffer), for halves, quarters, ... decoded one after another: the
    // scratch (3.05x the decoded bytes for zstd) is what a full GPU can least afford.
    std::size_t per = n, temp_bytes = 0;
    auto& shared = nvcomp_temp_[int(algo)];
    // nvCOMP's kernels need device memory of their own when they launch (local memory): on an
    // H100, a launch with ~20 MB left failed with cudaErrorMemoryAllocation and one with ~26 MB
    // ran. So the scratch must leave kNvcompLaunchRoom free, after the pool's idle buffers went
    // back.
    const auto launch_room = [&] {
      std::size_t free = 0, total = 0;
      if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
        cudaGetLastError();
        return true;  // cannot tell: try
      }
      if (free >= kNvcompLaunchRoom) return true;
      device_.trim();
      return cudaMemGetInfo(&free, &total) == cudaSuccess && free >= kNvcompLaunchRoom;
    };
    for (;;) {
      // decoded bytes of the largest part: at most `per` of the largest chunks
      const std::size_t largest = std::min(nb.total_out, per * nb.max_out);
      ZF_RETURN_IF_ERROR(nvcomp_->temp_size(algo, per, nb.max_out, largest, &temp_bytes, stream));
      if (shared != nullptr && shared->capacity() >= temp_bytes) break;
      shared.reset();  // batches still using the smaller one hold their own reference
      auto t = device_buffer(std::max<std::size_t>(temp_bytes, 1),
                             "nvCOMP scratch for " + std::to_string(per) + " compressed streams", b,
                             /*wait=*/per == 1);
      if (t.ok() && (per == 1 || launch_room())) {
        shared = std::make_shared<GpuBuffer>(std::move(t).value());
        break;
      }
      if (per == 1) return t.status();
      if (t.ok()) {  // it fits, but leaves the launches no room: give it back to the driver
        { GpuBuffer drop = std::move(t).value(); }
        device_.trim();
      }
      per = (per + 1) / 2;
      note("nvCOMP's scratch did not fit in the GPU's free memory: its calls were split");
    }
    b.d_temp[int(algo)] = shared;
    GpuBuffer& temp = *shared;
    for (std::size_t p = 0; p < n; p += per) {
      const auto call = [&] {
        return nvcomp_->decompress(
            algo, reinterpret_cast<const void* const*>(dt + o_src) + p,
            reinterpret_cast<const std::size_t*>(dt + o_sb) + p,
            reinterpret_cast<const std::size_t*>(dt + o_cap) + p,
            reinterpret_cast<std::size_t*>(dt + o_act) + p, std::min(per, n - p), temp.data(),
            temp_bytes, reinterpret_cast<void* const*>(dt + o_dst) + p, status + p, stream);
      };
      ZF_RETURN_IF_ERROR(call());
      // nvCOMP does not check its launches: a kernel that could not launch (its local memory
      // did not fit on a GPU a model had filled: 71-channel training on an H100) shows only as
      // this thread's last error. The call only reads its inputs: it runs again once, after the
      // pool's idle memory went back to the driver.
      if (cudaPeekAtLastError() == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        device_.trim();
        ZF_RETURN_IF_ERROR(call());
        if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
          return io_error(std::string("nvCOMP's kernels could not launch (") + cudaGetErrorName(e) +
                          "): the GPU is full; the model's memory (PyTorch keeps what it frees "
                          "in its cache) and zarrflow's share leave them no room: a lower "
                          "zarrflow.set_gpu_memory_limit leaves more");
      }
    }
    ZF_CUDA_RETURN_IF_ERROR(launch_check_sizes(reinterpret_cast<const std::size_t*>(dt + o_act),
                                               reinterpret_cast<const std::size_t*>(dt + o_cap),
                                               status, std::uint32_t(nb.src.size()), stream));
    return {};
  };
  ZF_RETURN_IF_ERROR(
      run_nvcomp(NvcompAlgo::kZstd, zstd, o_zsrc, o_zsb, o_zcap, o_zdst, o_zact, d_status));
  ZF_RETURN_IF_ERROR(run_nvcomp(NvcompAlgo::kDeflate, deflate, o_dsrc, o_dsb, o_dcap, o_ddst,
                                o_dact, d_status + nz));
  ZF_CUDA_RETURN_IF_ERROR(
      launch_verify_checksums(reinterpret_cast<const ChecksumJob*>(dt + o_checks),
                              std::uint32_t(checksums.size()), d_status + nz, stream));
  ZF_RETURN_IF_ERROR(
      run_nvcomp(NvcompAlgo::kLz4, lz4, o_lsrc, o_lsb, o_lcap, o_ldst, o_lact, d_status + nz + nd));
  ZF_CUDA_RETURN_IF_ERROR(launch_decode_streams(reinterpret_cast<const StreamJob*>(dt + o_streams),
                                                std::uint32_t(ns), d_status, stream));
  ZF_CUDA_RETURN_IF_ERROR(launch_unshuffle(reinterpret_cast<const UnshuffleJob*>(dt + o_unsh),
                                           std::uint32_t(unshuffles.size()), stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.t2.get(), stream));
  auto* d_nans = reinterpret_cast<unsigned long long*>(dt + o_nans);
  ZF_CUDA_RETURN_IF_ERROR(launch_scatter(
      reinterpret_cast<const ScatterJob*>(dt + o_scat), std::uint32_t(scatters.size()),
      reinterpret_cast<const std::int64_t*>(dt + o_tiles), tile_starts.back(),
      any_transform ? d_nans : nullptr, stream));
  if (nslots > 0)
    ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.h_status.data(), d_status, nslots * sizeof(int),
                                            cudaMemcpyDeviceToHost, stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.h_status.data() + nans_offset(nslots), d_nans,
                                          sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                          stream));
  ZF_ASSIGN_OR_RETURN(b.done, Event::create(true, /*sleeping=*/true));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.done.get(), stream));
  b.enqueued = true;
  return {};
}

Status ReadOp::upload_cpu_decoded(const Item& it, const std::byte* staged) {
  // A chunk the GPU could not decode but the CPU could: decode it here and copy it into place.
  const std::uint32_t elem = it.chain->spec().dtype.size;
  const std::uint64_t bytes = cpu_block_bytes(it);
  ZF_ASSIGN_OR_RETURN(GpuBuffer host, pinned_.acquire(std::max<std::uint64_t>(bytes, 1)));
  ZF_RETURN_IF_ERROR(cpu_decode(it, staged, ByteSpan(host.data(), bytes)));
  ZF_ASSIGN_OR_RETURN(GpuBuffer dev, device_.acquire(std::max<std::uint64_t>(bytes, 1)));
  auto job = make_scatter(dev.data(), it.sel.count, Selection::full(it.sel.count), it.dest, elem, 1,
                          nullptr, it.tf);
  if (!job) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
  // Device tables: the job, its two tile starts, the NaN counter (host copy: `host` after the
  // block, which is pinned too).
  constexpr std::size_t kTiles = align_up(sizeof(ScatterJob), 16), kNans = kTiles + 16;
  ZF_ASSIGN_OR_RETURN(GpuBuffer tables, device_.acquire(kNans + 8));
  ZF_ASSIGN_OR_RETURN(GpuBuffer h_nans, pinned_.acquire(8));
  std::int64_t tiles[2] = {0, (job->count + kScatterTile - 1) / kScatterTile};
  auto* d_nans = reinterpret_cast<unsigned long long*>(tables.data() + kNans);
  const cudaStream_t stream = opt_.stream;
  ZF_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dev.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream));
  ZF_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(tables.data(), &*job, sizeof(ScatterJob), cudaMemcpyHostToDevice, stream));
  ZF_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(tables.data() + kTiles, tiles, sizeof tiles, cudaMemcpyHostToDevice, stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_nans, 0, 8, stream));
  ZF_CUDA_RETURN_IF_ERROR(launch_scatter(
      reinterpret_cast<const ScatterJob*>(tables.data()), 1,
      reinterpret_cast<const std::int64_t*>(tables.data() + kTiles), tiles[1], d_nans, stream));
  ZF_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(h_nans.data(), d_nans, 8, cudaMemcpyDeviceToHost, stream));
  ZF_RETURN_IF_ERROR(wait_sleeping(stream));
  unsigned long long nans = 0;
  std::memcpy(&nans, h_nans.data(), 8);
  report_.nans += nans;
  return {};
}

Status ReadOp::finish(Batch& b) {
  NvtxRange nvtx("zarrflow finish");
  if (!b.enqueued) return {};
  const auto waited = std::chrono::steady_clock::now();
  ZF_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(b.done.get()));
  report_.wait_ms += ms_since(waited);
  float ms = 0;
  // The stream reaches t0 as soon as the previous batch is done, unless the host had not
  // enqueued this batch yet: the difference is time the GPU waited for the host.
  if (last_done_.get() != nullptr &&
      cudaEventElapsedTime(&ms, last_done_.get(), b.t0.get()) == cudaSuccess)
    report_.gpu_idle_ms += std::max(0.f, ms);
  if (cudaEventElapsedTime(&ms, b.t0.get(), b.t1.get()) == cudaSuccess) report_.h2d_ms += ms;
  if (cudaEventElapsedTime(&ms, b.t1.get(), b.t2.get()) == cudaSuccess) report_.decode_ms += ms;
  if (cudaEventElapsedTime(&ms, b.t2.get(), b.done.get()) == cudaSuccess) report_.scatter_ms += ms;
  last_done_ = std::move(b.done);
  const int* status = reinterpret_cast<const int*>(b.h_status.data());
  unsigned long long nans = 0;
  std::memcpy(&nans, b.h_status.data() + nans_offset(b.slot_item.size()), sizeof nans);
  report_.nans += nans;
  std::set<std::uint32_t> failed;
  std::map<std::uint32_t, int> first_code;
  for (std::size_t s = 0; s < b.slot_item.size(); ++s) {
    if (status[s] != 0) {
      failed.insert(b.slot_item[s]);
      first_code.emplace(b.slot_item[s], status[s]);
    }
  }
  for (std::size_t idx : b.items)  // their copies scattered from a bad decode too
    if (items_[idx].dup_of >= 0 && failed.count(std::uint32_t(items_[idx].dup_of)))
      failed.insert(std::uint32_t(idx));
  for (auto& [idx, chunk] : b.to_cache)  // complete now; never cache what failed to decode
    if (!failed.count(std::uint32_t(idx)))
      opt_.cache->insert(items_[idx].cache_key, std::move(chunk));
  if (opt_.host_cache != nullptr) {  // pinned copies of what was read (the staging is still ours)
    for (std::size_t idx : b.items) {
      const Item& it = items_[idx];
      if (it.mode != Mode::kGpu || it.cached || it.host_cached || it.direct || it.dup_of >= 0 ||
          it.cache_key.empty() || failed.count(std::uint32_t(idx)))
        continue;
      auto buf = pinned_.acquire(std::max<std::uint64_t>(it.stored_size, 1));
      if (!buf.ok()) break;
      std::memcpy(buf->data(), b.staging.data() + it.staging_offset, it.stored_size);
      auto c = std::make_shared<CachedChunk>();
      c->bytes = std::move(buf).value();
      c->stored_size = it.stored_size;
      c->payload = it.payload;
      c->blosc = it.blosc;
      opt_.host_cache->insert(it.cache_key, std::move(c));
    }
  }
  for (std::uint32_t idx : failed) {
    if (!items_[idx].cache_key.empty()) {
      if (opt_.cache != nullptr) opt_.cache->erase(items_[idx].cache_key);
      if (opt_.host_cache != nullptr) opt_.host_cache->erase(items_[idx].cache_key);
    }
    // The CPU decoder is the authority: it names what is wrong, or recovers the data.
    const Item& it = items_[idx];
    Status s = upload_cpu_decoded(it, b.staging.data());
    if (!s.ok()) return s;
    note("a chunk the GPU decoder rejected (status " + std::to_string(first_code[idx]) +
         ") decoded on the CPU");
    if (items_[idx].dup_of < 0) --report_.gpu_decoded;
    ++report_.cpu_decoded;
  }
  b = Batch{};
  return {};
}

}  // namespace

DeviceReader::DeviceReader()
    : pinned_(MemoryKind::kPinned, std::size_t{8} << 30),
      device_(MemoryKind::kDevice, std::size_t{8} << 30) {}

DeviceReader::~DeviceReader() = default;

Status DeviceReader::read(const Array& arr, const Selection& region, const StridedView& dest,
                          const DeviceReadOptions& options, DeviceReadReport* report) {
  ZF_RETURN_IF_ERROR(device_available());
  DeviceReadReport local;
  DeviceReadReport& r = report ? *report : local;
  ReadOp op(options, r, pinned_, device_);
  const DeviceReadRequest one{&arr, region, dest};
  return op.run({&one, 1});
}

Status DeviceReader::read_many(std::span<const DeviceReadRequest> requests,
                               const DeviceReadOptions& options, DeviceReadReport* report) {
  ZF_RETURN_IF_ERROR(device_available());
  DeviceReadReport local;
  DeviceReadReport& r = report ? *report : local;
  ReadOp op(options, r, pinned_, device_);
  return op.run(requests);
}

}  // namespace zarrflow::gpu
