// GPU read path against the CPU path, over an in-memory store (label: gpu). Skips without a GPU.
// Small on purpose: this binary also runs under compute-sanitizer (scripts/gpu_run.sh).
#include <blosc.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <thread>
#include <tuple>

#include "zarrflow/codec/codec_test_util.h"
#include "zarrflow/codec/crc32c.h"
#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/codec/gpu/kernels.h"
#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/codec/gpu/zstd_jobs.h"
#include "zarrflow/pipeline/gpu/device_reader.h"
#include "zarrflow/pipeline/gpu/read_plan.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace zarrflow::gpu {
namespace {

using Bytes = std::vector<std::byte>;

// Array `path` of `store`.
std::shared_ptr<Array> open_array(const std::shared_ptr<MemoryStore>& store,
                                  const std::string& path) {
  auto node = open_node(store, path);
  EXPECT_TRUE(node.ok()) << node.status().to_string();
  return std::get<std::shared_ptr<Array>>(*node);
}

// `sel` of `arr` read by the CPU, and by `reader` into device memory (dense, C order; the
// GPU side starts as 0x5a bytes, so what the read leaves unwritten shows).
// `before_gpu_read` runs just before the GPU read (and may fill the GPU).
struct BothReads {
  Bytes cpu, gpu;
  Status status;  // of the GPU read
};
BothReads read_on_cpu_and_gpu(const Array& arr, const Selection& sel, DeviceReader& reader,
                              const DeviceReadOptions& opt, DeviceReadReport* report,
                              const std::function<void()>& before_gpu_read = {}) {
  const std::size_t bytes =
      std::accumulate(sel.count.begin(), sel.count.end(), std::size_t(arr.dtype().size),
                      [](std::size_t a, std::int64_t b) { return a * std::size_t(b); });
  BothReads r{Bytes(bytes), Bytes(bytes, std::byte{0x5a}), {}};
  const Status cpu =
      arr.read(sel, {r.cpu.data(), sel.count, c_strides(sel.count, arr.dtype().size)},
               ReadOptions{opt.pool});
  EXPECT_TRUE(cpu.ok()) << cpu.to_string();
  void* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, std::max<std::size_t>(bytes, 1)), cudaSuccess);
  if (before_gpu_read) before_gpu_read();
  r.status = reader.read(
      arr, sel, {static_cast<std::byte*>(d), sel.count, c_strides(sel.count, arr.dtype().size)},
      opt, report);
  if (r.status.ok())
    EXPECT_EQ(cudaMemcpy(r.gpu.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  return r;
}

class DeviceReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = device_available();
    if (!s.ok()) GTEST_SKIP() << "no GPU: " << s.message();
    if (const char* lib = std::getenv("ZARRFLOW_NVCOMP_LIBRARY")) set_nvcomp_library({lib});
  }

  // Reads `sel` of array `path` on the CPU and on the GPU and expects identical bytes.
  void expect_same(const std::shared_ptr<MemoryStore>& store, const std::string& path,
                   const Selection& sel, GpuDecode mode = GpuDecode::kAuto,
                   std::int64_t expect_cpu_decoded = -1, double host_share = 0.0) {
    const auto owner = open_array(store, path);
    const Array& arr = *owner;
    ThreadPool pool(2);
    DeviceReader reader;
    DeviceReadOptions opt;
    opt.pool = &pool;
    opt.decode = mode;
    opt.host_share = host_share;
    DeviceReadReport report;
    const BothReads r = read_on_cpu_and_gpu(arr, sel, reader, opt, &report);
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    EXPECT_EQ(r.cpu, r.gpu) << path;
    if (expect_cpu_decoded >= 0) EXPECT_EQ(report.cpu_decoded, expect_cpu_decoded) << path;
  }

  // A (5, 9, 7) float32 array with chunks (2, 4, 3) whose chunks are stored by `encode`; chunk
  // (1, 1, 1) is missing. Values are smooth so every codec compresses them.
  std::shared_ptr<MemoryStore> make(const std::string& path, const std::string& codecs_json,
                                    const std::function<Bytes(const Bytes&)>& encode,
                                    const std::string& key_sep = "/") {
    auto store = std::make_shared<MemoryStore>();
    const std::string meta = R"({"zarr_format": 3, "node_type": "array", "shape": [5, 9, 7],
      "data_type": "float32", "chunk_grid": {"name": "regular",
      "configuration": {"chunk_shape": [2, 4, 3]}}, "chunk_key_encoding": {"name": "default",
      "configuration": {"separator": ")" +
                             key_sep + R"("}}, "fill_value": "NaN", "codecs": )" + codecs_json +
                             "}";
    EXPECT_TRUE(store->set(path + "/zarr.json", meta).ok());
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b)
        for (int c = 0; c < 3; ++c) {
          if (a == 1 && b == 1 && c == 1) continue;
          std::vector<float> chunk(24);
          for (int i = 0; i < 24; ++i)
            chunk[i] = float(a * 100 + b * 10 + c) + 0.25f * float(i % 5);
          Bytes raw(96);
          std::memcpy(raw.data(), chunk.data(), 96);
          const std::string key = path + "/c" + key_sep + std::to_string(a) + key_sep +
                                  std::to_string(b) + key_sep + std::to_string(c);
          EXPECT_TRUE(store->set(key, encode(raw)).ok());
        }
    return store;
  }

  // The same array, Blosc-LZ4 with byte shuffle (decoded by zarrflow's own GPU kernels).
  std::shared_ptr<MemoryStore> make_lz4(const std::string& path);
};

Bytes identity(const Bytes& b) { return b; }

// Blocks of 16 bytes by default (many Blosc blocks per test chunk); 0 = Blosc's own choice.
Bytes blosc(const Bytes& b, const char* cname, int shuffle, std::size_t blocksize = 16) {
  Bytes out(b.size() + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(5, shuffle, 4, b.size(), b.data(), out.data(), out.size(), cname,
                                   blocksize, 1);
  out.resize(std::size_t(n));
  return out;
}

Bytes zstd(const Bytes& b) {
  Bytes out(ZSTD_compressBound(b.size()));
  out.resize(ZSTD_compress(out.data(), out.size(), b.data(), b.size(), 3));
  return out;
}

const char* kBytes = R"([{"name": "bytes", "configuration": {"endian": "little"}}])";
Bytes blosc_lz4(const Bytes& b) { return blosc(b, "lz4", 1); }

const char* kBloscLz4 = R"([{"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
     "typesize": 4, "blocksize": 0}}])";

std::shared_ptr<MemoryStore> DeviceReadTest::make_lz4(const std::string& path) {
  return make(path, kBloscLz4, blosc_lz4);
}

TEST_F(DeviceReadTest, RawEdgesMissingAndStrides) {
  auto store = make("raw", kBytes, identity);
  expect_same(store, "raw", Selection::full({5, 9, 7}), GpuDecode::kOn, 0);
  expect_same(store, "raw", Selection{{1, 2, 0}, {2, 3, 4}, {3, 2, 2}}, GpuDecode::kOn, 0);
  expect_same(store, "raw", Selection{{4, 8, 6}, {1, 1, 1}, {1, 1, 1}});
}

TEST_F(DeviceReadTest, BigEndianTransposed) {
  auto store = make("be", R"([{"name": "transpose", "configuration": {"order": [2, 0, 1]}},
      {"name": "bytes", "configuration": {"endian": "big"}}])",
                    [](const Bytes& b) {
                      // Chunk (2,4,3) stored as transpose order [2,0,1] → (3,2,4), big-endian.
                      Bytes out(b.size());
                      for (int i = 0; i < 2; ++i)
                        for (int j = 0; j < 4; ++j)
                          for (int k = 0; k < 3; ++k)
                            for (int x = 0; x < 4; ++x)
                              out[((k * 2 + i) * 4 + j) * 4 + x] =
                                  b[((i * 4 + j) * 3 + k) * 4 + 3 - x];
                      return out;
                    });
  expect_same(store, "be", Selection::full({5, 9, 7}), GpuDecode::kOn, 0);
  expect_same(store, "be", Selection{{0, 1, 1}, {3, 4, 3}, {2, 2, 2}}, GpuDecode::kOn, 0);
}

TEST_F(DeviceReadTest, BloscLz4AndBlosclzOnOwnKernels) {
  for (const char* cname : {"lz4", "blosclz", "lz4hc"})
    for (int shuffle : {0, 1, 2}) {
      const std::string codecs =
          R"([{"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {"cname": ")" +
          std::string(cname == std::string("lz4hc") ? "lz4hc" : cname) +
          R"(", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}])";
      auto store = make("b", codecs, [&](const Bytes& b) { return blosc(b, cname, shuffle); });
      expect_same(store, "b", Selection::full({5, 9, 7}), GpuDecode::kOn, 0);
    }
}

