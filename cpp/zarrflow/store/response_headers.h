// HTTP response header lines, as libcurl hands them to HttpClient one at a time: the status line
// and the few headers a ranged GET needs (Content-Length, Content-Range, Retry-After). Header
// names are case-insensitive; malformed values are ignored (left unset), never trusted.
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace zarrflow {

struct ResponseHeaders {
  long status = 0;                                       // 0 until a status line arrives
  std::optional<std::uint64_t> content_length;           // Content-Length
  std::optional<std::uint64_t> range_start, total_size;  // Content-Range: bytes a-b/total
  std::optional<double> retry_after;                     // Retry-After, in seconds
};

// Folds one header line (CR/LF line ending included or not) into `h`. A status line
// ("HTTP/1.1 206 Partial Content") starts a new response — after a redirect or a
// 100-continue — and clears what the previous one set.
void parse_response_header_line(std::string_view line, ResponseHeaders& h);

}  // namespace zarrflow
