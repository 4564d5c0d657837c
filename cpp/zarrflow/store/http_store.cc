#include "zarrflow/store/http_store.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace zarrflow {
namespace {

// A ListObjectsV2 page holds at most 1000 keys of at most 1024 bytes: 16 MiB is far above any
// real page, and bounds what a hostile one costs.
constexpr std::uint64_t kMaxListPageBytes = 16 << 20;

struct ParsedUrl {
  std::string scheme, host, path;  // host includes ":port" when given
};

Result<ParsedUrl> parse_url(std::string_view url) {
  const std::size_t colon = url.find("://");
  if (colon == std::string_view::npos)
    return invalid_argument("not a URL: '" + std::string(url) + "'");
  ParsedUrl u;
  u.scheme = std::string(url.substr(0, colon));
  if (u.scheme != "http" && u.scheme != "https")
    return invalid_argument("unsupported URL scheme '" + u.scheme + "' in '" + std::string(url) +
                            "'");
  std::string_view rest = url.substr(colon + 3);
  const std::size_t slash = rest.find('/');
  u.host = std::string(rest.substr(0, slash));
  if (u.host.empty()) return invalid_argument("URL has no host: '" + std::string(url) + "'");
  if (slash != std::string_view::npos) u.path = std::string(rest.substr(slash));
  while (!u.path.empty() && u.path.back() == '/') u.path.pop_back();
  return u;
}

std::string http_reason(long status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 405:
      return "Method Not Allowed";
    case 416:
      return "Range Not Satisfiable";
    default:
      return "";
  }
}

// `unsigned_object_store`: an S3/GCS request sent without credentials (a 403 then says so).
Status status_error(const std::string& what, const HttpResponse& r, bool unsigned_object_store) {
  std::string msg = what + ": HTTP " + std::to_string(r.status);
  if (auto reason = http_reason(r.status); !reason.empty()) msg += " " + reason;
  if (auto s3 = s3_error_summary(r.error_body); !s3.empty()) msg += " (" + s3 + ")";
  if ((r.status == 403 || r.status == 401) && unsigned_object_store)
    msg +=
        "; the request was unsigned (no credentials found: pass key/secret, set "
        "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE)";
  else if (r.status == 403 || r.status == 401)
    msg += "; check the credentials and their permissions";
  if (r.status == 416) return corrupt_data(msg + ": the value is shorter than its index says");
  return io_error(msg);
}

// A non-negative integer setting of the configuration JSON (a negative one would wrap around).
Result<std::uint64_t> byte_count(const nlohmann::json& j, const char* name,
                                 std::uint64_t fallback) {
  const auto it = j.find(name);
  if (it == j.end()) return fallback;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  return invalid_argument(std::string(name) + " must be a non-negative integer, not " + it->dump());
}

}  // namespace

Result<std::shared_ptr<HttpStore>> HttpStore::open(RemoteConfig config) {
  ZF_ASSIGN_OR_RETURN(ParsedUrl u, parse_url(config.endpoint));
  if (config.kind != RemoteConfig::Kind::kHttp && config.bucket.empty())
    return invalid_argument("an object store URL needs a bucket: '" + config.display + "'");
  if (config.bucket.find('/') != std::string::npos)
    return invalid_argument("bucket name contains '/': '" + config.bucket + "'");
  while (!config.prefix.empty() && config.prefix.back() == '/') config.prefix.pop_back();
  while (!config.prefix.empty() && config.prefix.front() == '/') config.prefix.erase(0, 1);
  if (!config.prefix.empty()) ZF_RETURN_IF_ERROR(validate_key(config.prefix));
  if (config.http.max_in_flight == 0) return invalid_argument("max_in_flight must be at least 1");
  if (config.display.empty()) config.display = config.endpoint;
  auto store = std::shared_ptr<HttpStore>(new HttpStore(std::move(config)));
  store->scheme_host_ = u.scheme + "://" + u.host;
  store->host_header_ = u.host;
  const RemoteConfig& c = store->config_;
  if (c.kind == RemoteConfig::Kind::kHttp) {
    store->base_path_ = u.path;
  } else if (c.virtual_host) {
    store->host_header_ = c.bucket + "." + u.host;
    store->scheme_host_ = u.scheme + "://" + store->host_header_;
    store->base_path_ = u.path;
  } else {
    store->base_path_ = u.path + "/" + uri_encode(c.bucket, true);
  }
  return store;
}

