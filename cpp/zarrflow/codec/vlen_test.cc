// The variable-length codecs: splitting numcodecs' format into items, and every way a chunk can
// be corrupt.
#include "zarrflow/codec/vlen.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "zarrflow/codec/registry.h"
#include "zarrflow/codec/vlen_test_util.h"

namespace zarrflow {
namespace {

using vlen_test::Bytes;
using vlen_test::encode;
using vlen_test::put_u32;

std::shared_ptr<const VlenCodec> make(const CodecRegistry& reg, const char* name, DTypeKind kind,
                                      const nlohmann::json& cfg = nlohmann::json::object()) {
  ChunkSpec spec{DataType{kind, 0}, {4}, {}};
  auto c = reg.create(name, cfg, spec);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  if (!c.ok()) return nullptr;
  return std::dynamic_pointer_cast<const VlenCodec>(*c);
}

std::string text(const VlenItem& item) {
  return std::string(reinterpret_cast<const char*>(item.data), item.size);
}

Status split(const VlenCodec& codec, const Bytes& b, std::int64_t n) {
  std::vector<VlenItem> items;
  return codec.split(b, n, items);
}

TEST(Vlen, SplitsItemsInOrder) {
  auto codec = make(CodecRegistry::v3(), "vlen-utf8", DTypeKind::kVlenString);
  ASSERT_TRUE(codec);
  // numcodecs.VLenUTF8().encode(["a", "bé", "", "dddd"])
  const Bytes b = encode({"a", "b\xc3\xa9", "", "dddd"});
  std::vector<VlenItem> items;
  ASSERT_TRUE(codec->split(b, 4, items).ok());
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(text(items[0]), "a");
  EXPECT_EQ(text(items[1]), "b\xc3\xa9");
  EXPECT_EQ(items[2].size, 0u);
  EXPECT_EQ(text(items[3]), "dddd");
}

TEST(Vlen, ItemCountMustMatchTheChunk) {
  auto codec = make(CodecRegistry::v3(), "vlen-bytes", DTypeKind::kVlenBytes);
  Status s = split(*codec, encode({"a", "b", "c"}), 4);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("3 items, the chunk shape has 4 elements"), std::string::npos)
      << s.to_string();
}

TEST(Vlen, LengthPastTheEnd) {
  auto codec = make(CodecRegistry::v3(), "vlen-bytes", DTypeKind::kVlenBytes);
  Bytes b = encode({"ab", "cd"});
  b.pop_back();  // the last item is one byte short
  Status s = split(*codec, b, 2);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("item 1 of 2 claims 2 bytes, only 1 are left"), std::string::npos)
      << s.to_string();
}

TEST(Vlen, NegativeAndHugeLengths) {
  auto codec = make(CodecRegistry::v2(), "vlen-bytes", DTypeKind::kVlenBytes);
  for (std::uint32_t len : {0xffffffffu, 0x80000000u, 0x7fffffffu}) {
    Bytes b;
    put_u32(b, 1);
    put_u32(b, len);  // -1 / INT32_MIN / INT32_MAX as a signed reader would see them
    b.push_back(std::byte{'x'});
    Status s = split(*codec, b, 1);
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << len;
    EXPECT_NE(s.message().find("claims " + std::to_string(len) + " bytes"), std::string::npos)
        << s.to_string();
  }
}

TEST(Vlen, HugeItemCountIsRefusedBeforeAllocating) {
  auto codec = make(CodecRegistry::v3(), "vlen-bytes", DTypeKind::kVlenBytes);
  Bytes b;
  put_u32(b, 0xfffffff0u);
  put_u32(b, 0);
  Status s = split(*codec, b, 0xfffffff0);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("cannot hold"), std::string::npos) << s.to_string();
}

TEST(Vlen, TruncatedHeaders) {
  auto codec = make(CodecRegistry::v3(), "vlen-utf8", DTypeKind::kVlenString);
  Status s = split(*codec, Bytes{std::byte{1}, std::byte{0}}, 1);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("too short for its 4-byte item count"), std::string::npos);
  Bytes b = encode({"abcdefgh", "b"});
  b.resize(4 + 12 + 2);  // the second item's length is cut
  s = split(*codec, b, 2);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("length lies past the end"), std::string::npos) << s.to_string();
}

TEST(Vlen, TrailingBytesAreCorrupt) {
  auto codec = make(CodecRegistry::v3(), "vlen-utf8", DTypeKind::kVlenString);
  Bytes b = encode({"a"});
  b.push_back(std::byte{0});
  Status s = split(*codec, b, 1);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("1 bytes follow the last item"), std::string::npos);
}

