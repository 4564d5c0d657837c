// A batch read into host memory (read_batch with a CPU target): every request read by the
// thread pool (a remote store's requests on its I/O pool), through its element transform when
// the batch is normalised, counted as the GPU reader counts (gpu/device_reader.h).
#pragma once

#include <cstdint>
#include <span>

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

// The loader's batches in host memory: each read into a new buffer by the calling worker (its
// chunks on `options`' pools). A batch copied as stored (float32) counts its NaNs afterwards.
class HostBatchMaker : public BatchMaker {
 public:
  HostBatchMaker(BatchRecipe recipe, ReadOptions options)
      : recipe_(std::move(recipe)), options_(options) {}
  Result<MadeBatch> make(const BatchJob& job, int worker, double host_share) override;

 private:
  const BatchRecipe recipe_;
  const ReadOptions options_;
};

}  // namespace zarrflow
