#include "zarrflow/zarr/metadata.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "zarrflow/zarr/fill_value.h"

namespace zarrflow {
namespace {

nlohmann::json base_v3() {
  return nlohmann::json::parse(R"({"zarr_format": 3, "node_type": "array", "shape": [10, 20],
    "data_type": "float32", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": "NaN",
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})");
}

ErrorCode code_of(const nlohmann::json& doc) { return parse_array_v3(doc).status().code(); }

TEST(MetadataV3, ParsesAValidArray) {
  auto md = parse_array_v3(base_v3());
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->chunk_shape, (Shape{5, 5}));
  float f;
  std::memcpy(&f, md->fill_value.data(), 4);
  EXPECT_TRUE(std::isnan(f));
}

TEST(MetadataV3, WrongTypesAndSizes) {
  auto d = base_v3();
  d["shape"] = "10";
  EXPECT_EQ(code_of(d), ErrorCode::kInvalidMetadata);
  d = base_v3();
  d["chunk_grid"]["configuration"]["chunk_shape"] = {5, 0};
  EXPECT_EQ(code_of(d), ErrorCode::kInvalidMetadata);
  d["chunk_grid"]["configuration"]["chunk_shape"] = {5, -1};
  EXPECT_EQ(code_of(d), ErrorCode::kInvalidMetadata);
  d = base_v3();
  d["shape"] = {std::int64_t{1} << 62, 8};
  EXPECT_EQ(code_of(d), ErrorCode::kInvalidMetadata);
  d = base_v3();
  d.erase("codecs");
  EXPECT_EQ(code_of(d), ErrorCode::kInvalidMetadata);
  d = base_v3();
  d["data_type"] = "float8_e4m3fn";
  EXPECT_EQ(code_of(d), ErrorCode::kUnimplemented);
  d = base_v3();
  d["chunk_grid"]["name"] = "rectilinear";
  EXPECT_EQ(code_of(d), ErrorCode::kUnimplemented);
}

TEST(MetadataV3, MustUnderstandRules) {
  auto d = base_v3();
  d["my_extension"] = {{"must_understand", false}, {"x", 1}};
  EXPECT_TRUE(parse_array_v3(d).ok());
  d["other_extension"] = {{"x", 1}};
  auto r = parse_array_v3(d);
  EXPECT_EQ(r.status().code(), ErrorCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("other_extension"), std::string::npos);
  d = base_v3();
  d["storage_transformers"] = nlohmann::json::array({{{"name", "x"}}});
  EXPECT_EQ(code_of(d), ErrorCode::kUnimplemented);
}

TEST(MetadataV3, ChunkKeyEncodings) {
  ChunkKeyEncoding def{ChunkKeyEncoding::Kind::kDefault, '/'};
  EXPECT_EQ(def.key({1, 23, 4}), "c/1/23/4");
  EXPECT_EQ(def.key({}), "c");
  EXPECT_EQ(def.parse("c/1/23/4", 3), (Shape{1, 23, 4}));
  EXPECT_FALSE(def.parse("c/1/x/4", 3));
  EXPECT_FALSE(def.parse("zarr.json", 3));
  ChunkKeyEncoding v2{ChunkKeyEncoding::Kind::kV2, '.'};
  EXPECT_EQ(v2.key({1, 2}), "1.2");
  EXPECT_EQ(v2.key({}), "0");
  EXPECT_EQ(v2.parse("1.2", 2), (Shape{1, 2}));
  EXPECT_FALSE(v2.parse(".zarray", 2));
}

template <typename T>
T fill_as(const nlohmann::json& v, DataType t, int format = 3) {
  auto r = parse_fill_value(v, t, format);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  T x{};
  if (r.ok()) std::memcpy(&x, r->data(), sizeof(T));
  return x;
}

