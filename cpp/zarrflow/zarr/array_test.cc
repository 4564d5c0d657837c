// Array reads over an in-memory store: regions, steps, edges, missing chunks, v2 layouts, sharding.
#include "zarrflow/zarr/array.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "zarrflow/codec/shard_index_cache.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace zarrflow {
namespace {

std::span<const std::byte> as_bytes_of(const std::vector<std::int32_t>& v) {
  return std::as_bytes(std::span(v));
}

// Values of the full array: element (i, j) = i * 100 + j.
std::int32_t value(std::int64_t i, std::int64_t j) {
  return static_cast<std::int32_t>(i * 100 + j);
}

// Writes a 5x7 int32 array with chunks 2x3 (edge chunks are full-size, padded with -1) as raw,
// little-endian, C-order chunks; chunk (1, 1) is left missing.
std::shared_ptr<MemoryStore> make_store(const std::string& zarr_json) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_TRUE(store->set("arr/zarr.json", zarr_json).ok());
  for (std::int64_t ci = 0; ci < 3; ++ci)
    for (std::int64_t cj = 0; cj < 3; ++cj) {
      if (ci == 1 && cj == 1) continue;
      std::vector<std::int32_t> chunk(6, -1);
      for (std::int64_t a = 0; a < 2; ++a)
        for (std::int64_t b = 0; b < 3; ++b) {
          const std::int64_t i = ci * 2 + a, j = cj * 3 + b;
          if (i < 5 && j < 7) chunk[a * 3 + b] = value(i, j);
        }
      EXPECT_TRUE(
          store->set("arr/c/" + std::to_string(ci) + "/" + std::to_string(cj), as_bytes_of(chunk))
              .ok());
    }
  return store;
}

const char* kRawJson = R"({"zarr_format": 3, "node_type": "array", "shape": [5, 7],
  "data_type": "int32", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
  "chunk_key_encoding": {"name": "default"}, "fill_value": 42,
  "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
  "dimension_names": ["y", null], "attributes": {"units": "K"}})";

std::shared_ptr<Array> open_array(std::shared_ptr<Store> store, const std::string& path) {
  auto node = open_node(std::move(store), path);
  EXPECT_TRUE(node.ok()) << node.status().to_string();
  return std::get<std::shared_ptr<Array>>(*node);
}

std::vector<std::int32_t> read(const Array& arr, const Selection& sel, Status* status = nullptr,
                               ThreadPool* pool = nullptr, ShardIndexCache* indexes = nullptr) {
  std::int64_t n = 1;
  for (auto c : sel.count) n *= c;
  std::vector<std::int32_t> out(static_cast<std::size_t>(n), -7);
  StridedView v{reinterpret_cast<std::byte*>(out.data()), sel.count, c_strides(sel.count, 4)};
  Status s = arr.read(sel, v, ReadOptions{pool, nullptr, indexes});
  if (status)
    *status = s;
  else
    EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

TEST(Array, MetadataAndWholeRead) {
  auto arr = open_array(make_store(kRawJson), "arr");
  EXPECT_EQ(arr->shape(), (Shape{5, 7}));
  ASSERT_TRUE(arr->metadata().dimension_names);
  EXPECT_EQ((*arr->metadata().dimension_names)[0], "y");
  EXPECT_FALSE((*arr->metadata().dimension_names)[1]);
  // Attributes and the document are kept as compact text, not as DOMs.
  EXPECT_EQ(nlohmann::json::parse(arr->attributes_json())["units"], "K");
  EXPECT_EQ(arr->metadata_json(), kRawJson);  // the document as stored
  EXPECT_TRUE(arr->metadata().attributes.empty());
  EXPECT_TRUE(arr->metadata().raw.is_null());
  ThreadPool pool(2);
  auto all = read(*arr, Selection::full({5, 7}), nullptr, &pool);
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 7; ++j) {
      const bool missing = i >= 2 && i < 4 && j >= 3 && j < 6;
      EXPECT_EQ(all[i * 7 + j], missing ? 42 : value(i, j)) << i << "," << j;
    }
}

