// HttpStore: a read-only Zarr store behind HTTP(S): plain web servers, S3 and S3-compatible
// object stores (AWS Signature V4 or anonymous), and Google Cloud Storage (XML API: anonymous,
// a bearer token, or HMAC keys through SigV4).
//
// Keys map to URLs below the store's base; a 404 is a missing key (fill value where Zarr says
// so), while 403, persistent 5xx, resets and truncated bodies are kIoError naming the URL — never
// turned into fill values. get_ranges() merges nearby ranges (RangeCoalescer) and issues the
// merged requests concurrently. Listing needs an object store (S3/GCS ListObjectsV2); over plain
// HTTP it is kUnimplemented, so groups there need consolidated metadata.
// Reads run on io_pool(): max_in_flight threads, so that many requests are in flight; the pool
// starts on the first read that asks for it (opening an array reads metadata only, on the
// caller's thread).
// Thread-safety: all methods are safe to call concurrently. Lifetime: shared_ptr.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "zarrflow/core/thread_pool.h"
#include "zarrflow/store/aws_sigv4.h"
#include "zarrflow/store/http_client.h"
#include "zarrflow/store/range_coalescer.h"
#include "zarrflow/store/s3_xml.h"
#include "zarrflow/store/store.h"

namespace zarrflow {

struct RemoteConfig {
  enum class Kind { kHttp, kS3, kGcs };
  Kind kind = Kind::kHttp;
  // kHttp: the store's base URL ("https://host/data/era5.zarr").
  // kS3/kGcs: the service endpoint ("https://s3.eu-west-1.amazonaws.com", "http://127.0.0.1:9000",
  // "https://storage.googleapis.com").
  std::string endpoint;
  std::string bucket;         // kS3/kGcs
  std::string prefix;         // key prefix of the store inside the bucket ("" = bucket root)
  bool virtual_host = false;  // https://bucket.host/key instead of https://host/bucket/key
  std::string region = "us-east-1";
  AwsCredentials credentials;  // empty access key = anonymous (unsigned requests)
  std::string bearer_token;    // GCS OAuth token
  std::string display;         // how the root is named in messages ("s3://bucket/prefix")
  HttpOptions http;
  CoalesceOptions coalesce;
};

class HttpStore final : public Store {
 public:
  static Result<std::shared_ptr<HttpStore>> open(RemoteConfig config);
  // The same configuration from JSON (the Python front resolves URLs and credentials into it):
  // {"kind": "s3", "endpoint": ..., "bucket": ..., "prefix": ..., "region": ...,
  //  "virtual_host": false, "access_key": ..., "secret_key": ..., "session_token": ...,
  //  "bearer_token": ..., "display": ..., "max_in_flight": 64, "connect_timeout": 10,
  //  "request_timeout": 120, "stall_timeout": 20, "min_bytes_per_second": 1024,
  //  "total_timeout": 300, "max_object_bytes": 1073741824, "max_attempts": 8,
  //  "backoff_base": 0.05, "backoff_max": 8, "coalesce_gap": 1048576, "coalesce_max": 16777216,
  //  "verify_tls": true, "ca_bundle": ""}
  static Result<std::shared_ptr<HttpStore>> open_json(std::string_view json);

  Result<std::optional<Buffer>> get(std::string_view key,
                                    std::uint64_t max_size = kNoLimit) const override;
  // get() with the caller's bound on the value's size (a chunk's largest encoded size): a body
  // past `max_bytes` ends the transfer with kIoError. nullopt: the max_object_bytes option.
  Result<std::optional<Buffer>> get_at_most(std::string_view key,
                                            std::optional<std::uint64_t> max_bytes) const;
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override;
  Result<bool> read_exact(std::string_view key, ByteSpan dst) const override;
  Result<bool> read_range_into(std::string_view key, std::uint64_t offset,
                               ByteSpan dst) const override;
  Result<std::optional<Tail>> get_tail(std::string_view key, std::uint64_t length) const override;
  Result<std::optional<std::uint64_t>> size(std::string_view key) const override;
  // A HEAD: the ETag and Last-Modified headers.
  Result<std::optional<ValueVersion>> version(std::string_view key) const override;
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override;
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override;
  Status set(std::string_view key, ConstByteSpan value) override;
  [[nodiscard]] std::string describe_key(std::string_view key) const override;
  // Started on the first call (thread-safe).
  [[nodiscard]] ThreadPool* io_pool() const override;
  // Threads of the I/O pool: 0 until a read has needed it.
  [[nodiscard]] std::size_t io_threads() const;
  [[nodiscard]] CoalesceOptions coalescing() const override { return config_.coalesce; }

  [[nodiscard]] const RemoteConfig& config() const { return config_; }
  // An S3/GCS store without credentials: requests go unsigned (public buckets).
  [[nodiscard]] bool unsigned_object_store() const {
    return config_.kind != RemoteConfig::Kind::kHttp && config_.credentials.anonymous() &&
           config_.bearer_token.empty();
  }
  [[nodiscard]] const HttpClient& client() const { return client_; }

 private:
  explicit HttpStore(RemoteConfig config);

  struct Target {
    std::string url;   // full URL (with query)
    std::string host;  // Host header value
    std::string path;  // encoded path, for signing
    std::vector<std::pair<std::string, std::string>> query;
  };
  Target target(std::string_view object_key,
                std::vector<std::pair<std::string, std::string>> query = {}) const;
  std::string object_key(std::string_view key) const;  // store key → bucket key / URL path
  HttpRequest request(const Target& t, std::string method,
                      std::optional<ByteRange> range = std::nullopt) const;
  // GET/HEAD of `key` into `sink`: nullopt when missing; errors name the key.
  Result<std::optional<HttpResponse>> fetch(std::string_view key, std::string method,
                                            std::optional<ByteRange> range, BodySink& sink,
                                            std::optional<std::uint64_t> max_bytes = {}) const;
  // Every page of ListObjectsV2 below `prefix` (a bucket key prefix), with or without '/'
  // delimiter.
  Result<S3ListPage> list_objects(const std::string& prefix, bool delimited) const;

  RemoteConfig config_;
  HttpClient client_;
  std::string scheme_host_;  // "https://host:port" of the endpoint (or bucket host)
  std::string base_path_;    // path below it ("/bucket/prefix" or "/data/era5.zarr")
  std::string host_header_;
  mutable std::once_flag io_pool_once_;
  mutable std::unique_ptr<ThreadPool> io_pool_;
  mutable std::atomic<ThreadPool*> io_pool_started_{nullptr};
};

}  // namespace zarrflow
