#include "zarrflow/store/http_client.h"

#include "zarrflow/store/response_headers.h"
#include "zarrflow/store/s3_xml.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace zarrflow {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The CA bundle to verify TLS with when none is configured: "" (curl's own default) unless this
// libcurl was built without one (the wheels' static libcurl, which runs on any distribution), then
// SSL_CERT_FILE or the first of the distributions' usual bundles that exists.
const std::string& default_ca_bundle() {
  static const std::string path = [] {
    if (curl_version_info(CURLVERSION_NOW)->cainfo != nullptr) return std::string();
    if (const char* env = std::getenv("SSL_CERT_FILE"); env != nullptr && *env != '\0')
      return std::string(env);
    for (const char* p : {"/etc/ssl/certs/ca-certificates.crt",  // Debian, Ubuntu, Arch, Gentoo
                          "/etc/pki/tls/certs/ca-bundle.crt",    // RHEL, Rocky, Fedora
                          "/etc/ssl/ca-bundle.pem",              // SUSE
                          "/etc/pki/tls/cacert.pem", "/etc/ssl/cert.pem"})
      if (std::FILE* f = std::fopen(p, "rb")) {
        std::fclose(f);
        return std::string(p);
      }
    return std::string();  // OpenSSL's default paths (SSL_CERT_DIR, /etc/ssl/certs)
  }();
  return path;
}

constexpr std::size_t kErrorBodyKept = 4096;           // start of a non-2xx body, for messages
constexpr std::uint64_t kErrorBodyRead = 64 << 10;     // read this much of it, then hang up
constexpr std::uint64_t kMaxHeaderBytes = 256 << 10;   // all header lines of one attempt
constexpr std::uint64_t kMaxGuessedReserve = 8 << 20;  // first buffer under a generic bound

// How the body of a 2xx answer is taken in.
enum class BodyMode {
  kWhole,   // no range asked: every byte, up to the bound
  kWindow,  // a range: skip `skip` bytes, keep `keep`
  kTail,    // a suffix range the server ignored: the last `keep` bytes of a streamed whole value
};

// State of one attempt, shared with curl's callbacks.
struct Attempt : ResponseHeaders {
  // What was asked.
  BodySink* sink = nullptr;
  BufferPool* pool = nullptr;
  std::optional<ByteRange> range;
  bool head = false;
  std::uint64_t bound = 0;         // kWhole: most body bytes (caller's or max_object_bytes)
  bool bound_is_callers = false;   // the caller's bound for this value (Content-Length may size it)
  std::uint64_t max_object = 0;    // kTail: most bytes of the whole value read through
  std::uint64_t header_bytes = 0;  // all header lines so far (what they said: ResponseHeaders)
  // The body.
  bool body_started = false;
  BodyMode mode = BodyMode::kWhole;
  std::uint64_t received = 0;  // body bytes seen, kept or not
  std::uint64_t skip = 0, keep = 0;
  bool more_expected = false;  // kWindow: bytes past the window are part of the answer
  std::uint64_t written = 0;   // bytes in the sink
  bool ended_early = false;    // the callback ended a transfer that had given all it needs
  std::string error_body;
  Status sink_error;  // set when the callback aborted the transfer on purpose

  [[nodiscard]] bool ok_status() const { return status >= 200 && status < 300; }
};

std::string bytes_text(std::uint64_t n) { return std::to_string(n) + " bytes"; }

Status begin_body(Attempt& a);

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  a.header_bytes += size * n;
  if (a.header_bytes > kMaxHeaderBytes) {
    a.sink_error = io_error("the response headers exceed " + bytes_text(kMaxHeaderBytes));
    return 0;
  }
  std::string_view line(data, size * n);
  parse_response_header_line(line, a);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty() && a.ok_status() && !a.head && !a.body_started) {
    // The headers of the final answer are complete: check what it announces before any byte.
    try {
      a.sink_error = begin_body(a);
    } catch (const std::bad_alloc&) {
      a.sink_error = io_error("out of memory for the first buffer of a body");
    }
    if (!a.sink_error.ok()) return 0;
  }
  return size * n;
}

// Makes room for `need` bytes in a growing sink, at most `limit`: doubling, so a body that
// arrives in pieces costs amortised constant copies per byte.
void grow_to(Attempt& a, std::uint64_t need, std::uint64_t limit) {
  Buffer& g = a.sink->grow;
  if (need <= g.size()) return;
  const std::uint64_t want = std::min(limit, std::max<std::uint64_t>(need, 2 * g.size()));
  Buffer bigger = a.pool->acquire(static_cast<std::size_t>(want));
  if (a.written) std::memcpy(bigger.data(), g.data(), static_cast<std::size_t>(a.written));
  g = std::move(bigger);
}