TEST(Array, StridedRegionAcrossChunks) {
  auto arr = open_array(make_store(kRawJson), "arr");
  Selection sel{{0, 1}, {3, 3}, {2, 2}};  // rows 0,2,4; cols 1,3,5
  auto got = read(*arr, sel);
  const std::vector<std::int32_t> want = {value(0, 1), value(0, 3), value(0, 5), value(2, 1), 42,
                                          42,          value(4, 1), value(4, 3), value(4, 5)};
  EXPECT_EQ(got, want);
}

TEST(Array, RegionOutOfBoundsIsAnError) {
  auto arr = open_array(make_store(kRawJson), "arr");
  Status s;
  read(*arr, Selection{{4, 0}, {2, 1}, {1, 1}}, &s);
  EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(s.message().find("array 'memory://arr'"), std::string::npos);
}

TEST(Array, WrongChunkSizeNamesTheChunk) {
  auto store = make_store(kRawJson);
  ASSERT_TRUE(store->set("arr/c/0/1", std::string_view("short")).ok());
  auto arr = open_array(store, "arr");
  Status s;
  read(*arr, Selection::full({5, 7}), &s);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("array 'memory://arr': chunk 'c/0/1'"), std::string::npos)
      << s.message();
}

TEST(Array, StorageInfoCountsChunks) {
  auto arr = open_array(make_store(kRawJson), "arr");
  auto info = arr->storage_info();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->chunks_total, 9);
  EXPECT_EQ(info->chunks_present, 8);
  EXPECT_EQ(info->stored_bytes, 8u * 24u);
}

TEST(Array, V2FortranOrderBigEndian) {
  // 2x3 int32 array stored as one F-order big-endian chunk with '/' separator.
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("v2/.zarray", std::string_view(R"({"zarr_format": 2, "shape": [2, 3],
    "chunks": [2, 3], "dtype": ">i4", "compressor": null, "filters": null, "fill_value": 0,
    "order": "F", "dimension_separator": "/"})"))
                  .ok());
  ASSERT_TRUE(
      store->set("v2/.zattrs", std::string_view(R"({"_ARRAY_DIMENSIONS": ["a", "b"]})")).ok());
  // F order: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2), each big-endian.
  std::vector<std::int32_t> f = {value(0, 0), value(1, 0), value(0, 1),
                                 value(1, 1), value(0, 2), value(1, 2)};
  for (auto& x : f) x = static_cast<std::int32_t>(__builtin_bswap32(static_cast<std::uint32_t>(x)));
  ASSERT_TRUE(store->set("v2/0/0", as_bytes_of(f)).ok());
  auto arr = open_array(store, "v2");
  EXPECT_EQ((*arr->metadata().dimension_names)[1], "b");
  const auto doc = nlohmann::json::parse(arr->metadata_json());
  EXPECT_EQ(doc[".zarray"]["order"], "F");
  EXPECT_EQ(doc[".zattrs"]["_ARRAY_DIMENSIONS"][0], "a");
  EXPECT_EQ(nlohmann::json::parse(arr->attributes_json())["_ARRAY_DIMENSIONS"][1], "b");
  auto got = read(*arr, Selection::full({2, 3}));
  EXPECT_EQ(got, (std::vector<std::int32_t>{value(0, 0), value(0, 1), value(0, 2), value(1, 0),
                                            value(1, 1), value(1, 2)}));
}

TEST(Array, ZeroDimensional) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("s/zarr.json", std::string_view(R"({"zarr_format": 3, "node_type": "array",
    "shape": [], "data_type": "int32", "chunk_grid": {"name": "regular",
    "configuration": {"chunk_shape": []}}, "chunk_key_encoding": {"name": "default"},
    "fill_value": 5, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})"))
                  .ok());
  auto arr = open_array(store, "s");
  EXPECT_EQ(read(*arr, Selection{}), (std::vector<std::int32_t>{5}));
  std::vector<std::int32_t> one = {9};
  ASSERT_TRUE(store->set("s/c", as_bytes_of(one)).ok());
  EXPECT_EQ(read(*arr, Selection{}), (std::vector<std::int32_t>{9}));
}

