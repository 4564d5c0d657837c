// A fixed-size thread pool with a caller-participating parallel_for.
//
// parallel_for(n, fn) runs fn(0..n-1) on the pool *and* on the calling thread. Because the caller
// works through items itself and only waits for items other threads have already started, a
// parallel_for issued from inside a pool task (a shard's inner chunks inside a chunk task) can
// never deadlock, however small the pool. The first failing Status stops further items from
// starting and is returned.
// Lifetime: the pool joins its threads on destruction; it must outlive every call into it.
// Thread-safety: all methods may be called from any thread, including pool threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow {

class ThreadPool {
 public:
  // `num_threads` == 0 means std::thread::hardware_concurrency(). `nice` > 0 lowers the pool
  // threads' scheduling priority by that much (Linux niceness; elsewhere ignored): decoding for
  // a loader then yields the cores to the thread that drives the GPU when both want one.
  explicit ThreadPool(std::size_t num_threads = 0, int nice = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  [[nodiscard]] std::size_t size() const { return threads_.size(); }
  [[nodiscard]] int nice() const { return nice_; }

  // Runs `fn` on a pool thread some time later.
  void submit(std::function<void()> fn);

  // Runs fn(i) for i in [0, n) using at most `max_parallel` threads in total (0 = pool size + 1,
  // counting the caller). Returns the first error; items not yet started when it occurred are
  // skipped.
  Status parallel_for(std::size_t n, const std::function<Status(std::size_t)>& fn,
                      std::size_t max_parallel = 0);

 private:
  void worker_loop();

  int nice_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Runs fn(0..n-1) on `pool`, or serially on the caller when pool is null.
Status parallel_for(ThreadPool* pool, std::size_t n, const std::function<Status(std::size_t)>& fn);

}  // namespace zarrflow
