// One leaf chunk of a GPU read (a whole chunk, or one inner chunk of a shard) and what the read
// decided about it: where its bytes are, who decodes it, where it goes. The stages of the read
// (read_plan.h, batch_layout.h, host_work.h, decode_jobs.h, read_op.h) fill it in, in order.
// Plain C++ (builds and is tested everywhere).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/codec/gpu/framing.h"
#include "zarrflow/pipeline/transform.h"
#include "zarrflow/zarr/array.h"

namespace zarrflow::gpu {

struct CachedChunk;  // chunk_cache.h (CUDA builds)

constexpr std::uint64_t align_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

// kFill: the fill value (missing chunk, empty inner chunk); kGpu: decoded by the GPU's batched
// decoders; kCpu: decoded by the host threads, then copied up.
enum class Mode : std::uint8_t { kFill, kGpu, kCpu };

struct Item {
  const Array* arr = nullptr;      // the array it belongs to
  std::string key;                 // store key of the value holding it
  std::optional<ByteRange> range;  // its bytes within the value (inner chunks of shards)
  const CodecChain* chain = nullptr;
  const ChainProgram* program = nullptr;
  Selection sel;     // decoded coordinates
  StridedView dest;  // device memory, decoded coordinates
  // Where it is, for error messages (formatted only then: a read has up to ~10^5 items).
  Shape chunk;  // the array's chunk (shard)
  Shape inner;  // the inner chunk within the shard; empty when not sharded
  const std::vector<std::byte>* fill = nullptr;
  const ElementTransform* tf = nullptr;  // null: elements as stored
  // The host threads apply `tf` into the batch's pinned converted blocks at this offset (chunks
  // they decoded, or uncompressed ones they read, whose destination is dense; see
  // batch_layout.h); the result is copied up as is.
  bool host_tf = false;
  std::uint64_t host_tf_offset = 0;
  bool shared = false;  // a later item of the same batch scatters from this one's decoded copy
  // A CPU-decoded duplicate selecting the same block with the same transform: it uses its first
  // occurrence's host block (cpu_offset, host_tf_offset) instead of decoding again.
  bool reuses_block = false;
  // NaNs the host threads wrote converting this item's block (host_tf, decoded on the CPU); an
  // item that reuses_block writes its first occurrence's block again, with as many NaNs.
  std::uint64_t host_tf_nans = 0;

  Mode mode = Mode::kGpu;
  std::string cpu_reason;
  std::uint64_t stored_size = 0;
  std::uint64_t staging_offset = 0;
  Payload payload;
  std::optional<BloscPlan> blosc;
  std::uint64_t cpu_offset = 0;  // CPU-decoded block in the batch's pinned/device cpu area
  bool direct = false;           // read by cuFile straight into device memory (uncompressed)
  std::uint64_t direct_offset = 0;
  // Another item reads the same stored chunk earlier in the same batch: fetch and decode it once
  // (x at t+1 is y at t) and scatter from the first one's decoded copy.
  std::int64_t dup_of = -1;
  std::byte* d_decoded = nullptr;  // the whole decoded chunk on the GPU (set while enqueuing)
  std::shared_ptr<const CachedChunk> cached;       // its stored bytes are already on the GPU
  const std::byte* cached_bytes = nullptr;         // ... here (cached->bytes)
  std::shared_ptr<const CachedChunk> host_cached;  // ... or in pinned host memory
  std::string cache_key;
};
// Items are moved as the read's vector grows and is regrouped; a copy would cost strings.
static_assert(std::is_nothrow_move_constructible_v<Item>);

// "chunk 'c/0/1'" or "chunk 'c/0': inner chunk [0,3]".
std::string where(const Array& arr, const Shape& chunk, const Shape& inner = {});
inline std::string where(const Item& it) { return where(*it.arr, it.chunk, it.inner); }

// `s` annotated with the item's array and chunk.
Status annotate(const Item& it, Status s);

// Two items of one stored chunk want the same decoded block, converted the same way.
bool same_block(const Item& a, const Item& b);

// The whole chunk's decoded bytes.
inline std::uint64_t decoded_size(const Item& it) {
  return static_cast<std::uint64_t>(it.chain->array_to_bytes_spec().nbytes());
}

// Elements of the selected block.
inline std::uint64_t block_elements(const Item& it) {
  std::uint64_t elems = 1;
  for (auto c : it.sel.count) elems *= std::uint64_t(c);
  return elems;
}

// Bytes of the selected block when decoded on the CPU (C order, the array's element type).
inline std::uint64_t cpu_block_bytes(const Item& it) {
  return block_elements(it) * it.chain->spec().dtype.size;
}

// Bytes of the selected block once transformed (Item::tf set): elements in the output type.
inline std::uint64_t converted_block_bytes(const Item& it) {
  return block_elements(it) * out_type_size(it.tf->out);
}

// Items are the same stored chunk when their store, key and byte range agree.
struct StoredChunkId {
  const Store* store;
  std::string_view key;
  std::uint64_t offset, length;
  bool operator==(const StoredChunkId&) const = default;
};
StoredChunkId stored_chunk(const Item& it);

}  // namespace zarrflow::gpu
