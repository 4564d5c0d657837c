// HttpClient and HttpStore against misbehaving servers: bodies bounded by what was asked (not by
// Content-Length), servers that ignore Range, endless bodies, header floods, and the total
// deadline. A loopback server (loopback_server_test_util.h) writes exactly the bytes each test
// wants; tests against full servers (faults on a schedule, moto S3) are in tests/test_remote.py.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "zarrflow/store/http_client.h"
#include "zarrflow/store/http_store.h"
#include "zarrflow/store/loopback_server_test_util.h"

namespace zarrflow {
namespace {

using http_test::LoopbackServer;
using http_test::send_all;

// Writes `head` and then zero bytes until the client hangs up.
void endless(int fd, const std::string& head, const LoopbackServer& srv) {
  if (!send_all(fd, head)) return;
  const std::string zeros(64 << 10, '\0');
  while (!srv.stopping() && send_all(fd, zeros)) {
  }
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 251) & 0xFF);
  return s;
}

// Answers every request with 200 and the whole of `body`, Range or not (python -m http.server).
LoopbackServer::Respond ignoring_range(std::string body, bool with_length) {
  return [body = std::move(body), with_length](const std::string&, int fd, const LoopbackServer&) {
    std::string head = "HTTP/1.1 200 OK\r\nConnection: close\r\n";
    if (with_length) head += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    if (!send_all(fd, head + "\r\n")) return;
    for (std::size_t at = 0; at < body.size(); at += 1000)  // many small writes
      if (!send_all(fd, std::string_view(body).substr(at, 1000))) return;
  };
}

std::shared_ptr<HttpStore> store_at(const LoopbackServer& srv, std::string extra = "") {
  auto s =
      HttpStore::open_json(R"({"kind": "http", "endpoint": ")" + srv.url() +
                           R"(/data", "max_attempts": 2, "backoff_base": 0.001)" + extra + "}");
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return *s;
}

std::string text(const Buffer& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

void expect_error(const Status& s, ErrorCode code, std::initializer_list<std::string_view> parts) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (std::string_view p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos) << "'" << p << "' not in " << s.message();
}

TEST(HttpClientBounds, AbsurdContentLengthFailsBeforeAnyAllocation) {
  LoopbackServer srv([](const std::string&, int fd, const LoopbackServer&) {
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\nabc");
  });
  auto store = store_at(srv);
  expect_error(store->get("c/0").status(), ErrorCode::kIoError,
               {srv.url() + "/data/c/0", "announces 1000000000000000 bytes", "max_object_bytes"});
  expect_error(store->get_at_most("c/0", 4096).status(), ErrorCode::kIoError,
               {"more than the 4096 bytes this value can have"});
  EXPECT_EQ(srv.requests(), 2);  // a bound violation is not retried
}

TEST(HttpClientBounds, EndlessBodiesStopAtTheirBound) {
  LoopbackServer srv([](const std::string& req, int fd, const LoopbackServer& s) {
    if (req.find("Range: bytes=-") != std::string::npos)
      endless(fd, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 999-1998/1999\r\n\r\n", s);
    else
      endless(fd, "HTTP/1.1 200 OK\r\n\r\n", s);
  });
  auto store = store_at(srv, R"(, "max_object_bytes": 1048576)");
  expect_error(store->get("zarr.json").status(), ErrorCode::kIoError,
               {"/data/zarr.json", "longer than the 1048576 bytes", "max_object_bytes"});
  expect_error(store->get_at_most("c/0", 100000).status(), ErrorCode::kIoError,
               {"/data/c/0", "longer than the 100000 bytes this value can have"});
  expect_error(store->get_tail("c/1", 1000).status(), ErrorCode::kIoError,
               {"/data/c/1 (last 1000 bytes)", "more than the 1000 bytes of the range asked"});
}

TEST(HttpClientBounds, BodiesGrowAsBytesArrive) {
  const std::string body = pattern(3 << 20);
  LoopbackServer srv(ignoring_range(body, /*with_length=*/false));
  auto store = store_at(srv);
  auto got = store->get("c/0");
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(text(**got), body);
}

TEST(HttpClientIgnoredRange, WindowsAreTrimmedFromTheWholeValue) {
  const std::string body = pattern(200000);
  for (bool with_length : {true, false}) {
    LoopbackServer srv(ignoring_range(body, with_length));
    auto store = store_at(srv);
    const std::vector<ByteRange> ranges = {ByteRange::of(5, 10), ByteRange::of(150000, 4000),
                                           ByteRange::last(7)};
    auto got = store->get_ranges("shard", ranges);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ(text((**got)[0]), body.substr(5, 10));
    EXPECT_EQ(text((**got)[1]), body.substr(150000, 4000));
    EXPECT_EQ(text((**got)[2]), body.substr(body.size() - 7));
    std::vector<std::byte> dst(300);
    auto into = store->read_range_into("shard", 1000, dst);
    ASSERT_TRUE(into.ok()) << into.status().to_string();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(dst.data()), dst.size()),
              body.substr(1000, 300));
    // Past the end: the value is shorter than asked, said as such.
    expect_error(store->get_ranges("shard", std::vector{ByteRange::of(199990, 20)}).status(),
                 ErrorCode::kCorruptData, {"reaches past the end"});
  }
}

