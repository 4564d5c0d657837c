// Array: one Zarr array in a store, and the read path.
//
// read(region, dest) — the core call — decodes any hyperslab (per-dimension start, count, step)
// straight into a caller-provided strided host buffer:
//   region → the chunks it touches (chunk_blocks) → per chunk, in parallel on options.pool:
//     missing → fill value; sharded → read index, then only the needed inner chunks (coalesced);
//     otherwise fetch the value and run the codec chain into the chunk's sub-view of dest.
// Whole chunks of uncompressed data are read from the store directly into dest; compressed ones
// are decompressed directly into dest when layouts match (no extra copy of decoded data).
// Errors name the array path and the chunk key.
// Bounds: a chunk whose decoded size exceeds OpenLimits::max_chunk_bytes is refused at open; a
// stored chunk larger than its codecs can encode it into (max_stored_chunk_bytes) is kCorruptData
// found before its size is allocated; running out of memory while reading a chunk is
// kResourceExhausted naming it. The metadata document and the attributes are kept as compact JSON
// text (metadata_json(), attributes_json()), not as DOMs several times their size:
// metadata().raw and metadata().attributes are empty on an open Array.
// Thread-safety: an Array is immutable after open; read() may run concurrently. Lifetime: shares
// ownership of its store.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "zarrflow/codec/codec_chain.h"
#include "zarrflow/store/store.h"
#include "zarrflow/zarr/json_document.h"
#include "zarrflow/zarr/metadata.h"

namespace zarrflow {

// What a store's metadata may make zarrflow read or allocate.
struct OpenLimits {
  // Decoded bytes of one chunk (the inner chunk of a sharded array; a shard's index counts too).
  // 2 GiB: c-blosc and LZ4 cannot encode more than 2 GiB at once (32-bit sizes), so larger
  // chunks come only uncompressed or from zstd/gzip; chunks of 1-100 MB are what Zarr writers
  // recommend; and every decoding thread may hold one chunk's scratch (16 threads × 2 GiB is
  // already 32 GiB). Raise it for stores that need more.
  std::uint64_t max_chunk_bytes = std::uint64_t{2} << 30;
  JsonLimits metadata;  // each metadata document (size, nesting)
};

struct ReadOptions {
  ThreadPool* pool = nullptr;             // chunk-parallel decode; null = the calling thread only
  BufferPool* buffers = nullptr;          // scratch for decompression; null = plain allocations
  ShardIndexes* shard_indexes = nullptr;  // optional: shard indexes kept across reads
  ReadCounters* counters = nullptr;       // optional: chunks, missing ones, stored bytes read
};

// What is stored for an array (for `inspect`).
struct StorageInfo {
  std::int64_t chunks_total = 0;  // stored grid cells (shards for sharded arrays)
  std::int64_t chunks_present = 0;
  std::uint64_t stored_bytes = 0;  // bytes of present chunks
};

class Array;

// One region of one array into one destination (host memory for read_many, device memory for
// gpu::DeviceReader::read_many): a training batch is a list of these.
struct ReadRequest {
  const Array* array;
  Selection region;
  StridedView dest;
};

class Array {
 public:
  // `document`: the metadata as stored (v3 zarr.json; v2 {".zarray": ..., ".zattrs": ...}), kept
  // as metadata_json(); empty: metadata.raw is serialized instead.
  static Result<std::shared_ptr<Array>> open(std::shared_ptr<const Store> store, std::string path,
                                             ArrayMetadata metadata, const OpenLimits& limits = {},
                                             std::string document = {});

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const ArrayMetadata& metadata() const { return md_; }
  [[nodiscard]] const Shape& shape() const { return md_.shape; }
  [[nodiscard]] const DataType& dtype() const { return md_.dtype; }
  // The unit of reading: the inner chunk for sharded arrays, else the chunk.
  [[nodiscard]] const Shape& read_chunk_shape() const;
  // The shard shape for sharded arrays.
  [[nodiscard]] std::optional<Shape> shard_shape() const;
  [[nodiscard]] const CodecChain& codecs() const { return chain_; }
  [[nodiscard]] const Store& store() const { return *store_; }
  // Store key of a chunk ("era5/t2m/c/0/3/1").
  [[nodiscard]] std::string chunk_key(const Shape& chunk) const;
  // The most bytes a stored chunk (a shard, for sharded arrays) may have: its codecs' worst-case
  // encoding with slack (stored_size_cap), or for codecs without a bound the larger of the
  // per-chunk limit and twice the decoded chunk.
  [[nodiscard]] std::uint64_t max_stored_chunk_bytes() const { return max_stored_bytes_; }
  // The document(s) as read (v3 zarr.json; v2 {".zarray": ..., ".zattrs": ...}), JSON text.
  [[nodiscard]] const std::string& metadata_json() const { return metadata_json_; }
  // The user attributes, compact JSON.
  [[nodiscard]] const std::string& attributes_json() const { return attributes_json_; }

  // Reads `region` into `dest` (dest.shape must equal region.count; any strides).
  Status read(const Selection& region, const StridedView& dest, const ReadOptions& options) const;

  Result<StorageInfo> storage_info() const;

  // OK when `region` lies inside the array and `dest` has its shape (errors name the array).
  Status validate_region(const Selection& region, const StridedView& dest) const;
  // "array '<store path>'", as errors name it.
  [[nodiscard]] std::string describe() const { return "array '" + name_ + "'"; }
  // The chunk key relative to the array, as errors name it ("c/0/1").
  [[nodiscard]] std::string relative_chunk_key(const Shape& chunk) const {
    return md_.key_encoding.key(chunk);
  }

 private:
  Array(std::shared_ptr<const Store> store, std::string path, ArrayMetadata md, CodecChain chain,
        std::uint64_t max_stored_bytes, std::string document);
  Status validate_region_impl(const Selection& region, const StridedView& dest) const;
  // The selection takes every element of the chunk that lies inside the array.
  [[nodiscard]] bool covers_stored_part(const ChunkBlock& block) const;
  Status read_chunk(const ChunkBlock& block, const StridedView& dest,
                    const DecodeContext& ctx) const;
  Status read_chunk_unguarded(const ChunkBlock& block, const StridedView& dest,
                              const DecodeContext& ctx) const;

  std::shared_ptr<const Store> store_;
  std::string path_;
  std::string name_;  // how errors name the array: the store's description of its path
  ArrayMetadata md_;
  CodecChain chain_;
  std::optional<Shape> inner_chunk_shape_;
  bool raw_native_;  // chunks are the elements themselves (bytes codec, native order, nothing else)
  std::uint64_t max_stored_bytes_;
  std::string metadata_json_;
  std::string attributes_json_;
};

// The pool a list of requests runs on: a remote store's I/O pool (its requests mostly wait on the
// network), else `fallback`.
ThreadPool* requests_pool(std::span<const ReadRequest> requests, ThreadPool* fallback);

// Runs every request (in parallel on requests_pool; each read also parallel inside).
Status read_many(std::span<const ReadRequest> requests, const ReadOptions& options);

}  // namespace zarrflow
