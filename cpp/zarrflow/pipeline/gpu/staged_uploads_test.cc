// StagedUploads (pipeline/gpu/staged_uploads.h): what can go up while the piece is still read.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "zarrflow/pipeline/gpu/staged_uploads.h"

namespace zarrflow::gpu {
namespace {

using Slot = StagedUploads::Slot;

// n uploaded slots of `size` bytes each, padded to 4 KiB.
std::vector<Slot> uploaded_slots(std::size_t n, std::uint64_t size) {
  std::vector<Slot> slots;
  std::uint64_t at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    slots.push_back({at, at + size, true});
    at += (size + 4095) / 4096 * 4096;
  }
  return slots;
}

TEST(StagedUploads, NothingGoesUpBeforeThePrefixIsComplete) {
  StagedUploads up(uploaded_slots(3, 100), 1);
  EXPECT_TRUE(up.complete(2).empty());
  EXPECT_TRUE(up.complete(1).empty());
  const auto r = up.complete(0);  // items 0..2 now complete: one range over all three
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].begin, 0u);
  EXPECT_EQ(r[0].end, 2 * 4096u + 100);
  EXPECT_EQ(up.returned(), 300u);
  EXPECT_EQ(up.total(), 300u);
}

TEST(StagedUploads, WaitsForMinStepUnlessThePieceIsComplete) {
  StagedUploads up(uploaded_slots(4, 1000), 2500);
  EXPECT_TRUE(up.complete(0).empty());  // 1000 < 2500
  EXPECT_TRUE(up.complete(1).empty());  // 2000 < 2500
  auto r = up.complete(2);              // 3000: items 0..2 go up together
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].begin, 0u);
  EXPECT_EQ(r[0].end, 2 * 4096u + 1000);
  r = up.complete(3);  // below the step, but the last
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].begin, 3 * 4096u);
  EXPECT_EQ(r[0].end, 3 * 4096u + 1000);
  EXPECT_EQ(up.returned(), up.total());
}

TEST(StagedUploads, HostSlotsSplitRangesAndItemsWithoutSlotsDoNot) {
  std::vector<Slot> slots = {
      {0, 100, true},       {4096, 4096, false},  // a fill: no slot
      {4096, 4196, true},   {8192, 8292, false},  // decoded on the host: stays
      {12288, 12388, true},
  };
  StagedUploads up(slots, 1);
  std::vector<UploadRange> all;
  for (std::size_t k : {4, 3, 2, 1}) {
    auto r = up.complete(k);
    all.insert(all.end(), r.begin(), r.end());
  }
  EXPECT_TRUE(all.empty());
  all = up.complete(0);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].begin, 0u);
  EXPECT_EQ(all[0].end, 4196u);
  EXPECT_EQ(all[1].begin, 12288u);
  EXPECT_EQ(all[1].end, 12388u);
  EXPECT_EQ(up.returned(), 300u);
}

TEST(StagedUploads, RepeatedAndOutOfRangeCompletionsAreIgnored) {
  StagedUploads up(uploaded_slots(2, 10), 1);
  EXPECT_EQ(up.complete(0).size(), 1u);
  EXPECT_TRUE(up.complete(0).empty());
  EXPECT_TRUE(up.complete(7).empty());
  EXPECT_EQ(up.complete(1).size(), 1u);
  EXPECT_EQ(up.returned(), 20u);
}

TEST(StagedUploads, NoUploadedSlotsReturnNothing) {
  StagedUploads up({{0, 100, false}, {4096, 4196, false}}, 1);
  EXPECT_TRUE(up.complete(0).empty());
  EXPECT_TRUE(up.complete(1).empty());
  EXPECT_EQ(up.total(), 0u);
}

// Completions from several threads in any order: every uploaded byte is returned exactly once,
// in disjoint ranges that lie inside the uploaded slots' span.
TEST(StagedUploads, ConcurrentCompletionsCoverEverySlotOnce) {
  const std::size_t n = 2000;
  const auto slots = uploaded_slots(n, 3000);
  StagedUploads up(slots, 64 << 10);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  std::mutex mu;
  std::vector<UploadRange> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = std::size_t(t); i < n; i += 4) {
        auto r = up.complete(order[i]);
        std::lock_guard lock(mu);
        all.insert(all.end(), r.begin(), r.end());
      }
    });
  }
  for (auto& th : threads) th.join();
  std::sort(all.begin(), all.end(),
            [](const UploadRange& a, const UploadRange& b) { return a.begin < b.begin; });
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().begin, 0u);
  EXPECT_EQ(all.back().end, slots.back().end);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LE(all[i - 1].end, all[i].begin);
  std::size_t covered = 0;
  for (const Slot& s : slots)
    for (const auto& r : all)
      if (r.begin <= s.begin && s.end <= r.end) ++covered;
  EXPECT_EQ(covered, n);
  EXPECT_EQ(up.returned(), up.total());
}

}  // namespace
}  // namespace zarrflow::gpu