Result<std::shared_ptr<HttpStore>> HttpStore::open_json(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return invalid_argument("remote store configuration is not a JSON object");
  RemoteConfig c;
  try {
    const std::string kind = j.value("kind", "http");
    if (kind == "http")
      c.kind = RemoteConfig::Kind::kHttp;
    else if (kind == "s3")
      c.kind = RemoteConfig::Kind::kS3;
    else if (kind == "gcs")
      c.kind = RemoteConfig::Kind::kGcs;
    else
      return invalid_argument("unknown remote store kind '" + kind + "'");
    c.endpoint = j.value("endpoint", "");
    c.bucket = j.value("bucket", "");
    c.prefix = j.value("prefix", "");
    c.virtual_host = j.value("virtual_host", false);
    c.region = j.value("region", "us-east-1");
    c.credentials.access_key = j.value("access_key", "");
    c.credentials.secret_key = j.value("secret_key", "");
    c.credentials.session_token = j.value("session_token", "");
    c.bearer_token = j.value("bearer_token", "");
    c.display = j.value("display", "");
    HttpOptions& h = c.http;
    h.max_in_flight = j.value("max_in_flight", h.max_in_flight);
    h.connect_timeout_s = j.value("connect_timeout", h.connect_timeout_s);
    h.request_timeout_s = j.value("request_timeout", h.request_timeout_s);
    h.stall_timeout_s = j.value("stall_timeout", h.stall_timeout_s);
    ZF_ASSIGN_OR_RETURN(h.min_bytes_per_second,
                        byte_count(j, "min_bytes_per_second", h.min_bytes_per_second));
    h.total_timeout_s = j.value("total_timeout", h.total_timeout_s);
    ZF_ASSIGN_OR_RETURN(h.max_object_bytes, byte_count(j, "max_object_bytes", h.max_object_bytes));
    h.retry.max_attempts = j.value("max_attempts", h.retry.max_attempts);
    h.retry.base_delay_s = j.value("backoff_base", h.retry.base_delay_s);
    h.retry.max_delay_s = j.value("backoff_max", h.retry.max_delay_s);
    h.verify_tls = j.value("verify_tls", h.verify_tls);
    h.ca_bundle = j.value("ca_bundle", "");
    c.coalesce.max_gap_bytes = j.value("coalesce_gap", c.coalesce.max_gap_bytes);
    c.coalesce.max_merged_bytes = j.value("coalesce_max", c.coalesce.max_merged_bytes);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(std::string("remote store configuration: ") + e.what());
  }
  if (c.http.retry.max_attempts < 1) return invalid_argument("max_attempts must be at least 1");
  for (const auto& [name, seconds] : {std::pair{"connect_timeout", c.http.connect_timeout_s},
                                      {"request_timeout", c.http.request_timeout_s},
                                      {"stall_timeout", c.http.stall_timeout_s},
                                      {"total_timeout", c.http.total_timeout_s}})
    if (!(seconds > 0)) return invalid_argument(std::string(name) + " must be positive seconds");
  if (c.http.max_object_bytes == 0) return invalid_argument("max_object_bytes must be positive");
  if (c.http.max_in_flight > 4096) return invalid_argument("max_in_flight is limited to 4096");
  return open(std::move(c));
}

HttpStore::HttpStore(RemoteConfig config) : config_(std::move(config)), client_(config_.http) {}

ThreadPool* HttpStore::io_pool() const {
  std::call_once(io_pool_once_, [this] {
    io_pool_ = std::make_unique<ThreadPool>(config_.http.max_in_flight);
    io_pool_started_ = io_pool_.get();
  });
  return io_pool_.get();
}

