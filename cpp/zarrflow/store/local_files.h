// LocalFiles: the capability of a store whose values are whole local files (FileStore), which
// readers that bypass the store's own reads need: GPUDirect Storage (cuFile opens the file
// itself) and O_DIRECT reads into pinned staging. Store::local_files() returns it, or null for
// stores without it (memory, HTTP, reference and Icechunk stores).
// Thread-safety: as the store's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/status.h"

namespace zarrflow {

class LocalFiles {
 public:
  virtual ~LocalFiles() = default;

  // The path of the file that holds `key`'s value (the key is not validated here: callers pass
  // keys the store has already read or measured).
  [[nodiscard]] virtual std::string path_of(std::string_view key) const = 0;

  // Reads `length` bytes at `offset` with O_DIRECT (DMA into the caller's memory, bypassing the
  // page cache): the 4 KiB-aligned superset is read into `slot` and the bytes are moved to its
  // start. `slot` must be 4 KiB aligned and hold round_up(offset % 4096 + length, 4096) bytes;
  // where the file system refuses O_DIRECT the read is buffered. False when the key is missing;
  // `*direct` says whether O_DIRECT was used.
  virtual Result<bool> read_direct(std::string_view key, std::uint64_t offset, std::uint64_t length,
                                   ByteSpan slot, bool* direct) const = 0;
};

}  // namespace zarrflow
