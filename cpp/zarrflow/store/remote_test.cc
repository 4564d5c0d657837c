// Pure pieces of the remote stores: SigV4 against AWS's published examples, range coalescing,
// retry delays, S3 XML, and configuration errors. The stores against live servers are tested
// from Python (tests/test_remote.py), which starts the servers on loopback.
#include <gtest/gtest.h>

#include "zarrflow/store/aws_sigv4.h"
#include "zarrflow/store/http_store.h"
#include "zarrflow/store/range_coalescer.h"
#include "zarrflow/store/retry_policy.h"
#include "zarrflow/store/s3_xml.h"

namespace zarrflow {
namespace {

const AwsCredentials kExampleKeys{"AKIAIOSFODNN7EXAMPLE",
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
constexpr std::time_t k20130524 = 1369353600;  // 2013-05-24T00:00:00Z

std::string header(const std::vector<std::string>& hs, std::string_view name) {
  for (const auto& h : hs)
    if (h.starts_with(name)) return h.substr(name.size() + 2);
  return {};
}

// "Example: GET Object" of the S3 SigV4 documentation (header-based authentication).
TEST(SigV4, AwsGetObjectExample) {
  SigV4Request r;
  r.host = "examplebucket.s3.amazonaws.com";
  r.canonical_uri = "/test.txt";
  r.range = "bytes=0-9";
  r.region = "us-east-1";
  r.when = k20130524;
  const auto hs = sigv4_headers(r, kExampleKeys);
  EXPECT_EQ(header(hs, "x-amz-date"), "20130524T000000Z");
  EXPECT_EQ(header(hs, "x-amz-content-sha256"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(header(hs, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// "Example: GET Bucket (List Objects)" of the same documentation.
TEST(SigV4, AwsListObjectsExample) {
  SigV4Request r;
  r.host = "examplebucket.s3.amazonaws.com";
  r.canonical_uri = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};
  r.region = "us-east-1";
  r.when = k20130524;
  const auto hs = sigv4_headers(r, kExampleKeys);
  EXPECT_NE(header(hs, "Authorization")
                .find("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
            std::string::npos)
      << header(hs, "Authorization");
}

TEST(SigV4, SessionTokenIsSignedAndSent) {
  SigV4Request r;
  r.host = "h";
  r.canonical_uri = "/k";
  r.region = "eu-west-1";
  r.when = k20130524;
  AwsCredentials c = kExampleKeys;
  c.session_token = "TOKEN";
  const auto hs = sigv4_headers(r, c);
  EXPECT_EQ(header(hs, "x-amz-security-token"), "TOKEN");
  EXPECT_NE(header(hs, "Authorization").find("x-amz-date;x-amz-security-token"), std::string::npos);
  EXPECT_NE(header(hs, "Authorization").find("/eu-west-1/s3/"), std::string::npos);
}

TEST(SigV4, UriEncoding) {
  EXPECT_EQ(uri_encode("a b/c~d.e-f_g", false), "a%20b/c~d.e-f_g");
  EXPECT_EQ(uri_encode("a/b", true), "a%2Fb");
  EXPECT_EQ(uri_encode("\xc3\xa9+=", false), "%C3%A9%2B%3D");
  EXPECT_EQ(canonical_query({{"prefix", "a/b c"}, {"list-type", "2"}, {"delimiter", "/"}}),
            "delimiter=%2F&list-type=2&prefix=a%2Fb%20c");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RangeCoalescer, MergesWithinGapAndLimit) {
  const std::vector<ByteRange> r = {ByteRange::of(1000, 100), ByteRange::of(0, 100),
                                    ByteRange::of(150, 50), ByteRange::of(5000, 10)};
  auto m = coalesce_ranges(r, {/*max_gap_bytes=*/100, /*max_merged_bytes=*/1 << 20});
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].offset, 0u);
  EXPECT_EQ(m[0].length, 200u);
  EXPECT_EQ(m[0].parts, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(m[1].offset, 1000u);
  EXPECT_EQ(m[2].parts, (std::vector<std::size_t>{3}));
  // A merged size limit splits runs; a range larger than the limit still goes whole.
  m = coalesce_ranges(r, {/*max_gap_bytes=*/10000, /*max_merged_bytes=*/1100});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].length, 1100u);
  EXPECT_EQ(m[1].offset, 5000u);
  const std::vector<ByteRange> big = {ByteRange::of(0, 5000)};
  EXPECT_EQ(coalesce_ranges(big, {0, 10}).at(0).length, 5000u);
}

TEST(RangeCoalescer, OverlappingAndEmptyRanges) {
  const std::vector<ByteRange> r = {ByteRange::of(0, 100), ByteRange::of(50, 10),
                                    ByteRange::of(60, 0)};
  auto m = coalesce_ranges(r, {0, 1 << 20});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].length, 100u);
  EXPECT_EQ(m[0].parts.size(), 3u);
}

TEST(RetryPolicy, ExponentialCappedWithJitter) {
  RetryPolicy p;
  p.base_delay_s = 0.1;
  p.max_delay_s = 1.0;
  EXPECT_DOUBLE_EQ(p.cap(2), 0.1);
  EXPECT_DOUBLE_EQ(p.cap(3), 0.2);
  EXPECT_DOUBLE_EQ(p.cap(30), 1.0);
  for (int i = 0; i < 100; ++i) {
    const double d = p.delay(3);
    EXPECT_GE(d, 0.1);
    EXPECT_LE(d, 0.2);
  }
  EXPECT_DOUBLE_EQ(p.delay(2, 0.9), 0.9);   // Retry-After longer than the backoff wins
  EXPECT_DOUBLE_EQ(p.delay(2, 60.0), 1.0);  // ... within max_delay
  EXPECT_TRUE(retryable_http_status(503));
  EXPECT_TRUE(retryable_http_status(429));
  EXPECT_TRUE(retryable_http_status(500));
  EXPECT_FALSE(retryable_http_status(501));
  EXPECT_FALSE(retryable_http_status(403));
  EXPECT_FALSE(retryable_http_status(404));
}

TEST(S3Xml, ListPageAndEntities) {
  const char* xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
<Prefix>p/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>
<NextContinuationToken>tok&amp;1</NextContinuationToken>
<Contents><Key>p/a&amp;b/zarr.json</Key><Size>123</Size></Contents>
<Contents><Key>p/c/0&#x2F;1</Key><Size>0</Size></Contents>
<CommonPrefixes><Prefix>p/sub/</Prefix></CommonPrefixes></ListBucketResult>)";
  auto page = parse_s3_list(xml);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].first, "p/a&b/zarr.json");
  EXPECT_EQ(page->objects[0].second, 123u);
  EXPECT_EQ(page->objects[1].first, "p/c/0/1");
  EXPECT_EQ(page->common_prefixes, std::vector<std::string>{"p/sub/"});
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->continuation_token, "tok&1");
  EXPECT_FALSE(parse_s3_list("<html>proxy error</html>").ok());
  EXPECT_FALSE(parse_s3_list("<ListBucketResult><Contents><Key>k</Key><Size>x</Size></Contents>"
                             "</ListBucketResult>")
                   .ok());
  EXPECT_EQ(s3_error_summary("<Error><Code>AccessDenied</Code><Message>no &lt;3</Message></Error>"),
            "AccessDenied: no <3");
  EXPECT_EQ(s3_error_summary("plain text"), "");
  EXPECT_EQ(xml_unescape("&#233;&bogus;&"), "\xc3\xa9&bogus;&");
}

