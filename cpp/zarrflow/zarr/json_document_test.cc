#include "zarrflow/zarr/json_document.h"

#include <gtest/gtest.h>

#include <string>

namespace zarrflow {
namespace {

TEST(JsonDocument, NestingDepthIgnoresBracketsInStrings) {
  std::size_t at = 0;
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": "[[[{"}], "c\"[": 2})", 100, &at), 3u);
  EXPECT_EQ(at, 10u);
  EXPECT_EQ(json_nesting_depth("3", 100, &at), 0u);
  EXPECT_EQ(json_nesting_depth(R"(["\\", [[]]])", 100, &at), 3u);  // an escaped backslash ends
  // Stops counting past the limit: a 10^6-level document costs one pass up to the limit.
  const std::string deep(1000000, '[');
  EXPECT_EQ(json_nesting_depth(deep, 256, &at), 257u);
  EXPECT_EQ(at, 256u);
}

TEST(JsonDocument, LimitsAreCheckedBeforeParsing) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(parse_json_document(R"({"a": [[1]]})", limits).ok());
  auto deep = parse_json_document(R"({"a": [[[1]]]})", limits);
  EXPECT_EQ(deep.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_EQ(deep.status().message(),
            "JSON nests deeper than 3 levels (at byte 8; max_metadata_depth)");
  limits.max_bytes = 5;
  auto big = parse_json_document("[1, 2]", limits);
  EXPECT_EQ(big.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(big.status().message().find("6 bytes is larger than the limit of 5"),
            std::string::npos);
  auto bad = parse_json_document("{\"a\": ", JsonLimits{});
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidMetadata);
  EXPECT_NE(bad.status().message().find("malformed JSON"), std::string::npos);
  // 100,000 levels (a 200 KB document) is an error, not a stack overflow.
  const std::string hostile = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(parse_json_document(hostile, JsonLimits{}).status().code(),
            ErrorCode::kInvalidMetadata);
}

}  // namespace
}  // namespace zarrflow
