// ReferenceStore: a read-only Store whose keys map to chunk references rather than to stored
// values — the common layer of Kerchunk reference sets and Icechunk repositories.
//
// A reference is one of
//   inline     the value's bytes, held in memory (Zarr metadata, small coordinate chunks);
//   key        bytes [offset, offset + length) of a key of the underlying store (an Icechunk
//              repository's chunks/<id> objects);
//   location   bytes [offset, offset + length) of an object at an absolute URL outside the
//              store — a virtual chunk, e.g. inside a netCDF4 file — read through the
//              VirtualChunkContainers the user authorised; optionally with the ETag and/or
//              modification time the object had when the reference was made.
// A subclass says what a key refers to (reference()), how to list keys and how keys are named;
// this class reads the bytes. A key with no reference is a missing value (fill value); a
// reference whose target is missing, shorter than the reference, or changed since (ETag differs,
// or modified after the recorded time, as icechunk's If-Match / If-Unmodified-Since checks) is an
// error naming the key and the target. Ranges of one value (shard indexes and inner chunks of a
// virtual shard) become ranges of the target and go to its store's get_ranges in one call, which
// merges nearby ones and, on remote stores, runs them concurrently.
// Thread-safety: all methods may be called concurrently. Lifetime: shared_ptr; keeps its stores.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "zarrflow/store/store.h"
#include "zarrflow/store/virtual_chunk_containers.h"

namespace zarrflow {

struct ChunkReference {
  enum class Kind : std::uint8_t { kInline, kKey, kLocation };
  Kind kind = Kind::kInline;
  // kInline: the bytes, kept alive by `owner` (a parsed manifest, a reference table).
  ConstByteSpan inline_bytes;
  std::shared_ptr<const void> owner;
  // kKey: a key of the underlying store; kLocation: an absolute URL or path.
  std::string target;
  std::uint64_t offset = 0;
  std::optional<std::uint64_t> length;  // nullopt: to the end of the target (a whole object)
  // kLocation checks: the ETag the target must still have, and the time (seconds since the
  // epoch) it must not have been modified after. Empty / nullopt: not checked.
  std::string etag;
  std::optional<std::int64_t> modified_s;

  static ChunkReference of_inline(ConstByteSpan bytes, std::shared_ptr<const void> owner);
  static ChunkReference of_key(std::string key, std::uint64_t offset,
                               std::optional<std::uint64_t> length);
  static ChunkReference of_location(std::string url, std::uint64_t offset,
                                    std::optional<std::uint64_t> length);
  // "inline (12 bytes)", "key 'chunks/ABC' bytes [0, 10)", "location 'file:///x.nc' bytes [..)"
  [[nodiscard]] std::string describe() const;
};

class ReferenceStore : public Store {
 public:
  // What `key` refers to; nullopt when nothing (a missing chunk, or no such node).
  virtual Result<std::optional<ChunkReference>> reference(std::string_view key) const = 0;

  Result<std::optional<Buffer>> get(std::string_view key,
                                    std::uint64_t max_size = kNoLimit) const override;
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override;
  Result<bool> read_exact(std::string_view key, ByteSpan dst) const override;
  Result<bool> read_range_into(std::string_view key, std::uint64_t offset,
                               ByteSpan dst) const override;
  Result<std::optional<std::uint64_t>> size(std::string_view key) const override;
  Status set(std::string_view key, ConstByteSpan value) override;
  // The pool of the underlying store if remote, else of the first remote container.
  [[nodiscard]] ThreadPool* io_pool() const override;

  [[nodiscard]] const VirtualChunkContainers& containers() const { return containers_; }
  [[nodiscard]] const std::shared_ptr<const Store>& base() const { return base_; }

 protected:
  // `base`: the store kKey references name (may be null when there are none).
  ReferenceStore(std::shared_ptr<const Store> base, VirtualChunkContainers containers);

 private:
  struct Target {
    const Store* store = nullptr;
    std::string key;
    std::string name;  // for messages: the key's or the location's description
  };
  // Where a kKey / kLocation reference's bytes are, after the container and version checks.
  Result<Target> target_of(const ChunkReference& ref) const;
  Status check_version(const ChunkReference& ref, const Target& t) const;
  // The reference's bytes [offset, offset + length) of its target, into dst when given.
  Result<std::optional<std::vector<Buffer>>> read_target(std::string_view key,
                                                         const ChunkReference& ref,
                                                         std::span<const ByteRange> ranges) const;
  Status annotate(Status s, std::string_view key, const ChunkReference& ref) const;

  std::shared_ptr<const Store> base_;
  VirtualChunkContainers containers_;
  mutable std::mutex checked_mu_;
  // Version checks done, by (location, etag, time): each object is checked once per store.
  mutable std::unordered_map<std::string, Status> checked_;
};

}  // namespace zarrflow
