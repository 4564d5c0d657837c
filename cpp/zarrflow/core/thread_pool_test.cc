#include "zarrflow/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ZF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZF_SANITIZED 1
#endif
#endif

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/dtype.h"
#include "zarrflow/core/fork_test_util.h"

namespace zarrflow {
namespace {

#ifdef __linux__
int thread_niceness() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

TEST(ThreadPool, NiceLowersOnlyThePoolThreads) {
  const int caller = thread_niceness();
  ThreadPool nice(2, 4), plain(1);
  EXPECT_EQ(nice.nice(), 4);
  auto on = [](ThreadPool& pool) {
    std::promise<int> p;
    auto f = p.get_future();
    pool.submit([&p] { p.set_value(thread_niceness()); });
    return f.get();
  };
  EXPECT_EQ(on(nice), std::min(19, caller + 4));
  EXPECT_EQ(on(plain), caller);
  EXPECT_EQ(thread_niceness(), caller);  // the caller keeps its priority
}

// The CPUs the calling thread may run on.
std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> cpus_of_a_pool_thread(ThreadPool& pool) {
  std::promise<std::vector<int>> p;
  auto f = p.get_future();
  pool.submit([&p] { p.set_value(thread_cpus()); });
  return f.get();
}

TEST(ThreadPool, CpusKeepOnlyThePoolThreadsThere) {
  const std::vector<int> caller = thread_cpus();
  ASSERT_FALSE(caller.empty());
  const std::vector<int> one{caller.back()};
  ThreadPool placed(2, 0, one), free(1);
  EXPECT_EQ(placed.cpus(), one);
  EXPECT_EQ(cpus_of_a_pool_thread(placed), one);
  EXPECT_EQ(placed.cpu_error(), "");
  EXPECT_EQ(cpus_of_a_pool_thread(free), caller);
  EXPECT_EQ(thread_cpus(), caller);  // the caller stays where it was
}

TEST(ThreadPool, CpusRefusedLeaveTheThreadsWorkingAndSayWhy) {
  const std::vector<int> caller = thread_cpus();
  ThreadPool out_of_range(1, 0, {CPU_SETSIZE + 5});
  EXPECT_EQ(cpus_of_a_pool_thread(out_of_range), caller);
  EXPECT_NE(out_of_range.cpu_error().find("out of range"), std::string::npos);
  // A CPU this process may not use (beyond the machine's): the kernel refuses the whole set.
  ThreadPool absent(1, 0, {CPU_SETSIZE - 1});
  EXPECT_EQ(cpus_of_a_pool_thread(absent), caller);
  EXPECT_NE(absent.cpu_error().find("setaffinity"), std::string::npos);
}
#endif

TEST(ThreadPool, RunsEveryItemOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  ASSERT_TRUE(pool.parallel_for(hits.size(),
                                [&](std::size_t i) {
                                  hits[i]++;
                                  return Status();
                                })
                  .ok());
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPool, NestedLoopsDoNotDeadlockOnOneThread) {
  ThreadPool pool(1);
  std::atomic<int> n{0};
  ASSERT_TRUE(pool.parallel_for(8,
                                [&](std::size_t) {
                                  return pool.parallel_for(8, [&](std::size_t) {
                                    n++;
                                    return Status();
                                  });
                                })
                  .ok());
  EXPECT_EQ(n.load(), 64);
}

TEST(ThreadPool, FirstErrorIsReturnedAndStopsNewItems) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  Status s = pool.parallel_for(10000, [&](std::size_t i) {
    ran++;
    return i == 3 ? corrupt_data("item 3") : Status();
  });
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_EQ(s.message(), "item 3");
  EXPECT_LT(ran.load(), 10000);
}

TEST(ThreadPool, ItemExceptionsBecomeErrors) {
  ThreadPool pool(3);
  Status oom = pool.parallel_for(64, [](std::size_t i) -> Status {
    if (i == 17) throw std::bad_alloc();
    return {};
  });
  EXPECT_EQ(oom.code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(oom.message(), "out of memory");
  Status other = pool.parallel_for(64, [](std::size_t i) -> Status {
    if (i == 40) throw std::runtime_error("boom");
    return {};
  });
  EXPECT_EQ(other.code(), ErrorCode::kInternal);
  EXPECT_NE(other.message().find("boom"), std::string::npos) << other.message();
  // The serial forms (one item, no pool) catch as well.
  EXPECT_EQ(pool.parallel_for(1, [](std::size_t) -> Status { throw std::bad_alloc(); }).code(),
            ErrorCode::kResourceExhausted);
  EXPECT_EQ(parallel_for(nullptr, 3,
                         [](std::size_t i) -> Status {
                           if (i == 2) throw std::bad_alloc();
                           return {};
                         })
                .code(),
            ErrorCode::kResourceExhausted);
}

// The caller's item throws while helpers are still inside theirs: parallel_for must not return
// (unwinding the frame their `fn` refers to) before they are done.
TEST(ThreadPool, ReturnsOnlyAfterHelpersFinishWhenTheCallerThrows) {
  ThreadPool pool(4);
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> inside{0}, max_after{0};
    const auto caller = std::this_thread::get_id();
    Status s = pool.parallel_for(16, [&](std::size_t) -> Status {
      if (std::this_thread::get_id() == caller) throw std::bad_alloc();
      ++inside;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      --inside;
      return {};
    });
    max_after = inside.load();
    EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
    EXPECT_EQ(max_after.load(), 0) << "helpers still running after parallel_for returned";
  }
}

TEST(ThreadPool, ManyConcurrentLoopsWithFailures) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 30; ++round) {
        std::atomic<int> inner_items{0};
        const bool fail = (round + t) % 3 == 0;
        Status s = pool.parallel_for(12, [&](std::size_t i) -> Status {
          if (fail && i == 7) throw std::bad_alloc();
          return pool.parallel_for(5, [&](std::size_t) {
            ++inner_items;
            return Status();
          });
        });
        if (fail ? s.code() != ErrorCode::kResourceExhausted
                 : !(s.ok() && inner_items.load() == 60))
          ++wrong;
      }
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ThreadPool, ThrowingSubmittedJobLeavesThePoolWorking) {
  ThreadPool pool(1);
  pool.submit([] { throw std::runtime_error("job failed"); });
  std::promise<void> ran;
  pool.submit([&] { ran.set_value(); });
  ran.get_future().get();  // the one thread survived the first job
  EXPECT_EQ(pool.failed_jobs(), 1u);
  EXPECT_EQ(pool.requested(), 1u);
  EXPECT_EQ(pool.size(), 1u);
  EXPECT_EQ(pool.start_error(), "");
}

