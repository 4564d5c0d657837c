// The Store contract (store.h) as one GoogleTest suite that every store kind passes.
//
// A store kind takes part through a harness, a default-constructible type with
//   static constexpr bool kLists;   // false: list/list_dir are kUnimplemented (plain HTTP)
//   std::shared_ptr<Store> make(const std::map<std::string, std::string>& contents);
// that returns a store holding exactly `contents` (key → value bytes); the harness owns whatever
// the store needs (a temporary directory, a loopback server) for the test's lifetime. Then
//   INSTANTIATE_TYPED_TEST_SUITE_P(Kind, StoreConformance, KindHarness);
// in the kind's *_conformance_test.cc. The suite checks whole values, ranges, reads into caller
// memory, tails, sizes, listings, missing keys, keys that would leave the root, odd characters in
// keys, and concurrent readers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zarrflow/store/store.h"

namespace zarrflow::conformance {

// Deterministic bytes that differ at every offset of a few hundred bytes (so a shifted range is
// caught).
inline std::string pattern(std::size_t n, unsigned salt = 0) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 131 + i / 251 + salt * 17) & 0xFF);
  return s;
}

// What every harness stores: Zarr-like keys, an empty value, a value of several MiB, and keys
// with characters that need escaping in URLs.
inline const std::map<std::string, std::string>& contents() {
  static const std::map<std::string, std::string> kContents = {
      {"zarr.json", R"({"zarr_format": 3, "node_type": "group"})"},
      {"empty", ""},
      {"big", pattern(3 << 20, 1)},
      {"data/zarr.json", R"({"zarr_format": 3, "node_type": "array"})"},
      {"data/c/0/0", pattern(1000, 2)},
      {"data/c/0/1", pattern(70000, 3)},
      {"data/c/1/0", "x"},
      {"group/sub/leaf", "leaf"},
      {"odd names/a b+c%41=d;e~(f)", "odd"},
      {"odd names/\xc3\xbc.bin", "utf-8"},
  };
  return kContents;
}

inline std::string text(const Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

inline ByteSpan span_of(std::string& s) {
  return {reinterpret_cast<std::byte*>(s.data()), s.size()};
}

template <typename Harness>
class StoreConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = harness_.make(contents());
    ASSERT_NE(store_, nullptr);
  }
  const Store& store() const { return *store_; }
  static const std::string& value(const std::string& key) { return contents().at(key); }

  Harness harness_;
  std::shared_ptr<Store> store_;
};

TYPED_TEST_SUITE_P(StoreConformance);