// zstd decodes on the GPU with nvCOMP's decoder or zarrflow's (set_zstd_decoder), and without
// nvCOMP with zarrflow's: the same bytes.
TEST_F(DeviceReadTest, ZstdOnTheGpuWithEitherDecoder) {
  auto store = make("z", R"([{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])",
                    zstd);
  for (ZstdDecoder d : {ZstdDecoder::kZarrflow, ZstdDecoder::kNvcomp, ZstdDecoder::kAuto}) {
    set_zstd_decoder(d);
    expect_same(store, "z", Selection::full({5, 9, 7}), GpuDecode::kOn, 0);
  }
}

// host_share moves decoding of compressed chunks to the host threads, evenly; uncompressed
// chunks have nothing to decode and keep their path. Same bytes whatever the share.
TEST_F(DeviceReadTest, HostShareMovesOnlyCompressedChunks) {
  auto raw = make("raw", kBytes, identity);
  expect_same(raw, "raw", Selection::full({5, 9, 7}), GpuDecode::kAuto, 0, 1.0);
  auto lz4 = make_lz4("b");
  expect_same(lz4, "b", Selection::full({5, 9, 7}), GpuDecode::kAuto, 26, 1.0);  // 27 - missing
  // Every second chunk in C order moves (the 2nd, 4th, ..., 26th: 13); the 14th is the missing
  // chunk (1, 1, 1), filled instead: 12 are decoded on the host.
  expect_same(lz4, "b", Selection::full({5, 9, 7}), GpuDecode::kAuto, 12, 0.5);
  expect_same(lz4, "b", Selection::full({5, 9, 7}), GpuDecode::kAuto, 0, 0.0);
}

// int32 values as numcodecs LZ4 stores them: the decoded size (u32, little-endian), one block.
Bytes numcodecs_lz4(const std::vector<std::int32_t>& v) {
  const int raw = int(v.size() * 4);
  Bytes out(4 + std::size_t(LZ4_compressBound(raw)));
  const int n =
      LZ4_compress_default(reinterpret_cast<const char*>(v.data()),
                           reinterpret_cast<char*>(out.data()) + 4, raw, int(out.size()) - 4);
  std::memcpy(out.data(), &raw, 4);
  out.resize(4 + std::size_t(n));
  return out;
}

TEST_F(DeviceReadTest, NumcodecsLz4V2) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("v2/.zarray", std::string_view(R"({"zarr_format": 2, "shape": [10, 6],
    "chunks": [4, 6], "dtype": "<i4", "compressor": {"id": "lz4", "acceleration": 1},
    "filters": null, "fill_value": 7, "order": "C"})"))
                  .ok());
  for (int c = 0; c < 2; ++c) {  // chunk 2 missing
    std::vector<std::int32_t> v(24);
    std::iota(v.begin(), v.end(), c * 1000);
    ASSERT_TRUE(store->set("v2/" + std::to_string(c) + ".0", numcodecs_lz4(v)).ok());
  }
  expect_same(store, "v2", Selection::full({10, 6}), GpuDecode::kOn, 0);
}

// numcodecs LZ4 chunks over 1 MiB are one LZ4 block each, which one GPU warp decodes far slower
// than the host threads: `auto` decodes them on the host, `on` still on the GPU. Same bytes.
TEST_F(DeviceReadTest, LargeNumcodecsLz4ChunksDecodeOnTheHostUnlessGpuIsAskedFor) {
  constexpr int kRows = 4, kCols = 80000;  // 1.28 MB chunks
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("big/.zarray", R"({"zarr_format": 2, "shape": [8, 80000],
    "chunks": [4, 80000], "dtype": "<i4", "compressor": {"id": "lz4", "acceleration": 1},
    "filters": null, "fill_value": 0, "order": "C"})")
                  .ok());
  for (int c = 0; c < 2; ++c) {
    std::vector<std::int32_t> v(kRows * kCols);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::int32_t(i / 7) + c * 1000;
    ASSERT_TRUE(store->set("big/" + std::to_string(c) + ".0", numcodecs_lz4(v)).ok());
  }
  expect_same(store, "big", Selection::full({8, kCols}), GpuDecode::kAuto, 2);
  expect_same(store, "big", Selection::full({8, kCols}), GpuDecode::kOn, 0);
}

// Many requests sharing chunks (y at t is x at t+1), also split into tiny internal batches: a
// shared chunk is still read once, since its copies follow its first occurrence into its batch.
TEST_F(DeviceReadTest, ReadManySharesChunksWithinAndAcrossBatches) {
  auto store = make_lz4("m");
  auto node = open_node(store, "m");
  const auto& arr = *std::get<std::shared_ptr<Array>>(*node);
  // Requests: for t in 0..3, rows t and t+1 (whole 9x7 planes) into a [4, 2, 9, 7] batch.
  const Shape plane{1, 9, 7};
  const std::int64_t n = 4 * 2 * 9 * 7;
  Bytes cpu(n * 4), gpu(n * 4);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n * 4), cudaSuccess);
  std::vector<ReadRequest> host, dev;
  for (int t = 0; t < 4; ++t)
    for (int s = 0; s < 2; ++s) {
      const Selection sel{{t + s, 0, 0}, plane, {1, 1, 1}};
      const std::int64_t off = (t * 2 + s) * 9 * 7 * 4;
      host.push_back({&arr, sel, {cpu.data() + off, plane, c_strides(plane, 4)}});
      dev.push_back({&arr, sel, {static_cast<std::byte*>(d) + off, plane, c_strides(plane, 4)}});
    }
  ASSERT_TRUE(read_many(host, ReadOptions{}).ok());
  // Decoded on the GPU or by the host threads (gpu_decode=off, or host_share 1: also the copies
  // of a chunk that fall into a later internal batch): a chunk block two requests want alike
  // (row t+1 of request t and row t+1 of request t+1) is decoded once either way.
  for (auto [mode, share] : {std::pair{GpuDecode::kOn, 0.0}, std::pair{GpuDecode::kOff, 0.0},
                             std::pair{GpuDecode::kAuto, 1.0}}) {
    std::int64_t shared_in_one_batch = -1;
    for (std::uint64_t batch : {std::uint64_t{0}, std::uint64_t{1500}}) {
      DeviceReader reader;
      DeviceReadOptions opt;
      opt.decode = mode;
      opt.host_share = share;
      opt.batch_bytes = batch;  // 0: per codec; 1500: about a dozen chunks per batch
      DeviceReadReport report;
      Status s = reader.read_many(dev, opt, &report);
      ASSERT_TRUE(s.ok()) << s.to_string();
      ASSERT_EQ(cudaMemcpy(gpu.data(), d, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      const bool host = mode == GpuDecode::kOff || share == 1.0;
      EXPECT_EQ(cpu, gpu) << "batch_bytes " << batch << " host " << host;
      EXPECT_GT(report.deduplicated, 0) << "batch_bytes " << batch << " host " << host;
      EXPECT_EQ(report.cpu_decoded + report.gpu_decoded + report.deduplicated + report.missing,
                report.chunks);
      if (host) EXPECT_EQ(report.gpu_decoded, 0);
      if (batch == 0) {
        EXPECT_EQ(report.batches, 1);
        shared_in_one_batch = report.deduplicated;
      } else {
        EXPECT_GE(report.batches, 2) << "host " << host;
        EXPECT_EQ(report.deduplicated, shared_in_one_batch) << "host " << host;
      }
    }
  }
  cudaFree(d);
}

// The same host-decoded block into a dense destination and into a strided one (every second
// element): the dense one is copied up, the strided one scattered from the device copy of the
// block; each must get its own copy of the bytes, whichever of the two comes first.
TEST_F(DeviceReadTest, HostDecodedDuplicateIntoDenseAndStridedDestinations) {
  auto store = make_lz4("m");
  auto node = open_node(store, "m");
  const auto& arr = *std::get<std::shared_ptr<Array>>(*node);
  const Shape block{2, 4, 3};  // chunk (0, 0, 0), whole
  const Selection sel{{0, 0, 0}, block, {1, 1, 1}};
  const std::int64_t n = 24;
  Bytes want(n * 4);
  ASSERT_TRUE(arr.read(sel, {want.data(), block, c_strides(block, 4)}, ReadOptions{}).ok());
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 3 * n * 4), cudaSuccess);
  auto* dense = static_cast<std::byte*>(d);
  auto* strided = dense + n * 4;  // 2n floats, every second one written
  const Shape strides{4 * 3 * 8, 3 * 8, 8};
  for (bool dense_first : {true, false}) {
    ASSERT_EQ(cudaMemset(d, 0, 3 * n * 4), cudaSuccess);
    std::vector<DeviceReadRequest> reqs{{&arr, sel, {dense, block, c_strides(block, 4)}},
                                        {&arr, sel, {strided, block, strides}}};
    if (!dense_first) std::swap(reqs[0], reqs[1]);
    DeviceReader reader;
    DeviceReadOptions opt;
    opt.decode = GpuDecode::kOff;
    DeviceReadReport report;
    Status s = reader.read_many(reqs, opt, &report);
    ASSERT_TRUE(s.ok()) << s.to_string();
    Bytes got(3 * n * 4);
    ASSERT_EQ(cudaMemcpy(got.data(), d, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(Bytes(got.begin(), got.begin() + n * 4), want) << "dense first " << dense_first;
    for (std::int64_t i = 0; i < n; ++i)
      EXPECT_EQ(std::memcmp(got.data() + n * 4 + i * 8, want.data() + i * 4, 4), 0)
          << "strided element " << i << ", dense first " << dense_first;
    EXPECT_EQ(report.cpu_decoded + report.deduplicated, 2);
  }
  cudaFree(d);
}

// Whole rows of an uncompressed array, each read twice: the second copy of a row comes from the
// first one's bytes on the GPU (the dense-copy path of the scatter kernel), into destinations at
// odd, 4-byte and 16-byte aligned offsets; rows span several scatter tiles.
TEST_F(DeviceReadTest, SharedRowsCopiedAtAnyAlignment) {
  for (const auto& [dtype, elem, width] :
       {std::tuple{"uint8", 1, 37}, std::tuple{"float32", 4, 9001}}) {
    auto store = std::make_shared<MemoryStore>();
    const std::string meta =
        std::string(R"({"zarr_format": 3, "node_type": "array", "shape": [3, )") +
        std::to_string(width) + R"(], "data_type": ")" + dtype +
        R"(", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, )" +
        std::to_string(width) + R"(]}}, "chunk_key_encoding": {"name": "default"},
        "fill_value": 0, "codecs": )" +
        kBytes + "}";
    ASSERT_TRUE(store->set("r/zarr.json", meta).ok());
    for (int r = 0; r < 3; ++r) {
      Bytes row(std::size_t(width) * elem);
      for (std::size_t i = 0; i < row.size(); ++i) row[i] = std::byte((r * 131 + i * 7) & 0xff);
      ASSERT_TRUE(store->set("r/c/" + std::to_string(r) + "/0", row).ok());
    }
    auto node = open_node(store, "r");
    const auto& arr = *std::get<std::shared_ptr<Array>>(*node);
    const Shape row{1, width};
    const std::int64_t row_bytes = std::int64_t(width) * elem;
    const std::int64_t total = 6 * row_bytes + 64;
    Bytes cpu(total, std::byte{0}), gpu(total);
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, total), cudaSuccess);
    ASSERT_EQ(cudaMemset(d, 0, total), cudaSuccess);
    // Offsets: row r once at r * row_bytes and again after them, shifted by 1, 4 or 16 bytes.
    std::vector<ReadRequest> host, dev;
    for (int r = 0; r < 3; ++r)
      for (std::int64_t off : {r * row_bytes, 3 * row_bytes + std::int64_t(r) * (row_bytes + 16) +
                                                  (r == 0   ? elem
                                                   : r == 1 ? 4 * elem
                                                            : 16)}) {
        const Selection sel{{r, 0}, row, {1, 1}};
        host.push_back({&arr, sel, {cpu.data() + off, row, c_strides(row, elem)}});
        dev.push_back({&arr, sel, {static_cast<std::byte*>(d) + off, row, c_strides(row, elem)}});
      }
    ASSERT_LE(3 * row_bytes + 2 * (row_bytes + 16) + 16 + row_bytes, total);
    ASSERT_TRUE(read_many(host, ReadOptions{}).ok());
    DeviceReader reader;
    DeviceReadOptions opt;
    opt.decode = GpuDecode::kOn;
    DeviceReadReport report;
    Status s = reader.read_many(dev, opt, &report);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(cudaMemcpy(gpu.data(), d, total, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    EXPECT_EQ(cpu, gpu) << dtype;
    EXPECT_EQ(report.deduplicated, 3) << dtype;
  }
}