// A 4x4 int32 array in one 4x4 shard of 2x2 inner chunks, inner chunk (0, 1) empty.
std::shared_ptr<MemoryStore> make_sharded(const char* location, std::uint64_t corrupt_offset = 0) {
  auto store = std::make_shared<MemoryStore>();
  std::string json = R"({"zarr_format": 3, "node_type": "array", "shape": [4, 4],
    "data_type": "int32", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}}, "fill_value": -1,
    "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
      "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
      "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
      "index_location": ")" +
                     std::string(location) + R"("}}]})";
  EXPECT_TRUE(store->set("sh/zarr.json", json).ok());
  const bool at_start = std::string(location) == "start";
  const std::uint64_t index_size = 4 * 16;
  std::vector<std::byte> data;
  std::vector<std::uint64_t> index(8, ~std::uint64_t{0});
  // Write inner chunks in reverse order to make offsets non-monotonic in C order.
  for (int c = 3; c >= 0; --c) {
    if (c == 1) continue;
    const std::int64_t ci = c / 2, cj = c % 2;
    std::vector<std::int32_t> chunk;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) chunk.push_back(value(ci * 2 + a, cj * 2 + b));
    index[2 * c] = data.size() + (at_start ? index_size : 0);
    index[2 * c + 1] = 16;
    auto bytes = as_bytes_of(chunk);
    data.insert(data.end(), bytes.begin(), bytes.end());
  }
  if (corrupt_offset) index[0] = corrupt_offset;
  auto idx = std::as_bytes(std::span(index));
  std::vector<std::byte> shard;
  if (at_start) shard.insert(shard.end(), idx.begin(), idx.end());
  shard.insert(shard.end(), data.begin(), data.end());
  if (!at_start) shard.insert(shard.end(), idx.begin(), idx.end());
  EXPECT_TRUE(store->set("sh/c.0.0", shard).ok());
  return store;
}

TEST(Array, ShardedReadsIndexAtStartAndEnd) {
  for (const char* loc : {"start", "end"}) {
    auto arr = open_array(make_sharded(loc), "sh");
    EXPECT_EQ(arr->read_chunk_shape(), (Shape{2, 2}));
    EXPECT_EQ(arr->shard_shape(), (Shape{4, 4}));
    auto all = read(*arr, Selection::full({4, 4}));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(all[i * 4 + j], (i < 2 && j >= 2) ? -1 : value(i, j)) << loc << i << j;
    auto part = read(*arr, Selection{{1, 1}, {2, 1}, {2, 1}});  // (1,1), (3,1)
    EXPECT_EQ(part, (std::vector<std::int32_t>{value(1, 1), value(3, 1)}));
  }
}

TEST(Array, ShardIndexPointingIntoTheIndexIsCorrupt) {
  // Index at end: the shard is 3*16 data + 64 index bytes; offset 50 lands in the index.
  auto arr = open_array(make_sharded("end", 50), "sh");
  Status s;
  read(*arr, Selection::full({4, 4}), &s);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("overlaps the shard index"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("chunk 'c.0.0'"), std::string::npos) << s.message();
  auto past = open_array(make_sharded("end", 1000), "sh");
  read(*past, Selection::full({4, 4}), &s);
  EXPECT_NE(s.message().find("points past the end"), std::string::npos) << s.message();
}

