// VirtualChunkContainers: the places a virtual chunk reference may read from, each with its own
// store (and so its own credentials, endpoint and transport settings).
//
// A virtual chunk names an absolute URL ("s3://bucket/era5/1990.nc", "file:///data/x.nc",
// "https://host/x.nc") plus a byte range. A container is a URL prefix ending in '/' and a Store
// whose keys are the rest of the URL below that prefix: "s3://bucket/era5/" and an HttpStore of
// bucket "bucket", prefix "era5". A location is read through the container with the longest
// matching prefix; a location under no container is an error naming it, never a fetch, as in
// icechunk, where a repository's containers must be authorised by the user who opens it. The key
// below the prefix is validated by the container's store, so "..", "." and absolute segments
// cannot leave the container (file:// containers also open files RESOLVE_BENEATH their root).
// Thread-safety: const methods may be called concurrently; add() only while building.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zarrflow/store/store.h"

namespace zarrflow {

// A location as containers match it: local absolute paths become file:// URLs, "gcs://"
// becomes "gs://". Relative paths and URLs without a scheme are kInvalidArgument.
Result<std::string> normalize_location(std::string_view location);

class VirtualChunkContainers {
 public:
  struct Container {
    std::string url_prefix;  // normalised, ends in '/'
    std::shared_ptr<const Store> store;
  };

  // Adds a container: `url_prefix` must be a file://, s3://, gs:// (gcs://) or http(s):// URL
  // ending in '/' with a bucket, host or path, and without "." or ".." segments. A prefix added
  // twice is kInvalidArgument.
  Status add(std::string_view url_prefix, std::shared_ptr<const Store> store);

  struct Resolved {
    const Store* store = nullptr;
    std::string key;  // below the container's prefix
  };
  // The container for `location` (normalised) and the key inside it; kPathEscape (Python:
  // PermissionError) naming the location and the authorised prefixes when none matches, or when
  // the key below the prefix would leave it.
  Result<Resolved> resolve(std::string_view location) const;

  [[nodiscard]] const std::vector<Container>& containers() const { return containers_; }
  [[nodiscard]] bool empty() const { return containers_.empty(); }
  // The I/O pool of the first remote container, or null when every container is local.
  [[nodiscard]] ThreadPool* io_pool() const;

 private:
  std::vector<Container> containers_;  // longest prefix first
};

}  // namespace zarrflow
