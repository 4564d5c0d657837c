#include "zarrflow/core/fork_safe_mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "zarrflow/core/fork_test_util.h"

namespace zarrflow {
namespace {

using fork_test::in_forked_child;

// Another thread holds the mutex most of the time; whenever the fork comes, the child can lock
// it (a plain std::mutex would mostly be locked for good there).
TEST(ForkSafeMutex, HeldByAnotherThreadAtTheForkIsFreeInTheChild) {
  ForkSafeMutex mu;
  std::atomic<bool> stop{false}, held{false};
  std::thread holder([&] {
    while (!stop) {
      {
        std::lock_guard lock(mu);
        held = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      // Not at once again: the fork handler waiting for the mutex gets its turn.
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  while (!held) std::this_thread::yield();
  for (int round = 0; round < 20; ++round) {
    EXPECT_EQ(in_forked_child([&] {
                if (!mu.try_lock()) return 1;
                mu.unlock();
                mu.lock();
                mu.unlock();
                return 0;
              }),
              "exit 0")
        << "round " << round;
  }
  stop = true;
  holder.join();
}

TEST(ForkSafeMutex, InChildCallbackRunsOnlyInTheChild) {
  std::atomic<int> calls{0};
  {
    ForkSafeMutex gone([&] { calls += 100; });
  }  // unregistered: never called
  ForkSafeMutex mu([&] { ++calls; });
  EXPECT_EQ(in_forked_child([&] {
              if (calls.load() != 1) return 1;
              std::lock_guard lock(mu);
              return 0;
            }),
            "exit 0");
  EXPECT_EQ(calls.load(), 0);
  std::lock_guard lock(mu);  // the parent's copy is unlocked again too
}

// A child of a child: the handlers work in the child as in any process.
TEST(ForkSafeMutex, WorksInAChildsChild) {
  ForkSafeMutex mu;
  EXPECT_EQ(in_forked_child([&] {
              const std::string inner = in_forked_child([&] { return mu.try_lock() ? 0 : 1; });
              return inner == "exit 0" ? 0 : 1;
            }),
            "exit 0");
}

}  // namespace
}  // namespace zarrflow