// Reads with an ElementTransform (the loader's normalisation and cast) equal the CPU read
// followed by (x - mean) * inv_std and the cast, and give the same bytes (NaNs included) on every
// path a chunk can take: decoded on the GPU (in place when there is no transform), decoded by the
// host threads and converted there (dense destination) or on the GPU (scattered), uncompressed
// (converted on the host when read whole into a dense destination), big-endian, from the GPU
// chunk cache, shared by two requests; the missing chunk's NaN fill is converted and counted.
TEST_F(DeviceReadTest, NormaliseAndCastOnEveryPath) {
  const auto swap4 = [](const Bytes& b) {
    Bytes o(b);
    for (std::size_t i = 0; i + 4 <= o.size(); i += 4)
      std::reverse(o.begin() + i, o.begin() + i + 4);
    return o;
  };
  const std::vector<std::tuple<std::string, std::string, std::function<Bytes(const Bytes&)>>>
      stores = {{"raw", kBytes, identity},
                {"be", R"([{"name": "bytes", "configuration": {"endian": "big"}}])", swap4},
                {"lz4", kBloscLz4, blosc_lz4}};
  // Two overlapping regions (they share chunks, and both touch the missing chunk (1, 1, 1)),
  // and chunk (0, 1, 1), which they do not touch, alone (a dense destination).
  const std::vector<Selection> regions = {Selection{{2, 0, 0}, {3, 9, 7}, {1, 1, 1}},
                                          Selection{{2, 1, 2}, {3, 8, 5}, {1, 1, 1}},
                                          Selection{{0, 4, 3}, {2, 4, 3}, {1, 1, 1}}};
  for (const auto& [name, codecs, encode] : stores) {
    auto store = make(name, codecs, encode);
    auto node = open_node(store, name);
    const auto& arr = *std::get<std::shared_ptr<Array>>(*node);
    std::vector<float> ref(5 * 9 * 7);
    const Shape full{5, 9, 7};
    ASSERT_TRUE(arr.read(Selection::full(full),
                         {reinterpret_cast<std::byte*>(ref.data()), full, c_strides(full, 4)},
                         ReadOptions{})
                    .ok());
    for (OutType out : {OutType::kFloat32, OutType::kBFloat16, OutType::kFloat16}) {
      const std::int64_t osize = out_type_size(out);
      const ElementTransform tfs[3] = {
          {out, 3.5f, 1.f / 3.f}, {out, -1.f, 2.f}, {out, 100.f, 1.f / 7.f}};
      std::vector<std::int64_t> offsets{0};
      for (const auto& r : regions)
        offsets.push_back(offsets.back() + r.count[0] * r.count[1] * r.count[2] * osize);
      std::vector<std::byte> first;  // the GPU-decode path's bytes
      for (const char* path : {"gpu", "host", "cache"}) {
        const std::string what = name + " " + path + " " + std::to_string(int(out));
        void* d = nullptr;
        ASSERT_EQ(cudaMalloc(&d, offsets.back()), cudaSuccess);
        std::vector<DeviceReadRequest> reqs;
        for (std::size_t i = 0; i < regions.size(); ++i)
          reqs.push_back({&arr,
                          regions[i],
                          {static_cast<std::byte*>(d) + offsets[i], regions[i].count,
                           c_strides(regions[i].count, osize)}});
        DeviceReader reader;
        ChunkCache cache(std::uint64_t{1} << 20);
        DeviceReadOptions opt;
        opt.decode = std::string(path) == "host" ? GpuDecode::kOff : GpuDecode::kOn;
        opt.transforms = tfs;
        if (std::string(path) == "cache") {
          opt.cache = &cache;
          ASSERT_TRUE(reader.read_many(reqs, opt).ok()) << what;  // fills the cache
        }
        DeviceReadReport report;
        Status s = reader.read_many(reqs, opt, &report);
        ASSERT_TRUE(s.ok()) << what << ": " << s.to_string();
        if (std::string(path) == "cache") EXPECT_GT(report.cache_hits, 0) << what;
        if (std::string(path) == "host") {
          EXPECT_GT(report.cpu_decoded, 0) << what;
          EXPECT_GT(report.host_transformed, 0) << what;  // chunk (0, 1, 1) at least
        }
        if (std::string(path) == "gpu")  // only the little-endian uncompressed chunk, read whole
          EXPECT_EQ(report.host_transformed, name == "raw" ? 1 : 0) << what;
        std::vector<std::byte> got(offsets.back());
        ASSERT_EQ(cudaMemcpy(got.data(), d, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        cudaFree(d);
        if (first.empty()) {
          first = got;
        } else {
          EXPECT_EQ(got, first) << what << ": differs from the GPU-decode path";
        }
        std::uint64_t nans = 0;
        std::int64_t bad = 0;
        for (std::size_t i = 0; i < regions.size(); ++i) {
          const Selection& r = regions[i];
          std::int64_t k = 0;
          for (std::int64_t a = 0; a < r.count[0]; ++a)
            for (std::int64_t b = 0; b < r.count[1]; ++b)
              for (std::int64_t c = 0; c < r.count[2]; ++c, ++k) {
                const float x = ref[((r.start[0] + a) * 9 + r.start[1] + b) * 7 + r.start[2] + c];
                const float y = (x - tfs[i].mean) * tfs[i].inv_std;
                const std::byte* g = got.data() + offsets[i] + k * osize;
                nans += std::isnan(x);
                if (out == OutType::kFloat32) {
                  float v;
                  std::memcpy(&v, g, 4);
                  bad += std::isnan(x) ? !std::isnan(v) : std::memcmp(&v, &y, 4) != 0;
                } else {
                  std::uint16_t v;
                  std::memcpy(&v, g, 2);
                  bad += v !=
                         (out == OutType::kBFloat16 ? float_to_bf16_bits(y) : float_to_f16_bits(y));
                }
              }
        }
        EXPECT_EQ(bad, 0) << what;
        EXPECT_GT(nans, 0u) << what;
        EXPECT_EQ(report.nans, nans) << what;
      }
    }
  }
  // Only float32 arrays can be normalised; the error names the array.
  auto ints = std::make_shared<MemoryStore>();
  ASSERT_TRUE(ints->set("i/.zarray", std::string_view(R"({"zarr_format": 2, "shape": [4],
    "chunks": [4], "dtype": "<i4", "compressor": null, "filters": null, "fill_value": 0,
    "order": "C"})"))
                  .ok());
  auto node = open_node(ints, "i");
  const auto& arr = *std::get<std::shared_ptr<Array>>(*node);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  const ElementTransform tf{OutType::kBFloat16, 0.f, 1.f};
  DeviceReadOptions opt;
  opt.transforms = {&tf, 1};
  const Shape four{4};
  const DeviceReadRequest req{&arr, Selection::full(four), {static_cast<std::byte*>(d), four, {2}}};
  Status s = DeviceReader().read_many({&req, 1}, opt);
  cudaFree(d);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reads another type than the array's int32"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("i'"), std::string::npos) << s.message();
}

// The NaN count is of elements written: requests that share a block (x at t+1 is y at t) count
// its NaNs once each on every path, also where the host threads decode and convert the block
// once and copy it up twice, and for the missing chunk's NaN fill.
TEST_F(DeviceReadTest, NansAreCountedPerRequestThatSharesABlock) {
  const auto with_nans = [](const Bytes& raw) {
    Bytes b(raw);
    const float nan = std::nanf("");
    std::memcpy(b.data(), &nan, 4);
    std::memcpy(b.data() + 40, &nan, 4);
    return blosc_lz4(b);
  };
  auto store = make("n", kBloscLz4, with_nans);
  const auto owner = open_array(store, "n");
  const Array& arr = *owner;
  const Shape full{5, 9, 7};
  std::vector<float> ref(5 * 9 * 7);
  ASSERT_TRUE(arr.read(Selection::full(full),
                       {reinterpret_cast<std::byte*>(ref.data()), full, c_strides(full, 4)},
                       ReadOptions{})
                  .ok());
  // Chunk (0, 0, 0) twice (a dense destination: converted by the host threads when they decode
  // it), and a region across chunks and the missing one twice (scattered on the GPU).
  const Selection chunk{{0, 0, 0}, {2, 4, 3}, {1, 1, 1}}, across{{1, 2, 1}, {4, 7, 6}, {1, 1, 1}};
  const std::vector<Selection> regions = {chunk, chunk, across, across};
  std::uint64_t want = 0;
  std::vector<std::int64_t> offsets{0};
  for (const auto& r : regions) {
    for (std::int64_t a = 0; a < r.count[0]; ++a)
      for (std::int64_t b = 0; b < r.count[1]; ++b)
        for (std::int64_t c = 0; c < r.count[2]; ++c)
          want += std::isnan(ref[((r.start[0] + a) * 9 + r.start[1] + b) * 7 + r.start[2] + c]);
    offsets.push_back(offsets.back() + r.count[0] * r.count[1] * r.count[2] * 2);
  }
  ASSERT_GT(want, 0u);
  const ElementTransform tf{OutType::kBFloat16, 1.f, 0.5f};
  const std::vector<ElementTransform> tfs(regions.size(), tf);
  for (const char* path : {"gpu", "host", "cache"}) {
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, offsets.back()), cudaSuccess);
    std::vector<DeviceReadRequest> reqs;
    for (std::size_t i = 0; i < regions.size(); ++i)
      reqs.push_back({&arr,
                      regions[i],
                      {static_cast<std::byte*>(d) + offsets[i], regions[i].count,
                       c_strides(regions[i].count, 2)}});
    DeviceReader reader;
    ChunkCache cache(std::uint64_t{1} << 20);
    DeviceReadOptions opt;
    opt.decode = std::string(path) == "host" ? GpuDecode::kOff : GpuDecode::kOn;
    opt.transforms = tfs;
    if (std::string(path) == "cache") {
      opt.cache = &cache;
      ASSERT_TRUE(reader.read_many(reqs, opt).ok()) << path;  // fills the cache
    }
    DeviceReadReport report;
    const Status s = reader.read_many(reqs, opt, &report);
    cudaFree(d);
    ASSERT_TRUE(s.ok()) << path << ": " << s.to_string();
    EXPECT_GT(report.deduplicated, 0) << path;
    if (std::string(path) == "host") EXPECT_GT(report.host_transformed, 0) << path;
    EXPECT_EQ(report.nans, want) << path;
  }
}

