#include "zarrflow/store/kerchunk_store.h"

#include <gtest/gtest.h>

#include "zarrflow/store/memory_store.h"

namespace zarrflow {
namespace {

std::string text(const Buffer& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

std::shared_ptr<KerchunkStore> open_refs(const std::string& doc,
                                         std::shared_ptr<MemoryStore> files = nullptr) {
  auto refs = KerchunkReferences::parse_json(doc, "refs.json");
  EXPECT_TRUE(refs.ok()) << refs.status().to_string();
  if (!refs.ok()) return nullptr;
  VirtualChunkContainers containers;
  if (files) EXPECT_TRUE(containers.add("s3://bucket/", files).ok());
  return KerchunkStore::open(*refs, std::move(containers));
}

TEST(Kerchunk, Version0InlineAndReferences) {
  auto files = std::make_shared<MemoryStore>();
  ASSERT_TRUE(files->set("a.nc", std::string_view("0123456789")).ok());
  auto store = open_refs(R"({".zgroup": "{\"zarr_format\": 2}",
                              "x/.zarray": {"shape": [2]},
                              "x/0": "base64:AAEC/w==",
                              "x/1": ["s3://bucket/a.nc", 2, 3],
                              "x/2": ["s3://bucket/a.nc"]})",
                         files);
  ASSERT_TRUE(store);
  EXPECT_EQ(text(**store->get(".zgroup")), R"({"zarr_format": 2})");
  EXPECT_EQ(text(**store->get("x/.zarray")), R"({"shape":[2]})");
  EXPECT_EQ(text(**store->get("x/0")), std::string("\x00\x01\x02\xff", 4));
  EXPECT_EQ(text(**store->get("x/1")), "234");
  EXPECT_EQ(text(**store->get("x/2")), "0123456789");
  EXPECT_FALSE(store->get("x/3")->has_value());
  EXPECT_EQ(*store->list_dir(""), (std::vector<std::string>{".zgroup", "x"}));
  EXPECT_EQ(store->list("x")->size(), 4u);
  EXPECT_EQ(store->describe_key("x/1"), "refs.json#x/1");
}

TEST(Kerchunk, Version1TemplatesAndGen) {
  auto files = std::make_shared<MemoryStore>();
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(files->set("f" + std::to_string(i) + ".nc", std::string(4000, char('a' + i))).ok());
  auto store = open_refs(R"({"version": 1,
      "templates": {"u": "s3://bucket/f0.nc", "pre": "s3://bucket"},
      "refs": {"a/0": ["{{u}}", 10, 2]},
      "gen": [{"key": "g/{{i}}.{{j}}", "url": "{{pre}}/f{{i}}.nc",
               "offset": "{{(j + 1) * 1000 - 7 // 2}}", "length": "{{ 5 % 3 }}",
               "dimensions": {"i": {"stop": 3}, "j": [0, 2]}}]})",
                         files);
  ASSERT_TRUE(store);
  EXPECT_EQ(text(**store->get("a/0")), "aa");
  EXPECT_EQ(store->references().entries().size(), 7u);
  auto* e = store->references().find("g/2.2");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(store->references().urls()[e->url_index], "s3://bucket/f2.nc");
  EXPECT_EQ(e->offset, 2997u);  // (2 + 1) * 1000 - 7 // 2
  EXPECT_EQ(e->length, 2u);
  EXPECT_EQ(text(**store->get("g/1.0")), "bb");
}

TEST(Kerchunk, BadDocumentsAreMetadataErrors) {
  for (const char* doc : {
           "[1, 2]",
           "{\"version\": 2, \"refs\": {}}",
           "{\"version\": 1}",
           "{\"x/0\": [\"s3://b/a\", 1]}",
           "{\"x/0\": [\"s3://b/a\", -1, 2]}",
           "{\"x/0\": \"base64:@@@\"}",
           "{\"../x\": \"a\"}",
           "{\"version\": 1, \"refs\": {\"k\": [\"{{missing}}\"]}}",
           "{\"version\": 1, \"refs\": {}, \"gen\": [{\"key\": \"k{{i}}\", \"url\": \"s3://b/a\","
           " \"offset\": \"{{i / 2}}\", \"length\": \"1\", \"dimensions\": {\"i\": {\"stop\": "
           "2}}}]}",
           "{\"version\": 1, \"refs\": {}, \"gen\": [{\"key\": \"k{{i}}\", \"url\": \"s3://b/a\","
           " \"dimensions\": {\"i\": {\"stop\": 100000000000}}}]}",
           "{not json",
       }) {
    auto refs = KerchunkReferences::parse_json(doc, "refs.json");
    ASSERT_FALSE(refs.ok()) << doc;
    EXPECT_NE(refs.status().message().find("refs.json"), std::string::npos) << doc;
  }
}

TEST(Kerchunk, UnauthorisedLocationsNameKeyAndLocation) {
  auto store = open_refs(R"({"x/0": ["s3://other/a.nc", 0, 4], "x/1": ["/etc/passwd", 0, 4]})");
  ASSERT_TRUE(store);
  for (const char* key : {"x/0", "x/1"}) {
    auto r = store->get(key);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kPathEscape);
    EXPECT_NE(r.status().message().find(std::string("refs.json#") + key), std::string::npos)
        << r.status().message();
  }
}

TEST(Base64, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(*decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(*decode_base64("aGVsbG8"), "hello");
  EXPECT_EQ(*decode_base64(""), "");
  EXPECT_FALSE(decode_base64("a").ok());
}

}  // namespace
}  // namespace zarrflow