TYPED_TEST_P(StoreConformance, GetReturnsEveryValueWhole) {
  for (const auto& [key, want] : contents()) {
    auto got = this->store().get(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().to_string();
    ASSERT_TRUE(got->has_value()) << key;
    EXPECT_EQ(text(**got), want) << key;
  }
}

TYPED_TEST_P(StoreConformance, SizeIsTheValueLength) {
  for (const auto& [key, want] : contents()) {
    auto got = this->store().size(key);
    ASSERT_TRUE(got.ok()) << key << ": " << got.status().to_string();
    ASSERT_TRUE(got->has_value()) << key;
    EXPECT_EQ(**got, want.size()) << key;
  }
}

TYPED_TEST_P(StoreConformance, MissingKeysAreAnswersNotErrors) {
  const Store& s = this->store();
  for (const std::string key : {"missing", "data/c/9/9", "group/sub/leaf2", "nothing/below"}) {
    auto get = s.get(key);
    ASSERT_TRUE(get.ok()) << key << ": " << get.status().to_string();
    EXPECT_FALSE(get->has_value()) << key;
    auto size = s.size(key);
    ASSERT_TRUE(size.ok()) << key << ": " << size.status().to_string();
    EXPECT_FALSE(size->has_value()) << key;
    const ByteRange r = ByteRange::of(0, 1);
    auto ranges = s.get_ranges(key, {&r, 1});
    ASSERT_TRUE(ranges.ok()) << key << ": " << ranges.status().to_string();
    EXPECT_FALSE(ranges->has_value()) << key;
    std::string dst(4, '\0');
    auto exact = s.read_exact(key, span_of(dst));
    ASSERT_TRUE(exact.ok()) << key << ": " << exact.status().to_string();
    EXPECT_FALSE(*exact) << key;
    auto into = s.read_range_into(key, 0, span_of(dst));
    ASSERT_TRUE(into.ok()) << key << ": " << into.status().to_string();
    EXPECT_FALSE(*into) << key;
    auto tail = s.get_tail(key, 2);
    ASSERT_TRUE(tail.ok()) << key << ": " << tail.status().to_string();
    EXPECT_FALSE(tail->has_value()) << key;
  }
}

TYPED_TEST_P(StoreConformance, GetRangesReturnsEachRangeInOrder) {
  const std::string& chunk = this->value("data/c/0/0");  // 1000 bytes
  const std::vector<ByteRange> ranges = {
      ByteRange::of(0, 10),   ByteRange::of(5, 20),    // overlapping
      ByteRange::last(7),     ByteRange::of(997, 3),   // the last bytes, two ways
      ByteRange::of(100, 10), ByteRange::of(200, 10),  // near each other (merged by some stores)
      ByteRange::of(7, 0),                             // empty
      ByteRange::of(0, 1000),                          // everything
  };
  auto got = this->store().get_ranges("data/c/0/0", ranges);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_TRUE(got->has_value());
  ASSERT_EQ((*got)->size(), ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const ByteRange& r = ranges[i];
    const std::uint64_t at = r.suffix ? chunk.size() - r.length : r.offset;
    EXPECT_EQ(text((**got)[i]), chunk.substr(at, r.length)) << r.to_string();
  }

  const std::string& big = this->value("big");  // 3 MiB: ranges too far apart to merge
  const std::vector<ByteRange> far = {ByteRange::of(2 << 20, 1 << 20), ByteRange::of(0, 4096),
                                      ByteRange::last(4096)};
  auto got_far = this->store().get_ranges("big", far);
  ASSERT_TRUE(got_far.ok()) << got_far.status().to_string();
  ASSERT_TRUE(got_far->has_value());
  EXPECT_EQ(text((**got_far)[0]), big.substr(2 << 20, 1 << 20));
  EXPECT_EQ(text((**got_far)[1]), big.substr(0, 4096));
  EXPECT_EQ(text((**got_far)[2]), big.substr(big.size() - 4096));
}

TYPED_TEST_P(StoreConformance, RangesPastTheEndAreCorruptData) {
  // The data is shorter than what asked for it (a shard index, a chunk's framing) says.
  for (const ByteRange& r : {ByteRange::of(995, 10), ByteRange::of(1000, 1),
                             ByteRange::of(5000, 10), ByteRange::last(1001)}) {
    auto got = this->store().get_ranges("data/c/0/0", {&r, 1});
    ASSERT_FALSE(got.ok()) << r.to_string();
    EXPECT_EQ(got.status().code(), ErrorCode::kCorruptData) << got.status().to_string();
    EXPECT_NE(got.status().message().find("data/c/0/0"), std::string::npos)
        << got.status().to_string();
  }
}

TYPED_TEST_P(StoreConformance, ReadExactFillsCallerMemoryOrRefusesAnotherSize) {
  const std::string& want = this->value("data/c/0/1");
  std::string dst(want.size(), '\0');
  auto ok = this->store().read_exact("data/c/0/1", span_of(dst));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_TRUE(*ok);
  EXPECT_EQ(dst, want);
  std::string empty;
  auto none = this->store().read_exact("empty", span_of(empty));
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_TRUE(*none);
  for (std::size_t n : {want.size() - 1, want.size() + 1}) {
    std::string wrong(n, '\0');
    auto bad = this->store().read_exact("data/c/0/1", span_of(wrong));
    ASSERT_FALSE(bad.ok()) << n;
    EXPECT_EQ(bad.status().code(), ErrorCode::kCorruptData) << bad.status().to_string();
  }
}

TYPED_TEST_P(StoreConformance, ReadRangeIntoReadsAtAnOffset) {
  const std::string& want = this->value("data/c/0/1");
  std::string dst(1234, '\0');
  auto ok = this->store().read_range_into("data/c/0/1", 4321, span_of(dst));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_TRUE(*ok);
  EXPECT_EQ(dst, want.substr(4321, 1234));
  std::string none;
  auto empty = this->store().read_range_into("data/c/0/1", want.size(), span_of(none));
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_TRUE(*empty);
  std::string past(10, '\0');
  auto bad = this->store().read_range_into("data/c/0/1", want.size() - 5, span_of(past));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorruptData) << bad.status().to_string();
}

TYPED_TEST_P(StoreConformance, GetTailReturnsTheLastBytesAndTheSize) {
  const std::string& want = this->value("data/c/0/1");
  for (std::uint64_t n : {std::uint64_t{16}, std::uint64_t{0}, std::uint64_t{want.size()}}) {
    auto tail = this->store().get_tail("data/c/0/1", n);
    ASSERT_TRUE(tail.ok()) << n << ": " << tail.status().to_string();
    ASSERT_TRUE(tail->has_value()) << n;
    EXPECT_EQ((*tail)->total_size, want.size());
    EXPECT_EQ(text((*tail)->bytes), want.substr(want.size() - n)) << n;
  }
  auto bad = this->store().get_tail("data/c/0/1", want.size() + 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorruptData) << bad.status().to_string();
}

TYPED_TEST_P(StoreConformance, ListIsRecursiveSortedAndSized) {
  const Store& s = this->store();
  if (!TypeParam::kLists) {
    auto refused = s.list("");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), ErrorCode::kUnimplemented);
    return;
  }
  auto expect_list = [&](const std::string& prefix) {
    std::vector<ListEntry> want;
    for (const auto& [key, value] : contents())
      if (prefix.empty() || key.starts_with(prefix + "/")) want.push_back({key, value.size()});
    auto got = s.list(prefix);
    ASSERT_TRUE(got.ok()) << prefix << ": " << got.status().to_string();
    ASSERT_EQ(got->size(), want.size()) << "prefix '" << prefix << "'";
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*got)[i].key, want[i].key) << "prefix '" << prefix << "'";
      EXPECT_EQ((*got)[i].size, want[i].size) << want[i].key;
    }
  };
  for (const std::string prefix : {"", "data", "data/c", "data/c/0", "group", "odd names"})
    expect_list(prefix);
  auto none = s.list("nothing");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_TRUE(none->empty());
}