std::size_t HttpStore::io_threads() const {
  const ThreadPool* pool = io_pool_started_.load();
  return pool == nullptr ? 0 : pool->size();
}

std::string HttpStore::object_key(std::string_view key) const {
  return join_key(config_.prefix, key);
}

HttpStore::Target HttpStore::target(std::string_view object_key,
                                    std::vector<std::pair<std::string, std::string>> query) const {
  Target t;
  t.host = host_header_;
  t.path = base_path_ + "/" + uri_encode(object_key, false);
  if (config_.kind != RemoteConfig::Kind::kHttp && object_key.empty())  // the bucket (listing)
    t.path = base_path_.empty() ? "/" : base_path_;
  t.url = scheme_host_ + t.path;
  if (!query.empty()) t.url += "?" + canonical_query(query);
  t.query = std::move(query);
  return t;
}

HttpRequest HttpStore::request(const Target& t, std::string method,
                               std::optional<ByteRange> range) const {
  HttpRequest req;
  req.method = std::move(method);
  req.url = t.url;
  req.range = range;
  if (config_.kind == RemoteConfig::Kind::kHttp) return req;
  if (!config_.bearer_token.empty()) {
    req.headers = [token = config_.bearer_token] {
      return std::vector<std::string>{"Authorization: Bearer " + token};
    };
  } else if (!config_.credentials.anonymous()) {
    req.headers = [this, t, m = req.method, range] {
      SigV4Request s;
      s.method = m;
      s.host = t.host;
      s.canonical_uri = t.path;
      s.query = t.query;
      s.region = config_.kind == RemoteConfig::Kind::kGcs && config_.region.empty()
                     ? "auto"
                     : config_.region;
      if (range) s.range = range_header_value(*range);
      s.when = std::time(nullptr);
      return sigv4_headers(s, config_.credentials);
    };
  }
  return req;
}

Result<std::optional<HttpResponse>> HttpStore::fetch(std::string_view key, std::string method,
                                                     std::optional<ByteRange> range, BodySink& sink,
                                                     std::optional<std::uint64_t> max_bytes) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  const std::string what =
      describe_key(key) + (range ? " (" + range->to_string() + ")" : std::string());
  HttpRequest req = request(target(object_key(key)), std::move(method), range);
  req.max_body_bytes = max_bytes;
  ZF_ASSIGN_OR_RETURN(HttpResponse r, client_.perform(req, sink, what));
  // A missing key is an answer; a missing bucket is a configuration error, not a fill value.
  if (r.status == 404) {
    const std::string s3 = s3_error_summary(r.error_body);
    if (s3.starts_with("NoSuchBucket")) return io_error(what + ": HTTP 404 (" + s3 + ")");
    return std::optional<HttpResponse>();
  }
  if (r.status < 200 || r.status >= 300) return status_error(what, r, unsigned_object_store());
  return std::optional(std::move(r));
}

Result<std::optional<Buffer>> HttpStore::get(std::string_view key, std::uint64_t max_size) const {
  // The bound goes to the transfer itself: a body past it ends the request (never buffered).
  return get_at_most(key, max_size == kNoLimit ? std::nullopt : std::optional(max_size));
}

Result<std::optional<Buffer>> HttpStore::get_at_most(std::string_view key,
                                                     std::optional<std::uint64_t> max_bytes) const {
  BodySink sink;
  ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "GET", std::nullopt, sink, max_bytes));
  if (!r) return std::optional<Buffer>();
  return std::optional(std::move(sink.grow));
}

Result<bool> HttpStore::read_exact(std::string_view key, ByteSpan dst) const {
  BodySink sink;
  sink.use_fixed = true;
  sink.fixed = dst;
  ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "GET", std::nullopt, sink));
  if (!r) return false;
  if (r->body_bytes != dst.size())
    return corrupt_data(describe_key(key) + " has " + std::to_string(r->body_bytes) +
                        " bytes, expected " + std::to_string(dst.size()));
  return true;
}

