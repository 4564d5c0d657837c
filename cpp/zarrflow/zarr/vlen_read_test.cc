// read_vlen over an in-memory store: regions, steps, missing chunks and fill values, transposes,
// v2 object arrays in F order, sharding (missing inner chunks, nested shards) and corrupt chunks.
#include "zarrflow/zarr/vlen_read.h"

#include <gtest/gtest.h>

#include <string>

#include "zarrflow/codec/vlen_test_util.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace zarrflow {
namespace {

using vlen_test::Bytes;
using vlen_test::encode;
using vlen_test::put_u64;
using Strings = std::vector<std::string>;

std::shared_ptr<Array> open_array(std::shared_ptr<Store> store, const std::string& path) {
  auto node = open_node(std::move(store), path);
  EXPECT_TRUE(node.ok()) << node.status().to_string();
  if (!node.ok()) return nullptr;
  return std::get<std::shared_ptr<Array>>(*node);
}

Strings elements(const VlenData& d) {
  Strings out;
  for (std::size_t i = 0; i + 1 < d.offsets.size(); ++i)
    out.emplace_back(reinterpret_cast<const char*>(d.bytes.data()) + d.offsets[i],
                     d.offsets[i + 1] - d.offsets[i]);
  return out;
}

Strings read(const Array& arr, const Selection& sel, std::vector<std::uint8_t>* missing = nullptr,
             ThreadPool* pool = nullptr) {
  auto r = read_vlen(arr, sel, ReadOptions{pool, nullptr, nullptr});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return {};
  if (missing) *missing = r->missing;
  return elements(*r);
}

const char* kStringJson = R"({"zarr_format": 3, "node_type": "array", "shape": [5],
  "data_type": "string", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
  "chunk_key_encoding": {"name": "default"}, "fill_value": "zz",
  "codecs": [{"name": "vlen-utf8", "configuration": {}}]})";

// ["a", "", "ccc", "d\u00e9", "e"] in chunks of 2 (the edge chunk padded with ""); chunk 1 is
// missing unless `all`.
std::shared_ptr<MemoryStore> string_store(bool all = false) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_TRUE(store->set("s/zarr.json", kStringJson).ok());
  EXPECT_TRUE(store->set("s/c/0", encode({"a", ""})).ok());
  if (all) EXPECT_TRUE(store->set("s/c/1", encode({"ccc", "d\xc3\xa9"})).ok());
  EXPECT_TRUE(store->set("s/c/2", encode({"e", ""})).ok());
  return store;
}

TEST(VlenRead, WholeArrayWithAMissingChunk) {
  auto arr = open_array(string_store(), "s");
  ASSERT_TRUE(arr);
  EXPECT_EQ(arr->dtype().kind, DTypeKind::kVlenString);
  std::vector<std::uint8_t> missing;
  ThreadPool pool(2);
  EXPECT_EQ(read(*arr, Selection::full({5}), &missing, &pool), (Strings{"a", "", "zz", "zz", "e"}));
  EXPECT_EQ(missing, (std::vector<std::uint8_t>{0, 0, 1, 1, 0}));
}

TEST(VlenRead, StepsAndSubregions) {
  auto arr = open_array(string_store(true), "s");
  ASSERT_TRUE(arr);
  EXPECT_EQ(read(*arr, Selection{{1}, {3}, {1}}), (Strings{"", "ccc", "d\xc3\xa9"}));
  EXPECT_EQ(read(*arr, Selection{{0}, {3}, {2}}), (Strings{"a", "ccc", "e"}));
  EXPECT_TRUE(read(*arr, Selection{{2}, {0}, {1}}).empty());
}

TEST(VlenRead, RegionOutsideTheArray) {
  auto arr = open_array(string_store(true), "s");
  auto r = read_vlen(*arr, Selection{{3}, {3}, {1}}, {});
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
}

TEST(VlenRead, FixedSizeReadsAreRefused) {
  auto arr = open_array(string_store(true), "s");
  std::byte buf[16];
  StridedView v{buf, {1}, {16}};
  Status s = arr->read(Selection{{0}, {1}, {1}}, v, {});
  EXPECT_EQ(s.code(), ErrorCode::kUnimplemented) << s.to_string();
}

TEST(VlenRead, CorruptChunkNamesArrayAndKey) {
  auto store = string_store(true);
  Bytes bad = encode({"ccc", "dd"});
  bad.pop_back();
  ASSERT_TRUE(store->set("s/c/1", bad).ok());
  auto arr = open_array(store, "s");
  auto r = read_vlen(*arr, Selection::full({5}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("chunk 'c/1'"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("s"), std::string::npos);
  ASSERT_TRUE(store->set("s/c/1", encode({"ccc"})).ok());  // one item for a 2-element chunk
  r = read_vlen(*open_array(store, "s"), Selection::full({5}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1 items, the chunk shape has 2 elements"),
            std::string::npos);
}

TEST(VlenRead, TransposedChunks) {
  // 2x3 array, one chunk stored transposed: encoded (3, 2) in C order.
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("t/zarr.json", R"({"zarr_format": 3, "node_type": "array",
    "shape": [2, 3], "data_type": "variable_length_bytes",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": "",
    "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
               {"name": "vlen-bytes"}]})")
                  .ok());
  ASSERT_TRUE(store->set("t/c/0/0", encode({"00", "10", "01", "11", "02", "12"})).ok());
  auto arr = open_array(store, "t");
  ASSERT_TRUE(arr);
  EXPECT_EQ(read(*arr, Selection::full({2, 3})), (Strings{"00", "01", "02", "10", "11", "12"}));
  EXPECT_EQ(read(*arr, Selection{{0, 1}, {2, 2}, {1, 1}}), (Strings{"01", "02", "11", "12"}));
}