TEST_F(DeviceReadTest, CorruptChunkNamesTheKeyAndTheGpuStaysUsable) {
  auto store = make_lz4("bad");
  // Blosc has no checksum, so flipped literal bytes can decode "fine"; a truncated chunk cannot.
  auto v = **store->get("bad/c/0/1/2");
  Bytes broken(v.data(), v.data() + v.size() - 5);
  ASSERT_TRUE(store->set("bad/c/0/1/2", broken).ok());
  auto node = open_node(store, "bad");
  const auto& arr = *std::get<std::shared_ptr<Array>>(*node);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 5 * 9 * 7 * 4), cudaSuccess);
  const Shape shape{5, 9, 7};
  StridedView gv{static_cast<std::byte*>(d), shape, c_strides(shape, 4)};
  DeviceReader reader;
  Status s = reader.read(arr, Selection::full({5, 9, 7}), gv, DeviceReadOptions{});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chunk 'c/0/1/2'"), std::string::npos) << s.message();
  cudaFree(d);
  expect_same(store, "bad", Selection{{2, 0, 0}, {3, 9, 7}, {1, 1, 1}});  // other chunks still read
}

// Corrupt numcodecs-LZ4 and Blosc lz4 / lz4hc / blosclz chunks through the GPU path with
// gpu_decode="on" (zarrflow's own decoders): where the CPU path reads a corrupt chunk without
// error, the GPU decodes it itself (no chunk handed to the CPU) to the same bytes; where the CPU
// path raises, the GPU path raises the same error, word for word. The corruptions hit the
// compressed streams (not Blosc's header or offsets, which the host checks before the GPU sees
// them), often within their last bytes, where LZ4's end-of-block limits apply; truncations too.
TEST_F(DeviceReadTest, CorruptLz4AndBlosclzChunksFailExactlyAsOnTheCpu) {
  constexpr int kFields = 3, kSide = 64, kTrials = 40;
  const Shape shape{kFields, kSide, kSide};
  struct Case {
    const char* name;
    const char* codec;
    std::function<Bytes(const Bytes&)> encode;
  };
  const auto blosc_codec = [](const char* cname, const char* shuffle) {
    return std::string(R"({"name": "blosc", "configuration": {"cname": ")") + cname +
           R"(", "clevel": 5, "shuffle": ")" + shuffle + R"(", "typesize": 4, "blocksize": 4096}})";
  };
  const std::string lz4_shuffle = blosc_codec("lz4", "shuffle"),
                    lz4hc_none = blosc_codec("lz4hc", "noshuffle"),
                    blosclz_bit = blosc_codec("blosclz", "bitshuffle");
  const Case cases[] = {
      {"numcodecs.lz4", R"({"name": "numcodecs.lz4", "configuration": {"acceleration": 1}})",
       [](const Bytes& b) {
         Bytes out(4 + std::size_t(LZ4_compressBound(int(b.size()))));
         const int n = LZ4_compress_default(reinterpret_cast<const char*>(b.data()),
                                            reinterpret_cast<char*>(out.data()) + 4, int(b.size()),
                                            int(out.size()) - 4);
         const auto raw = std::uint32_t(b.size());
         std::memcpy(out.data(), &raw, 4);
         out.resize(4 + std::size_t(n));
         return out;
       }},
      {"blosc-lz4-shuffle", lz4_shuffle.c_str(),
       [](const Bytes& b) { return blosc(b, "lz4", 1, 4096); }},
      {"blosc-lz4hc-noshuffle", lz4hc_none.c_str(),
       [](const Bytes& b) { return blosc(b, "lz4hc", 0, 4096); }},
      {"blosc-blosclz-bitshuffle", blosclz_bit.c_str(),
       [](const Bytes& b) { return blosc(b, "blosclz", 2, 4096); }},
  };
  // Runs of equal values, slow ramps and noise: literals, short and long matches, overlaps.
  const auto value = [](int t, int k) {
    if ((k / 300) % 3 == 0) return float(t);
    return float(t) + 0.001f * float((k * 7919 + t) % ((k / 100) % 2 ? 1000 : 16));
  };
  for (std::size_t ci = 0; ci < std::size(cases); ++ci) {
    const Case& c = cases[ci];
    SCOPED_TRACE(c.name);
    auto store = std::make_shared<MemoryStore>();
    ASSERT_TRUE(store
                    ->set("z/zarr.json",
                          R"({"zarr_format": 3, "node_type": "array", "shape": [3, 64, 64],
      "data_type": "float32", "chunk_grid": {"name": "regular",
      "configuration": {"chunk_shape": [1, 64, 64]}}, "chunk_key_encoding": {"name": "default"},
      "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, )" +
                              std::string(c.codec) + "]}")
                    .ok());
    std::vector<Bytes> originals;
    for (int t = 0; t < kFields; ++t) {
      std::vector<float> field(kSide * kSide);
      for (int k = 0; k < kSide * kSide; ++k) field[k] = value(t, k);
      Bytes raw(field.size() * 4);
      std::memcpy(raw.data(), field.data(), raw.size());
      originals.push_back(c.encode(raw));
      ASSERT_TRUE(store->set("z/c/" + std::to_string(t) + "/0/0", originals.back()).ok());
    }
    // The byte ranges a corruption may hit in each chunk: the LZ4 block after numcodecs' size
    // header, or the compressed streams of a Blosc chunk.
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> streams(kFields);
    for (int t = 0; t < kFields; ++t) {
      const Bytes& v = originals[t];
      if (std::string(c.name) == "numcodecs.lz4") {
        streams[t].push_back({4, v.size()});
        continue;
      }
      auto plan = make_blosc_plan(ConstByteSpan(v.data(), v.size()));
      ASSERT_TRUE(plan.ok()) << plan.status().to_string();
      for (const BloscStream& st : plan->streams)
        if (st.kind != BloscStreamKind::kMemcpy)
          streams[t].push_back({st.src_offset, st.src_offset + st.src_size});
      ASSERT_FALSE(streams[t].empty());
    }
    std::mt19937 rng(static_cast<unsigned>(1000 + ci));
    int both_ok = 0, both_fail = 0;
    for (int trial = 0; trial < kTrials; ++trial) {
      const int t = int(rng() % kFields);
      Bytes v = originals[t];
      const auto [begin, end] = streams[t][rng() % streams[t].size()];
      switch (rng() % 4) {
        case 0:  // flip 1-3 bytes of a stream
          for (int k = 1 + int(rng() % 3); k > 0; --k)
            v[begin + rng() % (end - begin)] ^= std::byte(1 + rng() % 255);
          break;
        case 1:  // flip a byte among a stream's last 16
          v[end - 1 - rng() % std::min<std::size_t>(16, end - begin)] ^= std::byte(1 + rng() % 255);
          break;
        case 2: {  // overwrite a few bytes with 0x00 or 0xFF
          const std::size_t at = begin + rng() % (end - begin);
          const std::byte b = rng() % 2 ? std::byte{0xFF} : std::byte{0x00};
          for (std::size_t k = at; k < std::min(end, at + 1 + rng() % 4); ++k) v[k] = b;
          break;
        }
        default:  // truncate the chunk
          v.resize(4 + rng() % (v.size() - 4));
      }
      const std::string key = "z/c/" + std::to_string(t) + "/0/0";
      ASSERT_TRUE(store->set(key, v).ok());
      const auto owner = open_array(store, "z");
      ThreadPool pool(2);
      DeviceReader reader;
      DeviceReadOptions opt;
      opt.pool = &pool;
      opt.decode = GpuDecode::kOn;
      DeviceReadReport report;
      const std::size_t bytes = std::size_t(kFields) * kSide * kSide * 4;
      Bytes cpu(bytes), gpu(bytes);
      const StridedView host{cpu.data(), shape, c_strides(shape, 4)};
      const Status cpu_status = owner->read(Selection::full(shape), host, ReadOptions{&pool});
      void* d = nullptr;
      ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
      const Status gpu_status =
          reader.read(*owner, Selection::full(shape),
                      {static_cast<std::byte*>(d), shape, c_strides(shape, 4)}, opt, &report);
      if (gpu_status.ok())
        ASSERT_EQ(cudaMemcpy(gpu.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(d);
      ASSERT_EQ(gpu_status.ok(), cpu_status.ok())
          << "trial " << trial << ": CPU " << cpu_status.to_string() << "; GPU "
          << gpu_status.to_string();
      if (cpu_status.ok()) {
        EXPECT_EQ(gpu, cpu) << "trial " << trial;
        EXPECT_EQ(report.cpu_decoded, 0) << "trial " << trial << ": the GPU rejected a chunk "
                                         << "the CPU decodes";
        ++both_ok;
      } else {
        EXPECT_EQ(gpu_status.code(), cpu_status.code()) << "trial " << trial;
        EXPECT_EQ(gpu_status.message(), cpu_status.message()) << "trial " << trial;
        EXPECT_NE(gpu_status.message().find("chunk 'c/" + std::to_string(t) + "/0/0'"),
                  std::string::npos)
            << gpu_status.message();
        ++both_fail;
      }
      ASSERT_TRUE(store->set(key, originals[t]).ok());
    }
    std::printf("%s: %d corrupt chunks decoded alike on the CPU and the GPU, %d rejected alike\n",
                c.name, both_ok, both_fail);
    EXPECT_GT(both_ok, 0);
    EXPECT_GT(both_fail, kTrials / 4);
  }
}

// numcodecs-LZ4 chunks of 16 KiB, one hand-made block each: literals, one long match, final
// literals. liblz4 (the CPU path) rejects a match that ends within the last 5 bytes of the
// output, and decodes a match offset of 0 as zeros; the GPU decoder must do the same: raise the
// CPU's error, or decode the chunk itself to the same bytes.
TEST_F(DeviceReadTest, Lz4BlocksAtLiblz4sLimitsDecodeAsOnTheCpu) {
  constexpr std::size_t kChunk = 64 * 64 * 4;
  const auto block = [](std::size_t lit, std::size_t offset, std::size_t last) {
    const std::size_t length = kChunk - lit - last;
    Bytes out(4);
    const auto raw = std::uint32_t(kChunk);
    std::memcpy(out.data(), &raw, 4);
    const auto put = [&](std::size_t v) { out.push_back(std::byte(v)); };
    const auto extend = [&](std::size_t extra) {
      for (; extra >= 255; extra -= 255) put(255);
      put(extra);
    };
    put(std::min<std::size_t>(lit, 15) << 4 | 15);  // the match length is >= 19
    if (lit >= 15) extend(lit - 15);
    for (std::size_t i = 0; i < lit; ++i) put(i * 37 + 1);
    put(offset & 255);
    put(offset >> 8);
    extend(length - 19);
    put(std::min<std::size_t>(last, 15) << 4);
    for (std::size_t i = 0; i < last; ++i) put(200 + i);
    return out;
  };
  struct Case {
    const char* name;
    Bytes chunk;
    bool cpu_ok;
  };
  const Case cases[] = {
      {"match of offset 4, 5 final literals", block(100, 4, 5), true},
      {"match of offset 0, 5 final literals", block(100, 0, 5), true},
      {"match ending 4 bytes before the end", block(100, 1, 4), false},
      {"match ending 2 bytes before the end", block(100, 1, 2), false},
  };
  const Shape shape{2, 64, 64};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto store = std::make_shared<MemoryStore>();
    ASSERT_TRUE(store
                    ->set("e/zarr.json", R"({"zarr_format": 3, "node_type": "array",
      "shape": [2, 64, 64], "data_type": "float32", "chunk_grid": {"name": "regular",
      "configuration": {"chunk_shape": [1, 64, 64]}}, "chunk_key_encoding": {"name": "default"},
      "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
      {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}]})")
                    .ok());
    ASSERT_TRUE(store->set("e/c/0/0/0", block(100, 8, 5)).ok());
    ASSERT_TRUE(store->set("e/c/1/0/0", c.chunk).ok());
    const auto owner = open_array(store, "e");
    ThreadPool pool(2);
    const std::size_t bytes = 2 * kChunk;
    Bytes cpu(bytes), gpu(bytes);
    const Status cpu_status = owner->read(
        Selection::full(shape), {cpu.data(), shape, c_strides(shape, 4)}, ReadOptions{&pool});
    ASSERT_EQ(cpu_status.ok(), c.cpu_ok) << cpu_status.to_string();
    DeviceReader reader;
    DeviceReadOptions opt;
    opt.pool = &pool;
    opt.decode = GpuDecode::kOn;
    DeviceReadReport report;
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
    const Status gpu_status =
        reader.read(*owner, Selection::full(shape),
                    {static_cast<std::byte*>(d), shape, c_strides(shape, 4)}, opt, &report);
    if (gpu_status.ok())
      ASSERT_EQ(cudaMemcpy(gpu.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    if (c.cpu_ok) {
      ASSERT_TRUE(gpu_status.ok()) << gpu_status.to_string();
      EXPECT_EQ(gpu, cpu);
      EXPECT_EQ(report.cpu_decoded, 0) << "the GPU decoder rejected a block liblz4 decodes";
    } else {
      ASSERT_FALSE(gpu_status.ok()) << "the GPU returned data for a block liblz4 rejects";
      EXPECT_EQ(gpu_status.code(), cpu_status.code());
      EXPECT_EQ(gpu_status.message(), cpu_status.message());
    }
  }
}

