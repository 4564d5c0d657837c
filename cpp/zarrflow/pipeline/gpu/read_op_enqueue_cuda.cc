// ReadOp: a piece's GPU work, enqueued on its lane's stream (read_op.h): device buffers, job
// tables, copies up, nvCOMP calls and zarrflow's kernels, then one event to wait for.
#include <algorithm>
#include <cstring>
#include <vector>

#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/core/gpu/nvtx.h"
#include "zarrflow/pipeline/gpu/read_op.h"
#include "zarrflow/pipeline/gpu/scatter.h"

namespace zarrflow::gpu {

Status ReadOp::enqueue(Batch& b) {
  NvtxRange nvtx("zarrflow enqueue");
  const OutputLayout layout = place_outputs(items_, b.items, opt_.cache != nullptr);
  ZF_RETURN_IF_ERROR(allocate_device_areas(b, layout));
  DecodeJobs jobs;
  const DeviceAreas areas{b.d_staging.data(), b.d_direct.data(), b.d_cpu.data(), b.d_out.data(),
                          b.d_shuffled.data()};
  ZF_RETURN_IF_ERROR(build_decode_jobs(items_, b.items, layout, areas, jobs));
  if (!gpu_.zstd_nvcomp && jobs.zstd.size() > 0) ZF_RETURN_IF_ERROR(prepare_zstd(jobs, b));
  report_.gpu_decoded += jobs.gpu_decoded;
  report_.cpu_decoded += jobs.cpu_decoded;
  report_.deduplicated += jobs.deduplicated;
  b.slot_item = jobs.slot_items();
  const JobTables tables(jobs);
  ZF_RETURN_IF_ERROR(allocate_tables(b, tables, jobs.slots()));

  // Copies up: compressed bytes, blocks the host has ready, chunks for the cache, tables.
  ZF_ASSIGN_OR_RETURN(b.t0, Event::create(true));
  ZF_ASSIGN_OR_RETURN(b.t1, Event::create(true));
  ZF_ASSIGN_OR_RETURN(b.t2, Event::create(true));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.t0.get(), b.stream));
  ZF_RETURN_IF_ERROR(copy_up(b, layout));
  if (opt_.cache != nullptr) ZF_RETURN_IF_ERROR(copy_into_gpu_cache(b));
  ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.d_tables.data(), b.h_tables.data(), tables.size(),
                                          cudaMemcpyHostToDevice, b.stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.t1.get(), b.stream));
  ZF_RETURN_IF_ERROR(launch_decoders(b, jobs, tables));
  ZF_ASSIGN_OR_RETURN(b.done, Event::create(true, /*sleeping=*/true));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.done.get(), b.stream));
  b.enqueued = true;
  return {};
}

Status ReadOp::allocate_device_areas(Batch& b, const OutputLayout& layout) {
  // Device staging mirrors the pinned staging, at its unshared size (batch_layout.h); fetch
  // allocated it already when bytes went up while the piece was read.
  const std::uint64_t staged = layout.any_staged ? std::max(layout.staged, b.staging.size()) : 1;
  if (b.d_staging.capacity() == 0) {
    ZF_ASSIGN_OR_RETURN(b.d_staging,
                        device_buffer(std::max<std::uint64_t>(staged, 1), "device staging", b));
  } else if (b.d_staging.capacity() < staged) {
    return internal_error("device staging of " + std::to_string(b.d_staging.capacity()) +
                          " bytes taken while reading, " + std::to_string(staged) + " needed");
  }
  if (layout.out) {
    ZF_ASSIGN_OR_RETURN(b.d_out, device_buffer(layout.out, "decoded chunks", b));
  }
  if (layout.shuffled) {
    ZF_ASSIGN_OR_RETURN(b.d_shuffled, device_buffer(layout.shuffled, "Blosc scratch", b));
  }
  if (layout.any_cpu_scatter) {  // CPU-decoded blocks that are scattered go up into d_cpu first
    ZF_ASSIGN_OR_RETURN(
        b.d_cpu, device_buffer(b.cpu_host.size(), "device copies of host-decoded blocks", b));
  }
  if (layout.staged > b.staging.capacity())
    return internal_error("staging overrun: " + std::to_string(layout.staged) + " bytes staged, " +
                          std::to_string(b.staging.capacity()) + " allocated");
  return {};
}

// The tables, packed into pinned memory, their device copy, and the pinned results: the status
// slots, then the NaN count of the transformed elements.
Status ReadOp::allocate_tables(Batch& b, const JobTables& tables, std::size_t nslots) {
  ZF_ASSIGN_OR_RETURN(b.h_tables, pinned_.acquire(tables.size()));
  tables.pack(b.h_tables.data());
  ZF_ASSIGN_OR_RETURN(b.d_tables, device_buffer(tables.size(), "job tables", b));
  ZF_ASSIGN_OR_RETURN(b.h_status,
                      pinned_.acquire(nans_offset(nslots) + sizeof(unsigned long long)));
  return {};
}