// A 206's Content-Range must cover what was asked, as far as the value reaches: a range that
// starts later, ends sooner, or is not the value's last bytes for a suffix range is refused.
Status check_content_range(const Attempt& a) {
  if (!a.range_start || !a.range_end) return {};  // no Content-Range: the body is the ask
  const ByteRange& r = *a.range;
  const std::uint64_t start = *a.range_start, end = *a.range_end;
  if (end < start || (a.total_size && end >= *a.total_size))
    return io_error("the server sent a malformed Content-Range (bytes " + std::to_string(start) +
                    "-" + std::to_string(end) + ")");
  bool covers;
  if (r.suffix) {
    covers = a.total_size && end + 1 == *a.total_size &&
             start == *a.total_size - std::min(*a.total_size, r.length);
  } else {
    const std::uint64_t want_end = r.offset + r.length;  // exclusive
    covers =
        start <= r.offset && (end + 1 >= want_end || (a.total_size && end + 1 == *a.total_size));
  }
  if (covers) return {};
  return io_error("the server answered a different range (bytes " + std::to_string(start) + "-" +
                  std::to_string(end) + "/" +
                  (a.total_size ? std::to_string(*a.total_size) : std::string("*")) + " for " +
                  r.to_string() + ")");
}

// Called with the first body bytes of a 2xx (or at its end when it had none): decides where
// they go and how many may come.
Status begin_body(Attempt& a) {
  a.body_started = true;
  const std::optional<std::uint64_t> length = a.content_length;
  BodySink& s = *a.sink;
  std::uint64_t reserve = 0;
  if (!a.range) {
    a.mode = BodyMode::kWhole;
    if (s.use_fixed) {
      a.bound = s.fixed.size();
      if (length && *length > a.bound)
        return corrupt_data("value has " + bytes_text(*length) + ", expected " +
                            bytes_text(a.bound));
    } else if (length && *length > a.bound) {
      return io_error("the server announces " + bytes_text(*length) + ", more than the " +
                      bytes_text(a.bound) +
                      (a.bound_is_callers ? " this value can have"
                                          : " allowed (storage option max_object_bytes)"));
    }
    if (!a.total_size && a.status == 200) a.total_size = length;
    reserve = std::min(length.value_or(0), a.bound_is_callers ? a.bound : kMaxGuessedReserve);
  } else if (a.range->suffix && a.status != 206) {
    // The server ignored the suffix range and streams the whole value: keep its last bytes.
    a.mode = BodyMode::kTail;
    a.keep = a.range->length;
    if (length && *length > a.max_object)
      return io_error("the server ignored the Range header and sends the whole value of " +
                      bytes_text(*length) + ", more than the " + bytes_text(a.max_object) +
                      " allowed (storage option max_object_bytes)");
    if (!s.use_fixed) reserve = 2 * a.keep;
  } else {
    a.mode = BodyMode::kWindow;
    a.keep = a.range->length;
    if (a.status == 206) {
      if (Status bad = check_content_range(a); !bad.ok()) return bad;
      if (!a.range->suffix && a.range_start) {
        a.skip = a.range->offset - *a.range_start;  // a wider range than asked: trim it
        a.more_expected = a.range_end && *a.range_end >= a.range->offset + a.keep;
      }
    } else {  // the server ignored Range and sends the whole value: keep the asked window
      a.skip = a.range->offset;
      a.more_expected = true;
      a.total_size = length;
    }
    if (length)
      reserve = std::min(a.keep, *length - std::min(*length, a.skip));
    else
      reserve = a.keep;
  }
  if (!s.use_fixed && reserve > s.grow.size())
    s.grow = a.pool->acquire(static_cast<std::size_t>(reserve));
  return {};
}

// Appends to the sink; the caller has checked the bound.
void put(Attempt& a, const char* data, std::size_t len) {
  BodySink& s = *a.sink;
  if (s.use_fixed) {
    std::memcpy(s.fixed.data() + a.written, data, len);
  } else {
    const std::uint64_t limit = a.mode == BodyMode::kWhole ? a.bound : a.keep;
    grow_to(a, a.written + len, limit);
    std::memcpy(s.grow.data() + a.written, data, len);
  }
  a.written += len;
}

