// The three codec kinds of the Zarr v3 spec and what they are asked to do when reading.
//
//   array→array (transpose): a view change. Decoding never copies: the codec rewrites a read of a
//       region into a destination as the equivalent read in its encoded coordinates.
//   array→bytes (bytes, sharding_indexed): turns bytes into elements, written straight into the
//       caller's strided destination; sharding may read only the parts of a shard it needs.
//   bytes→bytes (zstd, gzip, blosc, crc32c, and Zarr v2 compressors/filters): bytes in, bytes out.
//
// Codecs are built once per array from metadata, bound to the chunk they will see (ChunkSpec), and
// are then immutable: decode calls are const and safe from many threads at once.
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/core/index.html#chunk-encoding
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zarrflow/core/buffer.h"
#include "zarrflow/core/dtype.h"
#include "zarrflow/core/grid.h"
#include "zarrflow/core/strided.h"
#include "zarrflow/core/thread_pool.h"
#include "zarrflow/store/byte_reader.h"

namespace zarrflow {

// One chunk as a codec sees it on its decoded side.
struct ChunkSpec {
  DataType dtype;
  Shape shape;                        // elements per dimension (full chunk, also at array edges)
  std::vector<std::byte> fill_value;  // one element in native byte order (dtype.size bytes)

  [[nodiscard]] std::int64_t num_elements() const;
  [[nodiscard]] std::int64_t nbytes() const { return num_elements() * dtype.size; }
};

// Per-read resources handed down the chain. All pointers may be null (serial, plain malloc).
class ShardIndexCache;

struct DecodeContext {
  ThreadPool* pool = nullptr;
  BufferPool* buffers = nullptr;
  CoalesceOptions coalesce;
  ShardIndexCache* shard_indexes = nullptr;  // optional: shard indexes kept across reads

  [[nodiscard]] Buffer acquire(std::size_t n) const {
    return buffers ? buffers->acquire(n) : Buffer(n);
  }
};

class CodecChain;

// One piece of a partial read, planned but not fetched: bytes `range` of the value hold a chunk
// that `chain` decodes; `sel` of it goes to `dest`. `where()` names it in errors ("inner chunk
// [0,3]"). The GPU path fetches and decodes these in batches.
struct LeafRead {
  ByteRange range;
  const CodecChain* chain;
  Selection sel;
  StridedView dest;
  Shape inner;  // the inner chunk's coordinates within its shard

  [[nodiscard]] std::string where() const;  // "inner chunk [0,3]" (for error messages)
};

enum class CodecKind : std::uint8_t { kArrayToArray, kArrayToBytes, kBytesToBytes };

class Codec {
 public:
  virtual ~Codec() = default;
  [[nodiscard]] virtual CodecKind kind() const = 0;
  // Spec name ("zstd", "sharding_indexed"; v2 ids for v2-only filters: "delta").
  [[nodiscard]] virtual std::string name() const = 0;
  // Short human form for `inspect`: "zstd(level=3)", "blosc(lz4, shuffle, clevel=5)".
  [[nodiscard]] virtual std::string describe() const { return name(); }
};

class ArrayToArrayCodec : public Codec {
 public:
  [[nodiscard]] CodecKind kind() const final { return CodecKind::kArrayToArray; }
  // The chunk this codec hands to the next one when given `decoded`.
  [[nodiscard]] virtual ChunkSpec encoded_spec(const ChunkSpec& decoded) const = 0;
  // Rewrites "read `sel` of the decoded chunk into `dest`" as the same read on the encoded chunk.
  virtual void to_encoded(Selection& sel, StridedView& dest) const = 0;
};

class ArrayToBytesCodec : public Codec {
 public:
  [[nodiscard]] CodecKind kind() const final { return CodecKind::kArrayToBytes; }

  // Stored size of a chunk when it is fixed (bytes: nbytes; sharding: unknown).
  [[nodiscard]] virtual std::optional<std::int64_t> encoded_size(const ChunkSpec& spec) const = 0;

