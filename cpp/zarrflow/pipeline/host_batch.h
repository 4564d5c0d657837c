// A batch read into host memory (read_batch with a CPU target): every request read by the
// thread pool (a remote store's requests on its I/O pool), through its element transform when
// the batch is normalised, counted as the GPU reader counts (gpu/device_reader.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "zarrflow/core/buffer.h"
#include "zarrflow/pipeline/batch_recipe.h"
#include "zarrflow/pipeline/transform.h"
#include "zarrflow/zarr/array.h"

namespace zarrflow {

struct HostBatchReport {
  std::int64_t chunks = 0;       // leaf chunks read (inner chunks of shards count one each)
  std::int64_t missing = 0;      // filled with the fill value
  std::int64_t cpu_decoded = 0;  // decoded by the host threads: every stored chunk read
  // Stored chunks of requests that read what an earlier request of the batch read (the same
  // region of the same array through the same transform): copied from its destination instead.
  std::int64_t deduplicated = 0;
  std::uint64_t stored_bytes = 0;
  std::uint64_t nans = 0;  // NaN elements written by requests with an ElementTransform
};

// Reads `requests` (host destinations); `transforms` is empty or one per request. Each
// transformed request is read into a scratch block of the array's type (in the reading thread's
// cache) and transformed from there into its destination. A request for what an earlier one
// reads (same array, region and transform) copies that one's destination once it is read.
Status read_batch_on_host(std::span<const ReadRequest> requests,
                          std::span<const ElementTransform> transforms, ReadOptions options,
                          HostBatchReport* report);

// The loader's batches in host memory, each read by the calling worker (its chunks on `options`'
// pools) into a buffer of the maker's pool. A batch the consumer lets go returns its memory
// there, and the pool keeps up to `keep` batches' worth for the next ones: a fresh buffer per
// batch (9.4 GB at 71 channels) meant the worker faulting in new pages and the consumer's thread
// unmapping the old ones, every batch. A batch copied as stored (float32) counts its NaNs
// afterwards.
class HostBatchMaker : public BatchMaker {
 public:
  HostBatchMaker(BatchRecipe recipe, ReadOptions options, std::size_t keep = 4)
      : recipe_(std::move(recipe)),
        options_(options),
        keep_(keep),
        batches_(std::make_shared<BufferPool>(0)) {}
  Result<MadeBatch> make(const BatchJob& job, int worker, double host_share) override;
  // Bytes of batch memory kept for reuse.
  [[nodiscard]] std::size_t kept_bytes() const { return batches_->cached_bytes(); }

 private:
  const BatchRecipe recipe_;
  const ReadOptions options_;
  const std::size_t keep_;
  // Shared with the batches: one released after the maker is gone still finds its pool.
  std::shared_ptr<BufferPool> batches_;
};

}  // namespace zarrflow
