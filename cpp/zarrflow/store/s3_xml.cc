#include "zarrflow/store/s3_xml.h"

#include <charconv>

namespace zarrflow {
namespace {

// Text of each <tag>...</tag> inside [begin, end) of `xml`, in order.
std::vector<std::string_view> elements(std::string_view xml, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  std::size_t pos = 0;
  while ((pos = xml.find(open, pos)) != std::string_view::npos) {
    const std::size_t start = pos + open.size();
    const std::size_t stop = xml.find(close, start);
    if (stop == std::string_view::npos) break;
    out.push_back(xml.substr(start, stop - start));
    pos = stop + close.size();
  }
  return out;
}

std::string_view first(std::string_view xml, std::string_view tag) {
  auto all = elements(xml, tag);
  return all.empty() ? std::string_view() : all.front();
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// `s` with bytes outside printable ASCII shown as '?', for messages about bodies of any kind.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c < 0x20 || c > 0x7E) c = '?';
  return out;
}

}  // namespace

std::string xml_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const std::size_t semi = s[i] == '&' ? s.find(';', i) : std::string_view::npos;
    if (semi == std::string_view::npos || semi - i > 10) {
      out.push_back(s[i]);
      continue;
    }
    const std::string_view ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp")
      out.push_back('&');
    else if (ent == "lt")
      out.push_back('<');
    else if (ent == "gt")
      out.push_back('>');
    else if (ent == "quot")
      out.push_back('"');
    else if (ent == "apos")
      out.push_back('\'');
    else if (ent.size() > 1 && ent[0] == '#') {
      const bool hex = ent[1] == 'x' || ent[1] == 'X';
      const std::string_view digits = ent.substr(hex ? 2 : 1);
      std::uint32_t cp = 0;
      auto [p, ec] =
          std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      if (ec != std::errc() || p != digits.data() + digits.size() || cp == 0 || cp > 0x10FFFF ||
          (cp >= 0xD800 && cp <= 0xDFFF)) {
        out.push_back(s[i]);
        continue;
      }
      append_utf8(out, cp);
    } else {
      out.push_back(s[i]);
      continue;
    }
    i = semi;
  }
  return out;
}

Result<S3ListPage> parse_s3_list(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos)
    return corrupt_data("not a ListBucketResult: '" + printable(xml.substr(0, 200)) + "'");
  if (xml.rfind("</ListBucketResult>") == std::string_view::npos)
    return corrupt_data("the listing is cut short (no </ListBucketResult> in its " +
                        std::to_string(xml.size()) + " bytes)");
  S3ListPage page;
  for (std::string_view c : elements(xml, "Contents")) {
    const std::string_view size = first(c, "Size");
    std::uint64_t n = 0;
    auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (ec != std::errc() || p != size.data() + size.size())
      return corrupt_data("listing: bad <Size> '" + printable(size.substr(0, 40)) + "'");
    page.objects.emplace_back(xml_unescape(first(c, "Key")), n);
  }
  for (std::string_view c : elements(xml, "CommonPrefixes"))
    page.common_prefixes.push_back(xml_unescape(first(c, "Prefix")));
  page.truncated = first(xml, "IsTruncated") == "true";
  page.continuation_token = xml_unescape(first(xml, "NextContinuationToken"));
  if (page.truncated && page.continuation_token.empty())
    return corrupt_data("listing is truncated but has no NextContinuationToken");
  return page;
}

std::string s3_error_summary(std::string_view body) {
  if (body.find("<Error>") == std::string_view::npos) return {};
  std::string out = xml_unescape(first(body, "Code"));
  const std::string msg = xml_unescape(first(body, "Message"));
  if (!msg.empty()) out += (out.empty() ? "" : ": ") + msg;
  return out;
}

}  // namespace zarrflow