TEST(Vlen, TextMustBeUtf8) {
  auto codec = make(CodecRegistry::v3(), "vlen-utf8", DTypeKind::kVlenString);
  for (const char* bad : {"\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    Status s = split(*codec, encode({"ok", bad}), 2);
    EXPECT_EQ(s.code(), ErrorCode::kCorruptData) << bad;
    EXPECT_NE(s.message().find("item 1 is not valid UTF-8"), std::string::npos) << s.to_string();
  }
  // vlen-bytes takes any bytes.
  auto bytes = make(CodecRegistry::v3(), "vlen-bytes", DTypeKind::kVlenBytes);
  EXPECT_TRUE(split(*bytes, encode({"\xff", "\xc0"}), 2).ok());
}

TEST(Vlen, Utf8Validation) {
  auto at = [](const std::string& s) {
    return utf8_invalid_at(std::as_bytes(std::span(s.data(), s.size())));
  };
  EXPECT_EQ(at("plain ascii text, longer than eight bytes"), 41u);
  EXPECT_EQ(at("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), 9u);  // é € 😀
  EXPECT_EQ(at("abcdefgh\x80"), 8u);
  EXPECT_EQ(at("\xef\xbf\xbf"), 3u);  // U+FFFF is valid
  EXPECT_EQ(at("\xe0\x80\x80"), 0u);  // overlong
}

TEST(Vlen, ArraysNeedWholeElements) {
  auto codec = make(CodecRegistry::v2(), "vlen-array", DTypeKind::kVlenArray,
                    {{"id", "vlen-array"}, {"dtype", "<i4"}});
  ASSERT_TRUE(codec);
  EXPECT_EQ(codec->describe(), "vlen-array(<i4)");
  EXPECT_TRUE(split(*codec, encode({std::string(8, 'x'), ""}), 2).ok());
  Status s = split(*codec, encode({std::string(6, 'x'), ""}), 2);
  EXPECT_EQ(s.code(), ErrorCode::kCorruptData);
  EXPECT_NE(s.message().find("not a whole number of <i4 elements"), std::string::npos);
}

TEST(Vlen, ConfigurationAndTypeChecks) {
  ChunkSpec text{DataType{DTypeKind::kVlenString, 0}, {4}, {}};
  ChunkSpec number{DataType{DTypeKind::kFloat, 4}, {4}, {}};
  auto wrong_type = CodecRegistry::v3().create("vlen-utf8", nlohmann::json::object(), number);
  EXPECT_EQ(wrong_type.status().code(), ErrorCode::kInvalidMetadata);
  auto wrong_codec = CodecRegistry::v3().create("vlen-bytes", nlohmann::json::object(), text);
  EXPECT_EQ(wrong_codec.status().code(), ErrorCode::kInvalidMetadata);
  auto unknown = CodecRegistry::v3().create("vlen-utf8", {{"x", 1}}, text);
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidMetadata);
  ChunkSpec arrays{DataType{DTypeKind::kVlenArray, 0}, {4}, {}};
  auto no_dtype = CodecRegistry::v2().create("vlen-array", {{"id", "vlen-array"}}, arrays);
  EXPECT_EQ(no_dtype.status().code(), ErrorCode::kInvalidMetadata);
  auto text_items =
      CodecRegistry::v2().create("vlen-array", {{"id", "vlen-array"}, {"dtype", "<U3"}}, arrays);
  EXPECT_EQ(text_items.status().code(), ErrorCode::kUnimplemented);
  // The bytes codec cannot hold variable-length elements.
  auto bytes = CodecRegistry::v3().create("bytes", nlohmann::json::object(), text);
  EXPECT_EQ(bytes.status().code(), ErrorCode::kInvalidMetadata);
}

TEST(Vlen, FixedSizeDecodeIsRefused) {
  auto codec = make(CodecRegistry::v3(), "vlen-utf8", DTypeKind::kVlenString);
  ChunkSpec spec{DataType{DTypeKind::kVlenString, 0}, {1}, {}};
  std::byte dest[16];
  StridedView view{dest, {1}, {16}};
  Status s = codec->decode_into(encode({"a"}), spec, Selection::full({1}), view, DecodeContext{});
  EXPECT_EQ(s.code(), ErrorCode::kUnimplemented);
}

}  // namespace
}  // namespace zarrflow