#if defined(__linux__) && !defined(ZF_SANITIZED)
// Thread creation failure, for real: in a child process whose address space (RLIMIT_AS) leaves
// room for `stacks` thread stacks at most, a 64-thread pool starts fewer threads, says why, and
// still runs every item. RLIMIT_AS rather than RLIMIT_NPROC because the latter does not apply to
// root (tests run as root in containers); sanitizer runtimes reserve terabytes of address space,
// so there the limit cannot be set.
std::size_t address_space_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;  // kB
  return 0;
}

std::size_t default_stack_bytes() {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  std::size_t size = 0;
  pthread_attr_getstacksize(&attr, &size);
  pthread_attr_destroy(&attr);
  return size;
}

// Exits 0 when a pool of 64 under the limit started at most `max_started` threads, reported it,
// and ran every item.
[[noreturn]] void pool_under_address_limit(std::size_t stacks, std::size_t max_started) {
  const std::size_t vm = address_space_bytes();
  const std::size_t stack = default_stack_bytes();
  if (vm == 0 || stack == 0) std::_Exit(2);
  const rlimit lim{vm + stacks * stack + stack / 2, RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &lim) != 0) std::_Exit(3);
  ThreadPool pool(64);
  if (pool.size() > max_started || pool.requested() != 64 || pool.start_error().empty())
    std::_Exit(4);
  std::atomic<int> items{0};
  Status s = pool.parallel_for(100, [&](std::size_t) {
    ++items;
    return Status();
  });
  std::promise<void> ran;
  pool.submit([&] { ran.set_value(); });
  ran.get_future().get();
  std::_Exit(s.ok() && items.load() == 100 ? 0 : 5);
}

