#include "zarrflow/store/http_client.h"

#include "zarrflow/store/response_headers.h"
#include "zarrflow/store/s3_xml.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace zarrflow {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// State of one attempt, shared with curl's callbacks.
struct Attempt : ResponseHeaders {
  BodySink* sink = nullptr;
  BufferPool* pool = nullptr;
  bool ranged = false;
  std::uint64_t range_offset = 0, range_length = 0;
  std::uint64_t written = 0;   // body bytes delivered to the sink
  std::uint64_t skip = 0;      // bytes to drop (a server that ignored Range sent the whole value)
  std::uint64_t keep = UINT64_MAX;
  std::string error_body;
  Status sink_error;           // set when the callback aborted the transfer on purpose
  bool headers_done = false;
};

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  parse_response_header_line(std::string_view(data, size * n), *static_cast<Attempt*>(user));
  return size * n;
}

// Called with the first body bytes of a 2xx: decides where they go.
Status begin_body(Attempt& a) {
  a.headers_done = true;
  if (a.ranged && a.status == 200) {
    // The server ignored Range and sends the whole value: keep just the wanted window.
    a.skip = a.range_offset;
    a.keep = a.range_length;
    if (a.content_length) a.total_size = a.content_length;
  } else if (a.ranged && a.status == 206 && a.range_start && *a.range_start != a.range_offset) {
    return io_error("server answered a different range (starts at " +
                    std::to_string(*a.range_start) + ")");
  }
  if (!a.ranged && a.status == 200 && a.content_length) a.total_size = a.content_length;
  const std::uint64_t expect =
      a.ranged && a.status == 200 ? a.range_length : a.content_length.value_or(0);
  BodySink& s = *a.sink;
  if (s.use_fixed) {
    if (a.content_length && expect > s.fixed.size())
      return corrupt_data("value has " + std::to_string(expect) + " bytes, expected " +
                          std::to_string(s.fixed.size()));
  } else if (expect > 0) {
    s.grow = a.pool->acquire(static_cast<std::size_t>(expect));
  }
  return {};
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  std::size_t len = size * n;
  if (a.status < 200 || a.status >= 300) {  // keep the start of an error body for the message
    const std::size_t room = 4096 - std::min<std::size_t>(4096, a.error_body.size());
    a.error_body.append(data, std::min(room, len));
    return size * n;
  }
  if (!a.headers_done) {
    a.sink_error = begin_body(a);
    if (!a.sink_error.ok()) return 0;
  }
  const std::size_t all = size * n;
  if (a.skip) {
    const std::size_t drop = static_cast<std::size_t>(std::min<std::uint64_t>(a.skip, len));
    a.skip -= drop;
    data += drop;
    len -= drop;
  }
  len = static_cast<std::size_t>(std::min<std::uint64_t>(len, a.keep - std::min(a.keep, a.written)));
  if (len == 0) return all;
  BodySink& s = *a.sink;
  if (s.use_fixed) {
    if (a.written + len > s.fixed.size()) {
      a.sink_error = corrupt_data("value is longer than the expected " +
                                  std::to_string(s.fixed.size()) + " bytes");
      return 0;
    }
    std::memcpy(s.fixed.data() + a.written, data, len);
  } else {
    if (a.written + len > s.grow.size()) {
      Buffer bigger = a.pool->acquire(
          static_cast<std::size_t>(std::max<std::uint64_t>(a.written + len, 2 * s.grow.size())));
      if (a.written) std::memcpy(bigger.data(), s.grow.data(), a.written);
      s.grow = std::move(bigger);
    }
    std::memcpy(s.grow.data() + a.written, data, len);
  }
  a.written += len;
  return all;
}

