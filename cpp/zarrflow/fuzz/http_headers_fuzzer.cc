// libFuzzer target: HTTP response header parsing (status lines, Content-Length, Content-Range,
// Retry-After) on arbitrary header lines, as a misbehaving or hostile server could send them.
// Input: header lines separated by '\n' (each handed over with its '\n', as libcurl does).
#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/response_headers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  zarrflow::ResponseHeaders h;
  while (!all.empty()) {
    const std::size_t end = std::min(all.find('\n'), all.size() - 1) + 1;
    zarrflow::parse_response_header_line(all.substr(0, end), h);
    all.remove_prefix(end);
  }
  zarrflow::fuzz::require(h.status == 0 || (h.status >= 100 && h.status <= 999),
                          "an HTTP status that is not a three-digit code");
  return 0;
}
