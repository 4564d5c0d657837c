// libFuzzer target: the S3 XML reader — ListObjectsV2 pages (keys, sizes, common prefixes,
// truncation and continuation tokens), error bodies and entity decoding — on arbitrary text, as
// a misbehaving or hostile server could send it.
// Input: the response body.
#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto page = parse_s3_list(body);
  if (page.ok()) {
    for (const auto& [key, bytes] : page->objects) fuzz::require(key.size() <= size, "key size");
    for (const auto& p : page->common_prefixes) fuzz::require(p.size() <= size, "prefix size");
  } else {
    fuzz::require_not_internal(page.status());
  }
  (void)s3_error_summary(body);
  // Every entity reference is at least as long as the UTF-8 it decodes to.
  fuzz::require(xml_unescape(body).size() <= size, "xml_unescape grew its input");
  return 0;
}
