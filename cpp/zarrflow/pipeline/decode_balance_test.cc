// DecodeBalance's rules on hand-made waits (tests/test_balance.py judges it against a simulated
// loader through the binding).
#include "zarrflow/pipeline/decode_balance.h"

#include <gtest/gtest.h>

namespace zarrflow {
namespace {

std::unique_ptr<DecodeBalance> balance(DecodeBalanceSettings s = {}) {
  auto b = DecodeBalance::create(s);
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return std::move(b).value();
}

TEST(DecodeBalance, AStarvedConsumerCutsTheShareInProportionToItsWait) {
  auto b = balance();
  b->observe(0.0, 0.0, 1);
  b->observe(0.01, 0.1, 0);  // waited 90% of the interval: the host keeps a tenth
  EXPECT_NEAR(b->share(), 0.1, 1e-9);
  EXPECT_EQ(b->state().to_gpu, 1);
  b->observe(0.11, 0.2, 0);  // less than half a step is left: none
  EXPECT_EQ(b->share(), 0.0);
}

TEST(DecodeBalance, ShortWaitsAndUnsettledOrOtherShareBatchesAreNotJudged) {
  auto b = balance();
  b->observe(0.0, 0.0, 1);
  b->observe(1.0, 1.0004, 0);  // under min_wait_s
  b->observe(2.0, 2.5, 0, std::nullopt, false);
  b->observe(3.0, 3.5, 0, 0.5);  // made with another share
  EXPECT_EQ(b->share(), 1.0);
  b->new_pass();
  b->observe(60.0, 60.5, 0);  // no interval after a new pass
  EXPECT_EQ(b->share(), 1.0);
}

TEST(DecodeBalance, AFailedStepUpDoublesThePatience) {
  DecodeBalanceSettings s;
  s.start = 0.5;
  s.window = 1;
  auto b = balance(s);
  b->observe(0.0, 0.0, 1);
  b->observe(1.0, 1.0, 1);  // a window with every batch ready: try one step up
  EXPECT_EQ(b->share(), 0.625);
  b->observe(3.0, 3.0, 1);  // two times slower: back down, wait longer before the next try
  EXPECT_EQ(b->share(), 0.5);
  EXPECT_EQ(b->state().patience, 2);
}

TEST(DecodeBalance, BadSettingsAreRefused) {
  for (auto bad : {DecodeBalanceSettings{1.5}, DecodeBalanceSettings{1.0, 0.0},
                   DecodeBalanceSettings{1.0, 0.125, 0}}) {
    auto b = DecodeBalance::create(bad);
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.status().message().find("bad balance settings"), std::string::npos);
  }
}

}  // namespace
}  // namespace zarrflow
