// The loader's engine: batches made ahead of the consumer on a few worker threads, handed out in
// order.
//
// The consumer submits passes (a pass: the ordered batches of one epoch on this rank) and takes
// their batches in order. `workers` threads make them with a BatchMaker (on a GPU each worker
// reads on its own CUDA stream, so one batch's host work overlaps another's GPU work). Over all
// passes together at most `depth` batches are started and not yet taken (the memory of batches
// in flight) and at most `workers` are being made: the loader submits the next epoch's pass as
// soon as the current one has started its last batch, and reading ahead across the boundary
// never holds more than one pass would. Passes start in the order they were submitted.
//
// A batch's error is returned to the consumer at that batch's position, and no batch of its
// pass starts after it. A pass can be dropped (a wrongly guessed next epoch): its finished
// batches go at once, the ones being made when they are done, and nothing waits for them.
// close() stops the workers (each finishes the batch it is making) and joins them; the
// destructor closes. Neither waits for threads of another process: in a child forked while the
// engine ran they do not exist there, and the engine's state is left as it is (its locks may be
// held by threads that are gone).
//
// The workers are C++ threads that never take Python's GIL (unless a codec written in Python
// runs). Times are seconds of clock() (the monotonic clock: Python's time.perf_counter on Linux).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "zarrflow/core/dtype.h"
#include "zarrflow/core/status.h"
#include "zarrflow/core/strided.h"
#include "zarrflow/pipeline/decode_balance.h"
#include "zarrflow/pipeline/gpu/read_report.h"

namespace zarrflow {

// One batch of a pass: its samples (ids, for messages), their time indices and window origins
// (samples x spatial dims, row-major).
struct BatchJob {
  std::vector<std::int64_t> samples, times, origins;
};

// What a worker's batch is: memory, what it holds, and how it was read.
struct MadeBatch {
  std::shared_ptr<void> memory;  // owns the data: host memory, or a block of a device pool
  void* data = nullptr;
  Shape shape;
  DataType dtype;
  int device = -1;  // the CUDA device holding it; -1: host memory
  gpu::DeviceReadReport report;
  double read_end = 0;      // when its chunks were in the batch (clock())
  bool pools_grew = false;  // zarrflow's pools allocated while it was made (when watched)
};

class BatchMaker {
 public:
  virtual ~BatchMaker() = default;
  // Makes `job` on worker `worker` (each worker calls from its own thread), leaving `host_share`
  // of the GPU-decodable chunks to the host threads.
  virtual Result<MadeBatch> make(const BatchJob& job, int worker, double host_share) = 0;
};

// A batch as the consumer takes it, with when and how it was made and taken.
struct TakenBatch {
  MadeBatch batch;
  int worker = 0;
  double start = 0, end = 0;  // made from start to end (batch.read_end between)
  double share = 0;           // the host share it was made with
  double asked = 0, taken = 0;
  long ready = 0;            // batches of its pass finished when the consumer asked
  bool judged = false;       // offered to the decode balance as a settled batch
  bool all_started = false;  // every batch of its pass has been started
};

struct BatchEngineOptions {
  int workers = 2;
  int depth = 3;            // batches started and not taken, over all passes
  double host_share = 0.0;  // without a balance
  // Steers the host share: asked at each batch's start, told of each batch taken (the first
  // batches of a pass nobody read ahead and batches made while the pools grew are not settled).
  std::shared_ptr<DecodeBalance> balance;
};

class BatchEngine {
 public:
  using PassId = std::uint64_t;

  // Starts the workers (fewer when the operating system refuses threads: at least one).
  static Result<std::unique_ptr<BatchEngine>> create(std::shared_ptr<BatchMaker> maker,
                                                     const BatchEngineOptions& options);
  ~BatchEngine();
  BatchEngine(const BatchEngine&) = delete;
  BatchEngine& operator=(const BatchEngine&) = delete;

  // Queues a pass behind the ones already queued. `read_ahead`: submitted before the consumer
  // wanted it (the next epoch), so its first batches' waits are settled.
  PassId submit(std::vector<BatchJob> jobs, bool read_ahead);

  enum class Outcome { kBatch, kPassEnded, kClosed };
  struct Taken {
    Outcome outcome = Outcome::kClosed;  // kClosed: the pass was dropped, or the engine closed
    TakenBatch batch;
  };
  // The pass's next batch once it is made (waits), its error at its position, or kPassEnded.
  Result<Taken> take(PassId pass);
  // Drops the pass and its batches; unknown passes are ignored.
  void drop(PassId pass);
  void close();
  // Not closed, and made by this process (not a forked child's copy). Takes no lock.
  bool open() const;

  struct PassCounts {
    std::size_t size = 0, started = 0, ready = 0, taken = 0;
  };
  PassCounts counts(PassId pass) const;  // zeros for an unknown pass
  std::size_t in_flight() const;         // started and not taken, over all passes
  std::size_t producing() const;
  int idle_workers() const;  // waiting for a batch to start
  int live_workers() const;
  int workers() const { return workers_; }

  static double clock();

 private:
  struct Shared;
  BatchEngine(std::shared_ptr<BatchMaker> maker, const BatchEngineOptions& options);
  void work(int worker);

  std::unique_ptr<Shared> s_;
  int workers_ = 0;
  long pid_ = 0;
  std::atomic<bool> closed_{false};
  std::vector<std::thread> threads_;
};

}  // namespace zarrflow
