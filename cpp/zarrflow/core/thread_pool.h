// A fixed-size thread pool with a caller-participating parallel_for.
//
// parallel_for(n, fn) runs fn(0..n-1) on the pool *and* on the calling thread. Because the caller
// works through items itself and only waits for items other threads have already started, a
// parallel_for issued from inside a pool task (a shard's inner chunks inside a chunk task) can
// never deadlock, however small the pool. The first failing Status stops further items from
// starting and is returned.
// Exceptions: none leaves a pool thread or parallel_for. An item that throws fails like an item
// returning an error (std::bad_alloc → kResourceExhausted, others → kInternal), and parallel_for
// returns only after every item another thread claimed has finished, so `fn` and what it refers
// to in the caller's frame outlive every use.
// Thread start failure: where the operating system refuses threads (a pids limit, `ulimit -u`,
// `ulimit -v` too small for the stacks), the pool runs with those it got: size() is the true
// count, start_error() says why it is short. Zero threads work too: parallel_for then runs
// everything on the caller, submit() runs the job at once.
// Fork: a child forked while the pool ran keeps the pool without threads: everything runs on the
// calling thread.
// Lifetime: the pool joins its threads on destruction; it must outlive every call into it.
// CPU placement: a pool given `cpus` keeps its threads on those CPUs (Linux; a refusal, e.g. a
// CPU outside the process's cgroup, leaves a thread where it was and cpu_error() says why). A
// loader's rank then decodes on the CPUs next to its GPU instead of every rank's threads
// spreading over every socket.
// Thread-safety: all methods may be called from any thread, including pool threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "zarrflow/core/fork_safe_mutex.h"
#include "zarrflow/core/status.h"

namespace zarrflow {

class ThreadPool {
 public:
  // `num_threads` == 0 means std::thread::hardware_concurrency(). `nice` > 0 lowers the pool
  // threads' scheduling priority by that much (Linux niceness; elsewhere ignored): decoding for
  // a loader then yields the cores to the thread that drives the GPU when both want one.
  // `cpus` (CPU numbers; empty = wherever the scheduler puts them) bounds where the threads run.
  explicit ThreadPool(std::size_t num_threads = 0, int nice = 0, std::vector<int> cpus = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Threads running (fewer than requested() when the operating system refused some).
  [[nodiscard]] std::size_t size() const { return threads_.size(); }
  [[nodiscard]] std::size_t requested() const { return requested_; }
  // Why size() < requested(): the error starting the next thread gave; "" when all started.
  [[nodiscard]] const std::string& start_error() const { return start_error_; }
  [[nodiscard]] int nice() const { return nice_; }
  [[nodiscard]] const std::vector<int>& cpus() const { return cpus_; }
  // Why a thread could not be kept on cpus() (the first refusal); "" when none was refused.
  [[nodiscard]] const std::string& cpu_error() const { return cpu_error_; }
  // Submitted jobs that ended by throwing (the exception is dropped there, not propagated).
  [[nodiscard]] std::size_t failed_jobs() const { return failed_jobs_.load(); }

  // Runs `fn` on a pool thread some time later (at once on the caller when the pool has no
  // threads).
  void submit(std::function<void()> fn);

  // Runs fn(i) for i in [0, n) using at most `max_parallel` threads in total (0 = pool size + 1,
  // counting the caller). Returns the first error; items not yet started when it occurred are
  // skipped. Never throws.
  Status parallel_for(std::size_t n, const std::function<Status(std::size_t)>& fn,
                      std::size_t max_parallel = 0);

 private:
  void worker_loop();
  // In a forked child (from the fork handler, mu_ held): the threads are the parent's.
  void forget_threads_after_fork() noexcept;

  std::size_t requested_ = 0;
  std::string start_error_;
  int nice_ = 0;
  std::vector<int> cpus_;
  std::string cpu_error_;
  std::atomic<std::size_t> failed_jobs_{0};
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  // Last: registered (and so seen by the fork handlers) only while the members above exist.
  ForkSafeMutex mu_{[this] { forget_threads_after_fork(); }};
};

// Runs fn(0..n-1) on `pool`, or serially on the caller when pool is null (exceptions from fn
// become errors there too).
Status parallel_for(ThreadPool* pool, std::size_t n, const std::function<Status(std::size_t)>& fn);

}  // namespace zarrflow