// A [n, 256, 256] float32 array "z" with one chunk per field: field t's element k is
// value(t, k), encoded by `encode` under the `codecs` chain.
struct FieldStore {
  std::shared_ptr<MemoryStore> store;
  std::uint64_t stored = 0, largest = 0;  // encoded bytes: all chunks, the largest one
};
constexpr int kSide = 256;
FieldStore field_store(int n, const std::string& codecs,
                       const std::function<float(int, int)>& value,
                       const std::function<Bytes(const Bytes&)>& encode) {
  FieldStore fs{std::make_shared<MemoryStore>()};
  const Status meta = fs.store->set(
      "z/zarr.json", R"({"zarr_format": 3, "node_type": "array", "shape": [)" + std::to_string(n) +
                         R"(, 256, 256], "data_type": "float32", "chunk_grid": {"name": "regular",
      "configuration": {"chunk_shape": [1, 256, 256]}}, "chunk_key_encoding": {"name": "default"},
      "fill_value": 0.0, "codecs": )" +
                         codecs + "}");
  EXPECT_TRUE(meta.ok()) << meta.to_string();
  for (int t = 0; t < n; ++t) {
    std::vector<float> field(kSide * kSide);
    for (int k = 0; k < kSide * kSide; ++k) field[k] = value(t, k);
    Bytes raw(field.size() * 4);
    std::memcpy(raw.data(), field.data(), raw.size());
    const Bytes enc = encode(raw);
    fs.stored += enc.size();
    fs.largest = std::max<std::uint64_t>(fs.largest, enc.size());
    EXPECT_TRUE(fs.store->set("z/c/" + std::to_string(t) + "/0/0", enc).ok());
  }
  return fs;
}

