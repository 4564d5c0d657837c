// The batch engine with a maker that only records: batches come in order whatever the workers'
// timing, the bounds on batches in flight and being made hold over all passes, errors arrive at
// their position and stop their pass, dropped passes give their places back, close() ends the
// workers once every batch is released, and the decode balance is told which waits to judge.
#include "zarrflow/pipeline/batch_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace zarrflow {
namespace {

using Engine = std::unique_ptr<BatchEngine>;

// Batches are items: the job's first time; a made batch's shape is {item * 10}.
class Recorder : public BatchMaker {
 public:
  Result<MadeBatch> make(const BatchJob& job, int worker, double share) override {
    const std::int64_t item = job.times.at(0);
    {
      std::unique_lock lock(mu);
      started.push_back(item);
      workers.insert(worker);
      most = std::max(most, ++now);
      cv.notify_all();
      cv.wait(lock, [&] { return !held.count(item); });
    }
    if (jitter) {
      thread_local std::mt19937 rng(std::random_device{}());
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 4000));
    }
    std::lock_guard lock(mu);
    --now;
    if (item == fail_at) return invalid_argument("bad item " + std::to_string(item));
    MadeBatch b;
    b.shape = {item * 10};
    b.pools_grew = grew.count(item) > 0;
    ++live;
    b.memory = std::shared_ptr<void>(new std::int64_t(item), [this](void* m) {
      delete static_cast<std::int64_t*>(m);
      --live;
    });
    return b;
  }
  std::size_t count() {
    std::lock_guard lock(mu);
    return started.size();
  }
  void release(std::int64_t item) {
    std::lock_guard lock(mu);
    held.erase(item);
    cv.notify_all();
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::int64_t> started;
  std::set<int> workers;
  std::set<std::int64_t> held, grew;
  int now = 0, most = 0;
  std::atomic<int> live{0};  // batches made whose memory nobody has released
  bool jitter = false;
  std::int64_t fail_at = -1;
};

std::vector<BatchJob> items(std::int64_t from, std::int64_t to) {
  std::vector<BatchJob> jobs;
  for (std::int64_t i = from; i < to; ++i) jobs.push_back(BatchJob{{i}, {i}, {}});
  return jobs;
}

