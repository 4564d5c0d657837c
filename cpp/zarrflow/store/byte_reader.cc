#include "zarrflow/store/byte_reader.h"

#include <cstring>

namespace zarrflow {

Result<ByteRange> resolve_range(const ByteRange& r, std::uint64_t size, std::string_view what) {
  if (r.suffix) {
    if (r.length > size)
      return corrupt_data(std::string(what) + ": wants the last " + std::to_string(r.length) +
                          " bytes but it has only " + std::to_string(size));
    return ByteRange::of(size - r.length, r.length);
  }
  if (r.offset > size || r.length > size - r.offset)
    return corrupt_data(std::string(what) + ": " + r.to_string() + " reaches past its end (" +
                        std::to_string(size) + " bytes)");
  return r;
}

Result<std::optional<Store::Tail>> ByteReader::read_tail(std::uint64_t length) const {
  ZF_ASSIGN_OR_RETURN(auto total, size());
  if (!total) return std::optional<Store::Tail>();
  ZF_ASSIGN_OR_RETURN(ByteRange r, resolve_range(ByteRange::last(length), *total, describe()));
  ZF_ASSIGN_OR_RETURN(auto parts, read({&r, 1}));
  if (!parts) return std::optional<Store::Tail>();
  return std::optional(Store::Tail{std::move((*parts)[0]), *total});
}

Result<std::optional<std::vector<Buffer>>> WindowReader::read(
    std::span<const ByteRange> ranges) const {
  std::vector<ByteRange> shifted;
  shifted.reserve(ranges.size());
  for (const auto& r : ranges) {
    ZF_ASSIGN_OR_RETURN(ByteRange abs, resolve_range(r, length_, describe()));
    shifted.push_back(ByteRange::of(abs.offset + offset_, abs.length));
  }
  return parent_.read(shifted);
}

std::string WindowReader::describe() const {
  return parent_.describe() + " " + ByteRange::of(offset_, length_).to_string();
}

Result<std::optional<std::vector<Buffer>>> MemoryReader::read(
    std::span<const ByteRange> ranges) const {
  std::vector<Buffer> out;
  out.reserve(ranges.size());
  for (const auto& r : ranges) {
    ZF_ASSIGN_OR_RETURN(ByteRange abs, resolve_range(r, bytes_.size(), name_));
    out.push_back(Buffer::copy_of(bytes_.subspan(abs.offset, abs.length)));
  }
  return std::optional(std::move(out));
}

}  // namespace zarrflow