Result<bool> HttpStore::read_range_into(std::string_view key, std::uint64_t offset,
                                        ByteSpan dst) const {
  if (dst.empty()) {
    ZF_ASSIGN_OR_RETURN(auto s, size(key));
    if (!s) return false;
    if (offset > *s)
      return corrupt_data(describe_key(key) + " is shorter than offset " + std::to_string(offset));
    return true;
  }
  BodySink sink;
  sink.use_fixed = true;
  sink.fixed = dst;
  const ByteRange range = ByteRange::of(offset, dst.size());
  ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "GET", range, sink));
  if (!r) return false;
  if (r->body_bytes != dst.size())
    return corrupt_data(describe_key(key) + ": " + range.to_string() + " reaches past the end (" +
                        std::to_string(r->body_bytes) + " bytes returned)");
  return true;
}

Result<std::optional<std::vector<Buffer>>> HttpStore::get_ranges(
    std::string_view key, std::span<const ByteRange> ranges) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  std::vector<Buffer> out(ranges.size());
  std::vector<ByteRange> absolute;
  std::vector<std::size_t> absolute_index, suffix_index;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].suffix) {
      suffix_index.push_back(i);
    } else {
      absolute.push_back(ranges[i]);
      absolute_index.push_back(i);
    }
  }
  const std::vector<MergedRange> merged = coalesce_ranges(absolute, config_.coalesce);
  // One job per merged request and per suffix range, all in flight together.
  const std::size_t jobs = merged.size() + suffix_index.size();
  std::atomic<bool> missing{false};
  Status s = parallel_for(jobs > 1 ? io_pool() : nullptr, jobs, [&](std::size_t j) -> Status {
    BodySink sink;
    if (j >= merged.size()) {
      const std::size_t i = suffix_index[j - merged.size()];
      if (ranges[i].length == 0) return {};
      ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "GET", ranges[i], sink));
      if (!r) {
        missing = true;
        return {};
      }
      if (r->body_bytes != ranges[i].length)
        return corrupt_data(describe_key(key) + ": " + ranges[i].to_string() +
                            " reaches past the start of the value");
      out[i] = std::move(sink.grow);
      return {};
    }
    const MergedRange& m = merged[j];
    std::optional<HttpResponse> r;
    if (m.length > 0) {
      ZF_ASSIGN_OR_RETURN(r, fetch(key, "GET", ByteRange::of(m.offset, m.length), sink));
      if (!r) {
        missing = true;
        return {};
      }
    }
    const std::uint64_t got = r ? r->body_bytes : 0;
    if (m.parts.size() == 1 && got == m.length) {  // one range, not merged: hand the body over
      out[absolute_index[m.parts[0]]] = std::move(sink.grow);
      return {};
    }
    for (std::size_t p : m.parts) {
      const ByteRange& want = absolute[p];
      const std::uint64_t at = want.offset - m.offset;
      if (at + want.length > got)
        return corrupt_data(describe_key(key) + ": " + want.to_string() +
                            " reaches past the end of the value (" +
                            std::to_string(m.offset + got) + " bytes available)");
      out[absolute_index[p]] = Buffer::copy_of(sink.grow.span().subspan(at, want.length));
    }
    return {};
  });
  ZF_RETURN_IF_ERROR(s);
  if (missing) return std::optional<std::vector<Buffer>>();
  return std::optional(std::move(out));
}

Result<std::optional<Store::Tail>> HttpStore::get_tail(std::string_view key,
                                                       std::uint64_t length) const {
  if (length == 0) return Store::get_tail(key, length);
  BodySink sink;
  const ByteRange range = ByteRange::last(length);
  ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "GET", range, sink));
  if (!r) return std::optional<Tail>();
  // A value shorter than `length` comes back whole (RFC 9110 §14.1.2): too short.
  if (r->body_bytes == length && !r->total_size)
    return io_error(describe_key(key) + " (" + range.to_string() +
                    "): the server's answer names no total size (no Content-Range)");
  if (r->body_bytes != length)
    return corrupt_data(describe_key(key) + " has " +
                        std::to_string(r->total_size.value_or(r->body_bytes)) +
                        " bytes, fewer than the last " + std::to_string(length) + " wanted");
  return std::optional(Tail{std::move(sink.grow), *r->total_size});
}