// The compressed bytes the GPU decodes (one copy), then each block the host has ready.
Status ReadOp::copy_up(Batch& b, const OutputLayout& layout) {
  const cudaStream_t stream = b.stream;
  const std::byte* staged = b.staging.data();
  if (b.uploaded.get() != nullptr)  // copies made while the piece was read (fetch)
    ZF_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, b.uploaded.get()));
  if (b.staged_uploaded) {  // the compressed chunks are up; uncompressed ones from staging go now
    for (std::size_t k = 0; k < b.items.size(); ++k) {
      const Item& it = items_[b.items[k]];
      if (!layout.items[k].from_staging || uploads_while_read(it)) continue;
      ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.d_staging.data() + it.staging_offset,
                                              staged + it.staging_offset, it.stored_size,
                                              cudaMemcpyHostToDevice, stream));
      report_.h2d_bytes += it.stored_size;
    }
  } else if (layout.any_staged) {  // only the GPU-decoded chunks' compressed bytes travel
    ZF_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(b.d_staging.data(), staged, layout.staged, cudaMemcpyHostToDevice, stream));
    report_.h2d_bytes += layout.staged;
  }
  for (std::size_t k = 0; k < b.items.size(); ++k) {
    const Item& it = items_[b.items[k]];
    const Placement& t = layout.items[k];
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
      if (b.copied_while_read[k]) continue;  // in place since it was read
      from = staged + it.staging_offset + it.payload.offset;
      to = t.enc_dest.data;
      bytes = it.payload.size;
    } else {
      continue;
    }
    ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(to, from, bytes, cudaMemcpyHostToDevice, stream));
    report_.h2d_bytes += bytes;
  }
  return {};
}

// Copies of the compressed bytes kept on the GPU, cached once the piece has decoded (finish).
Status ReadOp::copy_into_gpu_cache(Batch& b) {
  for (std::size_t idx : b.items) {
    const Item& it = items_[idx];
    if (it.mode != Mode::kGpu || it.cached || it.direct || it.dup_of >= 0 || it.cache_key.empty())
      continue;
    auto buf = device_.acquire(std::max<std::uint64_t>(it.stored_size, 1));
    if (!buf.ok()) break;  // no room: read these again next time
    ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(buf->data(), b.d_staging.data() + it.staging_offset,
                                            it.stored_size, cudaMemcpyDeviceToDevice, b.stream));
    auto c = std::make_shared<CachedChunk>();
    c->bytes = std::move(buf).value();
    c->stored_size = it.stored_size;
    c->payload = it.payload;
    c->blosc = it.blosc;
    b.to_cache.emplace_back(idx, std::move(c));
  }
  return {};
}

// The decoders in order (zstd: zarrflow's decoder or nvCOMP's; nvCOMP deflate and the checksums
// of what it inflated; zarrflow's streams; Blosc's un-shuffles), then the scatter, then the
// statuses and NaN count back to pinned memory.
Status ReadOp::launch_decoders(Batch& b, const DecodeJobs& jobs, const JobTables& tables) {
  const cudaStream_t stream = b.stream;
  std::byte* dt = b.d_tables.data();
  int* d_status = reinterpret_cast<int*>(dt + tables.status);
  const std::size_t nz = jobs.zstd.size();
  if (!jobs.zstd_frames.empty()) {
    auto* frames = reinterpret_cast<ZstdFrameJob*>(dt + tables.zstd_frames);
    const std::size_t per = jobs.zstd_frames_per_launch;
    for (std::size_t p = 0; p < nz; p += per) {  // launches sharing a scratch run in stream order
      ZF_RETURN_IF_ERROR(launch_with_retry("zarrflow's zstd kernels", [&]() -> Result<cudaError_t> {
        return launch_zstd_decode(frames + p, std::uint32_t(std::min(per, nz - p)),
                                  jobs.zstd.max_out, d_status, stream);
      }));
    }
  } else {
    ZF_RETURN_IF_ERROR(decode_nvcomp(NvcompAlgo::kZstd, jobs.zstd, tables.zstd, d_status, b));
  }
  ZF_RETURN_IF_ERROR(
      decode_nvcomp(NvcompAlgo::kDeflate, jobs.deflate, tables.deflate, d_status + nz, b));
  ZF_CUDA_RETURN_IF_ERROR(
      launch_verify_checksums(reinterpret_cast<const ChecksumJob*>(dt + tables.checksums),
                              std::uint32_t(jobs.checksums.size()), d_status + nz, stream));
  ZF_CUDA_RETURN_IF_ERROR(
      launch_decode_streams(reinterpret_cast<const StreamJob*>(dt + tables.streams),
                            std::uint32_t(jobs.streams.size()), d_status, stream));
  ZF_CUDA_RETURN_IF_ERROR(
      launch_unshuffle(reinterpret_cast<const UnshuffleJob*>(dt + tables.unshuffles),
                       std::uint32_t(jobs.unshuffles.size()), stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaEventRecord(b.t2.get(), stream));
  auto* d_nans = reinterpret_cast<unsigned long long*>(dt + tables.nans);
  ZF_CUDA_RETURN_IF_ERROR(
      launch_scatter(reinterpret_cast<const ScatterJob*>(dt + tables.scatters),
                     std::uint32_t(jobs.scatters.size()),
                     reinterpret_cast<const std::int64_t*>(dt + tables.tile_starts),
                     tables.total_tiles, tables.any_transform ? d_nans : nullptr, stream));
  const std::size_t nslots = jobs.slots();
  if (nslots > 0)
    ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.h_status.data(), d_status, nslots * sizeof(int),
                                            cudaMemcpyDeviceToHost, stream));
  ZF_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b.h_status.data() + nans_offset(nslots), d_nans,
                                          sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                          stream));
  return {};
}

