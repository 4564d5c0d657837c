#include "zarrflow/store/response_headers.h"

#include <cctype>

namespace zarrflow {
namespace {

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

std::optional<std::uint64_t> parse_u64(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  std::uint64_t v = 0;
  std::size_t n = 0;
  for (; n < s.size() && s[n] >= '0' && s[n] <= '9'; ++n) {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + std::uint64_t(s[n] - '0');
  }
  if (n == 0) return std::nullopt;
  return v;
}

}  // namespace

void parse_response_header_line(std::string_view line, ResponseHeaders& h) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or 100-continue)
    const std::size_t sp = line.find(' ');
    // A status code has three digits; anything else is no status (0), not a wrapped number.
    const auto code = sp == std::string_view::npos ? std::nullopt : parse_u64(line.substr(sp + 1));
    h.status = code && *code >= 100 && *code <= 999 ? static_cast<long>(*code) : 0;
    h.content_length.reset();
    h.range_start.reset();
    h.total_size.reset();
    h.retry_after.reset();
  } else if (iequals_prefix(line, "content-length:")) {
    h.content_length = parse_u64(line.substr(15));
  } else if (iequals_prefix(line, "content-range:")) {
    // "bytes 0-99/1234" or "bytes */1234"
    std::string_view v = line.substr(14);
    const std::size_t sp = v.find("bytes ");
    if (sp != std::string_view::npos) v = v.substr(sp + 6);
    if (const std::size_t slash = v.find('/'); slash != std::string_view::npos) {
      h.total_size = parse_u64(v.substr(slash + 1));
      if (v.front() != '*') h.range_start = parse_u64(v);
    }
  } else if (iequals_prefix(line, "retry-after:")) {
    if (auto s = parse_u64(line.substr(12))) h.retry_after = double(*s);
  }
}

}  // namespace zarrflow
