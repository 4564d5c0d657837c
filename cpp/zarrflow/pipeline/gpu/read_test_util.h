// Arrays in a memory store for the host tests of the GPU read's stages (read_plan_test.cc,
// batch_layout_test.cc, host_work_test.cc, decode_jobs_test.cc). Device addresses in these tests
// are host memory: the stages only compute with them.
#pragma once

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "zarrflow/pipeline/gpu/read_plan.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace zarrflow::gpu::read_test {

using Bytes = std::vector<std::byte>;

// Element (i, j) of the test arrays.
inline std::int32_t value(std::int64_t i, std::int64_t j) {
  return static_cast<std::int32_t>(i * 100 + j);
}

inline Bytes zstd_of(const Bytes& raw) {
  Bytes z(ZSTD_compressBound(raw.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3));
  return z;
}

// numcodecs LZ4's framing: the decoded size (little-endian uint32), then one LZ4 block; here a
// block of literals only, which LZ4 decoders accept.
inline Bytes numcodecs_lz4_of(const Bytes& raw) {
  Bytes out(4);
  const auto n = static_cast<std::uint32_t>(raw.size());
  std::memcpy(out.data(), &n, 4);
  std::size_t rest = raw.size();
  if (rest >= 15) {
    out.push_back(std::byte{0xF0});
    for (rest -= 15; rest >= 255; rest -= 255) out.push_back(std::byte{255});
    out.push_back(std::byte(rest));
  } else {
    out.push_back(std::byte(rest << 4));
  }
  out.insert(out.end(), raw.begin(), raw.end());
  return out;
}

// zarr.json of a 5x7 int32 array in 2x3 chunks, fill value 42, with `codecs` (a JSON array).
inline std::string array_json(const std::string& codecs) {
  return R"({"zarr_format": 3, "node_type": "array", "shape": [5, 7], "data_type": "int32",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 42, "codecs": )" +
         codecs + "}";
}

inline const char* kRaw = R"([{"name": "bytes", "configuration": {"endian": "little"}}])";
inline const char* kZstd =
    R"([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}])";
inline const char* kLz4 = R"([{"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "numcodecs.lz4", "configuration": {"acceleration": 1}}])";
inline const char* kBz2 = R"([{"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "numcodecs.bz2", "configuration": {"level": 1}}])";

// Chunk (ci, cj) of the 5x7 array: 2x3 int32, padded with -1 past the edges.
inline Bytes chunk_bytes(std::int64_t ci, std::int64_t cj) {
  std::vector<std::int32_t> chunk(6, -1);
  for (std::int64_t a = 0; a < 2; ++a)
    for (std::int64_t b = 0; b < 3; ++b) {
      const std::int64_t i = ci * 2 + a, j = cj * 3 + b;
      if (i < 5 && j < 7) chunk[a * 3 + b] = value(i, j);
    }
  const auto bytes = std::as_bytes(std::span(chunk));
  return {bytes.begin(), bytes.end()};
}

inline Status set_text(Store& store, const std::string& key, const std::string& text) {
  return store.set(key, std::as_bytes(std::span(text.data(), text.size())));
}

// Writes array `path` with `codecs`, each chunk encoded by `encode`; chunk (1, 1) is missing.
template <typename Encode>
void write_array(Store& store, const std::string& path, const std::string& codecs, Encode encode) {
  ASSERT_TRUE(set_text(store, path + "/zarr.json", array_json(codecs)).ok());
  for (std::int64_t ci = 0; ci < 3; ++ci)
    for (std::int64_t cj = 0; cj < 3; ++cj) {
      if (ci == 1 && cj == 1) continue;
      const std::string key = path + "/c/" + std::to_string(ci) + "/" + std::to_string(cj);
      ASSERT_TRUE(store.set(key, encode(chunk_bytes(ci, cj))).ok());
    }
}

// A 4x4 int32 array in one shard of 2x2 inner chunks (index at the end, no checksum); inner
// chunk [0,1] is empty.
inline void write_sharded(MemoryStore& store, const std::string& path) {
  const std::string json = R"({"zarr_format": 3, "node_type": "array", "shape": [4, 4],
    "data_type": "int32", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": -1,
    "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
      "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
      "index_location": "end"}}]})";
  ASSERT_TRUE(store.set(path + "/zarr.json", json).ok());
  Bytes shard;
  std::vector<std::uint64_t> index(8, ~std::uint64_t{0});
  for (int c = 0; c < 4; ++c) {
    if (c == 1) continue;
    std::vector<std::int32_t> chunk;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) chunk.push_back(value(c / 2 * 2 + a, c % 2 * 2 + b));
    index[2 * c] = shard.size();
    index[2 * c + 1] = 16;
    const auto bytes = std::as_bytes(std::span(chunk));
    shard.insert(shard.end(), bytes.begin(), bytes.end());
  }
  const auto idx = std::as_bytes(std::span(index));
  shard.insert(shard.end(), idx.begin(), idx.end());
  ASSERT_TRUE(store.set(path + "/c/0/0", shard).ok());
}

inline std::shared_ptr<Array> open_array(std::shared_ptr<Store> store, const std::string& path) {
  auto node = open_node(std::move(store), path);
  EXPECT_TRUE(node.ok()) << node.status().to_string();
  if (!node.ok()) return nullptr;
  return std::get<std::shared_ptr<Array>>(*node);
}

// A store with the arrays "raw", "zstd", "lz4" (uncompressed, zstd, numcodecs LZ4), "bz2" (no
// GPU decoder) and "sharded"; and a destination buffer standing in for device memory.
struct Arrays {
  Arrays() {
    write_array(*store, "raw", kRaw, [](const Bytes& b) { return b; });
    write_array(*store, "zstd", kZstd, zstd_of);
    write_array(*store, "lz4", kLz4, numcodecs_lz4_of);
    write_array(*store, "bz2", kBz2, [](const Bytes& b) { return b; });  // never decoded here
    write_sharded(*store, "sharded");
    raw = open_array(store, "raw");
    zstd = open_array(store, "zstd");
    lz4 = open_array(store, "lz4");
    bz2 = open_array(store, "bz2");
    sharded = open_array(store, "sharded");
  }

  // A request for `region` of `arr` into a dense int32 destination in `dest` at `offset`
  // elements.
  ReadRequest request(const Array& arr, const Selection& region, std::int64_t offset = 0) {
    return {&arr, region, {dest + offset * 4, region.count, c_strides(region.count, 4)}};
  }

  // The items of `requests`, planned as a read plans them (decoders chosen, sizes measured).
  std::vector<Item> plan(const std::vector<ReadRequest>& requests,
                         const PlanOptions& options = {}) {
    std::vector<Item> items;
    for (const auto& r : requests) EXPECT_TRUE(gather_items(r, nullptr, options, items).ok());
    group_duplicates(items);
    choose_decoders(items, programs, options);
    EXPECT_TRUE(measure_stored_sizes(items, nullptr).ok());
    return items;
  }

  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();
  std::shared_ptr<Array> raw, zstd, lz4, bz2, sharded;
  ChainPrograms programs;
  alignas(256) std::byte dest[1 << 14] = {};
};

// The indices of every item: a piece holding the whole plan.
inline std::vector<std::size_t> all(const std::vector<Item>& items) {
  std::vector<std::size_t> v(items.size());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace zarrflow::gpu::read_test
