// The GPU loader's batches (label: gpu; skips without a GPU): the device batch maker makes the
// host maker's bytes, on each worker's own stream, through the engine; missing chunks fail as
// the recipe says. Small on purpose: this binary also runs under compute-sanitizer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/pipeline/batch_recipe_test_util.h"
#include "zarrflow/pipeline/gpu/device_batch.h"
#include "zarrflow/pipeline/host_batch.h"

namespace zarrflow::gpu {
namespace {

using read_test::Arrays;

class DeviceBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = device_available();
    if (!s.ok()) GTEST_SKIP() << "no GPU: " << s.message();
    if (const char* lib = std::getenv("ZARRFLOW_NVCOMP_LIBRARY")) set_nvcomp_library({lib});
  }

  std::shared_ptr<DeviceBatchMaker> maker(BatchRecipe recipe, int workers = 1) {
    return std::make_shared<DeviceBatchMaker>(std::move(recipe), reader, DeviceReadOptions{}, 0,
                                              workers, /*watch_pools=*/true);
  }

  // A made batch's bytes, copied down.
  static std::vector<std::byte> bytes_of(const MadeBatch& b) {
    std::size_t n = b.dtype.size;
    for (auto x : b.shape) n *= std::size_t(x);
    std::vector<std::byte> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), b.data, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

  // The host maker's batch of `job`: its bytes and NaNs.
  static std::pair<std::vector<std::byte>, std::uint64_t> on_host(BatchRecipe recipe,
                                                                  const BatchJob& job) {
    HostBatchMaker host(std::move(recipe), {});
    auto made = host.make(job, 0, 0.0);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    if (!made.ok()) return {};
    const auto* p = static_cast<const std::byte*>(made->data);
    return {{p, p + 24 * made->dtype.size}, made->report.nans};
  }

  Arrays a;
  std::shared_ptr<DeviceReader> reader = std::make_shared<DeviceReader>();
};

TEST_F(DeviceBatchTest, BatchesEqualTheHostMakersBatches) {
  for (double share : {0.0, 1.0}) {  // the GPU decodes, or the host threads do
    auto made = maker(batch_test::recipe(a))->make(batch_test::job(), 0, share);
    ASSERT_TRUE(made.ok()) << made.status().to_string();
    EXPECT_EQ(made->device, 0);
    EXPECT_EQ(made->shape, (Shape{2, 2, 2, 3}));
    EXPECT_EQ(bytes_of(*made), on_host(batch_test::recipe(a), batch_test::job()).first);
    EXPECT_GT(made->report.missing, 0);
  }
}

TEST_F(DeviceBatchTest, NormalisedBatchesCarryTheHostMakersBits) {
  BatchRecipe r = batch_test::recipe(a);
  r.dtype = DataType{DTypeKind::kFloat, 4};
  r.mean_std = std::vector<float>{100.f, 3.f, -5.f, 7.f};
  r.decoding = std::vector<CfDecoding>{{true, 0.5, 1.0, {42}}, {}};
  auto made = maker(r)->make(batch_test::job(), 0, 0.0);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  const auto [bytes, nans] = on_host(r, batch_test::job());
  EXPECT_EQ(bytes_of(*made), bytes);
  EXPECT_EQ(made->report.nans, nans);
}

TEST_F(DeviceBatchTest, TheEngineHandsOutEachWorkersBatchesInOrder) {
  BatchEngineOptions o;
  o.workers = 2;
  o.depth = 3;
  auto engine = BatchEngine::create(maker(batch_test::recipe(a), 2), o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const auto want = on_host(batch_test::recipe(a), batch_test::job()).first;
  const auto pass = (*engine)->submit(std::vector<BatchJob>(6, batch_test::job()), false);
  std::set<int> workers;
  for (int i = 0; i < 6; ++i) {
    auto t = (*engine)->take(pass);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ASSERT_EQ(t->outcome, BatchEngine::Outcome::kBatch);
    EXPECT_EQ(bytes_of(t->batch.batch), want) << i;
    if (i == 0) EXPECT_TRUE(t->batch.batch.pools_grew);  // a new reader's pools allocate
    workers.insert(t->batch.worker);
  }
  EXPECT_EQ((*engine)->take(pass)->outcome, BatchEngine::Outcome::kPassEnded);
  EXPECT_LE(workers.size(), 2u);
}

TEST_F(DeviceBatchTest, MissingChunksFailWhenTheRecipeSaysSo) {
  BatchRecipe r = batch_test::recipe(a);
  r.missing_is_error = true;
  auto made = maker(std::move(r))->make(batch_test::job(), 0, 0.0);
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace zarrflow::gpu
