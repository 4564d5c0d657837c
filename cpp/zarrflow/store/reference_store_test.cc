#include "zarrflow/store/reference_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "zarrflow/store/file_store.h"
#include "zarrflow/store/memory_store.h"

namespace zarrflow {
namespace {

namespace fs = std::filesystem;

std::string text(const Buffer& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// The smallest subclass: a fixed key → reference table.
class TableStore final : public ReferenceStore {
 public:
  TableStore(std::shared_ptr<const Store> base, VirtualChunkContainers containers)
      : ReferenceStore(std::move(base), std::move(containers)) {}
  std::map<std::string, ChunkReference, std::less<>> refs;

  Result<std::optional<ChunkReference>> reference(std::string_view key) const override {
    auto it = refs.find(key);
    if (it == refs.end()) return std::optional<ChunkReference>();
    return std::optional(it->second);
  }
  Result<std::vector<ListEntry>> list(std::string_view) const override {
    return std::vector<ListEntry>();
  }
  Result<std::vector<std::string>> list_dir(std::string_view) const override {
    return std::vector<std::string>();
  }
  std::string describe_key(std::string_view key) const override {
    return "table/" + std::string(key);
  }
};

class ReferenceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("zarrflow-refs-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data" / "sub");
    std::ofstream(dir_ / "data" / "file.nc") << "HEADER0123456789TRAILER";
    std::ofstream(dir_ / "secret.txt") << "secret";
    auto files = FileStore::open((dir_ / "data").string());
    ASSERT_TRUE(files.ok());
    VirtualChunkContainers containers;
    ASSERT_TRUE(containers.add("file://" + (dir_ / "data").string() + "/", *files).ok());
    base_ = std::make_shared<MemoryStore>("repo");
    ASSERT_TRUE(base_->set("chunks/A", std::string_view("abcdefghij")).ok());
    store_ = std::make_shared<TableStore>(base_, std::move(containers));
    const std::string inline_text = "inline!";
    inline_ = std::make_shared<std::string>(inline_text);
    store_->refs["meta"] = ChunkReference::of_inline(
        {reinterpret_cast<const std::byte*>(inline_->data()), inline_->size()}, inline_);
    store_->refs["native"] = ChunkReference::of_key("chunks/A", 2, 5);
    store_->refs["virtual"] = ChunkReference::of_location(url("file.nc"), 6, 10);
    store_->refs["whole"] = ChunkReference::of_location(url("file.nc"), 0, std::nullopt);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string url(const std::string& name) const {
    return "file://" + (dir_ / "data").string() + "/" + name;
  }

  fs::path dir_;
  std::shared_ptr<MemoryStore> base_;
  std::shared_ptr<TableStore> store_;
  std::shared_ptr<std::string> inline_;
};

TEST_F(ReferenceStoreTest, ReadsEachKindOfReference) {
  EXPECT_EQ(text(**store_->get("meta")), "inline!");
  EXPECT_EQ(text(**store_->get("native")), "cdefg");
  EXPECT_EQ(text(**store_->get("virtual")), "0123456789");
  EXPECT_EQ(text(**store_->get("whole")), "HEADER0123456789TRAILER");
  EXPECT_FALSE(store_->get("absent")->has_value());
  EXPECT_EQ(**store_->size("virtual"), 10u);
  EXPECT_EQ(**store_->size("whole"), 23u);
}

TEST_F(ReferenceStoreTest, RangesAreInsideTheReference) {
  const ByteRange ranges[] = {ByteRange::of(1, 3), ByteRange::last(2)};
  auto parts = store_->get_ranges("virtual", ranges);
  ASSERT_TRUE(parts.ok()) << parts.status().to_string();
  EXPECT_EQ(text((**parts)[0]), "123");
  EXPECT_EQ(text((**parts)[1]), "89");
  auto inl = store_->get_ranges("meta", ranges);
  ASSERT_TRUE(inl.ok());
  EXPECT_EQ(text((**inl)[0]), "nli");
  const ByteRange past[] = {ByteRange::of(8, 5)};
  auto bad = store_->get_ranges("virtual", past);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(bad.status().message().find("table/virtual"), std::string::npos);
  char buf[4];
  auto into = store_->read_range_into("native", 1, {reinterpret_cast<std::byte*>(buf), 4});
  ASSERT_TRUE(into.ok());
  EXPECT_EQ(std::string(buf, 4), "defg");
  char exact[10];
  ASSERT_TRUE(*store_->read_exact("virtual", {reinterpret_cast<std::byte*>(exact), 10}));
  EXPECT_EQ(std::string(exact, 10), "0123456789");
  EXPECT_FALSE(store_->read_exact("virtual", {reinterpret_cast<std::byte*>(exact), 9}).ok());
}

TEST_F(ReferenceStoreTest, OffsetsPastTheEndOfTheFileNameKeyAndLocation) {
  store_->refs["long"] = ChunkReference::of_location(url("file.nc"), 20, 10);
  auto r = store_->get("long");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(r.status().message().find("table/long"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(url("file.nc")), std::string::npos) << r.status().message();
}

TEST_F(ReferenceStoreTest, MissingTargetsAreErrorsNotFillValues) {
  store_->refs["gone"] = ChunkReference::of_location(url("gone.nc"), 0, 4);
  store_->refs["gone_native"] = ChunkReference::of_key("chunks/B", 0, 4);
  for (const char* key : {"gone", "gone_native"}) {
    auto r = store_->get(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
    EXPECT_NE(r.status().message().find(key), std::string::npos);
  }
}

TEST_F(ReferenceStoreTest, LocationsOutsideEveryContainerAreRefused) {
  store_->refs["elsewhere"] =
      ChunkReference::of_location("file://" + (dir_ / "secret.txt").string(), 0, 6);
  store_->refs["escape"] = ChunkReference::of_location(url("sub/../../secret.txt"), 0, 6);
  store_->refs["s3"] = ChunkReference::of_location("s3://bucket/file.nc", 0, 6);
  for (const char* key : {"elsewhere", "escape", "s3"}) {
    auto r = store_->get(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), ErrorCode::kPathEscape) << r.status().to_string();
    EXPECT_NE(r.status().message().find(std::string("table/") + key), std::string::npos);
  }
}

TEST_F(ReferenceStoreTest, EtagAndModificationTimeChecks) {
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "data" / "file.nc").c_str(), &st), 0);
  auto files = FileStore::open((dir_ / "data").string());
  auto version = (*files)->version("file.nc");
  ASSERT_TRUE(version.ok());
  EXPECT_EQ((*version)->modified_s, st.st_mtim.tv_sec);
  ChunkReference good = ChunkReference::of_location(url("file.nc"), 6, 10);
  good.etag = (*version)->etag;
  good.modified_s = st.st_mtim.tv_sec;
  store_->refs["good"] = good;
  EXPECT_TRUE(store_->get("good").ok());
  ChunkReference stale = good;
  stale.etag = "0-0-0";
  store_->refs["stale_etag"] = stale;
  stale = good;
  stale.etag.clear();
  stale.modified_s = st.st_mtim.tv_sec - 3600;
  store_->refs["stale_time"] = stale;
  for (const char* key : {"stale_etag", "stale_time"}) {
    auto r = store_->get(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), ErrorCode::kChecksumMismatch);
    EXPECT_NE(r.status().message().find(key), std::string::npos);
    EXPECT_NE(r.status().message().find("file.nc"), std::string::npos);
  }
}

