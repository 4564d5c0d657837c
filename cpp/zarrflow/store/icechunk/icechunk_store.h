// IcechunkStore: one snapshot of an Icechunk repository (spec versions 1 and 2) as a read-only
// Zarr v3 store.
//
// Opening resolves a ref to a snapshot id — a branch, a tag (in spec 1 the JSON files
// refs/branch.<name>/ref.json and refs/tag.<name>/ref.json; in spec 2 the repo info file `repo`),
// or a snapshot id given directly — and reads snapshots/<id>: the hierarchy (node paths, their
// zarr.json documents) and, per array, the manifests that hold its chunk references with the
// region of the chunk grid each covers (several for split manifests). A manifest is read, checked
// and kept the first time a chunk it covers is asked for, never at open; its chunk references
// are verified one by one as reads reach them (format.h). Keys are those of a Zarr v3 store:
// "<path>/zarr.json" is the node's metadata, "<path>/c/<i>/<j>" a chunk; a chunk reference is
// inline bytes, a native chunk (bytes of chunks/<id> in the repository) or a virtual chunk (a URL,
// read through the VirtualChunkContainers the user authorised, with its ETag / modification
// checks). Every metadata file is verified before use (format.h), and read within the caps of
// IcechunkLimits: its stored size and its decompressed size are checked before the memory that
// would hold them is allocated.
// Thread-safety: all methods may be called concurrently; manifests load once. Lifetime: shared_ptr.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "zarrflow/store/icechunk/format.h"
#include "zarrflow/store/reference_store.h"

namespace zarrflow::icechunk {

// What one repository's metadata files may make zarrflow read and allocate (open(limits=...)).
struct IcechunkLimits {
  // A snapshot, the repo info file or the configuration: stored and decompressed bytes. A
  // snapshot holds every node's zarr.json, so it is sized like metadata (JsonLimits::max_bytes).
  std::uint64_t max_metadata_bytes = std::uint64_t{64} << 20;
  // One manifest, decompressed: 13-16 million chunk references like those of
  // benchmarks/bench_icechunk.py (virtual references of 67-84 bytes each, spec 2 and spec 1).
  std::uint64_t max_manifest_bytes = std::uint64_t{1} << 30;
};
// A spec-1 ref file is one small JSON object ({"snapshot": "<20 characters>"}).
inline constexpr std::uint64_t kMaxRefFileBytes = 64 << 10;

struct ResolvedRef {
  std::string snapshot_id;  // Crockford base 32
  std::string kind;         // "branch", "tag" or "snapshot"
  std::string name;         // the branch or tag name, or the id
};

// The refs of a repository: which spec, which branches and tags, and its configuration.
class Repository {
 public:
  // Detects the layout: spec 2 has a `repo` file, spec 1 a refs/branch.main/ref.json.
  // kNotFound when `storage` holds neither.
  static Result<std::shared_ptr<const Repository>> open(std::shared_ptr<const Store> storage,
                                                        IcechunkLimits limits = {});

  // `ref`: a branch, else a tag, else a snapshot id (20 base-32 characters) that exists.
  Result<ResolvedRef> resolve(std::string_view ref) const;
  [[nodiscard]] int spec_version() const { return spec_version_; }
  Result<std::vector<std::string>> branches() const;
  Result<std::vector<std::string>> tags() const;
  // Spec 2: the repository configuration (the repo info file's FlexBuffers `config`) as JSON;
  // null when absent. Spec 1 keeps it in config.yaml (read by the caller).
  [[nodiscard]] const nlohmann::json& config() const { return config_; }
  [[nodiscard]] const std::shared_ptr<const Store>& storage() const { return storage_; }
  [[nodiscard]] const IcechunkLimits& limits() const { return limits_; }

 private:
  Repository() = default;
  Result<std::optional<std::string>> read_ref_file(const std::string& key) const;

