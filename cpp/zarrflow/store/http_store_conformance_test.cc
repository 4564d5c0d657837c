// HttpStore against the Store contract (store_conformance_test.h), as an S3 store (path style,
// anonymous, with a key prefix) and as a plain HTTP store, both served from memory by a loopback
// object server that answers what S3 answers: GET with one byte range (206 + Content-Range, 416
// past the end, the whole value for a suffix longer than it), HEAD, 404 NoSuchKey, and
// ListObjectsV2 with prefix, delimiter and continuation tokens (three entries a page, so every
// listing pages).
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include "zarrflow/store/http_store.h"
#include "zarrflow/store/loopback_server_test_util.h"
#include "zarrflow/store/store_conformance_test.h"

namespace zarrflow::conformance {
namespace {

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(s[i + 1]) && std::isxdigit(s[i + 2])) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Reply {
  int status = 200;
  std::string reason = "OK";
  std::vector<std::string> headers;
  std::string body;
  bool head = false;  // HEAD: Content-Length of `body`, no body sent
};

Reply s3_error(int status, std::string reason, std::string code) {
  return {status,
          std::move(reason),
          {"Content-Type: application/xml"},
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code + "</Code></Error>"};
}

// Objects of one bucket, served over loopback HTTP/1.1 (one request per connection).
class ObjectServer {
 public:
  ObjectServer(std::string bucket, std::map<std::string, std::string> objects)
      : bucket_(std::move(bucket)),
        objects_(std::move(objects)),
        server_([this](const std::string& head, int fd, const http_test::LoopbackServer&) {
          http_test::send_all(fd, render(respond(head)));
        }) {}
  ObjectServer(const ObjectServer&) = delete;
  ObjectServer& operator=(const ObjectServer&) = delete;

  [[nodiscard]] std::string endpoint() const { return server_.url(); }

 private:
  static constexpr std::size_t kPageEntries = 3;

  static std::string render(const Reply& r) {
    std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + r.reason +
                      "\r\nConnection: close\r\nContent-Length: " + std::to_string(r.body.size()) +
                      "\r\n";
    for (const std::string& h : r.headers) out += h + "\r\n";
    out += "\r\n";
    if (!r.head) out += r.body;
    return out;
  }

  static std::optional<std::string> header(const std::string& head, std::string_view name) {
    std::size_t at = 0;
    while ((at = head.find("\r\n", at)) != std::string::npos) {
      at += 2;
      const std::size_t colon = head.find(':', at);
      const std::size_t end = head.find("\r\n", at);
      if (colon == std::string::npos || end == std::string::npos || colon > end) continue;
      std::string key = head.substr(at, colon - at);
      for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (key == name) {
        std::string value = head.substr(colon + 1, end - colon - 1);
        value.erase(0, value.find_first_not_of(' '));
        return value;
      }
    }
    return std::nullopt;
  }

  Reply respond(const std::string& head) const {
    const std::size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    if (sp1 == std::string::npos || sp2 == std::string::npos) return {400, "Bad Request"};
    const std::string method = head.substr(0, sp1);
    const std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::size_t q = target.find('?');
    const std::string path = percent_decode(target.substr(0, q));
    std::map<std::string, std::string> query;
    if (q != std::string::npos) {
      std::string_view rest = std::string_view(target).substr(q + 1);
      while (!rest.empty()) {
        const std::string_view item = rest.substr(0, rest.find('&'));
        const std::size_t eq = item.find('=');
        query[percent_decode(item.substr(0, eq))] =
            eq == std::string_view::npos ? "" : percent_decode(item.substr(eq + 1));
        rest.remove_prefix(std::min(rest.size(), item.size() + 1));
      }
    }
    const std::string root = "/" + bucket_;
    if (path == root || path == root + "/") {
      if (query.count("list-type") != 0U) return list(query);
      return s3_error(400, "Bad Request", "InvalidRequest");
    }
    if (!path.starts_with(root + "/")) return s3_error(404, "Not Found", "NoSuchBucket");
    const auto it = objects_.find(path.substr(root.size() + 1));
    if (it == objects_.end()) {
      Reply r = s3_error(404, "Not Found", "NoSuchKey");
      r.head = method == "HEAD";
      return r;
    }
    Reply r = get(it->second, header(head, "range"));
    r.head = method == "HEAD";
    return r;
  }

  static Reply get(const std::string& value, const std::optional<std::string>& range) {
    if (!range) return {200, "OK", {}, value};
    const std::uint64_t size = value.size();
    const std::string spec = range->substr(range->find('=') + 1);
    const std::size_t dash = spec.find('-');
    std::uint64_t first = 0, last = size == 0 ? 0 : size - 1;
    if (dash == 0) {  // the last N bytes: all of a shorter value
      const std::uint64_t n = std::stoull(spec.substr(1));
      if (n == 0 || size == 0) return s3_error(416, "Range Not Satisfiable", "InvalidRange");
      first = n >= size ? 0 : size - n;
    } else {
      first = std::stoull(spec.substr(0, dash));
      if (dash + 1 < spec.size())
        last = std::min<std::uint64_t>(last, std::stoull(spec.substr(dash + 1)));
      if (first >= size) return s3_error(416, "Range Not Satisfiable", "InvalidRange");
    }
    return {206,
            "Partial Content",
            {"Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
             std::to_string(size)},
            value.substr(first, last - first + 1)};
  }

