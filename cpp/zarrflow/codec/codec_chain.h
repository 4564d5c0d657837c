// CodecChain: an array's codecs bound to its chunk, decoding stored bytes into a destination.
//
// Built once per array (or per sharding level) and immutable afterwards; decode calls are const
// and run concurrently. The chain is validated when built: zero or more array→array codecs, then
// exactly one array→bytes codec, then zero or more bytes→bytes codecs.
//
// The path of one chunk: array→array codecs rewrite (selection, destination) into encoded
// coordinates (no copy) → bytes→bytes codecs run in reverse order → the array→bytes codec writes
// elements into the destination. When the chunk is read whole into a dense native-order
// destination, the last bytes→bytes codec decompresses straight into it: no copy of decoded data.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "zarrflow/codec/codec.h"

namespace zarrflow {

// The most bytes a reader accepts for a stored chunk whose codecs bound it by `bound`: the bound
// plus 1/16 and 64 KiB, room for encoders less tight than the reference libraries (zstd written
// in smaller blocks, a gzip header with a file name). Saturates at 2^64 - 1.
std::uint64_t stored_size_cap(std::uint64_t bound);

class CodecChain {
 public:
  // From a Zarr v3 "codecs" array (objects or short-hand name strings) for chunks like `spec`.
  static Result<CodecChain> from_v3_json(const nlohmann::json& codecs, const ChunkSpec& spec);
  // From codecs already built (Zarr v2 builds them from compressor/filters/order/dtype).
  static Result<CodecChain> from_codecs(std::vector<std::shared_ptr<const Codec>> codecs,
                                        const ChunkSpec& spec);

  [[nodiscard]] const ChunkSpec& spec() const { return spec_; }
  // True when part of a chunk can be read without fetching all of it (sharding, nothing after).
  [[nodiscard]] bool supports_partial_read() const;
  // Stored size of a chunk when it does not depend on content (e.g. a shard index).
  [[nodiscard]] std::optional<std::int64_t> encoded_size() const;
  // The most bytes a stored chunk can take: the array→bytes codec's bound grown by each
  // bytes→bytes codec's worst-case expansion; nullopt when any codec is unbounded.
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size() const;
  // The array→bytes codec (sharding_indexed for sharded arrays).
  [[nodiscard]] const ArrayToBytesCodec& array_to_bytes() const { return *a2b_; }
  // True when stored chunks are the elements themselves in C order and native byte order
  // (a lone `bytes` codec that swaps nothing), so they can be read straight into place.
  [[nodiscard]] bool is_identity() const;
  // "transpose(1,0) | bytes | zstd(level=3)"
  [[nodiscard]] std::string describe() const;

  // Decodes `sel` of the chunk stored as `stored` into `dest` (dest.shape == sel.count).
  Status decode_into(ConstByteSpan stored, const Selection& sel, const StridedView& dest,
                     const DecodeContext& ctx) const;

  // Rewrites a read of `sel` into `dest` through the array→array codecs (transpose permutes both;
  // nothing is copied); the result addresses the chunk as the array→bytes codec sees it.
  void to_encoded(Selection& sel, StridedView& dest) const;
  [[nodiscard]] const ChunkSpec& array_to_bytes_spec() const { return a2b_spec_; }
  [[nodiscard]] const std::vector<std::shared_ptr<const BytesToBytesCodec>>& bytes_to_bytes()
      const {
    return b2b_;
  }
  // The leaf reads of a partial read (see ArrayToBytesCodec::plan_partial_read); requires
  // supports_partial_read().
  Status plan_partial_read(const ByteReader& reader, const Selection& sel, const StridedView& dest,
                           const DecodeContext& ctx, std::vector<LeafRead>& reads,
                           std::vector<StridedView>& fills, bool& found) const;

  // Reads and decodes `sel` through `reader`, fetching only what is needed when the chain
  // supports partial reads, else the whole value. found=false when the value does not exist.
  Status partial_decode_into(const ByteReader& reader, const Selection& sel,
                             const StridedView& dest, const DecodeContext& ctx, bool& found) const;

 private:
  ChunkSpec spec_;
  std::vector<std::shared_ptr<const ArrayToArrayCodec>> a2a_;
  std::shared_ptr<const ArrayToBytesCodec> a2b_;
  ChunkSpec a2b_spec_;  // the chunk as the array→bytes codec sees it
  std::vector<std::shared_ptr<const BytesToBytesCodec>> b2b_;
};

}  // namespace zarrflow
