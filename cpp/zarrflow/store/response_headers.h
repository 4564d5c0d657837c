// HTTP response header lines, as libcurl hands them to HttpClient one at a time: the status line
// and the headers a ranged GET needs (Content-Length, Content-Range, Retry-After, ETag,
// Last-Modified). Header names are case-insensitive; malformed values are ignored (left unset),
// never trusted.
// Thread-safety: a pure function (Last-Modified goes through libcurl's reentrant date parser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zarrflow {

struct ResponseHeaders {
  long status = 0;                                      // 0 until a three-digit status line
  std::optional<std::uint64_t> content_length;          // Content-Length
  std::optional<std::uint64_t> range_start, range_end;  // Content-Range: bytes a-b/total (both
  std::optional<std::uint64_t> total_size;              // or neither), total when a number
  std::optional<double> retry_after;                    // Retry-After, in seconds
  std::string etag;                                     // ETag without W/ and quotes (≤ 1 KiB)
  std::optional<std::int64_t> last_modified_s;          // Last-Modified, seconds since the epoch
};

// Folds one header line (CR/LF line ending included or not) into `h`. A status line
// ("HTTP/1.1 206 Partial Content") starts a new response — after a redirect or a
// 100-continue — and clears what the previous one set.
void parse_response_header_line(std::string_view line, ResponseHeaders& h);

}  // namespace zarrflow