  Reply list(const std::map<std::string, std::string>& query) const {
    const auto param = [&](const std::string& k) {
      const auto it = query.find(k);
      return it == query.end() ? std::string() : it->second;
    };
    const std::string prefix = param("prefix"), delimiter = param("delimiter");
    // Entries in key order: objects, and with a delimiter the common prefixes standing for them.
    std::vector<std::pair<std::string, const std::string*>> entries;
    std::set<std::string> prefixes;
    for (const auto& [key, value] : objects_) {
      if (!key.starts_with(prefix)) continue;
      const std::size_t cut =
          delimiter.empty() ? std::string::npos : key.find(delimiter, prefix.size());
      if (cut == std::string::npos) {
        entries.emplace_back(key, &value);
      } else if (prefixes.insert(key.substr(0, cut + 1)).second) {
        entries.emplace_back(key.substr(0, cut + 1), nullptr);
      }
    }
    const std::string token = param("continuation-token");
    const std::size_t start = token.empty() ? 0 : std::stoul(token.substr(1));
    const std::size_t end = std::min(entries.size(), start + kPageEntries);
    std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult><Name>" +
                      bucket_ + "</Name><Prefix>" + xml_escape(prefix) + "</Prefix><KeyCount>" +
                      std::to_string(end - start) + "</KeyCount>";
    for (std::size_t i = start; i < end; ++i) {
      const auto& [name, value] = entries[i];
      if (value != nullptr)
        xml += "<Contents><Key>" + xml_escape(name) + "</Key><Size>" +
               std::to_string(value->size()) + "</Size></Contents>";
      else
        xml += "<CommonPrefixes><Prefix>" + xml_escape(name) + "</Prefix></CommonPrefixes>";
    }
    const bool truncated = end < entries.size();
    xml += std::string("<IsTruncated>") + (truncated ? "true" : "false") + "</IsTruncated>";
    if (truncated)
      xml += "<NextContinuationToken>t" + std::to_string(end) + "</NextContinuationToken>";
    xml += "</ListBucketResult>";
    return {200, "OK", {"Content-Type: application/xml"}, xml};
  }

  std::string bucket_;
  std::map<std::string, std::string> objects_;
  http_test::LoopbackServer server_;  // last: it stops before the objects go
};

constexpr const char* kBucket = "conformance";
constexpr const char* kPrefix = "stores/one";

// The store's values below kPrefix, and neighbours a listing must not return.
std::map<std::string, std::string> bucket_objects(
    const std::map<std::string, std::string>& values) {
  std::map<std::string, std::string> objects = {{"stores/other/zarr.json", "{}"},
                                                {"stores/one-sibling/zarr.json", "{}"}};
  for (const auto& [key, value] : values) objects[std::string(kPrefix) + "/" + key] = value;
  return objects;
}

std::shared_ptr<Store> open_store(const std::string& json) {
  auto store = HttpStore::open_json(json);
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? *store : nullptr;
}

const std::string kTransport = R"(, "max_attempts": 2, "backoff_base": 0.001, "max_in_flight": 8})";

struct S3Harness {
  static constexpr bool kLists = true;
  std::shared_ptr<Store> make(const std::map<std::string, std::string>& values) {
    server.emplace(kBucket, bucket_objects(values));
    return open_store(R"({"kind": "s3", "endpoint": ")" + server->endpoint() + R"(", "bucket": ")" +
                      kBucket + R"(", "prefix": ")" + kPrefix +
                      R"(", "display": "s3://conformance/stores/one")" + kTransport);
  }
  std::optional<ObjectServer> server;
};

struct PlainHttpHarness {
  static constexpr bool kLists = false;  // a web server has no listing
  std::shared_ptr<Store> make(const std::map<std::string, std::string>& values) {
    server.emplace(kBucket, bucket_objects(values));
    return open_store(R"({"kind": "http", "endpoint": ")" + server->endpoint() + "/" + kBucket +
                      "/" + kPrefix + "\"" + kTransport);
  }
  std::optional<ObjectServer> server;
};

// Google Cloud Storage through its XML API (the same requests as S3, path style) with an OAuth
// bearer token instead of a signature.
struct GcsHarness {
  static constexpr bool kLists = true;
  std::shared_ptr<Store> make(const std::map<std::string, std::string>& values) {
    server.emplace(kBucket, bucket_objects(values));
    return open_store(
        R"({"kind": "gcs", "endpoint": ")" + server->endpoint() + R"(", "bucket": ")" + kBucket +
        R"(", "prefix": ")" + kPrefix +
        R"(", "bearer_token": "ya29.conformance", "display": "gs://conformance/stores/one")" +
        kTransport);
  }
  std::optional<ObjectServer> server;
};

INSTANTIATE_TYPED_TEST_SUITE_P(S3, StoreConformance, S3Harness);
INSTANTIATE_TYPED_TEST_SUITE_P(Gcs, StoreConformance, GcsHarness);
INSTANTIATE_TYPED_TEST_SUITE_P(Http, StoreConformance, PlainHttpHarness);

}  // namespace
}  // namespace zarrflow::conformance
