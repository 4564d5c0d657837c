// FileStore: a Zarr store in a local directory.
//
// Every key is opened relative to the root directory with openat2(RESOLVE_BENEATH) where the
// kernel has it, so neither '..', absolute names nor symlinks can lead outside the root; where it
// does not (older kernels, gVisor), or refuses an absolute symlink, the resolved real path is
// checked against the root instead. Symlinks that stay inside the root work as usual.
// Values must be regular files: they are opened with O_NONBLOCK (a FIFO would otherwise block
// the open until a writer came) and checked with fstat, so a directory, FIFO, socket or device
// where a value is expected is an I/O error naming the key, never a hang. Reads use pread into
// pooled buffers.
// Thread-safety: all methods are safe to call concurrently. Lifetime: holds an fd of the root.
#pragma once

#include <memory>
#include <string>

#include "zarrflow/store/store.h"

namespace zarrflow {

class FileStore final : public Store {
 public:
  // Opens `root` (must be an existing directory). kNotFound if it does not exist.
  static Result<std::shared_ptr<FileStore>> open(const std::string& root);
  ~FileStore() override;

  Result<std::optional<Buffer>> get(std::string_view key,
                                    std::uint64_t max_size = kNoLimit) const override;
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override;
  Result<bool> read_exact(std::string_view key, ByteSpan dst) const override;
  Result<bool> read_range_into(std::string_view key, std::uint64_t offset,
                               ByteSpan dst) const override;
  Result<std::optional<std::uint64_t>> size(std::string_view key) const override;
  Result<std::optional<ValueVersion>> version(std::string_view key) const override;
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override;
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override;
  Status set(std::string_view key, ConstByteSpan value) override;
  [[nodiscard]] std::string describe_key(std::string_view key) const override;

  [[nodiscard]] const std::string& root() const { return root_; }

  // Reads `length` bytes at `offset` with O_DIRECT (DMA into the caller's memory, bypassing the
  // page cache): the 4 KiB-aligned superset is read into `slot` and the bytes are moved to its
  // start. `slot` must be 4 KiB aligned and hold round_up(offset % 4096 + length, 4096) bytes;
  // where the file system refuses O_DIRECT the read is buffered. False when the key is missing;
  // `*direct` says whether O_DIRECT was used.
  Result<bool> read_direct(std::string_view key, std::uint64_t offset, std::uint64_t length,
                           ByteSpan slot, bool* direct) const;

 private:
  FileStore(std::string root, std::string real_root, int root_fd);
  // An open fd for `key`, -1 when it does not exist, or an error.
  Result<int> open_key(std::string_view key, int flags) const;
  // An open fd of the regular file holding `key`'s value and its size; -1 when the key does not
  // exist; an error naming the key when something other than a regular file is there.
  Result<int> open_value(std::string_view key, std::uint64_t* size) const;

  std::string root_;       // as given, for messages
  std::string real_root_;  // realpath of the root, for the fallback containment check
  int root_fd_;
  bool have_openat2_;
  mutable BufferPool pool_;
};

}  // namespace zarrflow