TEST(VlenRead, V2ObjectArrayInFortranOrderWithCompressorAfterTheObjectCodec) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("f/.zarray", R"({"zarr_format": 2, "shape": [2, 2], "chunks": [2, 2],
    "dtype": "|O", "fill_value": null, "order": "F", "compressor": null,
    "filters": [{"id": "vlen-utf8"}]})")
                  .ok());
  ASSERT_TRUE(store->set("f/0.0", encode({"a", "c", "b", "d"})).ok());  // F order
  auto arr = open_array(store, "f");
  ASSERT_TRUE(arr);
  EXPECT_EQ(read(*arr, Selection::full({2, 2})), (Strings{"a", "b", "c", "d"}));
  EXPECT_TRUE(arr->metadata().fill_value.empty());  // null: empty text, as zarr-python reads it
}

TEST(VlenRead, V2ObjectCodecAsCompressorAndFiltersBeforeItAreRefused) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("c/.zarray", R"({"zarr_format": 2, "shape": [1], "chunks": [1],
    "dtype": "|O", "fill_value": "", "order": "C", "filters": null,
    "compressor": {"id": "vlen-bytes"}})")
                  .ok());
  ASSERT_TRUE(store->set("c/0", encode({"x"})).ok());
  auto arr = open_array(store, "c");
  ASSERT_TRUE(arr);
  EXPECT_EQ(read(*arr, Selection::full({1})), (Strings{"x"}));

  ASSERT_TRUE(store
                  ->set("d/.zarray", R"({"zarr_format": 2, "shape": [1], "chunks": [1],
    "dtype": "|O", "fill_value": "", "order": "C", "compressor": null,
    "filters": [{"id": "zlib", "level": 1}, {"id": "vlen-utf8"}]})")
                  .ok());
  auto node = open_node(store, "d");
  ASSERT_FALSE(node.ok());
  EXPECT_EQ(node.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(node.status().message().find("before the object codec"), std::string::npos);
}

// A shard of 4x1 inner chunks of 1 element each, index at the end (bytes codec only).
Bytes shard(const std::vector<std::optional<std::string>>& inner) {
  Bytes data, index;
  for (const auto& s : inner) {
    if (!s) {
      put_u64(index, ~0ull);
      put_u64(index, ~0ull);
      continue;
    }
    const Bytes enc = encode({*s});
    put_u64(index, data.size());
    put_u64(index, enc.size());
    data.insert(data.end(), enc.begin(), enc.end());
  }
  data.insert(data.end(), index.begin(), index.end());
  return data;
}

TEST(VlenRead, ShardedWithMissingInnerChunksAndShards) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("sh/zarr.json", R"({"zarr_format": 3, "node_type": "array",
    "shape": [10], "data_type": "string",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": "-",
    "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1],
      "codecs": [{"name": "vlen-utf8"}],
      "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
      "index_location": "end"}}]})")
                  .ok());
  ASSERT_TRUE(store->set("sh/c/0", shard({"a", std::nullopt, "c", "d"})).ok());
  // shard 1 missing; shard 2 covers elements 8, 9 and two past the end.
  ASSERT_TRUE(store->set("sh/c/2", shard({"i", "j", std::nullopt, std::nullopt})).ok());
  auto arr = open_array(store, "sh");
  ASSERT_TRUE(arr);
  ThreadPool pool(3);
  std::vector<std::uint8_t> missing;
  EXPECT_EQ(read(*arr, Selection::full({10}), &missing, &pool),
            (Strings{"a", "-", "c", "d", "-", "-", "-", "-", "i", "j"}));
  EXPECT_EQ(missing, (std::vector<std::uint8_t>{0, 1, 0, 0, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(read(*arr, Selection{{2}, {4}, {2}}), (Strings{"c", "-", "-", "i"}));
}

TEST(VlenRead, CorruptInnerChunkNamesTheInnerChunk) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("sh/zarr.json", R"({"zarr_format": 3, "node_type": "array",
    "shape": [4], "data_type": "string",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": "",
    "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1],
      "codecs": [{"name": "vlen-utf8"}],
      "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]})")
                  .ok());
  Bytes s = shard({"a", "b", "c", "d"});
  s[9 + 4] = std::byte{0xff};  // inner chunk 1 (bytes 9..17): the length of "b" becomes 255
  ASSERT_TRUE(store->set("sh/c/0", s).ok());
  auto r = read_vlen(*open_array(store, "sh"), Selection::full({4}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("chunk 'c/0'"), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("inner chunk [1]"), std::string::npos);
}

}  // namespace
}  // namespace zarrflow