TEST(VirtualChunkContainers, PrefixesMustBeCanonical) {
  auto store = std::make_shared<MemoryStore>();
  VirtualChunkContainers c;
  EXPECT_TRUE(c.add("s3://bucket/era5/", store).ok());
  EXPECT_TRUE(c.add("s3://bucket/", store).ok());
  EXPECT_TRUE(c.add("gcs://b/x/", store).ok());
  EXPECT_FALSE(c.add("s3://bucket/era5/", store).ok());  // twice
  EXPECT_FALSE(c.add("s3://bucket/era5", store).ok());   // no trailing '/'
  EXPECT_FALSE(c.add("s3://", store).ok());
  EXPECT_FALSE(c.add("file:///data/../etc/", store).ok());
  EXPECT_FALSE(c.add("ftp://host/x/", store).ok());
  EXPECT_FALSE(c.add("relative/path/", store).ok());
  // The longest prefix wins; gcs:// and gs:// are one scheme.
  auto r = c.resolve("s3://bucket/era5/1990.nc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->key, "1990.nc");
  auto other = c.resolve("s3://bucket/other/x.nc");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->key, "other/x.nc");
  EXPECT_EQ(c.resolve("gs://b/x/y.nc")->key, "y.nc");
  EXPECT_EQ(c.resolve("s3://bucket2/x.nc").status().code(), ErrorCode::kPathEscape);
  EXPECT_EQ(normalize_location("/abs/x.nc").value(), "file:///abs/x.nc");
  EXPECT_FALSE(normalize_location("x.nc").ok());
}

}  // namespace
}  // namespace zarrflow
