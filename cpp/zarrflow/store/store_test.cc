#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#include "zarrflow/store/byte_reader.h"
#include "zarrflow/store/file_store.h"
#include "zarrflow/store/memory_store.h"

namespace zarrflow {
namespace {

namespace fs = std::filesystem;

std::string text(const Buffer& b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() /
            ("zarrflow-store-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(base_);
    fs::create_directories(base_ / "root" / "a" / "c");
    write(base_ / "root" / "a" / "c" / "0", "0123456789");
    write(base_ / "root" / "a" / "zarr.json", "{}");
    write(base_ / "outside.txt", "secret");
    auto s = FileStore::open((base_ / "root").string());
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    store_ = *s;
  }
  void TearDown() override { fs::remove_all(base_); }
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }

  fs::path base_;
  std::shared_ptr<FileStore> store_;
};

TEST_F(FileStoreTest, GetAndMissing) {
  auto v = store_->get("a/c/0");
  ASSERT_TRUE(v.ok());
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ(text(**v), "0123456789");
  auto missing = store_->get("a/c/1");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  auto dir = store_->get("a/c");  // a directory is not a value, nor a missing key
  EXPECT_EQ(dir.status().code(), ErrorCode::kIoError);
}

TEST_F(FileStoreTest, GetRefusesValuesOverTheSizeAskedFor) {
  EXPECT_EQ(text(**store_->get("a/c/0", 10)), "0123456789");
  auto big = store_->get("a/c/0", 9);
  ASSERT_EQ(big.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(big.status().message().find("a/c/0 has 10 bytes, more than the 9"), std::string::npos)
      << big.status().message();
  // A sparse file far larger than memory: refused from its size, never read or allocated.
  { std::ofstream(base_ / "root" / "sparse"); }
  fs::resize_file(base_ / "root" / "sparse", std::uint64_t{64} << 30);
  EXPECT_EQ(store_->get("sparse", 1 << 20).status().code(), ErrorCode::kCorruptData);
}

// get() of `key` on a thread; a FIFO reader blocked in open() is released by opening the FIFO
// for writing, so a regression fails the test instead of hanging it.
Result<std::optional<Buffer>> get_guarded(const FileStore& store, const std::string& key,
                                          const fs::path& fifo) {
  auto fut = std::async(std::launch::async, [&] { return store.get(key); });
  if (fut.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    ADD_FAILURE() << "get('" << key << "') blocked on a FIFO";
    auto r = fut.get();
    if (w >= 0) ::close(w);
    return r;
  }
  return fut.get();
}

TEST_F(FileStoreTest, SpecialFilesAreErrorsNamingTheKeyNeverABlock) {
  const fs::path fifo = base_ / "root" / "a" / "c" / "5";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = get_guarded(*store_, "a/c/5", fifo);
  ASSERT_EQ(r.status().code(), ErrorCode::kIoError);
  EXPECT_NE(r.status().message().find("a/c/5 is a FIFO, not a value"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(store_->size("a/c/5").status().code(), ErrorCode::kIoError);
  std::vector<std::byte> dst(4);
  EXPECT_EQ(store_->read_exact("a/c/5", dst).status().code(), ErrorCode::kIoError);
  const ByteRange first = ByteRange::of(0, 1);
  EXPECT_EQ(store_->get_ranges("a/c/5", {&first, 1}).status().code(), ErrorCode::kIoError);

  // A listening Unix socket where a value should be: open() itself fails (ENXIO).
  const fs::path sock = base_ / "root" / "a" / "c" / "6";
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  auto rs = store_->get("a/c/6");
  ::close(s);
  ASSERT_EQ(rs.status().code(), ErrorCode::kIoError);
  EXPECT_NE(rs.status().message().find("a/c/6"), std::string::npos) << rs.status().message();
}

TEST_F(FileStoreTest, RangesIncludingSuffixAndPastEnd) {
  std::vector<ByteRange> r = {ByteRange::of(2, 3), ByteRange::last(4)};
  auto parts = store_->get_ranges("a/c/0", r);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(text((**parts)[0]), "234");
  EXPECT_EQ(text((**parts)[1]), "6789");
  std::vector<ByteRange> past = {ByteRange::of(8, 5)};
  EXPECT_EQ(store_->get_ranges("a/c/0", past).status().code(), ErrorCode::kCorruptData);
}

TEST_F(FileStoreTest, ReadExactChecksSize) {
  std::vector<std::byte> dst(10);
  EXPECT_TRUE(*store_->read_exact("a/c/0", dst));
  std::vector<std::byte> wrong(11);
  EXPECT_EQ(store_->read_exact("a/c/0", wrong).status().code(), ErrorCode::kCorruptData);
  EXPECT_FALSE(*store_->read_exact("a/c/9", dst));
}

TEST_F(FileStoreTest, RejectsEscapingKeys) {
  for (const char* key :
       {"../outside.txt", "a/../../outside.txt", "/etc/passwd", "a/./c/0", "a//c"}) {
    auto r = store_->get(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_EQ(r.status().code(), ErrorCode::kPathEscape) << key;
  }
}

TEST_F(FileStoreTest, SymlinkOutOfRootIsAnErrorInsideIsFine) {
  fs::create_symlink(base_ / "outside.txt", base_ / "root" / "a" / "c" / "1");
  auto r = store_->get("a/c/1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kPathEscape);
  EXPECT_NE(r.status().message().find("outside the store root"), std::string::npos);
  fs::create_symlink("0", base_ / "root" / "a" / "c" / "2");  // relative, inside
  auto ok = store_->get("a/c/2");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(text(**ok), "0123456789");
  fs::create_symlink(base_ / "root" / "a" / "c" / "0", base_ / "root" / "a" / "c" / "3");
  auto abs = store_->get("a/c/3");  // absolute, inside
  ASSERT_TRUE(abs.ok()) << abs.status().to_string();
  EXPECT_EQ(text(**abs), "0123456789");
}

TEST_F(FileStoreTest, ListAndListDir) {
  auto all = store_->list("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, "a/c/0");
  EXPECT_EQ((*all)[0].size, 10u);
  auto dir = store_->list_dir("a");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(*dir, (std::vector<std::string>{"c", "zarr.json"}));
  EXPECT_TRUE(store_->list("nope")->empty());
}

TEST_F(FileStoreTest, SetWritesAtomically) {
  const std::string v = "hello";
  ASSERT_TRUE(store_->set("b/x/y", std::as_bytes(std::span(v.data(), v.size()))).ok());
  EXPECT_EQ(text(**store_->get("b/x/y")), "hello");
}

TEST_F(FileStoreTest, ReadDirectFromUnalignedOffsets) {
  std::string big(10000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  write(base_ / "root" / "big", big);
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, 3 * 4096), 0);
  std::unique_ptr<void, decltype(&std::free)> guard(mem, &std::free);
  ByteSpan slot(static_cast<std::byte*>(mem), 3 * 4096);
  for (auto [off, len] :
       {std::pair<std::uint64_t, std::uint64_t>{0, 10000}, {4100, 5000}, {9999, 1}}) {
    bool direct = false;
    auto r = store_->read_direct("big", off, len, slot, &direct);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_TRUE(*r);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(slot.data()), len), big.substr(off, len));
  }
  bool direct = false;
  EXPECT_EQ(store_->read_direct("big", 9000, 2000, slot, &direct).status().code(),
            ErrorCode::kCorruptData);  // past the end
  EXPECT_FALSE(*store_->read_direct("nothing", 0, 10, slot, &direct));
}

TEST(FileStoreOpen, MissingRootIsNotFound) {
  EXPECT_EQ(FileStore::open("/nonexistent/zarrflow").status().code(), ErrorCode::kNotFound);
}

TEST(MemoryStore, BasicOperations) {
  MemoryStore m;
  ASSERT_TRUE(m.set("g/a/c/0", std::string_view("abc")).ok());
  ASSERT_TRUE(m.set("g/zarr.json", std::string_view("{}")).ok());
  EXPECT_EQ(text(**m.get("g/a/c/0")), "abc");
  EXPECT_FALSE(m.get("g/a/c/1")->has_value());
  EXPECT_EQ(*m.list_dir("g"), (std::vector<std::string>{"a", "zarr.json"}));
  EXPECT_EQ(m.list("g/a")->size(), 1u);
  EXPECT_EQ(m.get("../x").status().code(), ErrorCode::kPathEscape);
  EXPECT_EQ(m.get("g/a/c/0", 2).status().code(), ErrorCode::kCorruptData);
  EXPECT_EQ(text(**m.get("g/a/c/0", 3)), "abc");
}

TEST(ByteReaders, WindowOfAWindow) {
  const std::string s = "0123456789abcdef";
  MemoryReader mem(std::as_bytes(std::span(s.data(), s.size())), "mem");
  WindowReader outer(mem, 4, 10);   // "456789abcd"
  WindowReader inner(outer, 2, 5);  // "6789a"
  std::vector<ByteRange> r = {ByteRange::of(1, 3), ByteRange::last(2)};
  auto parts = inner.read(r);
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(text((**parts)[0]), "789");
  EXPECT_EQ(text((**parts)[1]), "9a");
  std::vector<ByteRange> past = {ByteRange::of(3, 5)};
  EXPECT_EQ(inner.read(past).status().code(), ErrorCode::kCorruptData);
}

TEST(Keys, Validation) {
  EXPECT_TRUE(validate_key("a/b/c").ok());
  EXPECT_TRUE(validate_key("a/b/").ok());
  EXPECT_EQ(validate_key("").code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(validate_key("", true).ok());
  EXPECT_EQ(validate_key("a\\b").code(), ErrorCode::kPathEscape);
  const std::string nul("a\0b/c", 5);
  const Status s = validate_key(nul);
  EXPECT_EQ(s.code(), ErrorCode::kPathEscape);
  EXPECT_EQ(s.message(), "key 'a\\x00b/c' contains a NUL byte");  // whole, NUL escaped
  EXPECT_EQ(printable_key("x\ny\\z\x7f"), "x\\ny\\\\z\\x7f");
  EXPECT_EQ(join_key("a/", "/b"), "a/b");
  EXPECT_EQ(join_key("", "b"), "b");
}

}  // namespace
}  // namespace zarrflow
