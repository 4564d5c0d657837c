// One GPU read (DeviceReader::read_many) from plan to checked results (CUDA builds only; an
// internal header of device_reader_cuda.cc and the read_op_*_cuda.cc files).
//
//   plan      read_plan.h: leaf chunks, duplicates, decoders, cache hits, sizes, pieces
//   per piece, pipelined (the host fetches piece i+1 while the GPU copies and decodes the pieces
//   before it, each on its own lane: read_lanes.h):
//     fetch     stored bytes into pinned staging (or converted while read, or cuFile); as they
//               arrive, compressed chunks go up to device staging and uncompressed whole chunks
//               into their destination, on the read's copy lane
//               (chunks the plan gives the host are decoded by the thread that read them)
//     prepare   host checks before any GPU decoder sees the bytes; the rest of the host decoding
//     enqueue   device buffers, job tables, copies up, nvCOMP calls and kernels on the piece's
//               lane, one event
//     finish    wait for the event, check the statuses, keep chunks in the caches, decode what
//               the GPU rejected on the host (which names the error or recovers the data)
// Thread-safety: one ReadOp per read, on one thread (it runs its per-item work on the pools).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/pipeline/gpu/decode_jobs.h"
#include "zarrflow/pipeline/gpu/device_reader.h"
#include "zarrflow/pipeline/gpu/host_work.h"
#include "zarrflow/pipeline/gpu/read_lanes.h"
#include "zarrflow/pipeline/gpu/read_plan.h"
#include "zarrflow/pipeline/gpu/staged_uploads.h"
#include "zarrflow/store/gpu/cufile.h"

namespace zarrflow::gpu {

// Everything one piece owns until its GPU work has finished and its statuses were checked.
struct Batch {
  std::vector<std::size_t> items;  // indices into the read's items
  cudaStream_t stream = nullptr;   // the read's lane its GPU work goes to
  GpuBuffer staging;               // pinned compressed bytes
  GpuBuffer cpu_host;              // pinned CPU-decoded blocks
  // Pinned blocks the host normalised and cast (Item::host_tf): uncompressed chunks converted
  // as they were read (fetch), CPU-decoded blocks (prepare).
  GpuBuffer host_read, host_out;
  GpuBuffer d_staging, d_direct, d_cpu, d_out, d_shuffled, d_tables;
  // nvCOMP's scratch, shared with the other pieces of its lane (ReadOp::nvcomp_temp_): held here
  // until this piece's work is done, so a larger replacement never frees it under a kernel.
  // zarrflow's zstd decoder keeps its scratch in the kZstd entry the same way.
  std::shared_ptr<GpuBuffer> d_temp[4];  // by NvcompAlgo
  GpuBuffer h_tables, h_status;          // pinned
  std::vector<std::uint32_t> slot_item;  // status slot → item index
  Event done;
  Event t0, t1, t2;  // timing: before the copies up, after them, after decoding
  // Copies made while the piece was read (ReadOp::fetch, on the read's copy lane): `uploaded`
  // follows the last of them, and the lane waits for it. `staged_uploaded`: the compressed
  // chunks' bytes are in device staging; `copied_while_read[k]`: item k (of `items`) is in its
  // destination already.
  Event uploaded;
  bool staged_uploaded = false;
  std::vector<std::uint8_t> copied_while_read;
  // The host-decoded blocks (cpu_host, host_out) are laid out when the piece is read, for the
  // items the plan gives the host (`host_laid_out[k]`), and each is decoded by the thread that
  // read it (`decoded_while_read[k]`); prepare lays them out again if the host checks changed
  // which items the host decodes.
  std::vector<std::uint8_t> host_laid_out, decoded_while_read;
  // Chunks to add to the GPU cache once this piece has completed (and decoded without error).
  std::vector<std::pair<std::size_t, std::shared_ptr<CachedChunk>>> to_cache;
  bool enqueued = false;
};

// Where the host put an Item::host_tf item's converted block: uncompressed chunks (still kGpu)
// were converted while fetched, CPU-decoded blocks after decoding.
inline std::byte* converted_block(Batch& b, const Item& it) {
  return (it.mode == Mode::kCpu ? b.host_out : b.host_read).data() + it.host_tf_offset;
}

// Milliseconds since `t0` (host wall clock).
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

class ReadOp {
 public:
  ReadOp(const DeviceReadOptions& opt, DeviceReadReport& report, GpuMemoryPool& pinned,
         GpuMemoryPool& device, StreamLender& lender, int streams)
      : opt_(opt),
        report_(report),
        pinned_(pinned),
        device_(device),
        lender_(lender),
        streams_(streams) {}
  // A read that failed part-way may still have copies and kernels running on the stream over
  // the buffers its pieces are about to give back to the pools, where another read (another
  // loader worker) would take them at once: a kernel reading job tables rewritten under it
  // faults (an illegal address, seen in training). So they are released only after the lanes
  // have drained.
  ~ReadOp();
  ReadOp(const ReadOp&) = delete;
  ReadOp& operator=(const ReadOp&) = delete;

  Status run(std::span<const DeviceReadRequest> requests);

