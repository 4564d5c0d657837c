#include "zarrflow/core/buffer.h"

#include <gtest/gtest.h>

namespace zarrflow {
namespace {

std::byte* fake(std::uintptr_t n) { return reinterpret_cast<std::byte*>(n * 4096); }

TEST(AllocationCache, KeepsWithinBudgetBestFitAtMostTwiceTheSize) {
  AllocationCache cache(1000);
  EXPECT_TRUE(cache.put(fake(1), 600));
  EXPECT_FALSE(cache.put(fake(2), 500));  // over the budget: the caller frees it
  EXPECT_TRUE(cache.put(fake(3), 400));
  EXPECT_EQ(cache.cached_bytes(), 1000u);
  EXPECT_EQ(cache.take(200).first, fake(3));  // 400 <= 2 * 200 + 4096: the smaller fits best
  EXPECT_EQ(cache.take(5000).first, nullptr);  // nothing that large
  EXPECT_EQ(cache.take(550).first, fake(1));
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(AllocationCache, BudgetOnlyRises) {
  AllocationCache cache(100);
  cache.raise_budget(50);
  EXPECT_EQ(cache.budget(), 100u);
  cache.raise_budget(300);
  EXPECT_EQ(cache.budget(), 300u);
  EXPECT_TRUE(cache.put(fake(1), 250));
  EXPECT_EQ(cache.drain().size(), 1u);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

}  // namespace
}  // namespace zarrflow
