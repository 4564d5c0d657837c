// HttpClient: blocking GET/HEAD over libcurl with timeouts, retries and connection reuse.
//
// Concurrency comes from the callers: each call runs on the calling thread with an easy handle
// taken from a pool (a handle keeps its connection open, so a pool of N handles is N kept-alive
// connections). Remote stores run their reads on an I/O thread pool of `max_in_flight` threads,
// so up to that many requests are in flight. A thread per request in flight (rather than one
// curl_multi event loop) keeps every read path synchronous, lets bodies land in caller memory
// from the thread that owns it, and reuses the pool scheduler the CPU reads already have;
// benchmarks/bench_remote.py measures throughput against the number in flight.
//
// Retries (RetryPolicy): connection failures, resets, timeouts, stalls (slower than
// `min_bytes_per_second` for `stall_timeout_s`), bodies shorter than their Content-Length,
// 408/429/5xx, all within `total_timeout_s` per request. Not retried: 404 (a missing key is an
// answer), 416, other 4xx, bodies larger than the request may return.
//
// Bodies are bounded by what was asked, never by what the server announces: a ranged request
// keeps at most its range's bytes, a whole-value GET at most `max_body_bytes` (the caller's bound
// for this value) or `max_object_bytes`; one byte more ends the transfer with an error. Buffers
// grow as bytes arrive (Content-Length only sizes a first allocation, and only up to the bound).
// A server that ignores Range (200 with the whole value) is read through: the asked window is
// kept and the transfer ends once it is complete; a suffix range keeps the last bytes in a buffer
// of twice their size while the value streams by (at most `max_object_bytes` of it).
// Bodies go straight into caller memory when the caller gives it (pinned staging of the GPU path)
// or into a pooled Buffer. Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"
#include "zarrflow/store/retry_policy.h"
#include "zarrflow/store/store.h"

namespace zarrflow {

struct HttpOptions {
  std::size_t max_in_flight = 64;  // concurrent requests (I/O threads, kept-alive connections)
  double connect_timeout_s = 10;
  double request_timeout_s = 120;  // whole request, per attempt
  // An attempt slower than min_bytes_per_second for stall_timeout_s (whole seconds, at least 1:
  // libcurl's low-speed check) is a stall: aborted and retried.
  double stall_timeout_s = 20;
  std::uint64_t min_bytes_per_second = 1024;
  double total_timeout_s = 300;  // one request: every attempt and backoff delay together
  // The most bytes a whole-value GET accepts when the caller gives no bound of its own, and the
  // most of a value read through to find its last bytes when a server ignores a suffix range.
  std::uint64_t max_object_bytes = std::uint64_t{1} << 30;
  RetryPolicy retry;
  bool verify_tls = true;
  std::string ca_bundle;  // PEM file; empty = curl's default
};

// The Range header's value for `r`: "bytes=0-99", or "bytes=-100" for the last 100 bytes. The
// client sends it and SigV4 signs it, from this one spelling.
std::string range_header_value(const ByteRange& r);

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::optional<ByteRange> range;  // sent as a Range header (range_header_value)
  // Called before every attempt for the request headers (signatures carry the time).
  std::function<std::vector<std::string>()> headers;
  // The most body bytes a whole-value GET may legitimately return (a chunk's largest encoded
  // size); unset: HttpOptions::max_object_bytes. A ranged request is bounded by its range.
  std::optional<std::uint64_t> max_body_bytes;
};

struct HttpResponse {
  long status = 0;
  std::uint64_t body_bytes = 0;                 // bytes delivered to the sink
  std::optional<std::uint64_t> total_size;      // of the whole value (Content-Range, -Length, or
                                                // counted when a whole body was read)
  std::string error_body;                       // first 4 KiB of a non-2xx body
  std::string etag;                             // ETag header, quotes stripped ("" when none)
  std::optional<std::int64_t> last_modified_s;  // Last-Modified, seconds since the epoch
  int attempts = 0;
};

// Where a response body goes: caller memory of a fixed size, or a growing Buffer.
struct BodySink {
  ByteSpan fixed;  // used when `use_fixed`
  bool use_fixed = false;
  Buffer grow;  // otherwise
};

struct HttpCounters {
  std::atomic<std::uint64_t> requests{0}, retries{0}, bytes{0};
  std::atomic<std::int64_t> in_flight{0}, max_in_flight{0};
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Performs `req` (retrying as above) and returns the final response: 2xx with the body in
  // `sink`, or 404/4xx for the caller to interpret. Transport failures and retryable statuses
  // that persist after the last attempt or past total_timeout_s, and bodies past their bound,
  // are kIoError naming `what` (a fixed sink that the value does not fit: kCorruptData).
  Result<HttpResponse> perform(const HttpRequest& req, BodySink& sink,
                               const std::string& what) const;

  [[nodiscard]] const HttpOptions& options() const { return options_; }
  [[nodiscard]] const HttpCounters& counters() const { return counters_; }
  void reset_counters() const;

 private:
  void* take_handle() const;
  void give_handle(void* h) const;
  // At most max_in_flight transfers at once, however many threads call in (nested pools,
  // several loaders on one store).
  void acquire_slot() const;
  void release_slot() const;

  HttpOptions options_;
  mutable std::mutex mu_;
  mutable std::vector<void*> handles_;  // idle CURL easy handles
  mutable std::condition_variable slot_cv_;
  mutable std::size_t busy_ = 0;  // transfers running (guarded by mu_)
  mutable HttpCounters counters_;
  mutable BufferPool pool_;
};

}  // namespace zarrflow