 private:
  // read_op_plan_cuda.cc
  Status plan(std::span<const DeviceReadRequest> requests);
  Status take_lanes();
  void look_up_caches();
  PieceBounds piece_bounds() const;
  // The latency-bound decoder that sets this read's lanes and pieces: nvCOMP where it decodes
  // some of the chunks (deflate; zstd where it takes zstd), else zarrflow's zstd decoder where
  // the read has zstd chunks.
  bool nvcomp_decodes() const;
  bool zarrflow_zstd_decodes() const;
  // read_op_cuda.cc
  Status fetch(Batch& b);
  Status fetch_item(Item& it, Batch& b, const CuFile* cufile,
                    std::atomic<std::uint64_t>& converted_nans,
                    std::atomic<std::int64_t>& direct_reads);
  std::vector<StagedUploads::Slot> upload_slots(
      const Batch& b, std::span<const std::pair<std::uint64_t, std::uint64_t>> staged) const;
  struct EarlyCopy {
    std::byte* to;
    const std::byte* from;
    std::uint64_t bytes;
  };
  Status copy_while_read(std::span<const EarlyCopy> copies, int device);
  void count_fetched(const Batch& b);
  Status prepare(Batch& b);
  Status check_on_host(Batch& b);
  // The host checks' and host decoding's threads.
  ThreadPool* host_pool() const {
    return opt_.decode_pool != nullptr ? opt_.decode_pool : opt_.pool;
  }
  Status lay_out_host_area(Batch& b);
  Status decode_host_block(Batch& b, Item& it);
  Status decode_on_host_threads(Batch& b);
  Status finish(Batch& b);
  void record_timings(Batch& b);
  std::map<std::uint32_t, int> failed_items(const Batch& b) const;
  void keep_in_caches(Batch& b, const std::map<std::uint32_t, int>& failed);
  Status recover_on_host(const Item& it, const std::byte* staged);
  // read_op_enqueue_cuda.cc
  Status enqueue(Batch& b);
  Status allocate_device_areas(Batch& b, const OutputLayout& layout);
  Status allocate_tables(Batch& b, const JobTables& tables, std::size_t nslots);
  Status copy_up(Batch& b, const OutputLayout& layout);
  Status copy_into_gpu_cache(Batch& b);
  Status launch_decoders(Batch& b, const DecodeJobs& jobs, const JobTables& tables);
  Status decode_nvcomp(NvcompAlgo algo, const NvcompJobs& jobs, const JobTables::Nvcomp& at,
                       int* status, Batch& b);
  // A decoder's scratch as fit_scratch sizes it: its bytes for `per` jobs a call, its name for
  // errors, the memory its launch needs beside it, and the note when its calls were split.
  struct ScratchFit {
    std::function<Result<std::size_t>(std::size_t per)> bytes;
    std::function<std::string(std::size_t per)> name;
    std::size_t launch_room = 0;
    const char* split_note = "";
  };
  Result<std::size_t> fit_scratch(std::size_t jobs, const ScratchFit& fit, int slot, Batch& b,
                                  std::size_t* bytes);
  Result<std::size_t> fit_nvcomp_scratch(NvcompAlgo algo, const NvcompJobs& jobs, Batch& b,
                                         std::size_t* temp_bytes);
  bool launch_room(std::size_t room);
  // Runs `launch` (kernels that only read their inputs; it returns their launch's error) and,
  // when the GPU could not give the kernels their local memory, once more after the pool's
  // idle memory went back to the driver. `what` names the kernels in the error.
  Status launch_with_retry(const char* what, const std::function<Result<cudaError_t>()>& launch);
  Status prepare_zstd(DecodeJobs& jobs, Batch& b);

  Status finish_oldest();
  void note(const std::string& why);
  Result<GpuBuffer> device_buffer(std::uint64_t size, std::string_view what, const Batch& b,
                                  bool wait = true);

  const DeviceReadOptions& opt_;
  DeviceReadReport& report_;
  GpuMemoryPool& pinned_;
  GpuMemoryPool& device_;
  StreamLender& lender_;
  int streams_;          // asked for; take_lanes() decides how many the read uses
  ReadLanes lanes_;      // destroyed after the pieces below: given back once they are done
  ReadLanes copy_lane_;  // one stream: the copies made while a piece is read
  std::vector<Item> items_;
  ChainPrograms programs_;
  std::set<std::string> noted_;
  std::mutex mu_;
  GpuDecoders gpu_;  // what the GPU decodes in this read
  const Nvcomp* nvcomp_ = nullptr;
  // nvCOMP's scratch, one per lane and algorithm, shared by the pieces of that lane: their calls
  // run one after another on its stream. nvCOMP's zstd asks for 3.05x the decoded bytes of a
  // call (9 GB for a 2 GB piece of zstd chunks); one per piece in flight was the largest
  // allocation a 71-channel loader made. Reads of zstd and deflate chunks keep one lane
  // (take_lanes), but Blosc chunks of zstd or zlib blocks call nvCOMP from every lane, side by
  // side: one scratch for two lanes faulted (cudaErrorIllegalAddress).
  std::map<std::pair<cudaStream_t, int>, std::shared_ptr<GpuBuffer>> nvcomp_temp_;
  Event last_done_;  // the previous piece's end on the GPU, for report_.gpu_idle_ms
  // The pieces whose GPU work may still run while the next one is fetched and enqueued (oldest
  // first), and the one being fetched and enqueued (members, not locals: see ~ReadOp).
  std::deque<Batch> in_flight_;
  std::optional<Batch> filling_;
  bool settled_ = false;  // run() finished every piece it enqueued
};

// An allocation for piece `b`; a failure says what it was for and how big the piece was (an
// out-of-memory error alone does not tell a user which setting to change).
Result<GpuBuffer> named(Result<GpuBuffer> r, std::string_view what, const Batch& b);

}  // namespace zarrflow::gpu
