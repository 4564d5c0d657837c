// A std::mutex that a forked child inherits unlocked.
//
// fork() copies only the thread that calls it. A mutex that another thread held at that moment
// stays locked for good in the child, where its owner does not exist, and the child's first use
// of it hangs (a DataLoader worker forked while zarrflow's threads were busy). Each ForkSafeMutex
// is registered process-wide; pthread_atfork handlers lock every registered mutex before the fork
// (so none is held halfway through an update) and unlock them all after it, in the parent and in
// the child. In the child, each mutex's `in_child` callback runs first, while the mutex is still
// held: there its owner drops state that belongs to the parent's threads.
//
// The rule for using it: only leaf locks. Code holding a ForkSafeMutex takes no other one, waits
// for nothing that may wait for one, constructs or destroys none, and does not fork. The prepare
// handler locks them all in no particular order; that cannot deadlock only because a thread that
// holds one never waits for another.
// Thread-safety: like std::mutex; construction and destruction may race with fork() and with
// each other.
#pragma once

#include <functional>
#include <mutex>

namespace zarrflow {

class ForkSafeMutex {
 public:
  // `in_child` runs in a forked child, before the mutex is unlocked there (from the fork handler,
  // with every ForkSafeMutex held: it must not lock one).
  explicit ForkSafeMutex(std::function<void()> in_child = {});
  ~ForkSafeMutex();
  ForkSafeMutex(const ForkSafeMutex&) = delete;
  ForkSafeMutex& operator=(const ForkSafeMutex&) = delete;

  void lock() { mu_.lock(); }
  void unlock() { mu_.unlock(); }
  bool try_lock() { return mu_.try_lock(); }
  // For std::condition_variable, which waits on a std::unique_lock<std::mutex>.
  std::mutex& native() { return mu_; }

 private:
  friend struct ForkRegistry;
  std::mutex mu_;
  std::function<void()> in_child_;
};

}  // namespace zarrflow
