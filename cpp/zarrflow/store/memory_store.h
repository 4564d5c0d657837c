// MemoryStore: keys and values held in process memory (tests, and stores built on the fly).
// Thread-safety: concurrent reads and writes are safe (a shared mutex guards the map).
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "zarrflow/store/store.h"

namespace zarrflow {

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(std::string name = "memory") : name_(std::move(name)) {}

  Result<std::optional<Buffer>> get(std::string_view key,
                                    std::uint64_t max_size = kNoLimit) const override;
  Result<std::optional<std::vector<Buffer>>> get_ranges(
      std::string_view key, std::span<const ByteRange> ranges) const override;
  Result<std::optional<std::uint64_t>> size(std::string_view key) const override;
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override;
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override;
  Status set(std::string_view key, ConstByteSpan value) override;
  Status set(std::string_view key, std::string_view text);
  void erase(std::string_view key);
  [[nodiscard]] std::string describe_key(std::string_view key) const override;

 private:
  using Value = std::shared_ptr<const std::vector<std::byte>>;
  Value find(std::string_view key) const;

  std::string name_;
  mutable std::shared_mutex mu_;
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace zarrflow
