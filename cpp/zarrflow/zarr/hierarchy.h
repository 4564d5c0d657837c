// Groups and node discovery: open whatever Zarr node (v2 or v3) lives at a path in a store.
//
// A group's members come from its consolidated metadata when it has some (v3 inline
// "consolidated_metadata", v2 ".zmetadata") — then opening members reads nothing more — and from
// listing the store otherwise. Member names are validated as keys, so consolidated metadata
// cannot point outside the store. Every document is read and parsed under OpenLimits (size,
// nesting), and any malformed value, whatever its JSON type, is a kInvalidMetadata naming the file.
// Thread-safety: immutable after open. Lifetime: shares ownership of the store.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "zarrflow/zarr/array.h"

namespace zarrflow {

class Group;
using Node = std::variant<std::shared_ptr<Array>, std::shared_ptr<Group>>;

class Group {
 public:
  Group(std::shared_ptr<const Store> store, std::string path, GroupMetadata md,
        OpenLimits limits = {})
      : store_(std::move(store)), path_(std::move(path)), md_(std::move(md)), limits_(limits) {}

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const GroupMetadata& metadata() const { return md_; }

  // Names of the immediate children that are arrays or groups, sorted.
  Result<std::vector<std::string>> member_names() const;
  // Opens a member by relative path ("t2m" or "pressure/u"); kNotFound if there is none.
  Result<Node> open_member(std::string_view name) const;

 private:
  std::shared_ptr<const Store> store_;
  std::string path_;
  GroupMetadata md_;
  OpenLimits limits_;  // members open under the group's limits
};

// Opens the array or group at `path` ("" = store root). `zarr_format` forces v2 or v3 lookup.
Result<Node> open_node(std::shared_ptr<const Store> store, const std::string& path,
                       std::optional<int> zarr_format = std::nullopt,
                       const OpenLimits& limits = {});

}  // namespace zarrflow
