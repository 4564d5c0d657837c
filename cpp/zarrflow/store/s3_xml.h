// The few pieces of S3's XML responses a reader needs: ListObjectsV2 pages and error bodies.
//
// S3, GCS's XML API, MinIO and moto all return the same flat elements; a full XML parser is not
// needed for them (no attributes, no mixed content, no CDATA in these responses), but entity
// references in keys must be decoded. The scan is linear in the body and never recursive, so
// hostile bodies (deeply nested, unclosed, huge) cost their size and no more; the caller bounds
// the size. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow {

struct S3ListPage {
  std::vector<std::pair<std::string, std::uint64_t>> objects;  // full key, size
  std::vector<std::string> common_prefixes;                    // with their trailing '/'
  bool truncated = false;
  std::string continuation_token;
};

// kCorruptData for a body that is not a whole ListBucketResult (another document, or one cut
// short: a missing close tag would otherwise drop keys silently) or has a non-numeric <Size>.
Result<S3ListPage> parse_s3_list(std::string_view xml);

// "NoSuchBucket: The specified bucket does not exist", or "" when `body` is not an S3 error.
std::string s3_error_summary(std::string_view body);

// Decodes &amp; &lt; &gt; &quot; &apos; and numeric references (UTF-8 out); references to NUL,
// surrogates or beyond U+10FFFF stay as written.
std::string xml_unescape(std::string_view s);

}  // namespace zarrflow
