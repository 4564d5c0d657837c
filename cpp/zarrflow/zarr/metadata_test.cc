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

std::vector<std::byte> fill_bytes(const nlohmann::json& v, DataType t, int format = 3) {
  auto r = parse_fill_value(v, t, format);
  EXPECT_TRUE(r.ok()) << v.dump() << ": " << r.status().to_string();
  return r.ok() ? *r : std::vector<std::byte>{};
}

std::string as_string(const std::vector<std::byte>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

TEST(FillValue, TextBytesAndTimes) {
  const DataType u3{DTypeKind::kString, 12};
  // "é" then padding: UTF-32LE code units; longer text is cut to the element, as NumPy does.
  EXPECT_EQ(as_string(fill_bytes("\u00e9", u3)), std::string("\xe9\0\0\0\0\0\0\0\0\0\0\0", 12));
  EXPECT_EQ(fill_bytes("abcd", u3).size(), 12u);
  EXPECT_EQ(as_string(fill_bytes(nullptr, u3, 2)), std::string(12, '\0'));
  const DataType s3{DTypeKind::kBytes, 3};
  EXPECT_EQ(as_string(fill_bytes("cQBy", s3)), std::string("q\0r", 3));  // base64
  EXPECT_EQ(as_string(fill_bytes("YQ==", s3, 2)), std::string("a\0\0", 3));
  const DataType ns = *time_type(DTypeKind::kDateTime, "ns", 1);
  EXPECT_EQ(fill_as<std::int64_t>("NaT", ns), INT64_MIN);
  EXPECT_EQ(fill_as<std::int64_t>(nlohmann::json(-9223372036854775807LL - 1), ns), INT64_MIN);
  EXPECT_EQ(fill_as<std::int64_t>(946684800, ns, 2), 946684800);
  EXPECT_EQ(fill_as<std::int64_t>(nullptr, ns, 2), INT64_MIN);  // v2 null: NaT, as zarr-python
  const DataType st{DTypeKind::kStructured, 4};
  EXPECT_EQ(as_string(fill_bytes("AQIDBA==", st)), "\x01\x02\x03\x04");
  EXPECT_FALSE(parse_fill_value("AQID", st, 3).ok());  // 3 bytes for a 4-byte element
  const DataType raw{DTypeKind::kRaw, 3};
  EXPECT_EQ(as_string(fill_bytes("AAAA", raw)), std::string(3, '\0'));  // v3 raw_bytes
}

TEST(FillValue, VariableLengthValuesAsZarrPythonReadsThem) {
  const DataType text{DTypeKind::kVlenString, 0}, bytes{DTypeKind::kVlenBytes, 0};
  EXPECT_EQ(as_string(fill_bytes("zz", text)), "zz");
  EXPECT_EQ(as_string(fill_bytes(0, text, 2)), "0");  // str(0)
  EXPECT_EQ(as_string(fill_bytes(true, text, 2)), "True");
  EXPECT_EQ(as_string(fill_bytes(nullptr, text, 2)), "");
  // str(float): repr's shortest digits and notation.
  EXPECT_EQ(as_string(fill_bytes(1.5, text)), "1.5");
  EXPECT_EQ(as_string(fill_bytes(1.0, text)), "1.0");
  EXPECT_EQ(as_string(fill_bytes(-0.0, text)), "-0.0");
  EXPECT_EQ(as_string(fill_bytes(1e16, text)), "1e+16");
  EXPECT_EQ(as_string(fill_bytes(1e15, text)), "1000000000000000.0");
  EXPECT_EQ(as_string(fill_bytes(0.0001, text)), "0.0001");
  EXPECT_EQ(as_string(fill_bytes(0.00001, text)), "1e-05");
  EXPECT_EQ(as_string(fill_bytes(1.2345e-300, text)), "1.2345e-300");
  EXPECT_EQ(as_string(fill_bytes(123.456, text)), "123.456");
  EXPECT_EQ(as_string(fill_bytes("enoA", bytes)), std::string("zz\0", 3));
  EXPECT_FALSE(parse_fill_value(0, bytes, 2).ok());  // zarr-python wants base64 text
  EXPECT_FALSE(parse_fill_value(nlohmann::json::array(), text, 3).ok());
}

TEST(FillValue, RejectsWrongForms) {
  const DataType u3{DTypeKind::kString, 12};
  EXPECT_FALSE(parse_fill_value(5, u3, 2).ok());
  EXPECT_FALSE(parse_fill_value(0, DataType{DTypeKind::kBytes, 3}, 2).ok());
  const DataType ns = *time_type(DTypeKind::kDateTime, "ns", 1);
  EXPECT_FALSE(parse_fill_value("2020-01-01", ns, 2).ok());
  EXPECT_FALSE(parse_fill_value(1.5, ns, 3).ok());
  EXPECT_FALSE(parse_fill_value(nlohmann::json(18446744073709551615ull), ns, 3).ok());
}

nlohmann::json string_v3() {
  return nlohmann::json::parse(R"({"zarr_format": 3, "node_type": "array", "shape": [4],
    "data_type": "string", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": "",
    "codecs": [{"name": "vlen-utf8", "configuration": {}}]})");
}