  // The most bytes a stored chunk like `spec` can take: its fixed size where it has one (the
  // default), else a worst case (sharding: the index plus every inner chunk at its bound);
  // nullopt when unbounded or unknown. Readers cap what they read for one chunk by it.
  [[nodiscard]] virtual std::optional<std::uint64_t> max_encoded_size(const ChunkSpec& spec) const;

  // True when the encoded bytes *are* the chunk's elements in C order and native byte order, so
  // a bytes→bytes codec may decompress straight into a contiguous destination.
  [[nodiscard]] virtual bool is_native_layout(const ChunkSpec& spec) const { return false; }

  // Decodes `sel` of the chunk whose encoded bytes are `encoded` into `dest` (dest.shape ==
  // sel.count).
  virtual Status decode_into(ConstByteSpan encoded, const ChunkSpec& spec, const Selection& sel,
                             const StridedView& dest, const DecodeContext& ctx) const = 0;

  // Codecs that can fetch only the parts they need (sharding) override both.
  [[nodiscard]] virtual bool supports_partial_read() const { return false; }
  // Reads and decodes `sel` from `reader`. `found` is set false (and nothing written) when the
  // value does not exist.
  virtual Status partial_decode_into(const ByteReader& reader, const ChunkSpec& spec,
                                     const Selection& sel, const StridedView& dest,
                                     const DecodeContext& ctx, bool& found) const;
  // The reads a partial decode would do, without doing them: `reads` to fetch and decode, `fills`
  // to set to the fill value (empty inner chunks). found=false when the value does not exist.
  virtual Status plan_partial_read(const ByteReader& reader, const ChunkSpec& spec,
                                   const Selection& sel, const StridedView& dest,
                                   const DecodeContext& ctx, std::vector<LeafRead>& reads,
                                   std::vector<StridedView>& fills, bool& found) const;
};

class BytesToBytesCodec : public Codec {
 public:
  [[nodiscard]] CodecKind kind() const final { return CodecKind::kBytesToBytes; }

  // Decodes `in`. `decoded_size`, when known, is the exact size the result must have (a mismatch
  // is kCorruptData). The result is written into `scratch` (resized as needed) or, for codecs that
  // only strip bytes (crc32c), may be a view into `in`.
  virtual Result<ConstByteSpan> decode(ConstByteSpan in, std::optional<std::size_t> decoded_size,
                                       Buffer& scratch) const = 0;

  // Decodes into exactly out.size() bytes (caller memory, e.g. the final destination).
  // The default decodes into a temporary and copies.
  virtual Status decode_into(ConstByteSpan in, ByteSpan out) const;

  // Encoded size for a decoded size when it does not depend on content (crc32c: +4).
  [[nodiscard]] virtual std::optional<std::int64_t> encoded_size(std::int64_t decoded) const {
    return std::nullopt;
  }

  // The most bytes the encoding of `decoded` bytes can take: the worst-case expansion of the
  // reference encoder (ZSTD_compressBound, LZ4_compressBound, ...). The default is encoded_size()
  // where that is fixed, else nullopt (unbounded or unknown), which is always safe: readers then
  // fall back to their configured per-chunk limit.
  [[nodiscard]] virtual std::optional<std::uint64_t> max_encoded_size(std::uint64_t decoded) const;
};

// a + b, nullopt when either is unknown or the sum overflows 64 bits (for combining bounds).
std::optional<std::uint64_t> add_bounds(std::optional<std::uint64_t> a,
                                        std::optional<std::uint64_t> b);

// Resizes a codec's scratch buffer; an allocation failure becomes kResourceExhausted naming `codec`
// (sizes come from stored headers, so they are bounded before this is called, but a large
// legitimate chunk can still exceed memory).
Status resize_scratch(std::string_view codec, Buffer& scratch, std::size_t n);

// Decodes `in` with `codec.decode_into` into `scratch` resized to exactly `n` bytes (for codecs
// whose decode() with a known size is their decode_into()).
Result<ConstByteSpan> decode_known_size(const BytesToBytesCodec& codec, ConstByteSpan in,
                                        std::size_t n, Buffer& scratch);

// Shared helper: kCorruptData unless `actual == expected`, phrased for `codec`.
Status check_decoded_size(std::string_view codec, std::size_t actual, std::size_t expected);

}  // namespace zarrflow
