// The host threads' work on one item of a GPU read: reading, checking, decoding.
#include "zarrflow/pipeline/gpu/host_work.h"

#include <gtest/gtest.h>

#include <cmath>

#include "zarrflow/pipeline/gpu/read_test_util.h"

namespace zarrflow::gpu {
namespace {

using read_test::all;
using read_test::Arrays;
using read_test::Bytes;

// The items of `requests`, their stored bytes read into `staging` as a piece's fetch does.
std::vector<Item> fetched(Arrays& a, const std::vector<ReadRequest>& requests, Bytes& staging,
                          const PlanOptions& options = {}) {
  auto items = a.plan(requests, options);
  auto layout = lay_out_staging(items, all(items), {});
  EXPECT_TRUE(layout.ok());
  staging.assign(layout->staged, std::byte{0});
  std::atomic<std::int64_t> direct{0};
  for (auto& it : items)
    if (it.mode != Mode::kFill && it.dup_of < 0)
      EXPECT_TRUE(read_stored(it, staging.data() + it.staging_offset, IoPath::kAuto, direct).ok());
  return items;
}

TEST(HostWork, ReadsStoredBytesAndAValueDeletedSinceItsSizeIsAFill) {
  Arrays a;
  Bytes staging;
  auto items = fetched(a, {a.request(*a.raw, Selection{{0, 0}, {2, 6}, {1, 1}})}, staging);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(Bytes(staging.begin() + std::ptrdiff_t(items[1].staging_offset),
                  staging.begin() + std::ptrdiff_t(items[1].staging_offset + 24)),
            read_test::chunk_bytes(0, 1));
  a.store->erase("raw/c/0/1");
  std::atomic<std::int64_t> direct{0};
  ASSERT_TRUE(read_stored(items[1], staging.data(), IoPath::kAuto, direct).ok());
  EXPECT_EQ(items[1].mode, Mode::kFill);
}

TEST(HostWork, ConvertsWhileReadingAndCountsNaNs) {
  Arrays a;
  const std::vector<float> values = {1.f, std::nanf(""), 3.f, 4.f, std::nanf(""), 6.f};
  const auto raw = std::as_bytes(std::span(values));
  ASSERT_TRUE(a.store
                  ->set("f/zarr.json", R"({"zarr_format": 3, "node_type": "array",
    "shape": [2, 3], "data_type": "float32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})")
                  .ok());
  ASSERT_TRUE(a.store->set("f/c/0/0", raw).ok());
  const auto arr = read_test::open_array(a.store, "f");
  ElementTransform tf{OutType::kFloat32, 1.f, 0.5f};  // (f - 1) * 0.5
  tf.in = *in_type_of(arr->dtype());
  std::vector<Item> items;
  ASSERT_TRUE(gather_items(a.request(*arr, Selection::full({2, 3})), &tf, {}, items).ok());
  choose_decoders(items, a.programs, {});
  ASSERT_TRUE(measure_stored_sizes(items, nullptr).ok());
  std::vector<float> out(6, -1.f);
  std::atomic<std::uint64_t> nans{0};
  ASSERT_TRUE(read_converted(items[0], reinterpret_cast<std::byte*>(out.data()), nans).ok());
  EXPECT_EQ(nans.load(), 2u);
  EXPECT_EQ(out[0], 0.f);
  EXPECT_EQ(out[3], 1.5f);
  EXPECT_TRUE(std::isnan(out[1]));
}

TEST(HostWork, ChecksFramingBeforeTheGpuSeesIt) {
  Arrays a;
  Bytes staging;
  auto items = fetched(a, {a.request(*a.zstd, Selection{{0, 0}, {2, 3}, {1, 1}})}, staging);
  GpuDecoders gpu;
  gpu.nvcomp = true;
  ASSERT_TRUE(check_gpu_item(items[0], staging.data(), gpu).ok());
  EXPECT_EQ(items[0].mode, Mode::kGpu);
  EXPECT_EQ(items[0].payload.size, items[0].stored_size);
  // Without nvCOMP, zstd decodes on the GPU all the same (zarrflow's decoder).
  gpu.nvcomp = false;
  gpu.nvcomp_missing = "nvCOMP was not found";
  ASSERT_TRUE(check_gpu_item(items[0], staging.data(), gpu).ok());
  EXPECT_EQ(items[0].mode, Mode::kGpu);
  // A truncated frame is an error naming the chunk (nvCOMP must never see it).
  items[0].mode = Mode::kGpu;
  items[0].stored_size -= 3;
  gpu.nvcomp = true;
  const Status s = check_gpu_item(items[0], staging.data(), gpu);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("zstd': chunk 'c/0/0'"), std::string::npos) << s.message();
}

TEST(HostWork, LargeNumcodecsLz4BlocksDecodeOnTheHostUnderAuto) {
  Arrays a;
  const std::size_t n = (kLz4GpuMaxBlock + 4096) / 4;  // int32 elements: one chunk over 1 MiB
  const std::string json = R"({"zarr_format": 3, "node_type": "array", "shape": [)" +
                           std::to_string(n) + R"(], "data_type": "int32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [)" +
                           std::to_string(n) + R"(]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": )" +
                           std::string(read_test::kLz4) + "}";
  ASSERT_TRUE(a.store->set("big/zarr.json", json).ok());
  ASSERT_TRUE(a.store->set("big/c/0", read_test::numcodecs_lz4_of(Bytes(n * 4))).ok());
  const auto big = read_test::open_array(a.store, "big");
  std::vector<Item> items;
  const StridedView dest{a.dest, {std::int64_t(n)}, {4}};
  ASSERT_TRUE(
      gather_items({big.get(), Selection::full({std::int64_t(n)}), dest}, nullptr, {}, items).ok());
  choose_decoders(items, a.programs, {});
  ASSERT_TRUE(measure_stored_sizes(items, nullptr).ok());
  Bytes staging(items[0].stored_size);
  std::atomic<std::int64_t> direct{0};
  ASSERT_TRUE(read_stored(items[0], staging.data(), IoPath::kAuto, direct).ok());
  GpuDecoders gpu;
  ASSERT_TRUE(check_gpu_item(items[0], staging.data(), gpu).ok());
  EXPECT_EQ(items[0].mode, Mode::kCpu);
  EXPECT_NE(items[0].cpu_reason.find("over 1 MiB"), std::string::npos);
  items[0].mode = Mode::kGpu;
  gpu.decode = GpuDecode::kOn;
  ASSERT_TRUE(check_gpu_item(items[0], staging.data(), gpu).ok());
  EXPECT_EQ(items[0].mode, Mode::kGpu);
  EXPECT_EQ(items[0].payload.offset, 4u);  // past numcodecs' size header
}

TEST(HostWork, DecodesTheSelectedBlockOnTheHost) {
  Arrays a;
  Bytes staging;
  auto items = fetched(a, {a.request(*a.zstd, Selection{{1, 4}, {1, 2}, {1, 1}})}, staging);
  ASSERT_EQ(items.size(), 1u);
  std::vector<std::int32_t> out(2, 0);
  ASSERT_TRUE(decode_on_host(items[0], staging.data(),
                             ByteSpan(reinterpret_cast<std::byte*>(out.data()), 8), nullptr)
                  .ok());
  EXPECT_EQ(out, (std::vector<std::int32_t>{read_test::value(1, 4), read_test::value(1, 5)}));
}

}  // namespace
}  // namespace zarrflow::gpu