Engine engine(std::shared_ptr<BatchMaker> maker, int workers, int depth,
              std::shared_ptr<DecodeBalance> balance = nullptr) {
  BatchEngineOptions o;
  o.workers = workers;
  o.depth = depth;
  o.balance = std::move(balance);
  auto e = BatchEngine::create(std::move(maker), o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(e).value();
}

// The next batch's item (its shape / 10); -1 at the pass's end, -2 when dropped or closed.
std::int64_t next(BatchEngine& e, BatchEngine::PassId p) {
  auto t = e.take(p);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return -3;
  if (t->outcome == BatchEngine::Outcome::kPassEnded) return -1;
  if (t->outcome == BatchEngine::Outcome::kClosed) return -2;
  return t->batch.batch.shape.at(0) / 10;
}

template <typename F>
void until(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(done());
}

// Every worker waits for room and the pass has `ready` batches made: nothing more can start
// until the consumer takes one.
bool settled(BatchEngine& e, BatchEngine::PassId p, std::size_t ready) {
  return e.idle_workers() == e.workers() && e.counts(p).ready == ready;
}

class InOrder : public testing::TestWithParam<std::pair<int, int>> {};

TEST_P(InOrder, BatchesComeInOrder) {
  const auto [workers, depth] = GetParam();
  auto maker = std::make_shared<Recorder>();
  maker->jitter = true;
  Engine e = engine(maker, workers, depth);
  const auto p = e->submit(items(0, 40), false);
  for (std::int64_t i = 0; i < 40; ++i) ASSERT_EQ(next(*e, p), i);
  EXPECT_EQ(next(*e, p), -1);
  std::vector<std::int64_t> started = maker->started;
  std::sort(started.begin(), started.end());
  EXPECT_EQ(started, [] {
    std::vector<std::int64_t> v(40);
    for (int i = 0; i < 40; ++i) v[std::size_t(i)] = i;
    return v;
  }());
  EXPECT_LE(int(maker->workers.size()), workers);
  EXPECT_LE(maker->most, workers);
  EXPECT_EQ(e->in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(WorkersAndDepth, InOrder,
                         testing::Values(std::pair{1, 1}, std::pair{2, 3}, std::pair{4, 2},
                                         std::pair{8, 8}));

TEST(BatchEngine, DepthBoundsBatchesStartedAheadOfTheConsumer) {
  auto maker = std::make_shared<Recorder>();
  Engine e = engine(maker, 4, 3);
  const auto p = e->submit(items(0, 100), false);
  until([&] { return settled(*e, p, 3); });
  EXPECT_EQ(maker->count(), 3u);
  EXPECT_EQ(next(*e, p), 0);
  until([&] { return settled(*e, p, 3); });
  EXPECT_EQ(maker->count(), 4u);
  EXPECT_EQ(e->in_flight(), 3u);
}

TEST(BatchEngine, PassesShareTheDepth) {
  // As the loader reads ahead: the next pass is queued once the current one has started all.
  auto first = std::make_shared<Recorder>();
  Engine e = engine(first, 2, 3);
  const auto a = e->submit(items(0, 5), false);
  until([&] { return settled(*e, a, 3); });
  EXPECT_EQ(next(*e, a), 0);
  EXPECT_EQ(next(*e, a), 1);  // two places free: the last two start
  until([&] { return settled(*e, a, 3) && e->counts(a).started == 5; });
  const auto b = e->submit(items(100, 110), true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(e->counts(b).started, 0u);  // no room: the first pass holds all three places
  EXPECT_EQ(next(*e, a), 2);
  until([&] { return settled(*e, b, 1); });  // one taken, one started
  EXPECT_EQ(e->counts(b).started, 1u);
  EXPECT_EQ(e->in_flight(), 3u);
  EXPECT_EQ(next(*e, a), 3);
  EXPECT_EQ(next(*e, a), 4);
  EXPECT_EQ(next(*e, a), -1);
  until([&] { return settled(*e, b, 3); });
  EXPECT_EQ(e->counts(b).started, 3u);
  EXPECT_EQ(e->in_flight(), 3u);
  e->drop(a);
  e->drop(b);  // its three made, never taken batches give their places back
  EXPECT_EQ(e->in_flight(), 0u);
  EXPECT_EQ(next(*e, b), -2);
}

TEST(BatchEngine, AtMostWorkersBatchesAreMadeAtOnceOverAllPasses) {
  auto maker = std::make_shared<Recorder>();
  maker->jitter = true;
  Engine e = engine(maker, 2, 8);
  const auto a = e->submit(items(0, 6), false);
  const auto b = e->submit(items(0, 6), false);
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(next(*e, a), i);
  for (std::int64_t i = 0; i < 6; ++i) EXPECT_EQ(next(*e, b), i);
  EXPECT_LE(maker->most, 2);
  EXPECT_EQ(e->producing(), 0u);
  EXPECT_EQ(e->in_flight(), 0u);
}

TEST(BatchEngine, DroppingAPassFreesItsPlacesForTheNext) {
  auto maker = std::make_shared<Recorder>();
  Engine e = engine(maker, 2, 2);
  const auto a = e->submit(items(0, 10), false);
  until([&] { return settled(*e, a, 2); });
  const auto b = e->submit(items(100, 103), false);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(e->counts(b).started, 0u);
  e->drop(a);  // a wrongly guessed epoch
  EXPECT_EQ(next(*e, b), 100);
  EXPECT_EQ(next(*e, b), 101);
  EXPECT_EQ(next(*e, b), 102);
  EXPECT_EQ(next(*e, b), -1);
  EXPECT_EQ(e->in_flight(), 0u);
}

TEST(BatchEngine, DroppingAPassDoesNotWaitForTheBatchesBeingMade) {
  auto maker = std::make_shared<Recorder>();
  maker->held = {0, 1};
  Engine e = engine(maker, 2, 3);
  const auto a = e->submit(items(0, 10), false);
  until([&] { return maker->count() == 2; });
  e->drop(a);  // returns with both still being made
  EXPECT_EQ(e->producing(), 2u);
  EXPECT_EQ(e->in_flight(), 2u);  // their places are held until they are done
  const auto b = e->submit(items(100, 101), false);
  maker->release(0);
  maker->release(1);
  EXPECT_EQ(next(*e, b), 100);
  until([&] { return e->in_flight() == 0; });
}

TEST(BatchEngine, AnErrorArrivesAtItsPositionAndStopsItsPass) {
  auto maker = std::make_shared<Recorder>();
  maker->fail_at = 5;
  Engine e = engine(maker, 3, 4);
  const auto p = e->submit(items(0, 50), false);
  for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(next(*e, p), i);
  auto t = e->take(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "bad item 5");
  until([&] { return e->producing() == 0; });
  const auto started = maker->started;
  EXPECT_LT(*std::max_element(started.begin(), started.end()), 5 + 4);
  // the batches after it that had started are still handed out; then the pass ends
  std::int64_t got = next(*e, p);
  while (got >= 0) got = next(*e, p);
  EXPECT_EQ(got, -2);
}

TEST(BatchEngine, CloseJoinsTheWorkersAndEndsEveryPass) {
  auto maker = std::make_shared<Recorder>();
  Engine e = engine(maker, 2, 2);
  const auto p = e->submit(items(0, 10), false);
  EXPECT_EQ(next(*e, p), 0);
  EXPECT_TRUE(e->open());
  e->close();
  EXPECT_FALSE(e->open());
  EXPECT_EQ(e->live_workers(), 0);
  EXPECT_EQ(next(*e, p), -2);
  EXPECT_EQ(next(*e, e->submit(items(0, 3), false)), -2);  // nothing runs after close
  e->close();                                              // twice is fine
}

TEST(BatchEngine, CloseReturnsOnceEveryBatchIsReleased) {
  // As the loader closes: a batch made and not taken, and two being made. close() waits for the
  // two and releases all three (on a GPU, blocks of the pool) before it returns, so none goes
  // back to the pool after it (where a trim that followed would miss it).
  auto maker = std::make_shared<Recorder>();
  maker->held = {1, 2};
  Engine e = engine(maker, 2, 3);
  const auto p = e->submit(items(0, 10), false);
  until([&] { return maker->count() == 3 && e->counts(p).ready == 1; });
  EXPECT_EQ(maker->live.load(), 1);
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    e->close();
    closed = true;
  });
  until([&] { return !e->open(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(closed.load());  // still waiting for the batches being made
  maker->release(1);
  maker->release(2);
  closer.join();
  EXPECT_EQ(maker->live.load(), 0);
  EXPECT_EQ(e->in_flight(), 0u);
  EXPECT_EQ(e->producing(), 0u);
}

TEST(BatchEngine, EmptyPassesAndBadSettings) {
  Engine e = engine(std::make_shared<Recorder>(), 2, 2);
  EXPECT_EQ(next(*e, e->submit({}, false)), -1);
  EXPECT_EQ(next(*e, 12345), -2);  // no such pass
  BatchEngineOptions o;
  o.workers = 0;
  EXPECT_FALSE(BatchEngine::create(std::make_shared<Recorder>(), o).ok());
  o.workers = 1;
  o.depth = 0;
  EXPECT_FALSE(BatchEngine::create(std::make_shared<Recorder>(), o).ok());
  EXPECT_FALSE(BatchEngine::create(nullptr, BatchEngineOptions{}).ok());
}

TEST(BatchEngine, TheBalanceJudgesOnlySettledBatches) {
  // The first `workers` batches of a pass nobody read ahead are always waited for, and one made
  // while the pools grew waited for the driver: neither says how fast the host decodes.
  auto maker = std::make_shared<Recorder>();
  maker->grew = {3};
  // A balance that never moves the share (no window fills, no wait counts as starving), so that
  // a slow test machine cannot change what this test is about: which batches are judged.
  DecodeBalanceSettings never_moves;
  never_moves.window = 1000;
  never_moves.min_wait_s = 3600;
  auto balance = DecodeBalance::create(never_moves);
  ASSERT_TRUE(balance.ok());
  Engine e = engine(maker, 2, 2, std::move(balance).value());
  const auto judged = [&](BatchEngine::PassId p) {
    std::vector<bool> out;
    while (true) {
      auto t = e->take(p);
      EXPECT_TRUE(t.ok());
      if (!t.ok() || t->outcome != BatchEngine::Outcome::kBatch) return out;
      EXPECT_EQ(t->batch.share, 1.0);
      out.push_back(t->batch.judged);
    }
  };
  EXPECT_EQ(judged(e->submit(items(0, 5), false)),
            (std::vector<bool>{false, false, true, false, true}));
  EXPECT_EQ(judged(e->submit(items(0, 2), true)), (std::vector<bool>{true, true}));
}

}  // namespace
}  // namespace zarrflow
