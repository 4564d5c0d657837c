#include "zarrflow/store/store.h"

#include <cstring>

namespace zarrflow {

std::string ByteRange::to_string() const {
  if (suffix) return "last " + std::to_string(length) + " bytes";
  return "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + length) + ")";
}

Result<bool> Store::read_exact(std::string_view key, ByteSpan dst) const {
  ZF_ASSIGN_OR_RETURN(auto value, get(key, dst.size()));
  if (!value) return false;
  if (value->size() != dst.size())
    return corrupt_data(describe_key(key) + " has " + std::to_string(value->size()) +
                        " bytes, expected " + std::to_string(dst.size()));
  if (!dst.empty()) std::memcpy(dst.data(), value->data(), dst.size());
  return true;
}

Result<bool> Store::read_range_into(std::string_view key, std::uint64_t offset,
                                    ByteSpan dst) const {
  const ByteRange r = ByteRange::of(offset, dst.size());
  ZF_ASSIGN_OR_RETURN(auto parts, get_ranges(key, {&r, 1}));
  if (!parts) return false;
  if (!dst.empty()) std::memcpy(dst.data(), (*parts)[0].data(), dst.size());
  return true;
}

Result<std::optional<Store::Tail>> Store::get_tail(std::string_view key,
                                                   std::uint64_t length) const {
  ZF_ASSIGN_OR_RETURN(auto total, size(key));
  if (!total) return std::optional<Tail>();
  if (*total < length)
    return corrupt_data(describe_key(key) + " has " + std::to_string(*total) +
                        " bytes, fewer than the last " + std::to_string(length) + " wanted");
  const ByteRange r = ByteRange::of(*total - length, length);
  ZF_ASSIGN_OR_RETURN(auto parts, get_ranges(key, {&r, 1}));
  if (!parts) return std::optional<Tail>();
  return std::optional(Tail{std::move((*parts)[0]), *total});
}

Result<std::optional<ValueVersion>> Store::version(std::string_view key) const {
  return unimplemented(describe_key(key) +
                       ": this store keeps no version (ETag or modification "
                       "time) of its values");
}

Status value_too_large(const std::string& described_key, std::uint64_t size,
                       std::uint64_t max_size) {
  return corrupt_data(described_key + " has " + std::to_string(size) + " bytes, more than the " +
                      std::to_string(max_size) + " it can have");
}

std::string printable_key(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

Status validate_key(std::string_view key, bool allow_empty) {
  auto quoted = [&] { return "key '" + printable_key(key) + "'"; };
  if (key.empty()) {
    if (allow_empty) return {};
    return invalid_argument("empty key");
  }
  if (key.find('\0') != std::string_view::npos)
    return path_escape(quoted() + " contains a NUL byte");
  if (key.find('\\') != std::string_view::npos)
    return path_escape(quoted() + " contains a backslash");
  const std::string outside = ": it would resolve outside the store root";
  if (key.front() == '/') return path_escape(quoted() + " is absolute" + outside);
  std::size_t pos = 0;
  while (pos <= key.size()) {
    std::size_t end = key.find('/', pos);
    if (end == std::string_view::npos) end = key.size();
    std::string_view seg = key.substr(pos, end - pos);
    if (seg == "..") return path_escape(quoted() + " contains '..'" + outside);
    if (seg == ".") return path_escape(quoted() + " contains a '.' segment");
    if (seg.empty() && !(end == key.size() && pos == key.size()))  // allow one trailing '/'
      return path_escape(quoted() + " contains an empty segment");
    pos = end + 1;
  }
  return {};
}

std::string join_key(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string s;
  s.reserve(a.size() + 1 + b.size());
  s.append(a).append("/").append(b);
  return s;
}

}  // namespace zarrflow
