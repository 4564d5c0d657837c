#include "zarrflow/core/lru_cache.h"

#include <gtest/gtest.h>

namespace zarrflow {
namespace {

TEST(LruCache, EvictsTheLeastRecentlyUsedWithinTheBudget) {
  LruCache<int> c(100);
  c.insert("a", 1, 40);
  c.insert("b", 2, 40);
  EXPECT_EQ(c.find("a"), 1);  // a is now the most recent: b goes first
  c.insert("c", 3, 40);
  EXPECT_EQ(c.find("b"), std::nullopt);
  EXPECT_EQ(c.find("a"), 1);
  EXPECT_EQ(c.find("c"), 3);
  const LruStats s = c.stats();
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.bytes, 80u);
  EXPECT_EQ(s.budget, 100u);
}

TEST(LruCache, KeepsTheFirstValueAndRefusesWhatExceedsTheBudget) {
  LruCache<int> c(100);
  c.insert("a", 1, 10);
  c.insert("a", 2, 10);  // already there: kept as it was
  EXPECT_EQ(c.find("a"), 1);
  c.insert("big", 3, 101);
  EXPECT_EQ(c.find("big"), std::nullopt);
  EXPECT_EQ(c.stats().bytes, 10u);
  c.erase("a");
  c.erase("absent");
  EXPECT_EQ(c.stats().entries, 0);
  EXPECT_EQ(c.stats().bytes, 0u);
  c.insert("b", 4, 50);
  c.clear();
  EXPECT_EQ(c.find("b"), std::nullopt);
  EXPECT_EQ(c.stats().bytes, 0u);
}

}  // namespace
}  // namespace zarrflow