// kTail: appends to a buffer of 2 * keep bytes, moving its last `keep` bytes to the front when
// full, so the last `keep` bytes seen are always in it.
void put_tail(Attempt& a, const char* data, std::size_t len) {
  const std::size_t keep = static_cast<std::size_t>(a.keep);
  Buffer& g = a.sink->grow;
  if (g.size() < 2 * keep) g = a.pool->acquire(2 * keep);
  if (len >= keep) {
    std::memcpy(g.data(), data + len - keep, keep);
    a.written = keep;
    return;
  }
  if (a.written + len > 2 * keep) {
    std::memmove(g.data(), g.data() + a.written - keep, keep);
    a.written = keep;
  }
  std::memcpy(g.data() + a.written, data, len);
  a.written += len;
}

// Body bytes of a 2xx. Returns false (and sets sink_error, or ended_early when the window is
// complete and the rest is not needed) to end the transfer.
bool take_body(Attempt& a, const char* data, std::size_t len) {
  a.received += len;
  switch (a.mode) {
    case BodyMode::kWhole:
      if (a.written + len > a.bound) {
        a.sink_error =
            a.sink->use_fixed
                ? corrupt_data("value is longer than the expected " + bytes_text(a.bound))
                : io_error("the body is longer than the " + bytes_text(a.bound) +
                           (a.bound_is_callers ? " this value can have"
                                               : " allowed (storage option max_object_bytes)"));
        return false;
      }
      put(a, data, len);
      return true;
    case BodyMode::kTail:
      if (a.received > a.max_object) {
        a.sink_error = io_error("the server ignored the Range header and sends more than " +
                                bytes_text(a.max_object) +
                                " of the whole value (storage option max_object_bytes)");
        return false;
      }
      put_tail(a, data, len);
      return true;
    case BodyMode::kWindow: {
      const std::size_t drop = static_cast<std::size_t>(std::min<std::uint64_t>(a.skip, len));
      a.skip -= drop;
      data += drop;
      len -= drop;
      const std::size_t take =
          static_cast<std::size_t>(std::min<std::uint64_t>(len, a.keep - a.written));
      if (take) put(a, data, take);
      if (len > take) {  // bytes past the window
        if (a.more_expected) {
          a.ended_early = true;
        } else {
          a.sink_error = io_error("the server sends more than the " + bytes_text(a.keep) +
                                  " of the range asked");
        }
        return false;
      }
      return true;
    }
  }
  return true;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t len = size * n;
  if (!a.ok_status()) {  // keep the start of an error body for the message, read a little more
    const std::size_t room = kErrorBodyKept - std::min(kErrorBodyKept, a.error_body.size());
    a.error_body.append(data, std::min(room, len));
    a.received += len;
    if (a.received > kErrorBodyRead) {
      a.ended_early = true;
      return 0;
    }
    return len;
  }
  try {
    if (!a.body_started) {
      a.sink_error = begin_body(a);
      if (!a.sink_error.ok()) return 0;
    }
    return take_body(a, data, len) ? len : 0;
  } catch (const std::bad_alloc&) {
    a.sink_error = io_error("out of memory for a body of " + bytes_text(a.written + len));
    return 0;
  }
}

