#include "zarrflow/store/response_headers.h"

#include <curl/curl.h>

#include <cctype>
#include <ctime>

namespace zarrflow {
namespace {

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

std::string_view trim_front(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  s = trim_front(s);
  std::uint64_t v = 0;
  std::size_t n = 0;
  for (; n < s.size() && s[n] >= '0' && s[n] <= '9'; ++n) {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + std::uint64_t(s[n] - '0');
  }
  if (n == 0) return std::nullopt;
  return v;
}

void start_response(std::string_view line, ResponseHeaders& h) {
  const std::size_t sp = line.find(' ');
  // A status code has three digits; anything else is no status (0), not a wrapped number.
  const auto code = sp == std::string_view::npos ? std::nullopt : parse_u64(line.substr(sp + 1));
  h = ResponseHeaders{};
  h.status = code && *code >= 100 && *code <= 999 ? static_cast<long>(*code) : 0;
}

// "bytes 0-99/1234", "bytes 0-99/*" or "bytes */1234"
void parse_content_range(std::string_view v, ResponseHeaders& h) {
  if (const std::size_t sp = v.find("bytes "); sp != std::string_view::npos) v = v.substr(sp + 6);
  const std::size_t slash = v.find('/');
  if (slash == std::string_view::npos) return;
  h.total_size = parse_u64(v.substr(slash + 1));
  const std::size_t dash = v.find('-');
  if (v.empty() || v.front() == '*' || dash == std::string_view::npos || dash > slash) return;
  const auto start = parse_u64(v.substr(0, dash));
  const auto end = parse_u64(v.substr(dash + 1, slash - dash - 1));
  if (start && end) {  // both or neither
    h.range_start = start;
    h.range_end = end;
  }
}

}  // namespace

void parse_response_header_line(std::string_view line, ResponseHeaders& h) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or 100-continue)
    start_response(line, h);
  } else if (iequals_prefix(line, "etag:")) {
    std::string_view v = trim_front(line.substr(5));
    if (v.starts_with("W/")) v.remove_prefix(2);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    h.etag.assign(v.substr(0, 1024));
  } else if (iequals_prefix(line, "last-modified:")) {
    const std::string date(line.substr(14));
    if (const time_t t = curl_getdate(date.c_str(), nullptr); t != -1) h.last_modified_s = t;
  } else if (iequals_prefix(line, "content-length:")) {
    h.content_length = parse_u64(line.substr(15));
  } else if (iequals_prefix(line, "content-range:")) {
    parse_content_range(line.substr(14), h);
  } else if (iequals_prefix(line, "retry-after:")) {
    if (auto s = parse_u64(line.substr(12))) h.retry_after = double(*s);
  }
}

}  // namespace zarrflow