// nvCOMP inflates zlib and gzip payloads without reading their trailers; the GPU checks the
// Adler-32 / CRC-32 itself. A chunk whose deflate data is intact but whose checksum disagrees
// is rejected as the CPU rejects it, naming the chunk, where it used to come back as data.
TEST_F(DeviceReadTest, DeflateTrailersAreCheckedOnTheGpu) {
  if (!Nvcomp::get().ok()) GTEST_SKIP() << "no nvCOMP: nothing inflates on the GPU";
  struct Case {
    const char* name;
    const char* codec;
    std::function<Bytes(const Bytes&)> encode;
    std::size_t flip_from_end;  // a byte of the checksum the chunk ends with
  };
  const Case cases[] = {
      {"gzip", R"({"name": "gzip", "configuration": {"level": 6}})",
       [](const Bytes& b) { return codec_test::compress(DeflateWrapper::kGzip, b); },
       8},  // CRC-32, then ISIZE
      {"zlib", R"({"name": "numcodecs.zlib", "configuration": {"level": 6}})",
       [](const Bytes& b) { return codec_test::compress(DeflateWrapper::kZlib, b); },
       1},  // Adler-32
      {"blosc-zlib", R"({"name": "blosc", "configuration": {"cname": "zlib", "clevel": 5,
       "shuffle": "shuffle", "typesize": 4, "blocksize": 0}})",
       [](const Bytes& b) { return blosc(b, "zlib", 1, 0); }, 1},  // the last stream's Adler-32
  };
  const auto value = [](int t, int k) { return float(t) + 0.001f * float((k * 7) % 1000); };
  const Shape shape{3, kSide, kSide};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const FieldStore fs =
        field_store(3,
                    std::string(R"([{"name": "bytes", "configuration": {"endian": "little"}}, )") +
                        c.codec + "]",
                    value, c.encode);
    expect_same(fs.store, "z", Selection::full(shape), GpuDecode::kOn, 0);
    auto v = **fs.store->get("z/c/1/0/0");
    Bytes broken(v.data(), v.data() + v.size());
    broken[broken.size() - c.flip_from_end] ^= std::byte{0x01};
    ASSERT_TRUE(fs.store->set("z/c/1/0/0", broken).ok());
    const auto owner = open_array(fs.store, "z");
    std::vector<float> host(3 * kSide * kSide);
    const StridedView host_view{reinterpret_cast<std::byte*>(host.data()), shape,
                                c_strides(shape, 4)};
    ASSERT_FALSE(owner->read(Selection::full(shape), host_view, ReadOptions{}).ok())
        << "the CPU decoder must reject the changed checksum";
    void* d = nullptr;
    ASSERT_EQ(cudaMalloc(&d, host.size() * 4), cudaSuccess);
    DeviceReader reader;
    DeviceReadOptions opt;
    opt.decode = GpuDecode::kOn;
    const Status s = reader.read(*owner, Selection::full(shape),
                                 {static_cast<std::byte*>(d), shape, c_strides(shape, 4)}, opt);
    cudaFree(d);
    EXPECT_FALSE(s.ok()) << "the GPU returned data for a chunk whose checksum is wrong";
    EXPECT_NE(s.message().find("chunk 'c/1/0/0'"), std::string::npos) << s.message();
    // the other chunks still decode on the GPU
    expect_same(fs.store, "z", Selection{{2, 0, 0}, {1, kSide, kSide}, {1, 1, 1}}, GpuDecode::kOn,
                0);
  }
}

// Chunks that compress to almost nothing (edge chunks that are mostly fill value, constant
// fields) must not gather into one huge internal batch: the decoded bytes of a batch are bounded
// as well as the compressed ones. 64 chunks of 256 KiB of zeros compress to ~1 KiB each; with 64
// KiB of staging per batch they all fit one batch, and a window (not whole chunks, so nothing
// decodes in place) would need 16 MiB of decoded chunks on the device at once.
TEST_F(DeviceReadTest, CompressibleChunksDoNotGatherIntoOneHugeBatch) {
  // one marker per chunk, so a wrong chunk shows; Blosc's own block size compresses zeros
  const FieldStore fs = field_store(
      64, kBloscLz4, [](int t, int k) { return k == t * 97 ? float(t + 1) : 0.0f; },
      [](const Bytes& raw) { return blosc(raw, "lz4", 1, 0); });
  ASSERT_LT(fs.largest, std::uint64_t{4096});
  const auto owner = open_array(fs.store, "z");
  const Array& arr = *owner;
  ThreadPool pool(2);
  DeviceReader reader;
  DeviceReadOptions opt;
  opt.pool = &pool;
  opt.batch_bytes = 64 << 10;  // decoded per batch: at most 128 KiB, i.e. one chunk
  DeviceReadReport report;
  const BothReads r = read_on_cpu_and_gpu(arr, Selection{{0, 1, 0}, {64, 255, 256}, {1, 1, 1}},
                                          reader, opt, &report);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.cpu, r.gpu);
  EXPECT_EQ(report.gpu_decoded, 64);
  // One internal batch per chunk, and the pipeline's timings cover them.
  EXPECT_EQ(report.batches, 64);
  EXPECT_GT(report.enqueue_ms, 0.0);
  EXPECT_GT(report.decode_ms, 0.0);
  EXPECT_GE(report.gpu_idle_ms, 0.0);
  EXPECT_GE(report.wait_ms, 0.0);
  // Two batches in flight, each with one decoded chunk and its scratch: well under 16 MiB.
  EXPECT_LT(reader.device_pool().peak_in_use(), std::size_t{4} << 20)
      << "decoded chunks gathered into one batch";
}