// Linear scans, no recursion: each of these costs its size (a few MB) and ends in a page or a
// clear error.
TEST(S3Xml, HostileBodiesStayBounded) {
  const std::string head = "<ListBucketResult>";
  const std::string tail = "</ListBucketResult>";
  std::string nested = head;
  for (int i = 0; i < 200000; ++i) nested += "<Contents>";
  nested += "<Key>k</Key><Size>1</Size>";
  for (int i = 0; i < 200000; ++i) nested += "</Contents>";
  auto page = parse_s3_list(nested + tail);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].first, "k");

  std::string unclosed = head;
  for (int i = 0; i < 400000; ++i) unclosed += "<Contents><Key>";
  page = parse_s3_list(unclosed + tail);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_TRUE(page->objects.empty());

  std::string many = head;
  for (int i = 0; i < 100000; ++i)
    many += "<Contents><Key>k" + std::to_string(i) + "</Key><Size>7</Size></Contents>";
  page = parse_s3_list(many + tail);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(page->objects.size(), 100000u);

  // Cut short: the keys after the cut would be missing without a word.
  auto cut = parse_s3_list(many.substr(0, many.size() / 2));
  EXPECT_EQ(cut.status().code(), ErrorCode::kCorruptData);
  EXPECT_NE(cut.status().message().find("cut short"), std::string::npos);
  // Binary garbage: the message shows it printable.
  auto garbage = parse_s3_list(std::string("\x00\xff\x1b[2J<html>", 12));
  EXPECT_EQ(garbage.status().code(), ErrorCode::kCorruptData);
  EXPECT_EQ(garbage.status().message().find('\x1b'), std::string::npos);
  // Character references to NUL or surrogates stay as written.
  EXPECT_EQ(xml_unescape("a&#0;b&#xD800;c"), "a&#0;b&#xD800;c");
}

