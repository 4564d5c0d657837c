// ReadOp: fetching and host work of a piece, and finishing it once the GPU is done (read_op.h).
#include <cstring>

#include "zarrflow/core/gpu/nvtx.h"
#include "zarrflow/pipeline/gpu/read_op.h"
#include "zarrflow/pipeline/gpu/scatter.h"
#include "zarrflow/store/local_files.h"

namespace zarrflow::gpu {

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
  const StagingOptions staging{opt_.io, cufile != nullptr,
                               opt_.cache != nullptr || opt_.host_cache != nullptr};
  ZF_ASSIGN_OR_RETURN(const StagingLayout total, lay_out_staging(items_, b.items, staging));
  // At the unshared sizes (batch_layout.h: the working set must not depend on the samples).
  ZF_ASSIGN_OR_RETURN(b.staging,
                      named(pinned_.acquire(std::max<std::uint64_t>(total.staged_unshared, 1)),
                            "pinned staging", b));
  if (total.converted) {
    ZF_ASSIGN_OR_RETURN(b.host_read, named(pinned_.acquire(total.converted_unshared),
                                           "pinned blocks converted while read", b));
  }
  if (total.direct) {
    ZF_ASSIGN_OR_RETURN(b.d_direct, device_buffer(total.direct, "cuFile reads", b));
    report_.io = "cuFile " + cufile->mode() +
                 " for uncompressed chunks; pread → pinned → H2D "
                 "for the rest";
  }
  // Copies made while the rest of the piece is read (staged_uploads.h): the compressed chunks
  // the GPU decodes go up to device staging, uncompressed whole chunks into their destination.
  StagedUploads uploads(upload_slots(b, total.slots), kUploadStep);
  std::vector<std::byte*> into_place(b.items.size());
  bool any_into_place = false;
  for (std::size_t k = 0; k < b.items.size(); ++k) {
    into_place[k] = copied_into_place_while_read(items_[b.items[k]], opt_.cache != nullptr);
    any_into_place = any_into_place || into_place[k] != nullptr;
  }
  b.copied_while_read.assign(b.items.size(), 0);
  int device = 0;
  if (uploads.total() > 0 || any_into_place) ZF_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (uploads.total() > 0) {
    ZF_ASSIGN_OR_RETURN(b.d_staging, device_buffer(b.staging.size(), "device staging", b));
  }
  std::atomic<std::uint64_t> converted_nans{0};
  std::atomic<std::int64_t> direct_reads{0};
  ThreadPool* io =
      b.items.empty() ? opt_.pool : items_[b.items.front()].arr->store().fetch_pool(opt_.pool);
  // The chunks the plan gives the host are decoded by the thread that read them, while the rest
  // of the piece is read (the CPU path's one task a chunk), rather than all after the piece: on
  // the host's own threads only, not a remote store's I/O threads, which outnumber the cores.
  ZF_RETURN_IF_ERROR(lay_out_host_area(b));
  const bool decode_while_read = b.cpu_host.data() != nullptr && io == host_pool();
  // Item k's copies up once its bytes are read (the staged range ends with slot k).
  const auto copy_up = [&](std::size_t k, const Item& it) -> Status {
    const std::byte* slot = b.staging.data() + it.staging_offset;
    if (into_place[k] != nullptr && it.mode == Mode::kGpu) {  // not deleted meanwhile
      const EarlyCopy copy{into_place[k], slot, it.stored_size};
      ZF_RETURN_IF_ERROR(copy_while_read({&copy, 1}, device));
      b.copied_while_read[k] = 1;
    }
    if (uploads.total() == 0) return {};
    std::vector<EarlyCopy> copies;
    for (const UploadRange& r : uploads.complete(k))
      copies.push_back({b.d_staging.data() + r.begin, b.staging.data() + r.begin, r.size()});
    return copy_while_read(copies, device);
  };
  ZF_RETURN_IF_ERROR(parallel_for(io, b.items.size(), [&](std::size_t k) -> Status {
    Item& it = items_[b.items[k]];
    ZF_RETURN_IF_ERROR(fetch_item(it, b, cufile, converted_nans, direct_reads));
    ZF_RETURN_IF_ERROR(copy_up(k, it));
    if (decode_while_read && it.mode == Mode::kCpu && it.dup_of < 0) {
      ZF_RETURN_IF_ERROR(decode_host_block(b, it));
      b.decoded_while_read[k] = 1;
    }
    return {};
  }));
  if (uploads.total() > 0 || any_into_place) {
    ZF_ASSIGN_OR_RETURN(b.uploaded, Event::create());
    ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.uploaded.get(), copy_lane_[0]));
    b.staged_uploaded = uploads.total() > 0 && uploads.returned() == uploads.total();
  }
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
  count_fetched(b);
  return {};
}