TEST(ThreadPoolDeathTest, RunsWithTheThreadsItGot) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(pool_under_address_limit(4, 4), ::testing::ExitedWithCode(0), "");
}

TEST(ThreadPoolDeathTest, RunsOnTheCallerWithNoThreads) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(pool_under_address_limit(0, 0), ::testing::ExitedWithCode(0), "");
}
#endif

// DataLoader workers forked while other threads keep the pool busy: the child gets the pool
// without threads (theirs stayed in the parent), and it works there on the calling thread.
TEST(ThreadPoolFork, ChildRunsEverythingOnTheCaller) {
  auto pool = std::make_unique<ThreadPool>(3);
  std::atomic<bool> stop{false};
  std::atomic<int> pending{0};
  std::vector<std::thread> hammers;
  for (int t = 0; t < 3; ++t) {
    hammers.emplace_back([&, t] {
      while (!stop) {
        if (t == 0) {
          if (pending.load() > 32) {
            std::this_thread::yield();
            continue;
          }
          ++pending;
          pool->submit([&] { --pending; });
        } else {
          (void)pool->parallel_for(64, [](std::size_t) { return Status(); });
        }
      }
    });
  }
  for (int round = 0; round < 30; ++round) {
    EXPECT_EQ(fork_test::in_forked_child([&] {
                if (pool->size() != 0) return 1;
                std::atomic<std::size_t> sum{0};
                Status s = pool->parallel_for(1000, [&](std::size_t i) {
                  sum += i;
                  return Status();
                });
                if (!s.ok() || sum.load() != 999 * 1000 / 2) return 2;
                bool ran = false;
                pool->submit([&] { ran = true; });
                if (!ran) return 3;
                pool.reset();  // and it goes without waiting for the parent's threads
                return 0;
              }),
              "exit 0")
        << "round " << round;
  }
  stop = true;
  for (auto& h : hammers) h.join();
  EXPECT_EQ(pool->size(), 3u);  // the parent keeps its threads
  pool.reset();                 // runs the jobs still queued while `pending` exists
}

TEST(BufferPool, ReusesReleasedBuffers) {
  BufferPool pool;
  std::byte* first;
  {
    Buffer b = pool.acquire(1 << 20);
    first = b.data();
  }
  Buffer again = pool.acquire((1 << 20) - 100);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(again.size(), (1u << 20) - 100);
}

TEST(Status, AnnotateNests) {
  Status s = corrupt_data("frame truncated");
  s.annotate("zstd").annotate("chunk 'c/0'");
  EXPECT_EQ(s.message(), "chunk 'c/0': zstd: frame truncated");
  Status ok;
  ok.annotate("ignored");
  EXPECT_TRUE(ok.ok());
}

TEST(DType, ParsesV3NamesAndNumpyTypestrs) {
  EXPECT_EQ(*parse_v3_data_type("bfloat16"), (DataType{DTypeKind::kBFloat16, 2}));
  EXPECT_EQ(*parse_v3_data_type("r24"), (DataType{DTypeKind::kRaw, 3}));
  EXPECT_EQ(parse_v3_data_type("float8_e4m3").status().code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(parse_v3_data_type("r7").status().code(), ErrorCode::kInvalidMetadata);
  auto be = *parse_numpy_typestr(">f8");
  EXPECT_EQ(be.dtype, (DataType{DTypeKind::kFloat, 8}));
  EXPECT_EQ(be.endian, Endian::kBig);
  EXPECT_EQ(parse_numpy_typestr("|O").status().code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(parse_numpy_typestr("<U4")->dtype, (DataType{DTypeKind::kString, 16}));
  EXPECT_EQ(parse_numpy_typestr("<c16")->dtype.swap_unit(), 8u);
}

}  // namespace
}  // namespace zarrflow