TEST(Array, ShardIndexCacheReadsEachIndexOnce) {
  for (const char* loc : {"start", "end"}) {
    auto store = make_sharded(loc);
    auto arr = open_array(store, "sh");
    ShardIndexCache indexes(1 << 20);
    const Selection part{{1, 1}, {2, 1}, {2, 1}};  // a partial read: (1,1), (3,1)
    const std::vector<std::int32_t> want{value(1, 1), value(3, 1)};
    EXPECT_EQ(read(*arr, part, nullptr, nullptr, &indexes), want) << loc;
    EXPECT_EQ(read(*arr, part, nullptr, nullptr, &indexes), want) << loc;
    EXPECT_EQ(indexes.stats().misses, 1) << loc;
    EXPECT_EQ(indexes.stats().hits, 1) << loc;
    // The shard's index now points past its end; the cache still holds the index it read (the
    // store is assumed not to change), a read without it sees the corruption.
    auto corrupt = make_sharded(loc, 1000);
    const Buffer shard = std::move(*corrupt->get("sh/c.0.0").value());
    ASSERT_TRUE(store->set("sh/c.0.0", shard.span()).ok());
    EXPECT_EQ(read(*arr, part, nullptr, nullptr, &indexes), want) << loc;
    Status s;
    read(*arr, Selection{{0, 0}, {2, 1}, {2, 1}}, &s);
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << loc;
  }
}

TEST(Array, ShardIndexCacheKeepsAbsentShardsButNotErrors) {
  auto store = make_sharded("end");
  const std::vector<std::byte> truncated(10);  // shorter than its 64-byte index
  ASSERT_TRUE(store->set("sh/c.0.0", truncated).ok());
  auto arr = open_array(store, "sh");
  ShardIndexCache indexes(1 << 20);
  const Selection part{{0, 0}, {2, 1}, {2, 1}};
  for (int i = 0; i < 2; ++i) {
    Status s;
    read(*arr, part, &s, nullptr, &indexes);
    EXPECT_NE(s.message().find("shorter than its 64-byte index"), std::string::npos) << s.message();
  }
  EXPECT_EQ(indexes.stats().entries, 0);
  EXPECT_EQ(indexes.stats().misses, 2);
  store->erase("sh/c.0.0");  // absent: fill values, and the cache remembers it
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(read(*arr, part, nullptr, nullptr, &indexes), (std::vector<std::int32_t>{-1, -1}));
  EXPECT_EQ(indexes.stats().entries, 1);
  EXPECT_EQ(indexes.stats().hits, 1);
}

// zarr.json of a `dtype` array of `shape` and `chunks`, with `codecs` (a JSON array).
std::string zarr_json(
    const std::string& shape, const std::string& chunks,
    const std::string& codecs = R"([{"name": "bytes", "configuration": {"endian": "little"}}])",
    const std::string& dtype = "int32") {
  return R"({"zarr_format": 3, "node_type": "array", "shape": )" + shape + R"(, "data_type": ")" +
         dtype + R"(", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": )" +
         chunks + R"(}}, "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": )" +
         codecs + "}";
}

Status open_status(const std::string& json, const OpenLimits& limits = {}) {
  auto store = std::make_shared<MemoryStore>();
  EXPECT_TRUE(store->set("a/zarr.json", json).ok());
  return open_node(store, "a", std::nullopt, limits).status();
}

TEST(ArrayLimits, ChunksOverThePerChunkLimitAreRefusedAtOpen) {
  // 2^31 x 8 float32 = 64 GiB per chunk: valid Zarr, refused before anything is read.
  const std::string huge =
      zarr_json("[4294967296, 8]", "[2147483648, 8]",
                R"([{"name": "bytes", "configuration": {"endian": "little"}}])", "float32");
  const Status s = open_status(huge);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidMetadata) << s.to_string();
  EXPECT_NE(s.message().find("array 'memory://a': chunk shape [2147483648,8] of 4-byte elements "
                             "is 68719476736 bytes decoded, more than the per-chunk limit"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("max_chunk_bytes"), std::string::npos);
  OpenLimits raised;
  raised.max_chunk_bytes = std::uint64_t{1} << 40;
  EXPECT_TRUE(open_status(huge, raised).ok()) << open_status(huge, raised).to_string();
  // The limit applies to the inner chunk of a sharded array, and to its shard index.
  const std::string sharded_inner =
      zarr_json("[4294967296, 8]", "[4294967296, 8]",
                R"([{"name": "sharding_indexed", "configuration": {"chunk_shape": [2147483648, 8],
          "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}])");
  EXPECT_EQ(open_status(sharded_inner).code(), ErrorCode::kInvalidMetadata);
  const std::string big_index =
      zarr_json("[1048576, 1048576]", "[1048576, 1048576]",
                R"([{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 1],
          "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}])");
  const Status index = open_status(big_index);
  EXPECT_EQ(index.code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(index.message().find("shard index"), std::string::npos) << index.message();
}

TEST(ArrayLimits, StoredChunkLargerThanItsCodecsAllowIsCorrupt) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(
      store
          ->set(
              "a/zarr.json",
              zarr_json(
                  "[4, 4]", "[2, 2]",
                  R"([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}, {"name": "crc32c"}])"))
          .ok());
  auto arr = open_array(store, "a");
  // 16 decoded bytes: zstd's bound (16 + 63) + crc32c's 4, with the reader's slack.
  EXPECT_EQ(*arr->codecs().max_encoded_size(), 16u + 63u + 4u);
  EXPECT_EQ(arr->max_stored_chunk_bytes(), stored_size_cap(83));
  ASSERT_TRUE(
      store->set("a/c/0/1", std::vector<std::byte>(arr->max_stored_chunk_bytes() + 1)).ok());
  Status s;
  read(*arr, Selection::full({4, 4}), &s);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("array 'memory://a': chunk 'c/0/1': memory://a/c/0/1 has"),
            std::string::npos)
      << s.message();
}