TEST(MetadataV3, DataTypesZarrPythonWrites) {
  auto md = parse_array_v3(string_v3());
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->dtype.kind, DTypeKind::kVlenString);
  EXPECT_EQ(numpy_dtype_string(*md), "T");
  EXPECT_TRUE(build_codec_chain(*md).ok());

  auto d = string_v3();
  d["data_type"] = {{"name", "numpy.datetime64"},
                    {"configuration", {{"unit", "ns"}, {"scale_factor", 1}}}};
  d["fill_value"] = "NaT";
  d["codecs"] =
      nlohmann::json::parse(R"([{"name": "bytes", "configuration": {"endian": "little"}}])");
  md = parse_array_v3(d);
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(numpy_dtype_string(*md), "<M8[ns]");

  d["data_type"] = nlohmann::json::parse(R"({"name": "structured", "configuration": {"fields":
    [["a", "int32"], ["b", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 2}}]]}})");
  d["fill_value"] = "AAAAAAAA";
  d["codecs"] = nlohmann::json::parse(R"([{"name": "bytes"}])");
  md = parse_array_v3(d);
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->dtype.size, 6u);
  EXPECT_EQ(numpy_dtype_string(*md), R"([["a","<i4"],["b","|S2"]])");
}

TEST(MetadataV3, VariableLengthTypesNeedTheirCodec) {
  auto d = string_v3();
  d["codecs"] = nlohmann::json::parse(R"([{"name": "bytes"}])");
  auto md = parse_array_v3(d);
  ASSERT_TRUE(md.ok());
  auto chain = build_codec_chain(*md);
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("vlen-utf8"), std::string::npos);
}

TEST(MetadataV3, BadTimeConfigurationsAreMetadataErrors) {
  auto d = string_v3();
  d["fill_value"] = 0;
  for (
      const char* dt :
      {R"({"name": "numpy.datetime64", "configuration": {"unit": "fortnight", "scale_factor": 1}})",
       R"({"name": "numpy.datetime64", "configuration": {"unit": "ns"}})",
       R"({"name": "numpy.timedelta64", "configuration": {"unit": 5, "scale_factor": 1}})",
       R"({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 0}})",
       R"({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": "1"}})",
       R"({"name": "numpy.datetime64", "configuration": 3})"}) {
    d["data_type"] = nlohmann::json::parse(dt);
    auto r = parse_array_v3(d);
    ASSERT_FALSE(r.ok()) << dt;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata) << r.status().to_string();
    EXPECT_NE(r.status().message().find("data_type"), std::string::npos) << r.status().to_string();
  }
}

TEST(MetadataV2, ObjectArraysTakeTheirTypeFromTheObjectCodec) {
  auto zarray = nlohmann::json::parse(R"({"zarr_format": 2, "shape": [3], "chunks": [2],
    "dtype": "|O", "compressor": {"id": "zstd", "level": 1}, "filters": [{"id": "vlen-bytes"}],
    "fill_value": null, "order": "C"})");
  auto md = parse_array_v2(zarray, {});
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->dtype.kind, DTypeKind::kVlenBytes);
  auto chain = build_codec_chain(*md);
  ASSERT_TRUE(chain.ok()) << chain.status().to_string();
  EXPECT_EQ(chain->describe(), "vlen-bytes | zstd(level=1)");
  zarray["filters"] = {{{"id", "pickle"}}};
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kUnimplemented);
  zarray["dtype"] = "<f4";
  zarray["filters"] = {{{"id", "vlen-utf8"}}};
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kInvalidMetadata);
}

