// Store: the key-value interface every Zarr node and chunk is read through.
//
// Keys are '/'-separated, relative to the store root ("era5/t2m/c/0/1/2"). Every implementation
// validates keys with validate_key() first, so no key can name something outside the root.
// A missing key is not an error: get() returns std::nullopt (Zarr turns that into fill values
// where the spec says so); an I/O failure is an error naming the key. Whole-value reads take the
// most bytes the caller can use (a chunk's largest encoding, a metadata document's cap): a larger
// value is an error found before anything of its size is allocated.
// Thread-safety: every method may be called concurrently from many threads.
// Lifetime: stores are shared through std::shared_ptr; buffers they return own their memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"
#include "zarrflow/core/thread_pool.h"

namespace zarrflow {

class LocalFiles;  // local_files.h

// A byte range of a value: [offset, offset + length), or the last `length` bytes when suffix.
struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool suffix = false;

  static ByteRange of(std::uint64_t offset, std::uint64_t length) {
    return {offset, length, false};
  }
  static ByteRange last(std::uint64_t length) { return {0, length, true}; }
  [[nodiscard]] std::string to_string() const;
};

// Limits for merging nearby ranges of one value into one read (see range_coalescer.h).
struct CoalesceOptions {
  std::uint64_t max_gap_bytes = 1 << 20;      // bytes read and thrown away to save a request
  std::uint64_t max_merged_bytes = 16 << 20;  // upper bound of a merged request
};

// What identifies the stored version of a value, to check that the value a reference points at
// (a virtual chunk inside a netCDF file) has not changed since the reference was made.
struct ValueVersion {
  // The object store's ETag (quotes stripped); for local files "<inode>-<mtime in µs>-<size>" in
  // lowercase hex, the ETag icechunk and Rust's object_store give local files.
  std::string etag;
  std::optional<std::int64_t> modified_s;  // last modification, seconds since the Unix epoch
};

struct ListEntry {
  std::string key;     // relative to the listed prefix's store root (full key)
  std::uint64_t size;  // bytes
};

class Store {
 public:
  static constexpr std::uint64_t kNoLimit = UINT64_MAX;

  virtual ~Store() = default;

  // The whole value, or nullopt when the key does not exist. A value of more than `max_size`
  // bytes is kCorruptData naming the key and both sizes; no buffer larger than max_size is ever
  // allocated for it. Overrides repeat the default.
  virtual Result<std::optional<Buffer>> get(std::string_view key,
                                            std::uint64_t max_size = kNoLimit) const = 0;

  // Each range of one value, in order; nullopt when the key does not exist. A range reaching past
  // the end of the value is an error (kCorruptData: the data is shorter than its index says).
  virtual Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const = 0;

  // Reads the whole value into caller memory: false when the key is missing, kCorruptData when
  // the value is not exactly dst.size() bytes. The default copies from get(); local stores read
  // in place (uncompressed chunks land in the destination with no copy).
  virtual Result<bool> read_exact(std::string_view key, ByteSpan dst) const;

  // Reads bytes [offset, offset + dst.size()) of a value into caller memory (pinned staging of
  // the GPU path): false when the key is missing, kCorruptData when the value is shorter.
  virtual Result<bool> read_range_into(std::string_view key, std::uint64_t offset,
                                       ByteSpan dst) const;

  // The last `length` bytes of a value and the value's total size, nullopt when the key is
  // missing; kCorruptData when the value is shorter. One request where the medium allows (HTTP
  // suffix range: a shard index without a separate size query); default: size() + get_ranges().
  struct Tail {
    Buffer bytes;
    std::uint64_t total_size = 0;
  };
  virtual Result<std::optional<Tail>> get_tail(std::string_view key, std::uint64_t length) const;

  // Size of the value, or nullopt when the key does not exist.
  virtual Result<std::optional<std::uint64_t>> size(std::string_view key) const = 0;

  // The value's version (ETag, modification time), nullopt when the key does not exist;
  // kUnimplemented where the medium keeps none (the default).
  virtual Result<std::optional<ValueVersion>> version(std::string_view key) const;

  // Every key below `prefix` (recursively), with sizes, sorted. prefix "" lists the whole store.
  virtual Result<std::vector<ListEntry>> list(std::string_view prefix) const = 0;

  // Names of the immediate children of `prefix` (keys and "directories"), sorted.
  virtual Result<std::vector<std::string>> list_dir(std::string_view prefix) const = 0;

  // Writes a value (memory stores and test fixtures; the reader never writes).
  virtual Status set(std::string_view key, ConstByteSpan value) = 0;

  // "file:///data/era5.zarr/t2m/c/0" — how a key is named in error messages.
  [[nodiscard]] virtual std::string describe_key(std::string_view key) const = 0;

  // Remote stores: a pool with one thread per request they keep in flight. Readers run their
  // per-chunk fetches on it instead of the CPU-sized pool, so network latency, not the core
  // count, sets the concurrency. Local stores: null (reads use the caller's pool).
  [[nodiscard]] virtual ThreadPool* io_pool() const { return nullptr; }
  // The pool a reader runs this store's fetches on: io_pool(), else `fallback` (the caller's).
  [[nodiscard]] ThreadPool* fetch_pool(ThreadPool* fallback) const {
    ThreadPool* io = io_pool();
    return io != nullptr ? io : fallback;
  }

  // How readers should merge nearby ranges of one value (inner chunks of a shard) on this store.
  [[nodiscard]] virtual CoalesceOptions coalescing() const { return {}; }

  // Stores whose values are local files: their paths and O_DIRECT reads (local_files.h), for
  // the GPU read path's cuFile and io='direct' reads. Null for the rest (the default).
  [[nodiscard]] virtual const LocalFiles* local_files() const { return nullptr; }
};

// The error for a value of `size` bytes where at most `max_size` fit (shared by every store).
Status value_too_large(const std::string& described_key, std::uint64_t size,
                       std::uint64_t max_size);

// `key` as messages show it: control bytes, DEL and backslashes escaped (\x00, \n, \\), so a
// key holding a NUL or a newline reads whole and unambiguous.
std::string printable_key(std::string_view key);

// Rejects keys that are empty where a name is needed, absolute, contain "." or ".." segments,
// empty segments, backslashes or NUL bytes (kPathEscape / kInvalidArgument). `allow_empty` lets
// the root ("") through for listing.
Status validate_key(std::string_view key, bool allow_empty = false);

// Joins key segments with '/', skipping empty ones: join_key("a", "b/c") == "a/b/c".
std::string join_key(std::string_view a, std::string_view b);

}  // namespace zarrflow