// zarrflow's zstd decoder: one scratch for the piece's frames (zstd_jobs.h: their block plans,
// literals and sequences, about 3x the decoded bytes), shared with the lane's other pieces as
// nvCOMP's is, or for halves, quarters, ... of them launched one after another when the GPU
// cannot hold it (fit_scratch); the frames' jobs point into it.
Status ReadOp::prepare_zstd(DecodeJobs& jobs, Batch& b) {
  const NvcompJobs& z = jobs.zstd;
  const std::size_t n = z.size();
  std::vector<std::size_t> need(n);
  for (std::size_t i = 0; i < n; ++i) need[i] = zstd_scratch_bytes(z.src_bytes[i], z.capacity[i]);
  ScratchFit fit;
  fit.bytes = [&](std::size_t per) -> Result<std::size_t> {  // the most `per` frames in a row take
    std::size_t most = 0;
    for (std::size_t p = 0; p < n; p += per) {
      std::size_t sum = 0;
      for (std::size_t i = p; i < std::min(n, p + per); ++i) sum += need[i];
      most = std::max(most, sum);
    }
    return most;
  };
  fit.name = [](std::size_t per) { return "zstd scratch for " + std::to_string(per) + " frames"; };
  fit.launch_room = zstd_launch_memory();
  fit.split_note =
      "zarrflow's zstd scratch did not fit in the GPU's free memory: its launches were split";
  std::size_t bytes = 0;
  ZF_ASSIGN_OR_RETURN(const std::size_t per,
                      fit_scratch(n, fit, int(NvcompAlgo::kZstd), b, &bytes));
  GpuBuffer& scratch = *b.d_temp[int(NvcompAlgo::kZstd)];
  jobs.zstd_frames.reserve(n);
  jobs.zstd_frames_per_launch = per;
  std::byte* at = scratch.data();
  for (std::size_t i = 0; i < n; ++i) {
    if (i % per == 0) at = scratch.data();  // each launch's frames from the scratch's start
    jobs.zstd_frames.push_back(
        make_zstd_job(z.src[i], z.src_bytes[i], z.dst[i], z.capacity[i], std::uint32_t(i), at));
    at += need[i];
  }
  return {};
}

// Kernels need device memory of their own when they launch (local memory): an nvCOMP launch with
// a few tens of MB left failed with cudaErrorMemoryAllocation (docs/design_measurements.md, "64
// MB left free beside nvCOMP's scratch"). So a decoder's scratch must leave `room` free
// (kNvcompLaunchRoom, zstd_launch_memory()), after the pool's idle buffers went back.
bool ReadOp::launch_room(std::size_t room) {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return true;  // cannot tell: try
  }
  if (free >= room) return true;
  device_.trim();
  return cudaMemGetInfo(&free, &total) == cudaSuccess && free >= room;
}

Status ReadOp::launch_with_retry(const char* what,
                                 const std::function<Result<cudaError_t>()>& launch) {
  ZF_ASSIGN_OR_RETURN(cudaError_t e, launch());
  if (e == cudaErrorMemoryAllocation) {
    device_.trim();
    ZF_ASSIGN_OR_RETURN(e, launch());
  }
  if (e == cudaSuccess) return {};
  std::string why = cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation)
    why =
        "the GPU is full; the model's memory (PyTorch keeps what it frees in its cache) and "
        "zarrflow's share leave them no room: a lower zarrflow.set_gpu_memory_limit leaves more";
  return io_error(std::string(what) + " could not launch (" + cudaGetErrorName(e) + "): " + why);
}