TYPED_TEST_P(StoreConformance, ListDirNamesImmediateChildren) {
  const Store& s = this->store();
  if (!TypeParam::kLists) {
    auto refused = s.list_dir("");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), ErrorCode::kUnimplemented);
    return;
  }
  using Names = std::vector<std::string>;
  const std::map<std::string, Names> want = {
      {"", {"big", "data", "empty", "group", "odd names", "zarr.json"}},
      {"data", {"c", "zarr.json"}},
      {"data/c", {"0", "1"}},
      {"data/c/0", {"0", "1"}},
      {"group", {"sub"}},
      {"odd names", {"a b+c%41=d;e~(f)", "\xc3\xbc.bin"}},
      {"nothing", {}},
  };
  for (const auto& [prefix, names] : want) {
    auto got = s.list_dir(prefix);
    ASSERT_TRUE(got.ok()) << prefix << ": " << got.status().to_string();
    EXPECT_EQ(*got, names) << "prefix '" << prefix << "'";
  }
}

TYPED_TEST_P(StoreConformance, KeysThatWouldLeaveTheRootAreRefused) {
  const Store& s = this->store();
  const std::vector<std::string> bad = {
      "../zarr.json",      "/zarr.json",      "data//zarr.json",        "data/./zarr.json",
      "data/../zarr.json", "data\\zarr.json", std::string("data\0x", 6)};
  for (const std::string& key : bad) {
    auto is_refusal = [&](const Status& st, const char* call) {
      EXPECT_FALSE(st.ok()) << call << " accepted key '" << key << "'";
      EXPECT_EQ(st.code(), ErrorCode::kPathEscape) << call << ": " << st.to_string();
    };
    is_refusal(s.get(key).status(), "get");
    is_refusal(s.size(key).status(), "size");
    const ByteRange r = ByteRange::of(0, 1);
    is_refusal(s.get_ranges(key, {&r, 1}).status(), "get_ranges");
    std::string dst(4, '\0');
    is_refusal(s.read_exact(key, span_of(dst)).status(), "read_exact");
    is_refusal(s.read_range_into(key, 0, span_of(dst)).status(), "read_range_into");
    is_refusal(s.get_tail(key, 1).status(), "get_tail");
    is_refusal(s.list(key).status(), "list");
    is_refusal(s.list_dir(key).status(), "list_dir");
  }
  auto empty = s.get("");
  ASSERT_FALSE(empty.ok()) << "get accepted the empty key";
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument) << empty.status().to_string();
}

TYPED_TEST_P(StoreConformance, ErrorsAndDescriptionsNameTheKey) {
  const std::string described = this->store().describe_key("data/c/0/0");
  EXPECT_NE(described.find("data/c/0/0"), std::string::npos) << described;
  std::string wrong(3, '\0');
  auto bad = this->store().read_exact("data/c/0/0", span_of(wrong));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("data/c/0/0"), std::string::npos)
      << bad.status().to_string();
}

TYPED_TEST_P(StoreConformance, ConcurrentReadersSeeTheSameBytes) {
  const Store& s = this->store();
  std::vector<std::string> keys;
  for (const auto& [key, value] : contents()) keys.push_back(key);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 24; ++i) {
        const std::string& key = keys[(t * 7 + i * 3) % keys.size()];
        const std::string& want = contents().at(key);
        switch ((t + i) % 3) {
          case 0: {
            auto got = s.get(key);
            if (!got.ok() || !got->has_value() || text(**got) != want) ++failures;
            break;
          }
          case 1: {
            const std::uint64_t n = std::min<std::uint64_t>(want.size(), 100);
            const ByteRange r = ByteRange::of(want.size() - n, n);
            auto got = s.get_ranges(key, {&r, 1});
            if (!got.ok() || !got->has_value() || text((**got)[0]) != want.substr(want.size() - n))
              ++failures;
            break;
          }
          default: {
            std::string dst(want.size(), '\0');
            auto got = s.read_exact(key, span_of(dst));
            if (!got.ok() || !*got || dst != want) ++failures;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

REGISTER_TYPED_TEST_SUITE_P(StoreConformance, GetReturnsEveryValueWhole, SizeIsTheValueLength,
                            MissingKeysAreAnswersNotErrors, GetRangesReturnsEachRangeInOrder,
                            RangesPastTheEndAreCorruptData,
                            ReadExactFillsCallerMemoryOrRefusesAnotherSize,
                            ReadRangeIntoReadsAtAnOffset, GetTailReturnsTheLastBytesAndTheSize,
                            ListIsRecursiveSortedAndSized, ListDirNamesImmediateChildren,
                            KeysThatWouldLeaveTheRootAreRefused, ErrorsAndDescriptionsNameTheKey,
                            ConcurrentReadersSeeTheSameBytes);

}  // namespace zarrflow::conformance
