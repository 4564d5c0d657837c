#include "zarrflow/core/buffer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "zarrflow/core/fork_test_util.h"

namespace zarrflow {
namespace {

std::byte* fake(std::uintptr_t n) { return reinterpret_cast<std::byte*>(n * 4096); }

TEST(AllocationCache, KeepsWithinBudgetBestFitAtMostTwiceTheSize) {
  AllocationCache cache(1000);
  EXPECT_TRUE(cache.put(fake(1), 600).empty());
  EXPECT_TRUE(cache.put(fake(3), 400).empty());
  EXPECT_EQ(cache.cached_bytes(), 1000u);
  EXPECT_EQ(cache.take(200).first, fake(3));   // 400 <= 2 * 200 + 4096: the smaller fits best
  EXPECT_EQ(cache.take(5000).first, nullptr);  // nothing that large
  EXPECT_EQ(cache.take(550).first, fake(1));
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(AllocationCache, OverBudgetTheOldestReleasesGo) {
  AllocationCache cache(1000);
  EXPECT_TRUE(cache.put(fake(1), 300).empty());
  EXPECT_TRUE(cache.put(fake(2), 300).empty());
  EXPECT_TRUE(cache.put(fake(3), 300).empty());
  // 500 more: the two released first leave, the one just released stays.
  auto out = cache.put(fake(4), 500);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, fake(1));
  EXPECT_EQ(out[1].first, fake(2));
  EXPECT_EQ(cache.cached_bytes(), 800u);
  EXPECT_EQ(cache.take(450).first, fake(4));
  // Taking one keeps the others' order: 3 is still the oldest.
  EXPECT_TRUE(cache.put(fake(5), 200).empty());
  out = cache.put(fake(6), 600);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, fake(3));
  // Larger than the whole budget: handed straight back.
  out = cache.put(fake(7), 1001);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, fake(7));
  EXPECT_EQ(cache.cached_bytes(), 800u);
}

// A workload whose sizes change (another store, a larger batch): after one round the cache
// holds the new working set and the old sizes are gone, so steady state frees nothing.
TEST(AllocationCache, AdaptsToANewWorkingSet) {
  AllocationCache cache(1000);
  for (std::uintptr_t i = 1; i <= 10; ++i) EXPECT_TRUE(cache.put(fake(i), 100).empty());
  std::size_t freed = 0;
  for (std::uintptr_t i = 11; i <= 12; ++i) freed += cache.put(fake(i), 500).size();
  EXPECT_EQ(freed, 10u);
  for (int round = 0; round < 3; ++round) {
    auto a = cache.take(480), b = cache.take(480);
    ASSERT_NE(a.first, nullptr);
    ASSERT_NE(b.first, nullptr);
    EXPECT_TRUE(cache.put(a.first, a.second).empty());
    EXPECT_TRUE(cache.put(b.first, b.second).empty());
  }
}

// Room for a new allocation under a limit: the oldest releases go until the rest fit.
TEST(AllocationCache, ShrinkToEvictsTheOldestFirst) {
  AllocationCache cache(1000);
  for (std::uintptr_t i = 1; i <= 3; ++i) EXPECT_TRUE(cache.put(fake(i), 300).empty());
  EXPECT_TRUE(cache.shrink_to(900).empty());
  auto out = cache.shrink_to(350);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, fake(1));
  EXPECT_EQ(out[1].first, fake(2));
  EXPECT_EQ(cache.cached_bytes(), 300u);
  EXPECT_EQ(cache.shrink_to(0).size(), 1u);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(AllocationCache, BudgetOnlyRises) {
  AllocationCache cache(100);
  cache.raise_budget(50);
  EXPECT_EQ(cache.budget(), 100u);
  cache.raise_budget(300);
  EXPECT_EQ(cache.budget(), 300u);
  EXPECT_TRUE(cache.put(fake(1), 250).empty());
  EXPECT_EQ(cache.drain().size(), 1u);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

// A huge-page-aligned buffer is a Buffer like any other: its size as asked, 2 MiB-aligned,
// writable to the end, resizable within its capacity, freed by its destructor (ASan in CI).
TEST(Buffer, HugePageAligned) {
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, kHugePage, kHugePage + 1}) {
    Buffer b = Buffer::huge_page_aligned(size);
    EXPECT_EQ(b.size(), size);
    EXPECT_GE(b.capacity(), std::max<std::size_t>(size, 1));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kHugePage, 0u);
    if (size > 0) {
      b.data()[0] = std::byte{1};
      b.data()[size - 1] = std::byte{2};
    }
    Buffer moved = std::move(b);
    moved.resize(moved.capacity());
    moved.data()[moved.size() - 1] = std::byte{3};
    moved.resize(moved.capacity() + 1);  // grows into an ordinary allocation, keeping the bytes
    EXPECT_EQ(moved.data()[moved.size() - 2], std::byte{3});
  }
}

// A child forked while other threads take and return buffers (a DataLoader worker forked from
// a process that reads) takes and returns buffers of the same pool.
TEST(BufferPoolFork, ChildUsesThePoolItsParentsThreadsWereUsing) {
  BufferPool pool(std::size_t{64} << 20);
  std::atomic<bool> stop{false};
  std::vector<std::thread> users;
  for (int t = 0; t < 2; ++t) {
    users.emplace_back([&, t] {
      // Many buffers of many sizes cached: the cache's lock is held most of the time.
      std::vector<Buffer> held;
      for (std::size_t i = 0; !stop; ++i) {
        held.push_back(pool.acquire(4096 * (1 + (i * 7 + t) % 61)));
        if (held.size() == 64) held.clear();
      }
    });
  }
  for (int round = 0; round < 30; ++round) {
    EXPECT_EQ(fork_test::in_forked_child([&] {
                for (std::size_t i = 0; i < 200; ++i) {
                  Buffer b = pool.acquire(4096 * (1 + i % 64));
                  if (b.size() != 4096 * (1 + i % 64)) return 1;
                  b.data()[b.size() - 1] = std::byte{2};
                }
                return 0;
              }),
              "exit 0")
        << "round " << round;
  }
  stop = true;
  for (auto& u : users) u.join();
}

}  // namespace
}  // namespace zarrflow