TEST(HttpStoreConfig, RejectsBadConfigurations) {
  EXPECT_EQ(HttpStore::open_json("[]").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(HttpStore::open_json(R"({"kind": "ftp"})").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(HttpStore::open_json(R"({"kind": "http", "endpoint": "ftp://x/y"})").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(HttpStore::open_json(R"({"kind": "s3", "endpoint": "http://h"})").status().code(),
            ErrorCode::kInvalidArgument);  // no bucket
  EXPECT_EQ(HttpStore::open_json(R"({"kind": "s3", "endpoint": "http://h", "bucket": "b",
                                     "prefix": "a/../../x"})")
                .status()
                .code(),
            ErrorCode::kPathEscape);
  EXPECT_EQ(HttpStore::open_json(R"({"kind": "http", "endpoint": "http://h", "max_in_flight": 0})")
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(HttpStore::open_json(R"({"kind": "http", "endpoint": "http://h", "max_attempts": "x"})")
                .status()
                .code(),
            ErrorCode::kInvalidArgument);
  auto ok = HttpStore::open_json(
      R"({"kind": "s3", "endpoint": "http://127.0.0.1:1", "bucket": "b", "prefix": "/d/e.zarr/",
          "display": "s3://b/d/e.zarr", "max_in_flight": 4})");
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)->describe_key("t2m/c/0"), "s3://b/d/e.zarr/t2m/c/0");
  EXPECT_EQ((*ok)->io_pool()->size(), 4u);
  EXPECT_EQ((*ok)->set("k", {}).code(), ErrorCode::kUnimplemented);
  EXPECT_EQ((*ok)->get("../x").status().code(), ErrorCode::kPathEscape);
}

TEST(HttpStore, UnreachableServerIsAnIoErrorAfterRetries) {
  auto s = HttpStore::open_json(R"({"kind": "http", "endpoint": "http://127.0.0.1:9/store",
                                    "max_attempts": 2, "backoff_base": 0.001,
                                    "connect_timeout": 1})");
  ASSERT_TRUE(s.ok());
  auto r = (*s)->get("zarr.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kIoError);
  EXPECT_NE(r.status().message().find("http://127.0.0.1:9/store/zarr.json"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("2 attempts"), std::string::npos) << r.status().message();
  EXPECT_EQ((*s)->list("").status().code(), ErrorCode::kUnimplemented);
}

}  // namespace
}  // namespace zarrflow