// Internal batches are as few as the bounds allow and split evenly: 10 chunks under a bound of
// 6 go as 5 + 5, not 6 + 4 (a small last batch would pay a decoder call's latency for little).
TEST_F(DeviceReadTest, InternalBatchesAreEven) {
  const FieldStore fs = field_store(
      10, kBloscLz4,
      [](int t, int k) { return k % 251 == t && k / 251 < 256 ? float(t * 1000 + k / 251) : 0.0f; },
      [](const Bytes& raw) { return blosc(raw, "lz4", 1, 0); });
  const auto owner = open_array(fs.store, "z");
  const Array& arr = *owner;
  const std::uint64_t chunk = kSide * kSide * 4;
  ThreadPool pool(2);
  DeviceReader reader;
  DeviceReadOptions opt;
  opt.pool = &pool;
  opt.batch_bytes = 3 * chunk;  // decoded bound: 6 chunks; the staged bytes are far below
  DeviceReadReport report;
  const BothReads r = read_on_cpu_and_gpu(arr, Selection{{0, 3, 0}, {10, 250, 256}, {1, 1, 1}},
                                          reader, opt, &report);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.cpu, r.gpu);
  EXPECT_EQ(report.batches, 2);
  EXPECT_EQ(report.max_batch_decoded, 5 * chunk);
}

// Pieces spread over any number of lanes (streams) read the same bytes as the CPU (zarrflow's
// kernels, its zstd decoder included, each lane with its own zstd scratch).
TEST_F(DeviceReadTest, EveryNumberOfLanesReadsTheSame) {
  set_zstd_decoder(ZstdDecoder::kZarrflow);  // its reads take every lane
  struct Reset {
    ~Reset() { set_zstd_decoder(ZstdDecoder::kAuto); }
  } reset;
  struct Case {
    std::string codecs;
    std::function<Bytes(const Bytes&)> encode;
  };
  std::vector<Case> cases{{kBloscLz4, [](const Bytes& raw) { return blosc(raw, "lz4", 1, 0); }}};
  cases.push_back({R"([{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])",
                   zstd});
  cases.push_back({R"([{"name": "bytes", "configuration": {"endian": "little"}},
      {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle",
       "typesize": 4, "blocksize": 0}}])",
                   [](const Bytes& raw) { return blosc(raw, "zstd", 2, 16384); }});
  for (const Case& c : cases) {
    const FieldStore fs = field_store(
        14, c.codecs, [](int t, int k) { return float((t * 31 + k) % 977); }, c.encode);
    const auto owner = open_array(fs.store, "z");
    ThreadPool pool(2);
    DeviceReader reader;
    for (int streams : {1, 2, 3, 5}) {
      ASSERT_TRUE(reader.set_streams(streams).ok());
      DeviceReadOptions opt;
      opt.pool = &pool;
      opt.batch_bytes = kSide * kSide * 4;  // two decoded chunks per piece: seven pieces
      DeviceReadReport report;
      const BothReads r = read_on_cpu_and_gpu(
          *owner, Selection{{0, 5, 0}, {14, 250, 256}, {1, 1, 1}}, reader, opt, &report);
      ASSERT_TRUE(r.status.ok()) << r.status.to_string();
      EXPECT_EQ(r.cpu, r.gpu) << c.codecs << " on " << streams << " lanes";
      EXPECT_EQ(report.batches, 7);
      EXPECT_EQ(report.gpu_decoded, 14);
    }
    // Settings out of range are refused; a whole read on two lanes.
    EXPECT_FALSE(reader.set_streams(0).ok());
    EXPECT_FALSE(reader.set_streams(kMaxReadStreams + 1).ok());
    ASSERT_TRUE(reader.set_streams(2).ok());
    DeviceReadOptions opt;
    opt.pool = &pool;
    opt.batch_bytes = kSide * kSide * 4;
    DeviceReadReport report;
    const BothReads r =
        read_on_cpu_and_gpu(*owner, Selection::full({14, kSide, kSide}), reader, opt, &report);
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    EXPECT_EQ(r.cpu, r.gpu);
    EXPECT_TRUE(reader.stream_lender().idle());
  }
}

// The compressed bytes of the chunks the GPU decodes go up while their piece is read (on the
// read's copy lane), uncompressed whole chunks straight into their destination; those the host
// decodes stay on the host. Same bytes at every share.
TEST_F(DeviceReadTest, StagedBytesGoUpWhileThePieceIsRead) {
  std::vector<std::pair<std::string, std::function<Bytes(const Bytes&)>>> cases{
      {kBloscLz4, [](const Bytes& raw) { return blosc(raw, "lz4", 1, 0); }}, {kBytes, identity}};
  if (Nvcomp::get().ok())
    cases.emplace_back(R"([{"name": "bytes", "configuration": {"endian": "little"}},
                         {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])",
                       zstd);
  for (const auto& [codecs, encode] : cases) {
    SCOPED_TRACE(codecs);
    const FieldStore fs = field_store(
        24, codecs, [](int t, int k) { return float((t * 31 + k) % 977); }, encode);
    const auto owner = open_array(fs.store, "z");
    ThreadPool pool(4);
    DeviceReader reader;
    std::uint64_t all_gpu = 0;
    for (double share : {0.0, 0.5, 1.0}) {
      DeviceReadOptions opt;
      opt.pool = &pool;
      opt.host_share = share;
      DeviceReadReport report;
      const BothReads r =
          read_on_cpu_and_gpu(*owner, Selection::full({24, kSide, kSide}), reader, opt, &report);
      ASSERT_TRUE(r.status.ok()) << r.status.to_string();
      EXPECT_EQ(r.cpu, r.gpu) << "host share " << share;
      if (codecs == kBytes) {  // uncompressed whole chunks: into place as read, once
        EXPECT_EQ(report.h2d_while_read, fs.stored);
        EXPECT_EQ(report.h2d_bytes, fs.stored);
      } else if (share == 0.0) {
        all_gpu = report.h2d_while_read;
        EXPECT_EQ(report.gpu_decoded, 24);
        EXPECT_GE(all_gpu, fs.stored);              // every chunk's bytes,
        EXPECT_LE(all_gpu, fs.stored + 24 * 4096);  // with at most the slots' padding
        EXPECT_EQ(report.h2d_bytes, report.h2d_while_read) << "nothing copied twice";
      } else if (share == 0.5) {
        EXPECT_GT(report.h2d_while_read, 0u);
        EXPECT_LT(report.h2d_while_read, all_gpu);
      } else {
        EXPECT_EQ(report.h2d_while_read, 0u);
        EXPECT_EQ(report.gpu_decoded, 0);
      }
    }
    EXPECT_TRUE(reader.stream_lender().idle());
  }
}

// Uncompressed chunks that are not copied into place as they are read wait for the host checks:
// parts of chunks (scattered from device staging) and chunks with a CRC-32C trailer.
TEST_F(DeviceReadTest, UncompressedChunksWaitForTheHostChecksUnlessWholeAndUnchecked) {
  const char* crc = R"([{"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"}])";
  const auto with_crc = [](const Bytes& raw) {
    Bytes out = raw;
    const std::uint32_t c = crc32c(ConstByteSpan(raw.data(), raw.size()));
    for (int i = 0; i < 4; ++i) out.push_back(std::byte((c >> (8 * i)) & 0xff));
    return out;
  };
  for (const bool trailer : {false, true}) {
    const FieldStore fs = field_store(
        6, trailer ? crc : kBytes, [](int t, int k) { return float(t * 7 + k % 13); },
        trailer ? std::function<Bytes(const Bytes&)>(with_crc) : identity);
    const auto owner = open_array(fs.store, "z");
    ThreadPool pool(2);
    DeviceReader reader;
    DeviceReadOptions opt;
    opt.pool = &pool;
    for (const Selection& sel :
         {Selection::full({6, kSide, kSide}), Selection{{0, 1, 0}, {6, 200, kSide}, {1, 1, 1}}}) {
      DeviceReadReport report;
      const BothReads r = read_on_cpu_and_gpu(*owner, sel, reader, opt, &report);
      ASSERT_TRUE(r.status.ok()) << r.status.to_string();
      EXPECT_EQ(r.cpu, r.gpu) << "trailer " << trailer;
      const bool whole = sel.count[1] == kSide;
      EXPECT_EQ(report.h2d_while_read, whole && !trailer ? fs.stored : 0u) << "trailer " << trailer;
    }
  }
}

