#include "zarrflow/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace zarrflow {

namespace {

// Lowers the calling thread's priority by `delta` (best effort: a refusal leaves it as it was).
void lower_priority(int delta) {
#ifdef __linux__
  if (delta <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(19, now + delta));
#else
  (void)delta;
#endif
}

// Keeps thread `t` on `cpus`; "" on success (or nothing asked), else why not.
std::string keep_on_cpus(std::thread& t, const std::vector<int>& cpus) {
  if (cpus.empty()) return "";
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) return "CPU " + std::to_string(c) + " is out of range";
    CPU_SET(c, &set);
  }
  if (const int rc = pthread_setaffinity_np(t.native_handle(), sizeof(set), &set); rc != 0)
    return std::string("pthread_setaffinity_np: ") + std::strerror(rc);
  return "";
#else
  (void)t;
  return "CPU placement needs Linux";
#endif
}

}  // namespace

ThreadPool::ThreadPool(std::size_t num_threads, int nice, std::vector<int> cpus)
    : nice_(std::max(0, nice)), cpus_(std::move(cpus)) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  requested_ = num_threads;
  // std::thread throws std::system_error when the kernel refuses a thread (EAGAIN: pids limit,
  // RLIMIT_NPROC, no address space for its stack); reserve() throws for absurd counts. Either
  // way the pool keeps the threads it has.
  try {
    threads_.reserve(num_threads);
    for (std::size_t i = 0; i < num_threads; ++i) {
      threads_.emplace_back([this] { worker_loop(); });
      if (std::string err = keep_on_cpus(threads_.back(), cpus_); cpu_error_.empty())
        cpu_error_ = std::move(err);
    }
  } catch (const std::exception& e) {
    start_error_ = e.what();
    if (start_error_.empty()) start_error_ = "thread creation failed";
  }
}

ThreadPool::~ThreadPool() {
  if (threads_.empty()) return;  // no threads to stop (none started, or a forked child)
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::forget_threads_after_fork() noexcept {
  // Leaked, never joined nor destroyed: the threads do not exist here (destroying a joinable
  // std::thread terminates), and the queued jobs are the parent's work. cv_ is made anew over
  // the old one, not destroyed: the parent's waiters are counted in it, and destroying a
  // condition variable waits for its waiters (glibc), forever here.
  (void)new std::vector<std::thread>(std::move(threads_));
  (void)new std::deque<std::function<void()>>(std::move(queue_));
  threads_.clear();
  queue_.clear();
  std::construct_at(&cv_);
}

void ThreadPool::submit(std::function<void()> fn) {
  if (threads_.empty()) {
    if (!run_guarded(fn).ok()) ++failed_jobs_;
    return;
  }
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void ThreadPool::worker_loop() {
  lower_priority(nice_);
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_.native());
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    // An exception leaving a thread function would std::terminate the process.
    if (!run_guarded(job).ok()) ++failed_jobs_;
  }
}

namespace {

// Shared between the caller and the helper jobs of one parallel_for. Helpers hold a shared_ptr,
// so a helper that is dequeued after the loop finished finds nothing to claim and exits.
struct LoopState {
  std::size_t n = 0;
  const std::function<Status(std::size_t)>* fn = nullptr;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::condition_variable done_cv;
  std::size_t finished = 0;  // items completed or skipped, under mu
  Status first_error;

  // Claims and runs items until none are left. Returns when this thread can claim no more.
  void run_items() {
    for (;;) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      Status s;
      if (!failed.load(std::memory_order_relaxed)) s = run_guarded([&] { return (*fn)(i); });
      std::lock_guard lock(mu);
      if (!s.ok() && first_error.ok()) {
        first_error = std::move(s);
        failed.store(true, std::memory_order_relaxed);
      }
      if (++finished == n) done_cv.notify_all();
    }
  }
};

Status run_serially(std::size_t n, const std::function<Status(std::size_t)>& fn) {
  for (std::size_t i = 0; i < n; ++i) ZF_RETURN_IF_ERROR(run_guarded([&] { return fn(i); }));
  return {};
}

}  // namespace

Status ThreadPool::parallel_for(std::size_t n, const std::function<Status(std::size_t)>& fn,
                                std::size_t max_parallel) {
  if (n == 0) return {};
  if (max_parallel == 0) max_parallel = threads_.size() + 1;
  if (n == 1 || max_parallel == 1 || threads_.empty()) return run_serially(n, fn);
  std::shared_ptr<LoopState> state;
  try {
    state = std::make_shared<LoopState>();
  } catch (...) {
    return run_serially(n, fn);  // no memory for the shared state: the caller does it all
  }
  state->n = n;
  state->fn = &fn;  // valid until this call returns, which waits for every claimed item
  // Helpers that could not be queued (no memory) are simply not there: the caller and the
  // helpers already queued claim every item.
  const std::size_t helpers = std::min({n - 1, threads_.size(), max_parallel - 1});
  try {
    for (std::size_t h = 0; h < helpers; ++h) submit([state] { state->run_items(); });
  } catch (...) {
  }
  state->run_items();
  // Every item has been claimed once run_items returns; wait for those other threads run. A
  // helper dequeued later finds nothing to claim and touches only `state`, which it co-owns.
  std::unique_lock lock(state->mu);
  state->done_cv.wait(lock, [&] { return state->finished == n; });
  return std::move(state->first_error);
}

Status parallel_for(ThreadPool* pool, std::size_t n, const std::function<Status(std::size_t)>& fn) {
  if (pool != nullptr) return pool->parallel_for(n, fn);
  return run_serially(n, fn);
}

}  // namespace zarrflow
