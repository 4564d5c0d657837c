// Kerchunk reference sets (fsspec's ReferenceFileSystem format), JSON versions 0 and 1, as a
// read-only Store.
//
//   version 0: {"key": value, ...}
//   version 1: {"version": 1, "templates": {"u": "s3://bucket/x.nc"}, "gen": [...],
//               "refs": {"key": value, ...}}
// A value is inline data — a string (UTF-8 text, or "base64:..." binary), or a JSON object or
// array of non-references, kept as its JSON text — or a reference: [url] (the whole object) or
// [url, offset, length]. In version 1 "{{name}}" in a URL is replaced by templates[name], and each
// "gen" item {"key", "url", "offset", "length", "dimensions"} makes one reference per point of the
// product of its dimensions ({"start", "stop", "step"} ranges or lists of values), rendering
// "{{ expression }}" in its fields: integer arithmetic (+ - * // / % and parentheses) over the
// dimension names, as the Jinja templates fsspec renders. Keys are Zarr keys ("t2m/.zarray",
// "t2m/0.0.0", "zarr.json"); references read through the VirtualChunkContainers given.
// Thread-safety: immutable after parsing; reads may run concurrently.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "zarrflow/store/reference_store.h"

namespace zarrflow {

// A parsed reference set: keys → inline bytes or (url, offset, length).
class KerchunkReferences {
 public:
  // `source` names the reference file in error messages.
  static Result<std::shared_ptr<const KerchunkReferences>> parse_json(std::string_view json,
                                                                      const std::string& source);

  struct Entry {
    bool is_inline = false;
    std::string data;             // inline bytes
    std::uint32_t url_index = 0;  // into urls()
    std::uint64_t offset = 0;
    std::optional<std::uint64_t> length;  // nullopt: [url], the whole object
  };
  [[nodiscard]] const Entry* find(std::string_view key) const;
  [[nodiscard]] const std::map<std::string, Entry, std::less<>>& entries() const {
    return entries_;
  }
  // Every distinct URL referenced (as written, templates expanded).
  [[nodiscard]] const std::vector<std::string>& urls() const { return urls_; }
  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] int version() const { return version_; }

 private:
  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<std::string> urls_;
  std::string source_;
  int version_ = 0;
  friend class KerchunkParser;
};

class KerchunkStore final : public ReferenceStore {
 public:
  static std::shared_ptr<KerchunkStore> open(std::shared_ptr<const KerchunkReferences> refs,
                                             VirtualChunkContainers containers);

  Result<std::optional<ChunkReference>> reference(std::string_view key) const override;
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override;
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override;
  // "refs.json#t2m/0.0"
  [[nodiscard]] std::string describe_key(std::string_view key) const override;

  [[nodiscard]] const KerchunkReferences& references() const { return *refs_; }

 private:
  KerchunkStore(std::shared_ptr<const KerchunkReferences> refs, VirtualChunkContainers containers);
  std::shared_ptr<const KerchunkReferences> refs_;
};

// Decodes standard base64 (padding optional); kCorruptData on any other character.
Result<std::string> decode_base64(std::string_view text);

}  // namespace zarrflow