// The lanes start where the caller's stream is: what the caller queued before the read (here a
// fill of the destination, behind a 100 ms wait) happens before the read writes it.
TEST_F(DeviceReadTest, LanesStartWhereTheCallersStreamIs) {
  const FieldStore fs = field_store(
      4, kBloscLz4, [](int t, int k) { return float(t * 1000 + k % 500); },
      [](const Bytes& raw) { return blosc(raw, "lz4", 1, 0); });
  const auto owner = open_array(fs.store, "z");
  const Selection all = Selection::full({4, kSide, kSide});
  const std::size_t bytes = std::size_t{4} * kSide * kSide * 4;
  Bytes cpu(bytes), gpu(bytes);
  ASSERT_TRUE(
      owner->read(all, {cpu.data(), all.count, c_strides(all.count, 4)}, ReadOptions{}).ok());
  Stream caller = std::move(Stream::create()).value();
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  const cudaHostFn_t sleep_100ms = [](void*) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  ASSERT_EQ(cudaLaunchHostFunc(caller.get(), sleep_100ms, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 0xff, bytes, caller.get()), cudaSuccess);
  ThreadPool pool(2);
  DeviceReader reader;
  DeviceReadOptions opt;
  opt.pool = &pool;
  opt.stream = caller.get();
  opt.batch_bytes = kSide * kSide * 4;  // several pieces, on every lane
  const Status s = reader.read(
      *owner, all, {static_cast<std::byte*>(d), all.count, c_strides(all.count, 4)}, opt);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_EQ(cudaStreamSynchronize(caller.get()), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(gpu.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(d);
  EXPECT_EQ(cpu, gpu);
}

// A MemoryStore whose reads of one key fail (sizes still answer): a read that fails part-way.
class FailingStore final : public Store {
 public:
  FailingStore(std::shared_ptr<MemoryStore> inner, std::string bad)
      : inner_(std::move(inner)), bad_(std::move(bad)) {}
  Result<std::optional<Buffer>> get(std::string_view key,
                                    std::uint64_t max_size = kNoLimit) const override {
    if (key == bad_) return io_error("injected read error");
    return inner_->get(key, max_size);
  }
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override {
    if (key == bad_) return io_error("injected read error");
    return inner_->get_ranges(key, ranges);
  }
  Result<std::optional<std::uint64_t>> size(std::string_view key) const override {
    return inner_->size(key);
  }
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override {
    return inner_->list_dir(prefix);
  }
  Status set(std::string_view key, ConstByteSpan value) override { return inner_->set(key, value); }
  [[nodiscard]] std::string describe_key(std::string_view key) const override {
    return inner_->describe_key(key);
  }

 private:
  std::shared_ptr<MemoryStore> inner_;
  std::string bad_;
};

// A read that fails in a later internal batch returns only once the GPU work of the batches it
// had enqueued is done: their buffers go back to the pools, where the next read takes them.
TEST_F(DeviceReadTest, AFailedReadLeavesNoWorkOnItsBuffers) {
  const FieldStore fs = field_store(
      12, kBloscLz4, [](int t, int k) { return float((t * 7 + k) % 1000); },
      [](const Bytes& raw) { return blosc(raw, "lz4", 1, 0); });
  auto failing = std::make_shared<FailingStore>(fs.store, "z/c/11/0/0");
  auto node = open_node(failing, "z");
  ASSERT_TRUE(node.ok()) << node.status().to_string();
  const Array& arr = *std::get<std::shared_ptr<Array>>(*node);
  ThreadPool pool(2);
  DeviceReader reader;
  DeviceReadOptions opt;
  opt.pool = &pool;
  opt.batch_bytes = kSide * kSide * 4;  // two decoded chunks per internal batch: six batches
  Stream stream = std::move(Stream::create()).value();
  opt.stream = stream.get();
  void* d = nullptr;
  const std::size_t bytes = std::size_t{12} * kSide * kSide * 4;
  ASSERT_EQ(cudaMalloc(&d, bytes), cudaSuccess);
  const Selection all = Selection::full({12, kSide, kSide});
  DeviceReadReport report;
  const Status s = reader.read(
      arr, all, {static_cast<std::byte*>(d), all.count, c_strides(all.count, 4)}, opt, &report);
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaSuccess) << "work still running on the stream";
  EXPECT_TRUE(reader.stream_lender().idle()) << "work still running on the read's lanes";
  cudaFree(d);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("injected read error"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("chunk 'c/11/0/0'"), std::string::npos) << s.message();
  EXPECT_GE(report.batches, 2);  // earlier batches were enqueued before the failure
}

// `chunks` chunks of 256x256 float32 (smooth fields with a little noise), zstd level 3.
FieldStore zstd_field_store(int chunks) {
  return field_store(
      chunks, R"([{"name": "bytes", "configuration": {"endian": "little"}},
      {"name": "zstd", "configuration": {"level": 3, "checksum": false}}])",
      [](int t, int k) {
        return std::sin(0.01f * float(k + 97 * t)) + 1e-3f * float((k * 7919 + t) % 101);
      },
      zstd);
}

// Reads the whole of `fs` (`chunks` chunks) on the GPU, once with room (so that every kernel is
// loaded), then with the GPU filled (after the destination is allocated) until `leave` bytes are
// free: the same bytes as the CPU, every chunk decoded on the GPU, and a report that notes a
// split decoder call (its `scratch` bytes did not fit). `batch_bytes` as DeviceReadOptions.
void expect_split_read_with_gpu_full(const FieldStore& fs, int chunks, std::uint64_t batch_bytes,
                                     std::size_t leave, std::size_t scratch) {
  const auto owner = open_array(fs.store, "z");
  const Array& arr = *owner;
  const Selection all = Selection::full({chunks, kSide, kSide});
  ThreadPool pool(2);
  DeviceReadOptions opt;
  opt.pool = &pool;
  opt.decode = GpuDecode::kOn;
  opt.batch_bytes = batch_bytes;
  {
    DeviceReader warm;
    ASSERT_TRUE(read_on_cpu_and_gpu(arr, all, warm, opt, nullptr).status.ok());
  }
  std::vector<void*> filler;
  const auto fill_gpu = [&] {
    for (std::size_t block = std::size_t{1} << 30; block >= (std::size_t{1} << 20);) {
      std::size_t free = 0, total = 0;
      void* p = nullptr;
      if (cudaMemGetInfo(&free, &total) != cudaSuccess || free < leave + block ||
          cudaMalloc(&p, block) != cudaSuccess) {
        cudaGetLastError();
        block /= 2;
        continue;
      }
      filler.push_back(p);
    }
  };
  DeviceReader reader;
  DeviceReadReport report;
  const BothReads r = read_on_cpu_and_gpu(arr, all, reader, opt, &report, fill_gpu);
  for (void* p : filler) cudaFree(p);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.cpu, r.gpu);
  EXPECT_EQ(report.gpu_decoded, chunks);
  EXPECT_TRUE(std::any_of(report.notes.begin(), report.notes.end(),
                          [](const std::string& n) { return n.find("split") != n.npos; }))
      << "the scratch of " << scratch << " bytes fitted after all";
}

// With the GPU nearly full, a read whose nvCOMP scratch does not fit decodes its call in parts
// (halves, quarters, ...) instead of failing: the same bytes, and the report says so.
TEST_F(DeviceReadTest, NvcompCallSplitWhenItsScratchDoesNotFit) {
  auto nv = Nvcomp::get();
  if (!nv.ok()) GTEST_SKIP() << "no nvCOMP: " << nv.status().to_string();
  set_zstd_decoder(ZstdDecoder::kNvcomp);  // this test is of nvCOMP's zstd
  struct Reset {
    ~Reset() { set_zstd_decoder(ZstdDecoder::kAuto); }
  } reset;
  constexpr int kChunks = 64;
  const FieldStore fs = zstd_field_store(kChunks);
  std::size_t full_scratch = 0;
  ASSERT_TRUE((*nv)
                  ->temp_size(NvcompAlgo::kZstd, kChunks, kSide * kSide * 4,
                              std::size_t(kChunks) * kSide * kSide * 4, &full_scratch, nullptr)
                  .ok());
  // Leave the staging (pool classes round up by at most 1/8), the tables, 3/4 of the whole
  // call's scratch and the room the read keeps free for nvCOMP's launches: half of the scratch
  // fits beside that room, all of it does not.
  const std::size_t leave =
      fs.stored + fs.stored / 8 + (std::size_t{8} << 20) + full_scratch * 3 / 4 + kNvcompLaunchRoom;
  expect_split_read_with_gpu_full(fs, kChunks, 0, leave, full_scratch);
}

// The same for zarrflow's zstd decoder: with the GPU nearly full, a piece whose frames' scratch
// does not fit decodes them in launches of halves, quarters, ... sharing a smaller scratch.
TEST_F(DeviceReadTest, ZarrflowZstdLaunchesSplitWhenTheirScratchDoesNotFit) {
  set_zstd_decoder(ZstdDecoder::kZarrflow);
  struct Reset {
    ~Reset() { set_zstd_decoder(ZstdDecoder::kAuto); }
  } reset;
  constexpr int kChunks = 64;
  const FieldStore fs = zstd_field_store(kChunks);
  const std::size_t chunk = std::size_t{kSide} * kSide * 4;
  const std::size_t full_scratch = kChunks * zstd_scratch_bytes(fs.stored / kChunks, chunk);
  // Leave the staging (pool classes round up by at most 1/8), the tables, the room the read
  // keeps free for the kernels' launch, and 5/8 of the frames' scratch (every frame takes the
  // same): half of it fits beside that room, all of it does not. One piece: one read stream.
  const std::size_t leave = fs.stored + fs.stored / 8 + (std::size_t{8} << 20) +
                            zstd_launch_memory() + full_scratch * 5 / 8;
  expect_split_read_with_gpu_full(fs, kChunks, std::uint64_t{1} << 30, leave, full_scratch);
}

}  // namespace
}  // namespace zarrflow::gpu