TEST(HttpClientIgnoredRange, SuffixRangesKeepTheLastBytes) {
  const std::string body = pattern(1 << 20);
  for (bool with_length : {true, false}) {
    LoopbackServer srv(ignoring_range(body, with_length));
    auto store = store_at(srv);
    for (std::uint64_t n : {1u, 16u, 999u, 1000u, 1001u, 65536u}) {
      auto tail = store->get_tail("shard", n);
      ASSERT_TRUE(tail.ok()) << tail.status().to_string();
      ASSERT_TRUE(tail->has_value());
      EXPECT_EQ((*tail)->total_size, body.size());
      EXPECT_EQ(text((*tail)->bytes), body.substr(body.size() - n)) << n;
    }
    expect_error(store->get_tail("shard", (1 << 20) + 1).status(), ErrorCode::kCorruptData,
                 {"fewer than the last 1048577"});
  }
}

TEST(HttpClientIgnoredRange, SuffixRangeOfAValueOverTheBoundIsRefused) {
  const std::string body = pattern(1 << 20);
  for (bool with_length : {true, false}) {
    LoopbackServer srv(ignoring_range(body, with_length));
    auto store = store_at(srv, R"(, "max_object_bytes": 100000)");
    expect_error(store->get_tail("shard", 100).status(), ErrorCode::kIoError,
                 {"/data/shard (last 100 bytes)", "ignored the Range header", "100000 bytes",
                  "max_object_bytes"});
  }
}

TEST(HttpClientMisbehaviour, ShiftedAndOverlongRanges) {
  LoopbackServer srv([](const std::string& req, int fd, const LoopbackServer&) {
    if (req.find("/late") != std::string::npos)  // starts after the asked offset: refused
      send_all(fd,
               "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 11-20/100\r\n"
               "Content-Length: 10\r\n\r\n0123456789");
    else if (req.find("/wide") != std::string::npos)  // a wider range than asked: trimmed
      send_all(fd,
               "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-19/100\r\n"
               "Content-Length: 20\r\n\r\nabcdefghij0123456789");
    else  // the asked range, then more bytes than it has
      send_all(fd,
               "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/100\r\n"
               "\r\n0123456789extra");
  });
  auto store = store_at(srv);
  const std::vector<ByteRange> asked = {ByteRange::of(10, 10)};
  expect_error(
      store->get_ranges("late", asked).status(), ErrorCode::kIoError,
      {"/data/late (bytes [10, 20))", "different range (bytes 11-20/100 for bytes [10, 20))"});
  auto wide = store->get_ranges("wide", asked);
  ASSERT_TRUE(wide.ok()) << wide.status().to_string();
  EXPECT_EQ(text((**wide)[0]), "0123456789");
  expect_error(store->get_ranges("long", asked).status(), ErrorCode::kIoError,
               {"/data/long (bytes [10, 20))", "more than the 10 bytes of the range asked"});
}

TEST(HttpClientMisbehaviour, EndlessErrorBodiesAndHeaders) {
  LoopbackServer srv([](const std::string& req, int fd, const LoopbackServer& s) {
    if (req.find("/headers") != std::string::npos) {
      if (!send_all(fd, "HTTP/1.1 200 OK\r\n")) return;
      while (!s.stopping() && send_all(fd, "X-Filler: " + std::string(1000, 'x') + "\r\n")) {
      }
    } else {
      endless(fd, "HTTP/1.1 503 Service Unavailable\r\n\r\n", s);
    }
  });
  auto store = store_at(srv);
  expect_error(store->get("headers").status(), ErrorCode::kIoError,
               {"/data/headers", "headers exceed"});
  expect_error(store->get("busy").status(), ErrorCode::kIoError,
               {"/data/busy", "HTTP 503", "2 attempts"});
}

