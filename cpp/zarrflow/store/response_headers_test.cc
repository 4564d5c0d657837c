#include "zarrflow/store/response_headers.h"

#include <gtest/gtest.h>

#include <string_view>

namespace zarrflow {
namespace {

ResponseHeaders parse(std::initializer_list<std::string_view> lines) {
  ResponseHeaders h;
  for (std::string_view line : lines) parse_response_header_line(line, h);
  return h;
}

TEST(ResponseHeaders, RangedAnswer) {
  const auto h = parse({"HTTP/1.1 206 Partial Content\r\n", "Content-Length: 100\r\n",
                        "Content-Range: bytes 200-299/1234\r\n", "\r\n"});
  EXPECT_EQ(h.status, 206);
  EXPECT_EQ(h.content_length, 100u);
  EXPECT_EQ(h.range_start, 200u);
  EXPECT_EQ(h.range_end, 299u);
  EXPECT_EQ(h.total_size, 1234u);
  EXPECT_FALSE(h.retry_after);
}

TEST(ResponseHeaders, NamesAreCaseInsensitive) {
  const auto h = parse({"HTTP/2 503\r\n", "retry-after: 7\r\n", "CONTENT-LENGTH:\t0\r\n"});
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.retry_after, 7.0);
  EXPECT_EQ(h.content_length, 0u);
}

TEST(ResponseHeaders, UnsatisfiableRangeGivesOnlyTheTotal) {
  const auto h =
      parse({"HTTP/1.1 416 Range Not Satisfiable\r\n", "Content-Range: bytes */1234\r\n"});
  EXPECT_EQ(h.total_size, 1234u);
  EXPECT_FALSE(h.range_start);
}

TEST(ResponseHeaders, ANewStatusLineForgetsTheRedirect) {
  const auto h = parse({"HTTP/1.1 301 Moved Permanently\r\n", "Content-Length: 5\r\n",
                        "Retry-After: 1\r\n", "HTTP/1.1 200 OK\r\n"});
  EXPECT_EQ(h.status, 200);
  EXPECT_FALSE(h.content_length);
  EXPECT_FALSE(h.retry_after);
}

TEST(ResponseHeaders, MalformedValuesStayUnset) {
  const auto h = parse({"HTTP/1.1 200 OK", "Content-Length: -5", "Content-Range: bytes x-y/z",
                        "Content-Length: 99999999999999999999999", "Retry-After: soon"});
  EXPECT_EQ(h.status, 200);
  EXPECT_FALSE(h.content_length);  // a value past 2^64 is not truncated into a small one
  EXPECT_FALSE(h.range_start);
  EXPECT_FALSE(h.total_size);
  EXPECT_FALSE(h.retry_after);
}

TEST(ResponseHeaders, ValidatorsOfTheObject) {
  const auto h = parse({"HTTP/1.1 200 OK\r\n", "ETag: W/\"abc-1\"\r\n",
                        "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n"});
  EXPECT_EQ(h.etag, "abc-1");
  EXPECT_EQ(h.last_modified_s, 1445412480);
}

TEST(ResponseHeaders, OpenEndedTotalKeepsTheRange) {
  const auto h = parse({"HTTP/1.1 206\r\n", "Content-Range: bytes 5-9/*\r\n"});
  EXPECT_EQ(h.range_start, 5u);
  EXPECT_EQ(h.range_end, 9u);
  EXPECT_FALSE(h.total_size);
}

TEST(ResponseHeaders, StatusLineWithoutAThreeDigitCode) {
  EXPECT_EQ(parse({"HTTP/1.1"}).status, 0);
  EXPECT_EQ(parse({"HTTP/1.1 abc"}).status, 0);
  EXPECT_EQ(parse({"HTTP/1.1 42 Odd"}).status, 0);
  // Past LONG_MAX: once wrapped into a negative status (found by http_headers_fuzzer).
  EXPECT_EQ(parse({"HTTP/0.1 013393677788713436434vHTT"}).status, 0);
}

}  // namespace
}  // namespace zarrflow
