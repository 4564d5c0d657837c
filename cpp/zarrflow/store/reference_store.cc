#include "zarrflow/store/reference_store.h"

#include <cstring>

#include "zarrflow/store/byte_reader.h"

namespace zarrflow {

ChunkReference ChunkReference::of_inline(ConstByteSpan bytes, std::shared_ptr<const void> owner) {
  ChunkReference r;
  r.kind = Kind::kInline;
  r.inline_bytes = bytes;
  r.owner = std::move(owner);
  return r;
}

namespace {

// A reference to bytes [offset, offset + length) of `target` (a key or a location).
ChunkReference ranged(ChunkReference::Kind kind, std::string target, std::uint64_t offset,
                      std::optional<std::uint64_t> length) {
  ChunkReference r;
  r.kind = kind;
  r.target = std::move(target);
  r.offset = offset;
  r.length = length;
  return r;
}

}  // namespace

ChunkReference ChunkReference::of_key(std::string key, std::uint64_t offset,
                                      std::optional<std::uint64_t> length) {
  return ranged(Kind::kKey, std::move(key), offset, length);
}

ChunkReference ChunkReference::of_location(std::string url, std::uint64_t offset,
                                           std::optional<std::uint64_t> length) {
  return ranged(Kind::kLocation, std::move(url), offset, length);
}

std::string ChunkReference::describe() const {
  if (kind == Kind::kInline)
    return "inline value (" + std::to_string(inline_bytes.size()) + " bytes)";
  std::string s =
      kind == Kind::kKey ? "chunk object '" + target + "'" : "virtual chunk '" + target + "'";
  if (length) return s + " " + ByteRange::of(offset, *length).to_string();
  return offset == 0 ? s : s + " from byte " + std::to_string(offset);
}

ReferenceStore::ReferenceStore(std::shared_ptr<const Store> base, VirtualChunkContainers containers)
    : base_(std::move(base)), containers_(std::move(containers)) {}

Status ReferenceStore::annotate(Status s, std::string_view key, const ChunkReference& ref) const {
  return std::move(s).annotate(describe_key(key) + ": " + ref.describe());
}

Result<ReferenceStore::Target> ReferenceStore::target_of(const ChunkReference& ref) const {
  Target t;
  if (ref.kind == ChunkReference::Kind::kKey) {
    if (!base_) return internal_error("a key reference in a store without an underlying store");
    t.store = base_.get();
    t.key = ref.target;
  } else {
    ZF_ASSIGN_OR_RETURN(auto resolved, containers_.resolve(ref.target));
    t.store = resolved.store;
    t.key = std::move(resolved.key);
  }
  t.name = t.store->describe_key(t.key);
  if (ref.kind == ChunkReference::Kind::kLocation) ZF_RETURN_IF_ERROR(check_version(ref, t));
  return t;
}

Status ReferenceStore::check_version(const ChunkReference& ref, const Target& t) const {
  if (ref.etag.empty() && !ref.modified_s) return {};
  const std::string cache_key =
      t.name + '\n' + ref.etag + '\n' + (ref.modified_s ? std::to_string(*ref.modified_s) : "");
  {
    std::lock_guard lock(checked_mu_);
    if (checked_.count(cache_key)) return {};
  }
  ZF_ASSIGN_OR_RETURN(auto version, t.store->version(t.key));
  if (!version) return not_found(t.name + " does not exist");
  if (!ref.etag.empty()) {
    if (version->etag.empty())
      return checksum_mismatch(t.name + ": the reference requires ETag '" + ref.etag +
                               "' but the storage reports none, so the object cannot be checked");
    if (version->etag != ref.etag)
      return checksum_mismatch(t.name + " changed since the reference was made: its ETag is '" +
                               version->etag + "', the reference's '" + ref.etag + "'");
  }
  if (ref.modified_s) {
    if (!version->modified_s)
      return checksum_mismatch(t.name +
                               ": the reference requires a modification time but the "
                               "storage reports none, so the object cannot be checked");
    if (*version->modified_s > *ref.modified_s)
      return checksum_mismatch(t.name + " changed since the reference was made: modified at " +
                               std::to_string(*version->modified_s) +
                               " s since the epoch, after the reference's " +
                               std::to_string(*ref.modified_s));
  }
  std::lock_guard lock(checked_mu_);
  checked_.emplace(cache_key, Status());
  return {};
}

Result<std::optional<std::vector<Buffer>>> ReferenceStore::read_target(
    std::string_view key, const ChunkReference& ref, std::span<const ByteRange> ranges) const {
  auto run = [&]() -> Result<std::vector<Buffer>> {
    ZF_ASSIGN_OR_RETURN(Target t, target_of(ref));
    auto missing = [&] { return not_found(t.name + " does not exist"); };
    std::uint64_t length = 0;
    if (ref.length) {
      length = *ref.length;
    } else {
      ZF_ASSIGN_OR_RETURN(auto total, t.store->size(t.key));
      if (!total) return missing();
      if (*total < ref.offset)
        return corrupt_data(t.name + " has " + std::to_string(*total) +
                            " bytes, the reference starts at byte " + std::to_string(ref.offset));
      length = *total - ref.offset;
    }
    std::vector<ByteRange> abs;
    abs.reserve(ranges.empty() ? 1 : ranges.size());
    if (ranges.empty()) abs.push_back(ByteRange::of(ref.offset, length));
    for (const auto& r : ranges) {
      ZF_ASSIGN_OR_RETURN(ByteRange inside, resolve_range(r, length, "the referenced bytes"));
      abs.push_back(ByteRange::of(ref.offset + inside.offset, inside.length));
    }
    ZF_ASSIGN_OR_RETURN(auto parts, t.store->get_ranges(t.key, abs));
    if (!parts) return missing();
    return std::move(*parts);
  };
  auto r = run();
  if (!r.ok()) return annotate(std::move(r).take_status(), key, ref);
  return std::optional(std::move(r).value());
}

Result<std::optional<Buffer>> ReferenceStore::get(std::string_view key,
                                                  std::uint64_t max_size) const {
  ZF_ASSIGN_OR_RETURN(auto ref, reference(key));
  if (!ref) return std::optional<Buffer>();
  // A reference states its size (inline bytes, or a range): refuse it before reading.
  const std::optional<std::uint64_t> size = ref->kind == ChunkReference::Kind::kInline
                                                ? std::optional(ref->inline_bytes.size())
                                                : ref->length;
  if (size && *size > max_size) return value_too_large(describe_key(key), *size, max_size);
  if (ref->kind == ChunkReference::Kind::kInline)
    return std::optional(Buffer::copy_of(ref->inline_bytes));
  ZF_ASSIGN_OR_RETURN(auto parts, read_target(key, *ref, {}));
  if ((*parts)[0].size() > max_size)
    return value_too_large(describe_key(key), (*parts)[0].size(), max_size);
  return std::optional(std::move((*parts)[0]));
}

Result<std::optional<std::vector<Buffer>>> ReferenceStore::get_ranges(
    std::string_view key, std::span<const ByteRange> ranges) const {
  ZF_ASSIGN_OR_RETURN(auto ref, reference(key));
  if (!ref) return std::optional<std::vector<Buffer>>();
  if (ref->kind == ChunkReference::Kind::kInline)
    return MemoryReader(ref->inline_bytes, describe_key(key)).read(ranges);
  if (ranges.empty()) return std::optional(std::vector<Buffer>());
  return read_target(key, *ref, ranges);
}

Result<bool> ReferenceStore::read_exact(std::string_view key, ByteSpan dst) const {
  ZF_ASSIGN_OR_RETURN(auto ref, reference(key));
  if (!ref) return false;
  auto wrong_size = [&](std::uint64_t n) {
    return corrupt_data(describe_key(key) + " has " + std::to_string(n) + " bytes, expected " +
                        std::to_string(dst.size()));
  };
  if (ref->kind == ChunkReference::Kind::kInline) {
    if (ref->inline_bytes.size() != dst.size()) return wrong_size(ref->inline_bytes.size());
    if (!dst.empty()) std::memcpy(dst.data(), ref->inline_bytes.data(), dst.size());
    return true;
  }
  if (!ref->length) return Store::read_exact(key, dst);
  if (*ref->length != dst.size()) return wrong_size(*ref->length);
  return read_range_into(key, 0, dst);
}

Result<bool> ReferenceStore::read_range_into(std::string_view key, std::uint64_t offset,
                                             ByteSpan dst) const {
  ZF_ASSIGN_OR_RETURN(auto ref, reference(key));
  if (!ref) return false;
  const ByteRange want = ByteRange::of(offset, dst.size());
  if (ref->kind == ChunkReference::Kind::kInline) {
    ZF_RETURN_IF_ERROR(resolve_range(want, ref->inline_bytes.size(), describe_key(key)));
    if (!dst.empty()) std::memcpy(dst.data(), ref->inline_bytes.data() + offset, dst.size());
    return true;
  }
  if (!ref->length) return Store::read_range_into(key, offset, dst);
  auto run = [&]() -> Status {
    ZF_RETURN_IF_ERROR(resolve_range(want, *ref->length, "the referenced bytes"));
    ZF_ASSIGN_OR_RETURN(Target t, target_of(*ref));
    ZF_ASSIGN_OR_RETURN(bool found, t.store->read_range_into(t.key, ref->offset + offset, dst));
    if (!found) return not_found(t.name + " does not exist");
    return {};
  };
  Status s = run();
  if (!s.ok()) return annotate(std::move(s), key, *ref);
  return true;
}

Result<std::optional<std::uint64_t>> ReferenceStore::size(std::string_view key) const {
  ZF_ASSIGN_OR_RETURN(auto ref, reference(key));
  if (!ref) return std::optional<std::uint64_t>();
  if (ref->kind == ChunkReference::Kind::kInline)
    return std::optional<std::uint64_t>(ref->inline_bytes.size());
  if (ref->length) return std::optional(*ref->length);
  auto run = [&]() -> Result<std::uint64_t> {
    ZF_ASSIGN_OR_RETURN(Target t, target_of(*ref));
    ZF_ASSIGN_OR_RETURN(auto total, t.store->size(t.key));
    if (!total) return not_found(t.name + " does not exist");
    if (*total < ref->offset)
      return corrupt_data(t.name + " has " + std::to_string(*total) +
                          " bytes, the reference starts at byte " + std::to_string(ref->offset));
    return *total - ref->offset;
  };
  auto r = run();
  if (!r.ok()) return annotate(std::move(r).take_status(), key, *ref);
  return std::optional(*r);
}

Status ReferenceStore::set(std::string_view key, ConstByteSpan) {
  return unimplemented(describe_key(key) + ": reference stores are read-only");
}

ThreadPool* ReferenceStore::io_pool() const {
  if (base_ && base_->io_pool()) return base_->io_pool();
  return containers_.io_pool();
}

}  // namespace zarrflow
