#include "zarrflow/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/dtype.h"

namespace zarrflow {
namespace {

#ifdef __linux__
int thread_niceness() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

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
