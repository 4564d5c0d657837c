#include "zarrflow/store/aws_sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>

namespace zarrflow {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string hex(const unsigned char* p, std::size_t n) {
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = kHex[p[i] >> 4];
    s[2 * i + 1] = kHex[p[i] & 15];
  }
  return s;
}

using Digest = std::array<unsigned char, 32>;

Digest hmac(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len);
  return out;
}

std::string_view view(const Digest& d) {
  return {reinterpret_cast<const char*>(d.data()), d.size()};
}

std::string utc(std::time_t t, const char* fmt) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  Digest d{};
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), d.data(), &len, EVP_sha256(), nullptr);
  return hex(d.data(), d.size());
}

std::string uri_encode(std::string_view s, bool encode_slash) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                            c == '~' || (c == '/' && !encode_slash);
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back("0123456789ABCDEF"[c >> 4]);
      out.push_back("0123456789ABCDEF"[c & 15]);
    }
  }
  return out;
}

std::string canonical_query(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [k, v] : query) {
    k = uri_encode(k, true);
    v = uri_encode(v, true);
  }
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [k, v] : query) {
    if (!out.empty()) out.push_back('&');
    out.append(k).append("=").append(v);
  }
  return out;
}

std::vector<std::string> sigv4_headers(const SigV4Request& req, const AwsCredentials& creds) {
  static const std::string kEmptyPayload = sha256_hex("");
  const std::string amz_date = utc(req.when, "%Y%m%dT%H%M%SZ");
  const std::string date = amz_date.substr(0, 8);

  // Canonical headers: lower-case names, sorted (host < range < x-amz-*).
  std::vector<std::pair<std::string, std::string>> headers = {
      {"host", req.host}, {"x-amz-content-sha256", kEmptyPayload}, {"x-amz-date", amz_date}};
  if (!req.range.empty()) headers.emplace_back("range", req.range);
  if (!creds.session_token.empty())
    headers.emplace_back("x-amz-security-token", creds.session_token);
  std::sort(headers.begin(), headers.end());
  std::string canonical_headers, signed_headers;
  for (const auto& [k, v] : headers) {
    canonical_headers.append(k).append(":").append(v).append("\n");
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers.append(k);
  }
  const std::string canonical_request = req.method + "\n" + req.canonical_uri + "\n" +
                                        canonical_query(req.query) + "\n" + canonical_headers +
                                        "\n" + signed_headers + "\n" + kEmptyPayload;
  const std::string scope = date + "/" + req.region + "/" + req.service + "/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + sha256_hex(canonical_request);
  Digest key = hmac("AWS4" + creds.secret_key, date);
  key = hmac(view(key), req.region);
  key = hmac(view(key), req.service);
  key = hmac(view(key), "aws4_request");
  const Digest sig = hmac(view(key), to_sign);

  std::vector<std::string> out = {"x-amz-date: " + amz_date,
                                  "x-amz-content-sha256: " + kEmptyPayload};
  if (!creds.session_token.empty()) out.push_back("x-amz-security-token: " + creds.session_token);
  out.push_back("Authorization: AWS4-HMAC-SHA256 Credential=" + creds.access_key + "/" + scope +
                ", SignedHeaders=" + signed_headers + ", Signature=" + hex(sig.data(), sig.size()));
  return out;
}

}  // namespace zarrflow
