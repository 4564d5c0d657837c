#include "zarrflow/core/fork_safe_mutex.h"

#include <utility>
#include <vector>

#include <pthread.h>

namespace zarrflow {

// The registered mutexes. Leaked: the fork handlers may run during or after static destruction
// (a fork from an atexit handler, another library's destructor).
struct ForkRegistry {
  std::mutex mu;  // guards `members`; held from prepare to parent/child
  std::vector<ForkSafeMutex*> members;

  static ForkRegistry& get() {
    static ForkRegistry* registry = new ForkRegistry;
    return *registry;
  }

  static void prepare() {
    ForkRegistry& r = get();
    r.mu.lock();
    for (ForkSafeMutex* m : r.members) m->mu_.lock();
  }

  static void parent() {
    ForkRegistry& r = get();
    for (ForkSafeMutex* m : r.members) m->mu_.unlock();
    r.mu.unlock();
  }

  // The only thread of the child: it unlocks what the parent's forking thread locked (std::mutex
  // is not error-checking, so the owner's id does not matter).
  static void child() {
    ForkRegistry& r = get();
    for (ForkSafeMutex* m : r.members)
      if (m->in_child_) m->in_child_();
    for (ForkSafeMutex* m : r.members) m->mu_.unlock();
    r.mu.unlock();
  }
};

ForkSafeMutex::ForkSafeMutex(std::function<void()> in_child) : in_child_(std::move(in_child)) {
  ForkRegistry& r = ForkRegistry::get();
  static std::once_flag installed;
  // Fails only for want of memory; forks are then as unsafe as with a plain std::mutex.
  std::call_once(installed, [] {
    pthread_atfork(ForkRegistry::prepare, ForkRegistry::parent, ForkRegistry::child);
  });
  std::lock_guard lock(r.mu);
  r.members.push_back(this);
}

ForkSafeMutex::~ForkSafeMutex() {
  ForkRegistry& r = ForkRegistry::get();
  std::lock_guard lock(r.mu);
  std::erase(r.members, this);
}

}  // namespace zarrflow
