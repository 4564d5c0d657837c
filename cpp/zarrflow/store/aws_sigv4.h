// AWS Signature Version 4 for S3-compatible GET/HEAD requests (AWS S3, MinIO, moto, GCS HMAC).
//
// Reads sign the empty payload's SHA-256 (accepted everywhere, unlike UNSIGNED-PAYLOAD on some
// S3 clones) and the headers host, range (when present) and x-amz-*. The signing key is derived
// per request; requests are small and the HMAC chain costs ~4 µs, well below a network round trip.
// Thread-safety: pure functions.
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zarrflow {

struct AwsCredentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // temporary credentials (STS); empty otherwise
  [[nodiscard]] bool anonymous() const { return access_key.empty(); }
};

struct SigV4Request {
  std::string method = "GET";
  std::string host;           // as sent in the Host header, with ":port" when not the default
  std::string canonical_uri;  // path, already URI-encoded ("/bucket/a%20b/c/0")
  std::vector<std::pair<std::string, std::string>> query;  // raw (unencoded) names and values
  std::string range;                                       // "bytes=0-9", or empty
  std::string region;                                      // "us-east-1"; "auto" for GCS
  std::string service = "s3";
  std::time_t when = 0;  // request time (UTC seconds)
};

// The headers to add ("name: value"): x-amz-date, x-amz-content-sha256, x-amz-security-token
// (with a session token) and Authorization.
std::vector<std::string> sigv4_headers(const SigV4Request& req, const AwsCredentials& creds);

// RFC 3986 percent-encoding of everything but unreserved characters (and '/' unless
// `encode_slash`), as SigV4's canonical forms require.
std::string uri_encode(std::string_view s, bool encode_slash);

// "name=value&..." sorted by name, both URI-encoded (the canonical query string; also the
// query actually sent, so the two cannot disagree).
std::string canonical_query(std::vector<std::pair<std::string, std::string>> query);

std::string sha256_hex(std::string_view data);

}  // namespace zarrflow