TEST(FillValue, Forms) {
  const DataType f32{DTypeKind::kFloat, 4}, f64{DTypeKind::kFloat, 8}, f16{DTypeKind::kFloat, 2};
  EXPECT_EQ(fill_as<std::uint32_t>("0x7fc00001", f32), 0x7fc00001u);
  EXPECT_TRUE(std::isinf(fill_as<double>("-Infinity", f64)));
  EXPECT_EQ(fill_as<float>(1.5, f32), 1.5f);
  EXPECT_EQ(fill_as<std::uint16_t>(1.0, f16), 0x3c00);
  EXPECT_EQ(fill_as<std::uint16_t>(1.0, DataType{DTypeKind::kBFloat16, 2}), 0x3f80);
  EXPECT_EQ(fill_as<std::uint16_t>("NaN", DataType{DTypeKind::kBFloat16, 2}), 0x7fc0);
  struct C {
    float re, im;
  };
  auto c = fill_as<C>(nlohmann::json::array({1.0, "NaN"}), DataType{DTypeKind::kComplex, 8});
  EXPECT_EQ(c.re, 1.0f);
  EXPECT_TRUE(std::isnan(c.im));
  EXPECT_EQ(fill_as<std::int8_t>(-128, DataType{DTypeKind::kInt, 1}), -128);
  EXPECT_EQ(fill_as<std::uint64_t>(nlohmann::json(18446744073709551615ull),
                                   DataType{DTypeKind::kUInt, 8}),
            18446744073709551615ull);
  EXPECT_EQ(fill_as<std::uint16_t>(nlohmann::json::array({1, 2}), DataType{DTypeKind::kRaw, 2}),
            0x0201);
  EXPECT_EQ(fill_as<std::uint16_t>("AQI=", DataType{DTypeKind::kRaw, 2}, 2), 0x0201);
  EXPECT_EQ(fill_as<std::int32_t>(nullptr, DataType{DTypeKind::kInt, 4}, 2), 0);
}

TEST(FillValue, Rejects) {
  EXPECT_FALSE(parse_fill_value(300, DataType{DTypeKind::kInt, 1}, 3).ok());
  EXPECT_FALSE(parse_fill_value("0x7fc0", DataType{DTypeKind::kFloat, 4}, 3).ok());
  EXPECT_FALSE(parse_fill_value(nullptr, DataType{DTypeKind::kFloat, 4}, 3).ok());
  EXPECT_FALSE(parse_fill_value("nan", DataType{DTypeKind::kFloat, 4}, 3).ok());
  EXPECT_FALSE(parse_fill_value(1.5, DataType{DTypeKind::kInt, 4}, 3).ok());
  // Integral floats just past the type's range (the casts would overflow; UBSan).
  EXPECT_FALSE(parse_fill_value(9223372036854775808.0, DataType{DTypeKind::kInt, 8}, 2).ok());
  EXPECT_FALSE(parse_fill_value(18446744073709551616.0, DataType{DTypeKind::kUInt, 8}, 2).ok());
  EXPECT_FALSE(parse_fill_value(2147483648.0, DataType{DTypeKind::kInt, 4}, 2).ok());
  EXPECT_FALSE(parse_fill_value(-1.0, DataType{DTypeKind::kUInt, 1}, 2).ok());
  EXPECT_EQ(fill_as<std::int64_t>(-9223372036854775808.0, DataType{DTypeKind::kInt, 8}, 2),
            INT64_MIN);
  EXPECT_EQ(fill_as<std::int32_t>(2147483647.0, DataType{DTypeKind::kInt, 4}, 2), INT32_MAX);
}

TEST(MetadataV2, ParsesAndValidates) {
  auto zarray = nlohmann::json::parse(R"({"zarr_format": 2, "shape": [3, 4], "chunks": [2, 2],
    "dtype": "<f8", "compressor": {"id": "zstd", "level": 1}, "filters": null,
    "fill_value": "NaN", "order": "C"})");
  auto md = parse_array_v2(zarray, nlohmann::json::object());
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->key_encoding.key({1, 0}), "1.0");
  zarray["dtype"] = "|O";
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kUnimplemented);
  zarray["dtype"] = "<f8";
  zarray["chunks"] = {2, 0};
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kInvalidMetadata);
  zarray["chunks"] = {2, 2};
  zarray["order"] = "X";
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kInvalidMetadata);
}

TEST(Json, MalformedNamesThePosition) {
  auto r = parse_json("{\"a\": ");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(r.status().message().find("malformed JSON"), std::string::npos);
}

TEST(Json, NumberOutOfRangeIsAnError) {
  // A number beyond double range is an error, not an exception escaping to std::terminate
  // (found by codec_chain_fuzzer).
  auto r = parse_json(R"({"zarr_format": 21e308})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(r.status().message().find("number overflow"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace zarrflow