  std::shared_ptr<const Store> storage_;
  IcechunkLimits limits_;
  int spec_version_ = 0;
  Buffer repo_info_;  // spec 2: the verified FlatBuffers payload of `repo`
  nlohmann::json config_;
};

struct ChunkCounts {
  std::uint64_t native = 0, inline_ = 0, virtual_ = 0;
};

class IcechunkStore final : public ReferenceStore {
 public:
  // Opens the snapshot `ref` resolves to. `display` names the repository in messages.
  static Result<std::shared_ptr<IcechunkStore>> open(std::shared_ptr<const Repository> repo,
                                                     std::string_view ref,
                                                     VirtualChunkContainers containers,
                                                     std::string display);

  Result<std::optional<ChunkReference>> reference(std::string_view key) const override;
  Result<std::vector<ListEntry>> list(std::string_view prefix) const override;
  Result<std::vector<std::string>> list_dir(std::string_view prefix) const override;
  // "icechunk:/data/repo@1CECHNKREP0F1RSTCMT0/t2m/c/0/0"
  [[nodiscard]] std::string describe_key(std::string_view key) const override;

  [[nodiscard]] const ResolvedRef& ref() const { return ref_; }
  [[nodiscard]] int spec_version() const { return repo_->spec_version(); }
  [[nodiscard]] const Repository& repository() const { return *repo_; }
  // Snapshot facts: commit message, time (µs since the epoch), number of nodes and manifests.
  [[nodiscard]] const std::string& message() const { return message_; }
  [[nodiscard]] std::uint64_t flushed_at_us() const { return flushed_at_; }
  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  // Chunk references of the array at `path` ("" or "t2m"), by kind; loads its manifests.
  Result<ChunkCounts> chunk_counts(std::string_view path) const;
  // How many manifests have been read from storage so far (each at most once).
  [[nodiscard]] std::size_t manifests_loaded() const;

 private:
  struct Extent {
    std::uint32_t from, to;  // [from, to)
  };
  struct ManifestPointer {
    std::array<std::uint8_t, 12> id;
    std::vector<Extent> extents;
  };
  struct Node {
    std::string path;  // "" for the root, "a/b"
    std::array<std::uint8_t, 8> id;
    bool is_array = false;
    ConstByteSpan user_data;
    std::vector<ManifestPointer> manifests;
  };
  struct Manifest;  // a loaded, verified manifest
  struct ManifestSlot {
    std::once_flag once;
    std::shared_ptr<const Manifest> manifest;
    Status status;
  };

  IcechunkStore(std::shared_ptr<const Repository> repo, VirtualChunkContainers containers,
                std::string display);
  Status load_snapshot(const std::string& id);
  Result<std::shared_ptr<const Manifest>> manifest(const std::array<std::uint8_t, 12>& id) const;
  Result<std::optional<ChunkReference>> chunk_reference(const Node& node,
                                                        std::span<const std::uint32_t> coords,
                                                        std::string_view key) const;
  // Calls fn(coords, kind) for every chunk reference of `node` (kind: 0 native, 1 inline,
  // 2 virtual).
  Status for_each_chunk(const Node& node,
                        const std::function<void(std::span<const std::uint32_t>, int)>& fn) const;
  // The chunk reference of `node` at `coords` in manifest `m`, verified; nullptr when absent.
  Result<const ::generated::ChunkRef*> find_chunk_ref(const Manifest& m, const Node& node,
                                                      std::span<const std::uint32_t> coords) const;
  const Node* find_node(std::string_view path) const;

  std::shared_ptr<const Repository> repo_;
  std::string display_;
  ResolvedRef ref_;
  std::shared_ptr<const Buffer> snapshot_;  // the verified FlatBuffers payload nodes point into
  std::string message_;
  std::uint64_t flushed_at_ = 0;
  std::vector<Node> nodes_;  // sorted by path
  std::unordered_map<std::string, std::size_t> node_index_;
  mutable std::mutex manifests_mu_;
  mutable std::map<std::array<std::uint8_t, 12>, std::shared_ptr<ManifestSlot>> manifests_;
  mutable std::atomic<std::size_t> manifests_loaded_{0};
};

}  // namespace zarrflow::icechunk