Result<std::optional<std::uint64_t>> HttpStore::size(std::string_view key) const {
  BodySink sink;
  ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "HEAD", std::nullopt, sink));
  if (!r) return std::optional<std::uint64_t>();
  if (!r->total_size)
    return io_error(describe_key(key) + ": the server sent no Content-Length for HEAD");
  return std::optional<std::uint64_t>(*r->total_size);
}

Result<std::optional<ValueVersion>> HttpStore::version(std::string_view key) const {
  BodySink sink;
  ZF_ASSIGN_OR_RETURN(auto r, fetch(key, "HEAD", std::nullopt, sink));
  if (!r) return std::optional<ValueVersion>();
  return std::optional(ValueVersion{r->etag, r->last_modified_s});
}

Result<S3ListPage> HttpStore::list_objects(const std::string& prefix, bool delimited) const {
  if (config_.kind == RemoteConfig::Kind::kHttp)
    return unimplemented("listing " + config_.display +
                         " is not possible over plain HTTP; consolidate the store's metadata "
                         "(zarr.consolidate_metadata) or open an array path directly");
  S3ListPage all;
  std::string token;
  for (;;) {
    std::vector<std::pair<std::string, std::string>> q = {{"list-type", "2"}, {"prefix", prefix}};
    if (delimited) q.emplace_back("delimiter", "/");
    if (!token.empty()) q.emplace_back("continuation-token", token);
    const Target t = target("", std::move(q));
    BodySink sink;
    const std::string what = "listing " + config_.display + " (prefix '" + prefix + "')";
    HttpRequest req = request(t, "GET");
    req.max_body_bytes = kMaxListPageBytes;
    ZF_ASSIGN_OR_RETURN(HttpResponse r, client_.perform(req, sink, what));
    if (r.status < 200 || r.status >= 300) return status_error(what, r, unsigned_object_store());
    const std::string_view xml(reinterpret_cast<const char*>(sink.grow.data()), sink.grow.size());
    auto page = parse_s3_list(xml);
    if (!page.ok()) return std::move(page).take_status().annotate(what);
    for (auto& o : page->objects) all.objects.push_back(std::move(o));
    for (auto& p : page->common_prefixes) all.common_prefixes.push_back(std::move(p));
    if (!page->truncated) break;
    if (page->continuation_token == token)  // a server that would keep us listing forever
      return io_error(what + ": the server repeats continuation token '" + token + "'");
    token = page->continuation_token;
  }
  return all;
}

Result<std::vector<ListEntry>> HttpStore::list(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p = object_key(prefix);
  if (!p.empty()) p += "/";
  const std::size_t strip = config_.prefix.empty() ? 0 : config_.prefix.size() + 1;
  ZF_ASSIGN_OR_RETURN(S3ListPage page, list_objects(p, false));
  std::vector<ListEntry> out;
  for (auto& [key, size] : page.objects) {
    if (key.size() <= strip || key.back() == '/') continue;  // "directory" marker objects
    out.push_back({key.substr(strip), size});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

Result<std::vector<std::string>> HttpStore::list_dir(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p = object_key(prefix);
  if (!p.empty()) p += "/";
  ZF_ASSIGN_OR_RETURN(S3ListPage page, list_objects(p, true));
  std::vector<std::string> out;
  for (const auto& [key, size] : page.objects)
    if (key.size() > p.size()) out.push_back(key.substr(p.size()));
  for (const auto& cp : page.common_prefixes) {
    if (cp.size() <= p.size() + 1) continue;
    out.push_back(cp.substr(p.size(), cp.size() - p.size() - 1));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status HttpStore::set(std::string_view key, ConstByteSpan) {
  return unimplemented(describe_key(key) + ": remote stores are read-only in zarrflow");
}

std::string HttpStore::describe_key(std::string_view key) const {
  return key.empty() ? config_.display : config_.display + "/" + std::string(key);
}

}  // namespace zarrflow
