// The GPU loader's batches (label: gpu; skips without a GPU): the device batch maker makes the
// host maker's bytes, on each worker's own stream, through the engine; missing chunks fail as
// the recipe says. Small on purpose: this binary also runs under compute-sanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <span>
#include <sstream>
#include <string>

#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/core/strided.h"
#include "zarrflow/pipeline/batch_recipe_test_util.h"
#include "zarrflow/pipeline/gpu/device_batch.h"
#include "zarrflow/pipeline/host_batch.h"

namespace zarrflow::gpu {
namespace {

using read_test::Arrays;

// The element (4 bytes) at byte `at` of `b`: its bits in hex and as an int32 and a float32.
std::string element_at(std::span<const std::byte> b, std::size_t at) {
  std::uint32_t u = 0;
  std::memcpy(&u, b.data() + at, std::min<std::size_t>(4, b.size() - at));
  std::int32_t i;
  float f;
  std::memcpy(&i, &u, 4);
  std::memcpy(&f, &u, 4);
  std::ostringstream s;
  s << "0x" << std::hex << u << std::dec << " (int32 " << i << ", float32 " << f << ")";
  return s.str();
}

// Where two batches of 4-byte elements first differ: "" when they agree, else the byte offset
// and both elements. `nans_alike`: any two NaNs agree (float32 batches; see the test below).
std::string first_difference(std::span<const std::byte> got, std::span<const std::byte> want,
                             bool nans_alike) {
  if (got.size() != want.size())
    return std::to_string(got.size()) + " bytes, expected " + std::to_string(want.size());
  for (std::size_t at = 0; at < got.size(); at += 4) {
    const std::size_t n = std::min<std::size_t>(4, got.size() - at);
    if (std::memcmp(got.data() + at, want.data() + at, n) == 0) continue;
    if (nans_alike && n == 4) {
      float g, w;
      std::memcpy(&g, got.data() + at, 4);
      std::memcpy(&w, want.data() + at, 4);
      if (std::isnan(g) && std::isnan(w)) continue;
    }
    return "first difference at byte " + std::to_string(at) + " of " + std::to_string(got.size()) +
           ": got " + element_at(got, at) + ", expected " + element_at(want, at);
  }
  return "";
}

class DeviceBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = device_available();
    if (!s.ok()) GTEST_SKIP() << "no GPU: " << s.message();
    if (const char* lib = std::getenv("ZARRFLOW_NVCOMP_LIBRARY")) set_nvcomp_library({lib});
  }

  std::shared_ptr<DeviceBatchMaker> maker(BatchRecipe recipe, int workers = 1,
                                          bool high_priority = false) {
    DeviceBatchSettings settings;
    settings.workers = workers;
    settings.watch_pools = true;
    settings.high_priority = high_priority;
    return std::make_shared<DeviceBatchMaker>(std::move(recipe), reader, DeviceReadOptions{},
                                              settings);
  }

  // A made batch's bytes, copied down.
  static std::vector<std::byte> bytes_of(const MadeBatch& b) {
    const std::size_t n = std::size_t(checked_product(b.shape, b.dtype.size).value());
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
    const std::size_t n = std::size_t(checked_product(made->shape, made->dtype.size).value());
    const auto* p = static_cast<const std::byte*>(made->data);
    return {{p, p + n}, made->report.nans};
  }

  Arrays a;
  std::shared_ptr<DeviceReader> reader = std::make_shared<DeviceReader>();
};

TEST_F(DeviceBatchTest, BatchesEqualTheHostMakersBatches) {
  for (bool high_priority : {false, true}) {
    for (double share : {0.0, 1.0}) {  // the GPU decodes, or the host threads do
      auto made = maker(batch_test::recipe(a), 1, high_priority)->make(batch_test::job(), 0, share);
      ASSERT_TRUE(made.ok()) << made.status().to_string();
      EXPECT_EQ(made->device, 0);
      EXPECT_EQ(made->shape, (Shape{2, 2, 2, 3}));
      EXPECT_EQ(first_difference(bytes_of(*made),
                                 on_host(batch_test::recipe(a), batch_test::job()).first, false),
                "")
          << "host share " << share << ", high priority " << high_priority;
      EXPECT_GT(made->report.missing, 0);
    }
  }
}

// Every element's bits but the NaNs' (as the GPU loader's Python tests compare batches): a
// float32 NaN is written as each side's arithmetic leaves it. The masked fill value of the
// missing chunk becomes the quiet NaN 0x7fc00000, and (NaN - mean) * inv_std keeps that payload
// on the host (SSE and NEON arithmetic returns the NaN operand) while the GPU returns its one
// canonical NaN, 0x7fffffff. (16-bit outputs write 0x7fff on both: transform.h.) NaNs must still
// sit at the same places, and be counted alike.
TEST_F(DeviceBatchTest, NormalisedBatchesCarryTheHostMakersBits) {
  BatchRecipe r = batch_test::recipe(a);
  r.dtype = DataType{DTypeKind::kFloat, 4};
  r.mean_std = std::vector<float>{100.f, 3.f, -5.f, 7.f};
  r.decoding = std::vector<CfDecoding>{{true, 0.5, 1.0, {42}}, {}};
  auto made = maker(r)->make(batch_test::job(), 0, 0.0);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  const auto [bytes, nans] = on_host(r, batch_test::job());
  EXPECT_EQ(first_difference(bytes_of(*made), bytes, /*nans_alike=*/true), "");
  EXPECT_GT(nans, 0u);  // the missing chunk of channel 0, masked
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
    EXPECT_EQ(first_difference(bytes_of(t->batch.batch), want, false), "") << "batch " << i;
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
