#include "zarrflow/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>

#ifdef __linux__
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

}  // namespace

ThreadPool::ThreadPool(std::size_t num_threads, int nice) : nice_(std::max(0, nice)) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  threads_.reserve(num_threads);
  for (std::size_t i = 0; i < num_threads; ++i) threads_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::submit(std::function<void()> fn) {
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
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
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
      if (!failed.load(std::memory_order_relaxed)) s = (*fn)(i);
      std::lock_guard lock(mu);
      if (!s.ok() && first_error.ok()) {
        first_error = std::move(s);
        failed.store(true, std::memory_order_relaxed);
      }
      if (++finished == n) done_cv.notify_all();
    }
  }
};

}  // namespace

Status ThreadPool::parallel_for(std::size_t n, const std::function<Status(std::size_t)>& fn,
                                std::size_t max_parallel) {
  if (n == 0) return {};
  if (max_parallel == 0) max_parallel = threads_.size() + 1;
  if (n == 1 || max_parallel == 1) {
    for (std::size_t i = 0; i < n; ++i) ZF_RETURN_IF_ERROR(fn(i));
    return {};
  }
  auto state = std::make_shared<LoopState>();
  state->n = n;
  state->fn = &fn;  // valid until this call returns, which waits for every claimed item
  const std::size_t helpers = std::min({n - 1, threads_.size(), max_parallel - 1});
  for (std::size_t h = 0; h < helpers; ++h) submit([state] { state->run_items(); });
  state->run_items();
  std::unique_lock lock(state->mu);
  state->done_cv.wait(lock, [&] { return state->finished == n; });
  return std::move(state->first_error);
}

Status parallel_for(ThreadPool* pool, std::size_t n, const std::function<Status(std::size_t)>& fn) {
  if (pool != nullptr) return pool->parallel_for(n, fn);
  for (std::size_t i = 0; i < n; ++i) ZF_RETURN_IF_ERROR(fn(i));
  return {};
}

}  // namespace zarrflow