bool retryable_curl(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

HttpClient::HttpClient(HttpOptions options) : options_(std::move(options)), pool_(256 << 20) {
  global_init();
}

HttpClient::~HttpClient() {
  for (void* h : handles_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* HttpClient::take_handle() const {
  {
    std::lock_guard lock(mu_);
    if (!handles_.empty()) {
      void* h = handles_.back();
      handles_.pop_back();
      return h;  // perform() resets its options before each attempt (the connection stays)
    }
  }
  return curl_easy_init();
}

std::string range_header_value(const ByteRange& r) {
  if (r.suffix) return "bytes=-" + std::to_string(r.length);
  return "bytes=" + std::to_string(r.offset) + "-" + std::to_string(r.offset + r.length - 1);
}

void HttpClient::give_handle(void* h) const {
  std::lock_guard lock(mu_);
  handles_.push_back(h);
}

void HttpClient::acquire_slot() const {
  std::unique_lock lock(mu_);
  slot_cv_.wait(lock, [&] { return busy_ < options_.max_in_flight; });
  ++busy_;
}

void HttpClient::release_slot() const {
  {
    std::lock_guard lock(mu_);
    --busy_;
  }
  slot_cv_.notify_one();
}

void HttpClient::reset_counters() const {
  counters_.requests = 0;
  counters_.retries = 0;
  counters_.bytes = 0;
  counters_.max_in_flight = counters_.in_flight.load();
}

Result<HttpResponse> HttpClient::perform(const HttpRequest& req, BodySink& sink,
                                         const std::string& what) const {
  CURL* curl = static_cast<CURL*>(take_handle());
  if (curl == nullptr) return internal_error("curl_easy_init failed");
  struct Return {
    const HttpClient* self;
    CURL* h;
    ~Return() { self->give_handle(h); }
  } give_back{this, curl};

  const std::string range = req.range ? "Range: " + range_header_value(*req.range) : "";
  const RetryPolicy& policy = options_.retry;
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    curl_easy_reset(curl);
    Attempt a;
    a.sink = &sink;
    a.pool = &pool_;
    a.ranged = req.range.has_value() && !req.range->suffix;
    if (a.ranged) {
      a.range_offset = req.range->offset;
      a.range_length = req.range->length;
    }
    std::unique_ptr<curl_slist, SlistDeleter> headers;
    if (!range.empty()) headers.reset(curl_slist_append(nullptr, range.c_str()));
    if (req.headers) {
      for (const std::string& h : req.headers())
        headers.reset(curl_slist_append(headers.release(), h.c_str()));
    }
    curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "zarrflow/0.1");
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L << 10);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, long(options_.connect_timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, long(options_.request_timeout_s * 1000));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, long(options_.stall_timeout_s + 0.5)));
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    if (!options_.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_bundle.c_str());
    if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    if (req.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);

    acquire_slot();
    ++counters_.requests;
    const std::int64_t now = ++counters_.in_flight;
    for (std::int64_t m = counters_.max_in_flight.load(); now > m &&
         !counters_.max_in_flight.compare_exchange_weak(m, now);) {
    }
    const CURLcode rc = curl_easy_perform(curl);
    --counters_.in_flight;
    release_slot();

    std::optional<double> retry_after;
    if (rc == CURLE_WRITE_ERROR && !a.sink_error.ok())
      return std::move(a.sink_error).annotate(what);
    if (rc != CURLE_OK) {
      last_error = std::string("curl: ") + curl_easy_strerror(rc);
      if (!retryable_curl(rc))
        return io_error(what + ": " + last_error);
    } else {
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      a.status = status;
      const bool ok = status >= 200 && status < 300;
      const bool head = req.method == "HEAD";
      if (ok && !a.headers_done && !head) {  // 2xx with an empty body
        Status s = begin_body(a);
        if (!s.ok()) return std::move(s).annotate(what);
      }
      std::uint64_t expected = a.content_length.value_or(a.written);
      if (a.ranged && status == 200) {
        const std::uint64_t all = a.content_length.value_or(a.range_offset + a.written);
        expected = std::min(a.range_length, all - std::min(all, a.range_offset));
      }
      if (!ok || head) expected = 0;
      if (ok && !head && a.written < expected) {
        // The connection ended early although curl saw no error (a proxy cut the body).
        last_error = "short body: " + std::to_string(a.written) + " of " +
                     std::to_string(expected) + " bytes";
      } else if (!ok && retryable_http_status(status)) {
        last_error = "HTTP " + std::to_string(status);
        if (auto s = s3_error_summary(a.error_body); !s.empty()) last_error += " (" + s + ")";
        retry_after = a.retry_after;
      } else {
        HttpResponse resp;
        resp.status = status;
        resp.body_bytes = a.written;
        resp.total_size = head ? a.content_length : a.total_size;
        resp.error_body = std::move(a.error_body);
        resp.attempts = attempt;
        if (ok) {
          counters_.bytes += a.written;
          if (!sink.use_fixed) sink.grow.resize(static_cast<std::size_t>(a.written));
        }
        return resp;
      }
    }
    if (attempt >= policy.max_attempts)
      return io_error(what + ": " + last_error + " (gave up after " + std::to_string(attempt) +
                      " attempts)");
    ++counters_.retries;
    std::this_thread::sleep_for(std::chrono::duration<double>(policy.delay(attempt + 1, retry_after)));
  }
}

}  // namespace zarrflow
