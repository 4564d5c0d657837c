// Data type parsing: NumPy typestrs (v2), v3 names, fixed-length and time types.
#include "zarrflow/core/dtype.h"

#include <gtest/gtest.h>

namespace zarrflow {
namespace {

TEST(DType, NumericTypestrsRoundTrip) {
  for (const char* s : {"|b1", "|i1", "<i2", "<i8", "|u1", "<u4", "<f2", "<f8", "<c8", "<c16"}) {
    auto t = parse_numpy_typestr(s);
    ASSERT_TRUE(t.ok()) << s << ": " << t.status().to_string();
    EXPECT_EQ(t->dtype.numpy_str(), s);
    EXPECT_TRUE(t->dtype.is_numeric());
  }
  auto big = parse_numpy_typestr(">f4");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->endian, Endian::kBig);
  EXPECT_EQ(big->dtype.numpy_str(), "<f4");
}

TEST(DType, FixedLengthText) {
  auto u = parse_numpy_typestr(">U5");
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_EQ(u->dtype.kind, DTypeKind::kString);
  EXPECT_EQ(u->dtype.size, 20u);
  EXPECT_EQ(u->dtype.swap_unit(), 4u);
  EXPECT_EQ(u->endian, Endian::kBig);
  EXPECT_EQ(u->dtype.numpy_str(), "<U5");
  EXPECT_EQ(u->dtype.v3_name(), "fixed_length_utf32");

  auto s = parse_numpy_typestr("|S3");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->dtype.kind, DTypeKind::kBytes);
  EXPECT_EQ(s->dtype.size, 3u);
  EXPECT_EQ(s->dtype.swap_unit(), 1u);
  EXPECT_EQ(s->endian, Endian::kNotApplicable);
  EXPECT_EQ(s->dtype.numpy_str(), "|S3");
  EXPECT_FALSE(s->dtype.is_numeric());
}

TEST(DType, HugeDeclaredLengthsAreRefusedWithoutAllocating) {
  for (const char* s : {"<U2000000000", "|S3000000000", "<U99999999999999999999999"}) {
    auto t = parse_numpy_typestr(s);
    ASSERT_FALSE(t.ok()) << s;
    EXPECT_EQ(t.status().code(), ErrorCode::kUnimplemented) << t.status().to_string();
    EXPECT_NE(t.status().message().find("NumPy's limit"), std::string::npos);
  }
  EXPECT_EQ(parse_numpy_typestr("<U0").status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(fixed_length_type(DTypeKind::kString, 7).status().code(),
            ErrorCode::kInvalidMetadata);  // not whole code points
  EXPECT_EQ(fixed_length_type(DTypeKind::kBytes, kMaxItemSize + 1).status().code(),
            ErrorCode::kUnimplemented);
  EXPECT_TRUE(fixed_length_type(DTypeKind::kBytes, kMaxItemSize).ok());
}

TEST(DType, DatetimesInEveryUnit) {
  for (const char* unit : {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"}) {
    const std::string m = std::string("<M8[") + unit + "]";
    auto t = parse_numpy_typestr(m);
    ASSERT_TRUE(t.ok()) << m << ": " << t.status().to_string();
    EXPECT_EQ(t->dtype.kind, DTypeKind::kDateTime);
    EXPECT_EQ(t->dtype.size, 8u);
    EXPECT_EQ(t->dtype.numpy_str(), m);
    const std::string td = std::string(">m8[") + unit + "]";
    auto d = parse_numpy_typestr(td);
    ASSERT_TRUE(d.ok()) << td;
    EXPECT_EQ(d->dtype.kind, DTypeKind::kTimeDelta);
    EXPECT_EQ(d->endian, Endian::kBig);
    EXPECT_EQ(d->dtype.swap_unit(), 8u);
    EXPECT_EQ(d->dtype.numpy_str(), std::string("<m8[") + unit + "]");
  }
  auto scaled = parse_numpy_typestr("<M8[10s]");
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ(scaled->dtype.scale, 10u);
  EXPECT_EQ(scaled->dtype.unit, TimeUnit::kSecond);
  EXPECT_EQ(scaled->dtype.numpy_str(), "<M8[10s]");
  auto generic = parse_numpy_typestr("<M8");
  ASSERT_TRUE(generic.ok());
  EXPECT_EQ(generic->dtype.unit, TimeUnit::kGeneric);
  EXPECT_EQ(generic->dtype.numpy_str(), "<M8");
  auto micro = time_type(DTypeKind::kDateTime, "\u03bcs", 1);  // zarr-python accepts "μs"
  ASSERT_TRUE(micro.ok());
  EXPECT_EQ(micro->numpy_str(), "<M8[us]");
}

TEST(DType, BadTimeUnitsAreMetadataErrors) {
  for (const char* s : {"<M8[xx]", "<M8[ns", "<M8[]", "<M4[ns]", "<m8[0s]",
                        "<M8[99999999999999999999s]", "<M8[3generic]"}) {
    auto t = parse_numpy_typestr(s);
    ASSERT_FALSE(t.ok()) << s;
    EXPECT_EQ(t.status().code(), ErrorCode::kInvalidMetadata) << s;
    EXPECT_NE(t.status().message().find(s), std::string::npos) << t.status().to_string();
  }
  auto unknown = time_type(DTypeKind::kTimeDelta, "fortnight", 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown time unit 'fortnight'"), std::string::npos);
}

TEST(DType, ObjectTypestrNeedsItsCodec) {
  auto t = parse_numpy_typestr("|O");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(t.status().message().find("vlen-utf8"), std::string::npos);
}

TEST(DType, V3NamesOfVariableLengthTypes) {
  auto s = parse_v3_data_type("string");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DTypeKind::kVlenString);
  EXPECT_TRUE(s->is_variable_length());
  EXPECT_EQ(s->size, 0u);
  EXPECT_EQ(s->numpy_str(), "T");
  for (const char* name : {"variable_length_bytes", "bytes"}) {
    auto b = parse_v3_data_type(name);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->kind, DTypeKind::kVlenBytes);
    EXPECT_EQ(b->numpy_str(), "|O");
  }
  EXPECT_EQ(parse_v3_data_type("float32")->numpy_str(), "<f4");
  EXPECT_FALSE(parse_v3_data_type("float32")->is_variable_length());
}

}  // namespace
}  // namespace zarrflow