// Scratch for all `jobs` in one call, or, when the GPU cannot hold it beside the launch's room
// even after the piece in flight has finished (device_buffer), for halves, quarters, ... decoded
// one after another: the scratch (~3x the decoded bytes for zstd) is what a full GPU can least
// afford. The lane's shared scratch of `slot` then holds *bytes, and b.d_temp[slot] holds it
// too. Returns the jobs per call.
Result<std::size_t> ReadOp::fit_scratch(std::size_t jobs, const ScratchFit& fit, int slot, Batch& b,
                                        std::size_t* bytes) {
  std::size_t per = jobs;
  auto& shared = nvcomp_temp_[{b.stream, slot}];
  for (;;) {
    ZF_ASSIGN_OR_RETURN(*bytes, fit.bytes(per));
    if (shared != nullptr && shared->capacity() >= *bytes) break;
    shared.reset();  // pieces still using the smaller one hold their own reference
    auto t = device_buffer(std::max<std::size_t>(*bytes, 1), fit.name(per), b,
                           /*wait=*/per == 1);
    if (t.ok() && (per == 1 || launch_room(fit.launch_room))) {
      shared = std::make_shared<GpuBuffer>(std::move(t).value());
      break;
    }
    if (per == 1) return t.status();
    if (t.ok()) {  // it fits, but leaves the launches no room: give it back to the driver
      { GpuBuffer drop = std::move(t).value(); }
      device_.trim();
    }
    per = (per + 1) / 2;
    note(fit.split_note);
  }
  b.d_temp[slot] = shared;
  return per;
}

// nvCOMP's scratch (fit_scratch), as its temp_size asks for the largest part's decoded bytes.
Result<std::size_t> ReadOp::fit_nvcomp_scratch(NvcompAlgo algo, const NvcompJobs& jobs, Batch& b,
                                               std::size_t* temp_bytes) {
  ScratchFit fit;
  fit.bytes = [&](std::size_t per) -> Result<std::size_t> {
    // decoded bytes of the largest part: at most `per` of the largest chunks
    const std::size_t largest = std::min(jobs.total_out, per * jobs.max_out);
    std::size_t temp = 0;
    ZF_RETURN_IF_ERROR(nvcomp_->temp_size(algo, per, jobs.max_out, largest, &temp, b.stream));
    return temp;
  };
  fit.name = [](std::size_t per) {
    return "nvCOMP scratch for " + std::to_string(per) + " compressed streams";
  };
  fit.launch_room = kNvcompLaunchRoom;
  fit.split_note = "nvCOMP's scratch did not fit in the GPU's free memory: its calls were split";
  return fit_scratch(jobs.size(), fit, int(algo), b, temp_bytes);
}

// One nvCOMP batch (its tables at `at` in the piece's device tables), in as many calls as its
// scratch allows, then the check of its output sizes.
Status ReadOp::decode_nvcomp(NvcompAlgo algo, const NvcompJobs& jobs, const JobTables::Nvcomp& at,
                             int* status, Batch& b) {
  if (jobs.size() == 0) return {};
  const std::size_t n = jobs.size();
  std::size_t temp_bytes = 0;
  ZF_ASSIGN_OR_RETURN(const std::size_t per, fit_nvcomp_scratch(algo, jobs, b, &temp_bytes));
  GpuBuffer& temp = *b.d_temp[int(algo)];
  std::byte* dt = b.d_tables.data();
  const cudaStream_t stream = b.stream;
  for (std::size_t p = 0; p < n; p += per) {
    const auto call = [&] {
      return nvcomp_->decompress(
          algo, reinterpret_cast<const void* const*>(dt + at.src) + p,
          reinterpret_cast<const std::size_t*>(dt + at.src_bytes) + p,
          reinterpret_cast<const std::size_t*>(dt + at.capacity) + p,
          reinterpret_cast<std::size_t*>(dt + at.actual) + p, std::min(per, n - p), temp.data(),
          temp_bytes, reinterpret_cast<void* const*>(dt + at.dst) + p, status + p, stream);
    };
    // nvCOMP does not check its launches: a kernel that could not launch (its local memory
    // did not fit on a GPU a model had filled) shows only as this thread's last error.
    ZF_RETURN_IF_ERROR(launch_with_retry("nvCOMP's kernels", [&]() -> Result<cudaError_t> {
      ZF_RETURN_IF_ERROR(call());
      if (cudaPeekAtLastError() != cudaErrorMemoryAllocation) return cudaSuccess;
      return cudaGetLastError();
    }));
  }
  ZF_CUDA_RETURN_IF_ERROR(launch_check_sizes(reinterpret_cast<const std::size_t*>(dt + at.actual),
                                             reinterpret_cast<const std::size_t*>(dt + at.capacity),
                                             status, std::uint32_t(n), stream));
  return {};
}

}  // namespace zarrflow::gpu
