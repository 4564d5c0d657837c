// ByteReader: ranged access to one stored value, for codecs that read part of a chunk (sharding).
//
// A reader is either a store key (ranges become store reads), a window of another reader (an inner
// shard inside an outer shard), or bytes already in memory. Codecs never see stores directly.
// Thread-safety: read() may be called concurrently. Lifetime: a reader borrows its store / parent /
// memory, which must outlive it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zarrflow/store/store.h"

namespace zarrflow {

class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Total size in bytes, or nullopt when the value does not exist.
  virtual Result<std::optional<std::uint64_t>> size() const = 0;
  // The bytes of each range, in order; nullopt when the value does not exist.
  virtual Result<std::optional<std::vector<Buffer>>> read(
      std::span<const ByteRange> ranges) const = 0;
  // The last `length` bytes and the total size (one store request where possible).
  virtual Result<std::optional<Store::Tail>> read_tail(std::uint64_t length) const;
  // Names the value in error messages.
  [[nodiscard]] virtual std::string describe() const = 0;
};

class StoreKeyReader final : public ByteReader {
 public:
  StoreKeyReader(const Store& store, std::string key) : store_(store), key_(std::move(key)) {}
  Result<std::optional<std::uint64_t>> size() const override { return store_.size(key_); }
  Result<std::optional<std::vector<Buffer>>> read(
      std::span<const ByteRange> ranges) const override {
    return store_.get_ranges(key_, ranges);
  }
  Result<std::optional<Store::Tail>> read_tail(std::uint64_t length) const override {
    return store_.get_tail(key_, length);
  }
  [[nodiscard]] std::string describe() const override { return store_.describe_key(key_); }

 private:
  const Store& store_;
  std::string key_;
};

// Bytes [offset, offset + length) of `parent`, addressed from 0.
class WindowReader final : public ByteReader {
 public:
  WindowReader(const ByteReader& parent, std::uint64_t offset, std::uint64_t length)
      : parent_(parent), offset_(offset), length_(length) {}
  Result<std::optional<std::uint64_t>> size() const override { return std::optional(length_); }
  Result<std::optional<std::vector<Buffer>>> read(std::span<const ByteRange> ranges) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  const ByteReader& parent_;
  std::uint64_t offset_, length_;
};

class MemoryReader final : public ByteReader {
 public:
  MemoryReader(ConstByteSpan bytes, std::string name) : bytes_(bytes), name_(std::move(name)) {}
  Result<std::optional<std::uint64_t>> size() const override {
    return std::optional<std::uint64_t>(bytes_.size());
  }
  Result<std::optional<std::vector<Buffer>>> read(std::span<const ByteRange> ranges) const override;
  [[nodiscard]] std::string describe() const override { return name_; }

 private:
  ConstByteSpan bytes_;
  std::string name_;
};

// Resolves `r` against a value of `size` bytes: suffix ranges become absolute; ranges past the
// end are kCorruptData naming `what`.
Result<ByteRange> resolve_range(const ByteRange& r, std::uint64_t size, std::string_view what);

}  // namespace zarrflow
