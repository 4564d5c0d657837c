// The loader's shard index cache: indexes found again by name, within a byte budget.
#include "zarrflow/pipeline/shard_index_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace zarrflow
