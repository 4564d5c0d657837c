// The loader's shard index cache: indexes found again by name, within a byte budget.
#include "zarrflow/pipeline/shard_index_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace zarrflow {
namespace {

std::shared_ptr<const ShardIndex> index_of(std::uint64_t shard_size) {
  auto index = std::make_shared<ShardIndex>();
  index->found = true;
  index->shard_size = shard_size;
  index->entries = {0, shard_size};
  return index;
}

TEST(ShardIndexCache, FindsWhatItKeptAndCountsHitsAndMisses) {
  ShardIndexCache cache(1 << 10);
  ShardIndexes& indexes = cache;  // as the sharding codec sees it
  EXPECT_EQ(indexes.find("mem://a/c/0"), nullptr);
  indexes.insert("mem://a/c/0", index_of(100), 200);
  const auto hit = indexes.find("mem://a/c/0");
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->shard_size, 100u);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().bytes, 200u);
  cache.clear();
  EXPECT_EQ(indexes.find("mem://a/c/0"), nullptr);
}

TEST(ShardIndexCache, EvictsTheLeastRecentlyUsedBeyondItsBudget) {
  ShardIndexCache cache(500);
  cache.insert("a", index_of(1), 200);
  cache.insert("b", index_of(2), 200);
  ASSERT_NE(cache.find("a"), nullptr);  // b is now the least recently used
  cache.insert("c", index_of(3), 200);
  EXPECT_EQ(cache.find("b"), nullptr);
  EXPECT_NE(cache.find("a"), nullptr);
  EXPECT_NE(cache.find("c"), nullptr);
  EXPECT_EQ(cache.stats().evictions, 1);
  cache.insert("huge", index_of(4), 501);  // larger than the whole budget: not kept
  EXPECT_EQ(cache.find("huge"), nullptr);
}

// Runs `find_or_load(name, load)` on `n` threads at once; their results.
std::vector<Result<std::shared_ptr<const ShardIndex>>> load_together(
    ShardIndexCache& cache, int n, const ShardIndexes::Load& load) {
  std::vector<std::optional<Result<std::shared_ptr<const ShardIndex>>>> got(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] { got[i] = cache.find_or_load("s3://b/a/c/0", load); });
  for (auto& t : threads) t.join();
  std::vector<Result<std::shared_ptr<const ShardIndex>>> out;
  for (auto& g : got) out.push_back(*g);
  return out;
}

TEST(ShardIndexCache, ThreadsMissingOneIndexTogetherReadItOnce) {
  ShardIndexCache cache(1 << 20);
  std::atomic<int> reads{0};
  const auto slow_read = [&]() -> Result<std::shared_ptr<const ShardIndex>> {
    ++reads;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others arrive meanwhile
    return index_of(64);
  };
  for (const auto& r : load_together(cache, 8, slow_read)) {
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->shard_size, 64u);
  }
  EXPECT_EQ(reads.load(), 1);
  ASSERT_TRUE(cache.find_or_load("s3://b/a/c/0", slow_read).ok());  // kept
  EXPECT_EQ(reads.load(), 1);
  EXPECT_EQ(cache.stats().misses, 1);  // indexes read
  EXPECT_EQ(cache.stats().hits, 8);    // the 7 that waited for it, and the last lookup
}

TEST(ShardIndexCache, AFailedReadIsSharedButNotKept) {
  ShardIndexCache cache(1 << 20);
  std::atomic<int> reads{0};
  const auto failing = [&]() -> Result<std::shared_ptr<const ShardIndex>> {
    ++reads;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return corrupt_data("shard is shorter than its 64-byte index");
  };
  for (const auto& r : load_together(cache, 4, failing)) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("shorter than its"), std::string::npos);
  }
  EXPECT_GE(reads.load(), 1);
  const int before = reads.load();
  EXPECT_FALSE(cache.find_or_load("s3://b/a/c/0", failing).ok());  // read again, not kept
  EXPECT_EQ(reads.load(), before + 1);
}

TEST(ShardIndexCache, AnExceptionFromTheReadReleasesTheWaiters) {
  ShardIndexCache cache(1 << 20);
  EXPECT_THROW(cache.find_or_load("a",
                                  []() -> Result<std::shared_ptr<const ShardIndex>> {
                                    throw std::runtime_error("boom");
                                  }),
               std::runtime_error);
  const auto fine = [] { return Result<std::shared_ptr<const ShardIndex>>(index_of(1)); };
  EXPECT_TRUE(cache.find_or_load("a", fine).ok());  // nothing left waiting on the first read
}

}  // namespace
}  // namespace zarrflow