// Malformed or contradictory headers: correct data where the body is what was asked, otherwise
// an error naming the URL; never a crash or an allocation from a header.
TEST(HttpClientMisbehaviour, GarbageHeaders) {
  const std::vector<std::string> heads = {
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes banana\r\nContent-Length: 10\r\n",
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/100\r\n"
      "Content-Length: 18446744073709551616\r\n",
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 10-19/100\r\nContent-Length: -1\r\n",
      "HTTP/1.1 206 Partial Content\r\nno colon here\r\nContent-Range: bytes 10-19/100\r\n",
      "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 19-10/100\r\n",
      "HTTP/1.1 999 What\r\nRetry-After: 99999999999999999999999\r\nContent-Length: 0\r\n",
      "HTTP/1.1 abc\r\n",
      "HTTP/1.1 200\r\nContent-Length: 10\r\nContent-Length: 20\r\n",
  };
  for (const std::string& head : heads) {
    LoopbackServer srv([&head](const std::string&, int fd, const LoopbackServer&) {
      send_all(fd, head + "\r\n0123456789");
    });
    auto store = store_at(srv, R"(, "backoff_max": 0.01)");
    auto got = store->get_ranges("k", std::vector{ByteRange::of(10, 10)});
    if (got.ok()) {
      ASSERT_TRUE(got->has_value()) << head;
      EXPECT_EQ(text((**got)[0]), "0123456789") << head;
    } else {
      EXPECT_EQ(got.status().code(), ErrorCode::kIoError) << head << got.status().to_string();
      EXPECT_NE(got.status().message().find(srv.url() + "/data/k"), std::string::npos)
          << got.status().to_string();
    }
  }
}

// The deadline leaves room for the first answer even on a loaded machine (the message must name
// the server's last status, so at least one 503 has to arrive before it).
TEST(HttpClientDeadline, RetriesEndAtTheTotalTimeout) {
  LoopbackServer srv([](const std::string&, int fd, const LoopbackServer&) {
    send_all(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
  });
  auto s = HttpStore::open_json(R"({"kind": "http", "endpoint": ")" + srv.url() +
                                R"(", "max_attempts": 1000000, "backoff_base": 0.02,
                                "backoff_max": 0.05, "total_timeout": 0.8})");
  ASSERT_TRUE(s.ok());
  expect_error((*s)->get("k").status(), ErrorCode::kIoError,
               {"HTTP 503", "total_timeout of 0.8 s reached"});
  EXPECT_LT(srv.requests(), 100);
}

// The attempt the deadline cuts short fails in transport (a timeout); the message still says
// what the server answered before, since that is why the request failed.
TEST(HttpClientDeadline, ATimeoutAtTheDeadlineKeepsTheServersLastAnswer) {
  LoopbackServer srv([](const std::string&, int fd, const LoopbackServer& s) {
    if (s.requests() == 1) {
      send_all(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    while (!s.stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // stalls
  });
  auto s = HttpStore::open_json(R"({"kind": "http", "endpoint": ")" + srv.url() +
                                R"(", "max_attempts": 1000000, "backoff_base": 0.01,
                                "backoff_max": 0.01, "total_timeout": 0.5})");
  ASSERT_TRUE(s.ok());
  expect_error((*s)->get("k").status(), ErrorCode::kIoError,
               {"curl: Timeout", "the server's last answer: HTTP 503", "gave up after 2 attempts"});
}

TEST(HttpStoreListing, RepeatedTokensAndHugePagesEndTheListing) {
  LoopbackServer srv([](const std::string& req, int fd, const LoopbackServer& s) {
    if (req.find("prefix=huge") != std::string::npos) {
      endless(fd, "HTTP/1.1 200 OK\r\n\r\n<ListBucketResult>", s);
      return;
    }
    const std::string body =
        "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>again"
        "</NextContinuationToken><Contents><Key>k</Key><Size>1</Size></Contents>"
        "</ListBucketResult>";
    send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                     body);
  });
  auto s = HttpStore::open_json(R"({"kind": "s3", "endpoint": ")" + srv.url() +
                                R"(", "bucket": "b", "display": "s3://b"})");
  ASSERT_TRUE(s.ok());
  expect_error((*s)->list("loop").status(), ErrorCode::kIoError,
               {"listing s3://b (prefix 'loop/')", "repeats continuation token 'again'"});
  EXPECT_EQ(srv.requests(), 2);
  expect_error((*s)->list("huge").status(), ErrorCode::kIoError,
               {"listing s3://b (prefix 'huge/')", "longer than the 16777216 bytes"});
}

TEST(HttpStoreIoPool, StartsOnFirstUse) {
  auto s = HttpStore::open_json(R"({"kind": "http", "endpoint": "http://127.0.0.1:9",
                                    "max_in_flight": 3})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->io_threads(), 0u);
  ThreadPool* pool = (*s)->io_pool();
  EXPECT_EQ(pool->size(), 3u);
  EXPECT_EQ((*s)->io_pool(), pool);
  EXPECT_EQ((*s)->io_threads(), 3u);
}

TEST(HttpStoreConfig, RejectsBadTransportSettings) {
  for (const char* bad :
       {R"("total_timeout": 0)", R"("stall_timeout": -1)", R"("min_bytes_per_second": -5)",
        R"("max_object_bytes": 0)", R"("max_object_bytes": 1.5)"}) {
    auto s = HttpStore::open_json(std::string(R"({"kind": "http", "endpoint": "http://h", )") +
                                  bad + "}");
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace zarrflow