TEST(MetadataV2, StructuredTypes) {
  auto zarray = nlohmann::json::parse(R"({"zarr_format": 2, "shape": [3], "chunks": [2],
    "dtype": [["a", ">i4"], ["b", "|S2", [2]], ["c", [["x", "<f8"]]]], "compressor": null,
    "filters": null, "fill_value": null, "order": "C"})");
  auto md = parse_array_v2(zarray, {});
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->dtype.kind, DTypeKind::kStructured);
  EXPECT_EQ(md->dtype.size, 4u + 4u + 8u);
  EXPECT_EQ(numpy_dtype_string(*md), R"([["a",">i4"],["b","|S2",[2]],["c",[["x","<f8"]]]])");
  EXPECT_EQ(md->fill_value.size(), 16u);
  for (const char* bad : {R"([["a", "<i4"], ["a", "<i4"]])", R"([["a"]])", R"([[1, "<i4"]])",
                          R"([])", R"([["a", "<i4", [-1]]])", R"([["a", 5]])"}) {
    zarray["dtype"] = nlohmann::json::parse(bad);
    auto r = parse_array_v2(zarray, {});
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata)
        << bad << " " << r.status().to_string();
  }
  zarray["dtype"] = nlohmann::json::parse(R"([["a", "<U2000000000"]])");
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kUnimplemented);
  zarray["dtype"] = nlohmann::json::parse(R"([["a", "|S1000", [1000000, 1000000]]])");
  EXPECT_EQ(parse_array_v2(zarray, {}).status().code(), ErrorCode::kUnimplemented);
}

// Fields of the wrong JSON type are MetadataErrors naming the field, never JSON exceptions.
TEST(MetadataV2, WrongJsonTypesNameTheField) {
  const auto base = nlohmann::json::parse(R"({"zarr_format": 2, "shape": [3], "chunks": [2],
    "dtype": "<f4", "compressor": null, "filters": null, "fill_value": 0, "order": "C"})");
  struct Case {
    const char* field;
    nlohmann::json value;
  };
  for (const Case& c : {Case{"order", 5}, Case{"dtype", 5}, Case{"dimension_separator", 1},
                        Case{"fill_value", nlohmann::json::array()}, Case{"filters", "x"},
                        Case{"compressor", 3}, Case{"shape", "3"}, Case{"chunks", {true}}}) {
    auto d = base;
    d[c.field] = c.value;
    Result<ArrayMetadata> r = internal_error("unset");
    EXPECT_NO_THROW(r = parse_array_v2(d, {}));
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata) << r.status().to_string();
    EXPECT_EQ(r.status().message().find("json.exception"), std::string::npos)
        << r.status().to_string();
  }
}

TEST(MetadataV3, WrongJsonTypesNameTheField) {
  auto d = base_v3();
  d["chunk_key_encoding"] = {{"name", "default"}, {"configuration", {{"separator", 5}}}};
  Result<ArrayMetadata> r = internal_error("unset");
  EXPECT_NO_THROW(r = parse_array_v3(d));
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata);
  auto g = nlohmann::json::parse(R"({"zarr_format": 3, "node_type": "group",
    "consolidated_metadata": {"kind": 5, "metadata": {}}})");
  Result<GroupMetadata> gr = internal_error("unset");
  EXPECT_NO_THROW(gr = parse_group_v3(g));
  EXPECT_EQ(gr.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(gr.status().message().find("consolidated_metadata"), std::string::npos);
  d = base_v3();
  d["data_type"] = {{"name", "fixed_length_utf32"}, {"configuration", {{"length_bytes", "8"}}}};
  EXPECT_NO_THROW(r = parse_array_v3(d));
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(r.status().message().find("length_bytes"), std::string::npos);
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
