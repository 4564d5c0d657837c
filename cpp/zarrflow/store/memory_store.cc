#include "zarrflow/store/memory_store.h"

#include <mutex>
#include <set>

#include "zarrflow/store/byte_reader.h"

namespace zarrflow {

MemoryStore::Value MemoryStore::find(std::string_view key) const {
  std::shared_lock lock(mu_);
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : it->second;
}

Result<std::optional<Buffer>> MemoryStore::get(std::string_view key, std::uint64_t max_size) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  Value v = find(key);
  if (!v) return std::optional<Buffer>();
  if (v->size() > max_size) return value_too_large(describe_key(key), v->size(), max_size);
  return std::optional(Buffer::copy_of(*v));
}

Result<std::optional<std::vector<Buffer>>> MemoryStore::get_ranges(
    std::string_view key, std::span<const ByteRange> ranges) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  Value v = find(key);
  if (!v) return std::optional<std::vector<Buffer>>();
  return MemoryReader(*v, describe_key(key)).read(ranges);
}

Result<std::optional<std::uint64_t>> MemoryStore::size(std::string_view key) const {
  ZF_RETURN_IF_ERROR(validate_key(key));
  Value v = find(key);
  if (!v) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(v->size());
}

Result<std::vector<ListEntry>> MemoryStore::list(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::vector<ListEntry> out;
  std::shared_lock lock(mu_);
  for (auto it = values_.lower_bound(p); it != values_.end() && it->first.starts_with(p); ++it)
    out.push_back({it->first, it->second->size()});
  return out;
}

Result<std::vector<std::string>> MemoryStore::list_dir(std::string_view prefix) const {
  ZF_RETURN_IF_ERROR(validate_key(prefix, /*allow_empty=*/true));
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::set<std::string> names;
  std::shared_lock lock(mu_);
  for (auto it = values_.lower_bound(p); it != values_.end() && it->first.starts_with(p); ++it) {
    std::string_view rest = std::string_view(it->first).substr(p.size());
    names.emplace(rest.substr(0, rest.find('/')));
  }
  return std::vector<std::string>(names.begin(), names.end());
}

Status MemoryStore::set(std::string_view key, ConstByteSpan value) {
  ZF_RETURN_IF_ERROR(validate_key(key));
  auto v = std::make_shared<const std::vector<std::byte>>(value.begin(), value.end());
  std::unique_lock lock(mu_);
  values_.insert_or_assign(std::string(key), std::move(v));
  return {};
}

Status MemoryStore::set(std::string_view key, std::string_view text) {
  return set(key, std::as_bytes(std::span(text.data(), text.size())));
}

void MemoryStore::erase(std::string_view key) {
  std::unique_lock lock(mu_);
  auto it = values_.find(key);
  if (it != values_.end()) values_.erase(it);
}

std::string MemoryStore::describe_key(std::string_view key) const {
  return name_ + "://" + printable_key(key);
}

}  // namespace zarrflow
