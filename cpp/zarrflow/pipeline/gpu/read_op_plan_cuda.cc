// ReadOp: the read's plan and its pieces (read_op.h).
#include <algorithm>

#include "zarrflow/pipeline/gpu/read_op.h"

namespace zarrflow::gpu {

Result<GpuBuffer> named(Result<GpuBuffer> r, std::string_view what, const Batch& b) {
  if (r.ok()) return r;
  return std::move(r).take_status().annotate(std::string(what) + " for a batch of " +
                                             std::to_string(b.items.size()) + " chunks");
}

ReadOp::~ReadOp() {
  // Errors were reported already, or are sticky.
  if (!settled_ && (!in_flight_.empty() || filling_)) {
    lanes_.synchronize();
    copy_lane_.synchronize();
  }
}

// Waits for the oldest piece in flight and checks it (its buffers go back to the pools).
Status ReadOp::finish_oldest() {
  ZF_RETURN_IF_ERROR(finish(in_flight_.front()));  // on failure ~ReadOp drains the lanes first
  in_flight_.pop_front();
  return {};
}

void ReadOp::note(const std::string& why) {
  std::lock_guard lock(mu_);
  if (noted_.insert(why).second) report_.notes.push_back(why);
}

// Device memory for piece `b`. When the GPU is full and earlier pieces' work is still in flight
// (their buffers, and the other loader workers' pieces, take the memory), wait for them, oldest
// first: their buffers go back to the pool, which gives its idle memory back and tries again. A
// failure then names the buffer and the piece (named).
Result<GpuBuffer> ReadOp::device_buffer(std::uint64_t size, std::string_view what, const Batch& b,
                                        bool wait) {
  auto r = device_.acquire(size);
  while (!r.ok() && !in_flight_.empty()) {
    ZF_RETURN_IF_ERROR(finish_oldest());
    r = device_.acquire(size);
  }
  // Under zarrflow's memory limit the rest is mostly other reads' pieces (the loader's other
  // workers, a validation loader), which go back within a piece's time: wait for them, bounded,
  // rather than fail the piece. Beyond kLimitWait the memory is held for good (pieces in flight)
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

Status ReadOp::plan(std::span<const DeviceReadRequest> requests) {
  ZF_RETURN_IF_ERROR(check_requests(requests, opt_.transforms));
  gpu_.decode = opt_.decode;
  auto nv = Nvcomp::get();
  if (nv.ok()) {
    nvcomp_ = *nv;
    gpu_.nvcomp = true;
  } else {
    gpu_.nvcomp_missing = nv.status().message();
  }
  gpu_.zstd_nvcomp = zstd_by_nvcomp(gpu_.nvcomp);
  const PlanOptions plan{opt_.pool, opt_.buffers, opt_.shard_indexes, opt_.decode, opt_.host_share};
  const auto& tfs = opt_.transforms;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    const ElementTransform* tf = !tfs.empty() && tfs[i].out != OutType::kStored ? &tfs[i] : nullptr;
    if (!r.region.empty()) ZF_RETURN_IF_ERROR(gather_items(r, tf, plan, items_));
  }
  // cuFile reads go to device memory: no shared staging to deduplicate through.
  if (opt_.io != IoPath::kCuFile) group_duplicates(items_);
  choose_decoders(items_, programs_, plan);
  look_up_caches();
  return measure_stored_sizes(items_, opt_.pool);
}

// GPU cache hits need no read, no host work and no copy; pinned-cache hits no read and no
// host validation.
void ReadOp::look_up_caches() {
  if (opt_.cache == nullptr && opt_.host_cache == nullptr) return;
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
      if (it.cached) it.cached_bytes = it.cached->bytes.data();
      if (it.host_cached) it.stored_size = hit->stored_size;  // staged again from the cache
      ++(it.cached ? report_.cache_hits : report_.host_cache_hits);
    }
  }
}

bool ReadOp::nvcomp_decodes() const {
  return programs_.has(GpuCodec::kDeflate) || (gpu_.zstd_nvcomp && programs_.has(GpuCodec::kZstd));
}

bool ReadOp::zarrflow_zstd_decodes() const {
  return !nvcomp_decodes() && programs_.has(GpuCodec::kZstd);
}