// After a transfer that ended without an error: the final shape of the kept bytes.
void finish_body(Attempt& a) {
  if (a.mode == BodyMode::kTail) {
    const std::uint64_t keep = std::min(a.keep, a.written);
    if (a.written > keep)
      std::memmove(a.sink->grow.data(), a.sink->grow.data() + (a.written - keep),
                   static_cast<std::size_t>(keep));
    a.written = keep;
    if (a.sink->use_fixed) {
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(keep, a.sink->fixed.size()));
      std::memcpy(a.sink->fixed.data(), a.sink->grow.data(), n);
      a.written = n;
    }
    a.total_size = a.received;  // the whole value went by
  } else if (!a.ended_early && !a.total_size && a.status == 200) {
    a.total_size = a.received;
  }
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

  using Clock = std::chrono::steady_clock;
  const std::string range = req.range ? "Range: " + range_header_value(*req.range) : "";
  const RetryPolicy& policy = options_.retry;
  const bool head = req.method == "HEAD";
  std::optional<Clock::time_point> deadline;  // total_timeout_s after the first attempt starts
  std::string last_error;
  // The last answer the server gave (an HTTP status), kept when a later attempt fails in
  // transport: an attempt cut short by the deadline should not hide why the others failed.
  std::string last_answer;
  char curl_detail[CURL_ERROR_SIZE];
  for (int attempt = 1;; ++attempt) {
    curl_easy_reset(curl);
    Attempt a;
    a.sink = &sink;
    a.pool = &pool_;
    a.range = req.range;
    a.head = head;
    // The tighter of the caller's bound (a chunk's largest encoded size) and max_object_bytes.
    a.bound =
        std::min(req.max_body_bytes.value_or(options_.max_object_bytes), options_.max_object_bytes);
    a.bound_is_callers = req.max_body_bytes.has_value() && a.bound < options_.max_object_bytes;
    a.max_object = options_.max_object_bytes;
    std::unique_ptr<curl_slist, SlistDeleter> headers;
    if (!range.empty()) headers.reset(curl_slist_append(nullptr, range.c_str()));
    if (req.headers) {
      for (const std::string& h : req.headers())
        headers.reset(curl_slist_append(headers.release(), h.c_str()));
    }
    curl_detail[0] = '\0';
    curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_detail);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "zarrflow/0.1");
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L << 10);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT,
                     long(std::min<std::uint64_t>(options_.min_bytes_per_second, LONG_MAX)));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                     std::max(1L, long(std::ceil(options_.stall_timeout_s))));
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
    if (!options_.ca_bundle.empty())
      curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_bundle.c_str());
    else if (!default_ca_bundle().empty())
      curl_easy_setopt(curl, CURLOPT_CAINFO, default_ca_bundle().c_str());
    if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
    if (head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);

    acquire_slot();
    const Clock::time_point start = Clock::now();
    if (!deadline)
      deadline = start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(options_.total_timeout_s));
    // Each attempt ends by the deadline at the latest.
    const double left = std::chrono::duration<double>(*deadline - start).count();
    const auto ms = [&](double limit_s) {
      return std::max(1L, long(std::min(limit_s, left) * 1000));
    };
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, ms(options_.connect_timeout_s));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, ms(options_.request_timeout_s));
    ++counters_.requests;
    const std::int64_t now = ++counters_.in_flight;
    for (std::int64_t m = counters_.max_in_flight.load();
         now > m && !counters_.max_in_flight.compare_exchange_weak(m, now);) {
    }
    const CURLcode rc = curl_easy_perform(curl);
    --counters_.in_flight;
    release_slot();

    std::optional<double> retry_after;
    if (!a.sink_error.ok()) return std::move(a.sink_error).annotate(what);  // not retried
    const bool complete = rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && a.ended_early);
    if (!complete) {
      last_error = std::string("curl: ") + curl_easy_strerror(rc);
      if (curl_detail[0] != '\0') last_error += std::string(" (") + curl_detail + ")";
      if (!retryable_curl(rc)) return io_error(what + ": " + last_error);
    } else {
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      if (status != 0) a.status = status;
      const bool ok = a.ok_status();
      if (ok && !head) {
        if (!a.body_started) {  // 2xx with an empty body
          Status s = begin_body(a);
          if (!s.ok()) return std::move(s).annotate(what);
        }
        finish_body(a);
      }
      if (ok && !head && !a.ended_early && a.content_length && a.received < *a.content_length) {
        // The connection ended early although curl saw no error (a proxy cut the body).
        last_error =
            "short body: " + std::to_string(a.received) + " of " + bytes_text(*a.content_length);
      } else if (!ok && retryable_http_status(a.status)) {
        last_error = "HTTP " + std::to_string(a.status);
        if (auto s = s3_error_summary(a.error_body); !s.empty()) last_error += " (" + s + ")";
        last_answer = last_error;
        retry_after = a.retry_after;
      } else {
        HttpResponse resp;
        resp.status = a.status;
        resp.body_bytes = a.written;
        resp.total_size = head ? a.content_length : a.total_size;
        resp.error_body = std::move(a.error_body);
        resp.etag = std::move(a.etag);
        resp.last_modified_s = a.last_modified_s;
        resp.attempts = attempt;
        if (ok) {
          counters_.bytes += a.received;
          if (!sink.use_fixed) sink.grow.resize(static_cast<std::size_t>(a.written));
        }
        return resp;
      }
    }
    if (!last_answer.empty() && last_answer != last_error)
      last_error += "; the server's last answer: " + last_answer;
    if (attempt >= policy.max_attempts)
      return io_error(what + ": " + last_error + " (gave up after " + std::to_string(attempt) +
                      " attempts)");
    const double delay = policy.delay(attempt + 1, retry_after);
    const auto resume = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(delay));
    if (resume >= *deadline) {
      char total[32];
      std::snprintf(total, sizeof total, "%g", options_.total_timeout_s);
      return io_error(what + ": " + last_error + " (gave up after " + std::to_string(attempt) +
                      " attempts: total_timeout of " + total + " s reached)");
    }
    ++counters_.retries;
    std::this_thread::sleep_until(resume);
  }
}

}  // namespace zarrflow