// The piece's staging slots in order (lay_out_staging); those of compressed chunks the GPU
// decodes go up while the piece is read (uploads_while_read).
std::vector<StagedUploads::Slot> ReadOp::upload_slots(
    const Batch& b, std::span<const std::pair<std::uint64_t, std::uint64_t>> staged) const {
  std::vector<StagedUploads::Slot> slots;
  slots.reserve(b.items.size());
  for (std::size_t k = 0; k < b.items.size(); ++k)
    slots.push_back({staged[k].first, staged[k].second, uploads_while_read(items_[b.items[k]])});
  return slots;
}

// Copies up on the read's copy lane, from whichever I/O thread read their bytes. That thread
// (shared by reads for other GPUs) gets the read's device for the copies and its own back after.
Status ReadOp::copy_while_read(std::span<const EarlyCopy> copies, int device) {
  if (copies.empty()) return {};
  int previous = -1;
  ZF_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
  if (previous != device) ZF_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  std::uint64_t bytes = 0;
  cudaError_t e = cudaSuccess;
  for (const EarlyCopy& c : copies) {
    e = cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyHostToDevice, copy_lane_[0]);
    if (e != cudaSuccess) break;
    bytes += c.bytes;
  }
  if (previous != device) cudaSetDevice(previous);
  if (e != cudaSuccess) return cuda_status(e, "cudaMemcpyAsync of bytes read (copy lane)");
  std::lock_guard lock(mu_);
  report_.h2d_bytes += bytes;
  report_.h2d_while_read += bytes;
  return {};
}

// One item's stored bytes: from the pinned cache, by cuFile, read and converted, or read into
// its staging slot.
Status ReadOp::fetch_item(Item& it, Batch& b, const CuFile* cufile,
                          std::atomic<std::uint64_t>& converted_nans,
                          std::atomic<std::int64_t>& direct_reads) {
  if (it.mode == Mode::kFill || it.dup_of >= 0 || it.cached) return {};
  if (it.host_tf && it.mode == Mode::kGpu)
    return read_converted(it, converted_block(b, it), converted_nans);
  std::byte* slot = b.staging.data() + it.staging_offset;
  if (it.host_cached) {
    std::memcpy(slot, it.host_cached->bytes.data(), it.stored_size);
    return {};
  }
  if (it.direct)
    return annotate(it, cufile->read(it.arr->store().local_files()->path_of(it.key),
                                     b.d_direct.data() + it.direct_offset, it.stored_size, 0));
  return read_stored(it, slot, opt_.io, direct_reads);
}

void ReadOp::count_fetched(const Batch& b) {
  for (std::size_t idx : b.items) {
    const Item& it = items_[idx];
    ++report_.chunks;
    if (it.mode == Mode::kFill) {
      ++report_.missing;
    } else {
      report_.stored_bytes += it.stored_size;
    }
  }
}

Status ReadOp::prepare(Batch& b) {
  NvtxRange nvtx("zarrflow host checks");
  ZF_RETURN_IF_ERROR(check_on_host(b));
  for (std::size_t idx : b.items) {
    const Item& it = items_[idx];
    if (it.mode == Mode::kCpu && !it.cpu_reason.empty()) note(it.cpu_reason);
  }
  bool same_host_items = true;
  for (std::size_t k = 0; k < b.items.size(); ++k)
    same_host_items &= (items_[b.items[k]].mode == Mode::kCpu) == (b.host_laid_out[k] != 0);
  // The checks moved items to or from the host: every host block is laid out and decoded anew.
  if (!same_host_items) ZF_RETURN_IF_ERROR(lay_out_host_area(b));
  if (b.cpu_host.data() != nullptr) ZF_RETURN_IF_ERROR(decode_on_host_threads(b));
  for (std::size_t idx : b.items)
    report_.host_transformed += items_[idx].host_tf && !items_[idx].reuses_block;
  return {};
}