// Pieces of chunks nvCOMP decodes are as large as memory allows (read_plan.h:
// nvcomp_piece_bytes), as many staged bytes as decoded ones. zarrflow's own kernels (Blosc, LZ4,
// uncompressed) have no such latency: small pieces (256 MB staged) on several lanes overlap
// reading, copies and decoding best, bounded by 2 GB decoded shared by the lanes (at least
// 512 MB each; the decoded bound matters for chunks of mostly fill value, which compress to
// almost nothing). zarrflow's zstd decoder keeps a scratch of about 3x the decoded bytes on each
// lane, as nvCOMP's does on its one: its lanes share the decoded bytes one nvCOMP piece may
// hold. An explicit batch_bytes sets the staged bound, and twice it the decoded one.
PieceBounds ReadOp::piece_bounds() const {
  if (opt_.batch_bytes != 0) return {opt_.batch_bytes, 2 * opt_.batch_bytes};
  const bool nvcomp = nvcomp_decodes();
  const bool zstd_scratch = zarrflow_zstd_decodes();
  constexpr std::uint64_t kSmallStaged = std::uint64_t{256} << 20;
  const std::uint64_t small_decoded =
      std::max<std::uint64_t>((std::uint64_t{2} << 30) / lanes_.size(), 512 << 20);
  if (!nvcomp && !zstd_scratch) return {kSmallStaged, small_decoded};
  std::uint64_t d = std::uint64_t{3} << 30;  // the GPU's size unknown
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
    const std::uint64_t available =
        std::min<std::uint64_t>(free + device_.cached_bytes(), device_.room());
    d = nvcomp_piece_bytes(total, available, opt_.read_budget);
  } else {
    cudaGetLastError();
  }
  if (nvcomp) return {d, d};
  return {kSmallStaged,
          std::min(small_decoded, std::max<std::uint64_t>(d / lanes_.size(), 64 << 20))};
}

// One lane where nvCOMP decodes, twice the streams where zarrflow's zstd decoder does
// (read_lanes). nvCOMP's calls side by side would overlap a little alone, but beside a model
// cost more than that gains (benchmarks/bench_sm_cost.py; docs/settings.md, "GPU read streams").
Status ReadOp::take_lanes() {
  const int n = read_lanes(streams_, nvcomp_decodes(), zarrflow_zstd_decodes(), kMaxReadStreams);
  ZF_ASSIGN_OR_RETURN(lanes_, lender_.lend(std::size_t(n), opt_.stream));
  ZF_ASSIGN_OR_RETURN(copy_lane_, lender_.lend(1, opt_.stream));
  return {};
}

Status ReadOp::run(std::span<const DeviceReadRequest> requests) {
  const auto t_plan = std::chrono::steady_clock::now();
  ZF_RETURN_IF_ERROR(plan(requests));
  ZF_RETURN_IF_ERROR(take_lanes());
  PiecePlanner pieces(items_, piece_bounds());
  report_.plan_ms += ms_since(t_plan);
  report_.io = opt_.io == IoPath::kDirect ? "O_DIRECT → pinned staging → H2D copy per batch"
                                          : "pread → pinned staging → H2D copy per batch";
  std::size_t made = 0;
  while (!pieces.done()) {
    Batch& b = filling_.emplace();
    // Piece n goes to lane n mod lanes: on two lanes or more, that lane's previous piece has
    // finished (below); on one, it queues behind the piece in flight.
    b.stream = lanes_[made++ % lanes_.size()];
    std::uint64_t decoded = 0;
    b.items = pieces.next(&decoded);
    report_.max_batch_decoded = std::max(report_.max_batch_decoded, decoded);
    auto t = std::chrono::steady_clock::now();
    ZF_RETURN_IF_ERROR(fetch(b));
    ZF_RETURN_IF_ERROR(prepare(b));
    report_.fetch_ms += ms_since(t);
    t = std::chrono::steady_clock::now();
    ZF_RETURN_IF_ERROR(enqueue(b));
    report_.enqueue_ms += ms_since(t);
    ++report_.batches;
    in_flight_.push_back(std::move(b));
    filling_.reset();
    // While the host fills the next piece, lanes - 1 pieces stay in flight (one on one lane).
    while (in_flight_.size() >= std::max<std::size_t>(lanes_.size(), 2))
      ZF_RETURN_IF_ERROR(finish_oldest());
  }
  while (!in_flight_.empty()) ZF_RETURN_IF_ERROR(finish_oldest());
  settled_ = true;
  return {};
}

}  // namespace zarrflow::gpu