// A store whose whole-value reads run out of memory (as a large chunk's would).
class OutOfMemoryStore final : public Store {
 public:
  explicit OutOfMemoryStore(std::shared_ptr<MemoryStore> inner) : inner_(std::move(inner)) {}
  Result<std::optional<Buffer>> get(std::string_view key,
                                    std::uint64_t max_size = kNoLimit) const override {
    if (key.find("/c/") != std::string_view::npos) throw std::bad_alloc();
    return inner_->get(key, max_size);
  }
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override {
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
};

TEST(ArrayLimits, OutOfMemoryNamesTheArrayAndChunk) {
  auto inner = std::make_shared<MemoryStore>();
  ASSERT_TRUE(
      inner
          ->set(
              "a/zarr.json",
              zarr_json(
                  "[4, 4]", "[2, 2]",
                  R"([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}])"))
          .ok());
  auto arr = open_array(std::make_shared<OutOfMemoryStore>(inner), "a");
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), new ThreadPool(3)}) {
    Status s;
    read(*arr, Selection::full({4, 4}), &s, pool);
    EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(s.message().find("array 'memory://a': chunk 'c/"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("out of memory"), std::string::npos) << s.message();
    delete pool;
  }
}

TEST(ArrayLimits, MetadataDocumentsAreBoundedInSizeAndNesting) {
  std::string deep = zarr_json("[4]", "[2]");
  deep.pop_back();
  deep += R"(, "attributes": {"x": )" + std::string(100000, '[') + std::string(100000, ']') + "}}";
  Status s = open_status(deep);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(s.message().find("'memory://a/zarr.json': JSON nests deeper than 256 levels"),
            std::string::npos)
      << s.message();
  OpenLimits small;
  small.metadata.max_bytes = 100;
  s = open_status(zarr_json("[4]", "[2]"), small);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(s.message().find("memory://a/zarr.json has"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("max_metadata_bytes"), std::string::npos) << s.message();
}

TEST(ArrayLimits, UnexpectedJsonTypesInConsolidatedMetadataAreMetadataErrors) {
  auto store = std::make_shared<MemoryStore>();
  ASSERT_TRUE(store
                  ->set("zarr.json", R"({"zarr_format": 3, "node_type": "group",
      "consolidated_metadata": {"kind": "inline", "must_understand": false,
      "metadata": {"a": {"zarr_format": 3, "node_type": 5}}}})")
                  .ok());
  auto root = open_node(store, "");
  ASSERT_TRUE(root.ok()) << root.status().to_string();
  const auto& group = *std::get<std::shared_ptr<Group>>(*root);
  auto member = group.open_member("a");
  EXPECT_EQ(member.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(member.status().message().find("a/zarr.json"), std::string::npos)
      << member.status().message();
}

}  // namespace
}  // namespace zarrflow