// The host checks of the piece's GPU items (in parallel); duplicates then follow their first
// occurrence. Under gpu_decode=on, an item the GPU cannot decode fails the read.
Status ReadOp::check_on_host(Batch& b) {
  const std::byte* staged = b.staging.data();
  ZF_RETURN_IF_ERROR(parallel_for(host_pool(), b.items.size(), [&](std::size_t k) -> Status {
    Item& it = items_[b.items[k]];
    if (it.mode != Mode::kGpu || it.direct || it.dup_of >= 0 || it.cached || it.host_cached ||
        it.host_tf)
      return {};
    return check_gpu_item(it, staged, gpu_);
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
  return {};
}

// The pinned blocks of the piece's host-decoded (kCpu) items (lay_out_host_blocks). Laid out
// again (prepare), an item that has left the host since (to the GPU, following its first
// occurrence; or the fill value) drops the host transform the layout gave it, as the host
// decodes it no longer.
Status ReadOp::lay_out_host_area(Batch& b) {
  const std::vector<std::uint8_t> before = std::move(b.host_laid_out);
  b.host_laid_out.assign(b.items.size(), 0);
  b.decoded_while_read.assign(b.items.size(), 0);
  for (std::size_t k = 0; k < b.items.size(); ++k) {
    Item& it = items_[b.items[k]];
    if (it.mode == Mode::kCpu) {
      b.host_laid_out[k] = 1;
    } else if (!before.empty() && before[k] != 0) {
      it.host_tf = false;
      it.reuses_block = false;
    }
  }
  b.cpu_host = {};
  b.host_out = {};
  const HostBlockLayout total = lay_out_host_blocks(items_, b.items);
  if (total.decoded == 0) return {};
  ZF_ASSIGN_OR_RETURN(
      b.cpu_host, named(pinned_.acquire(total.decoded_unshared), "pinned host-decoded blocks", b));
  if (total.converted > 0) {
    ZF_ASSIGN_OR_RETURN(b.host_out, named(pinned_.acquire(total.converted_unshared),
                                          "pinned host-decoded blocks, converted", b));
  }
  return {};
}

// One kCpu item decoded into its pinned block (and converted at once when it has
// Item::host_tf, the block still in the core's caches).
Status ReadOp::decode_host_block(Batch& b, Item& it) {
  std::byte* block = b.cpu_host.data() + it.cpu_offset;
  ZF_RETURN_IF_ERROR(
      decode_on_host(it, b.staging.data(), ByteSpan(block, cpu_block_bytes(it)), opt_.buffers));
  if (it.host_tf)
    it.host_tf_nans = normalize_cast(block, converted_block(b, it), block_elements(it), *it.tf);
  return {};
}

// The host threads decode the piece's kCpu items not decoded while read.
Status ReadOp::decode_on_host_threads(Batch& b) {
  ZF_RETURN_IF_ERROR(parallel_for(host_pool(), b.items.size(), [&](std::size_t k) -> Status {
    Item& it = items_[b.items[k]];
    if (it.mode != Mode::kCpu || it.reuses_block || b.decoded_while_read[k]) return {};
    return decode_host_block(b, it);
  }));
  // NaNs are counted per element written into a destination, as on the CPU path and in the
  // scatter kernel: a block copied up twice writes its NaNs twice.
  for (std::size_t idx : b.items) {
    const Item& it = items_[idx];
    if (it.mode == Mode::kCpu && it.host_tf)
      report_.nans +=
          it.reuses_block ? items_[std::size_t(it.dup_of)].host_tf_nans : it.host_tf_nans;
  }
  return {};
}

Status ReadOp::finish(Batch& b) {
  NvtxRange nvtx("zarrflow finish");
  if (!b.enqueued) return {};
  const auto waited = std::chrono::steady_clock::now();
  ZF_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(b.done.get()));
  report_.wait_ms += ms_since(waited);
  record_timings(b);
  unsigned long long nans = 0;
  std::memcpy(&nans, b.h_status.data() + nans_offset(b.slot_item.size()), sizeof nans);
  report_.nans += nans;
  const std::map<std::uint32_t, int> failed = failed_items(b);
  keep_in_caches(b, failed);
  for (const auto& [idx, code] : failed) {
    if (!items_[idx].cache_key.empty()) {
      if (opt_.cache != nullptr) opt_.cache->erase(items_[idx].cache_key);
      if (opt_.host_cache != nullptr) opt_.host_cache->erase(items_[idx].cache_key);
    }
    // The CPU decoder is the authority: it names what is wrong, or recovers the data.
    ZF_RETURN_IF_ERROR(recover_on_host(items_[idx], b.staging.data()));
    note("a chunk the GPU decoder rejected (status " + std::to_string(code) +
         ") decoded on the CPU");
    if (items_[idx].dup_of < 0) --report_.gpu_decoded;
    ++report_.cpu_decoded;
  }
  b = Batch{};
  return {};
}

// The stages' GPU times (events), and how long the stream sat idle before this piece: it reaches
// t0 as soon as the previous piece is done, unless the host had not enqueued this one yet.
void ReadOp::record_timings(Batch& b) {
  float ms = 0;
  if (last_done_.get() != nullptr &&
      cudaEventElapsedTime(&ms, last_done_.get(), b.t0.get()) == cudaSuccess)
    report_.gpu_idle_ms += std::max(0.f, ms);
  if (cudaEventElapsedTime(&ms, b.t0.get(), b.t1.get()) == cudaSuccess) report_.h2d_ms += ms;
  if (cudaEventElapsedTime(&ms, b.t1.get(), b.t2.get()) == cudaSuccess) report_.decode_ms += ms;
  if (cudaEventElapsedTime(&ms, b.t2.get(), b.done.get()) == cudaSuccess) report_.scatter_ms += ms;
  last_done_ = std::move(b.done);
}

// Items whose decode reported an error, with the first status code each reported, and their
// duplicates (scattered from a bad decode too; code 0).
std::map<std::uint32_t, int> ReadOp::failed_items(const Batch& b) const {
  const int* status = reinterpret_cast<const int*>(b.h_status.data());
  std::map<std::uint32_t, int> failed;
  for (std::size_t s = 0; s < b.slot_item.size(); ++s)
    if (status[s] != 0) failed.emplace(b.slot_item[s], status[s]);
  for (std::size_t idx : b.items)
    if (items_[idx].dup_of >= 0 && failed.count(std::uint32_t(items_[idx].dup_of)))
      failed.emplace(std::uint32_t(idx), 0);
  return failed;
}

// The piece's chunks that decoded go into the caches: the GPU copies made while enqueuing, and
// pinned copies of what was read (the staging is still this piece's).
void ReadOp::keep_in_caches(Batch& b, const std::map<std::uint32_t, int>& failed) {
  for (auto& [idx, chunk] : b.to_cache)
    if (!failed.count(std::uint32_t(idx)))
      opt_.cache->insert(items_[idx].cache_key, std::move(chunk));
  if (opt_.host_cache == nullptr) return;
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

// A chunk the GPU could not decode but the CPU could: decode it here and copy it into place.
Status ReadOp::recover_on_host(const Item& it, const std::byte* staged) {
  const std::uint32_t elem = it.chain->spec().dtype.size;
  const std::uint64_t bytes = cpu_block_bytes(it);
  ZF_ASSIGN_OR_RETURN(GpuBuffer host, pinned_.acquire(std::max<std::uint64_t>(bytes, 1)));
  ZF_RETURN_IF_ERROR(decode_on_host(it, staged, ByteSpan(host.data(), bytes), opt_.buffers));
  ZF_ASSIGN_OR_RETURN(GpuBuffer dev, device_.acquire(std::max<std::uint64_t>(bytes, 1)));
  auto job = make_scatter(dev.data(), it.sel.count, Selection::full(it.sel.count), it.dest, elem, 1,
                          nullptr, it.tf);
  if (!job) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
  // Device tables: the job, its two tile starts, the NaN counter.
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

}  // namespace zarrflow::gpu
