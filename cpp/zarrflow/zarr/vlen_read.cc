#include "zarrflow/zarr/vlen_read.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <new>

#include "zarrflow/core/buffer.h"

#include "zarrflow/codec/leaf_reads.h"
#include "zarrflow/codec/vlen.h"

namespace zarrflow {
namespace {

// One element of the result while chunks are read: its bytes in an arena, or null for the fill
// value. Slots are the "elements" of a strided view over the result, so the chunk grid, shard
// plans and transposes address them exactly as they address fixed-size elements.
struct Slot {
  const std::byte* data = nullptr;
  std::uint64_t size = 0;
};

// The bytes the slots point into, at stable addresses until the result is laid out: copies of
// the items selected from partly read chunks, and the decoded payloads of chunks read whole.
class Arenas {
 public:
  std::byte* allocate(std::size_t n) {
    Buffer block(n);
    std::byte* p = block.data();
    keep(std::move(block));
    return p;
  }
  void keep(Buffer&& block) {
    std::lock_guard lock(mu_);
    blocks_.push_back(std::move(block));
  }

 private:
  std::mutex mu_;
  std::deque<Buffer> blocks_;
};

// Calls fn(linear index in a C-order chunk of `shape`, destination slot) for every element of
// `sel`, in C order of the selection.
template <typename F>
void for_each_selected(const Shape& shape, const Selection& sel, const StridedView& dest, F&& fn) {
  const std::size_t nd = shape.size();
  for (std::size_t k = 0; k < nd; ++k)
    if (sel.count[k] == 0) return;
  const Shape src_strides = c_strides(shape, 1);
  std::int64_t src = 0;
  for (std::size_t k = 0; k < nd; ++k) src += sel.start[k] * src_strides[k];
  std::byte* dst = dest.data;
  std::vector<std::int64_t> idx(nd, 0);
  while (true) {
    fn(src, dst);
    std::size_t k = nd;
    while (k > 0) {
      --k;
      src += sel.step[k] * src_strides[k];
      dst += dest.strides[k];
      if (++idx[k] < sel.count[k]) break;
      src -= sel.count[k] * sel.step[k] * src_strides[k];
      dst -= sel.count[k] * dest.strides[k];
      idx[k] = 0;
      if (k == 0) return;
    }
    if (nd == 0) return;
  }
}

class VlenReader {
 public:
  VlenReader(const DecodeContext& ctx, Arenas& arenas) : ctx_(ctx), arenas_(arenas) {}

  // Reads `sel` of the value behind `reader` into `dest` through `chain`, which reads partially
  // (sharding, nothing after it). found=false when the value does not exist.
  Status read_partial(const CodecChain& chain, const ByteReader& reader, const Selection& sel,
                      const StridedView& dest, bool& found) const {
    Selection s = sel;
    StridedView d = dest;
    chain.to_encoded(s, d);
    return read_shard(chain.array_to_bytes(), chain.array_to_bytes_spec(), reader, s, d, found);
  }

  // Decodes the whole stored value `stored` of `chain`; `sel` of it goes to `dest`.
  Status decode(const CodecChain& chain, ConstByteSpan stored, const Selection& sel,
                const StridedView& dest, const std::string& name) const {
    Selection s = sel;
    StridedView d = dest;
    chain.to_encoded(s, d);
    // Two scratch buffers alternate; a codec may return a view of its input (crc32c).
    Buffer scratch[2];
    ConstByteSpan cur = stored;
    const auto& b2b = chain.bytes_to_bytes();
    for (auto it = b2b.rbegin(); it != b2b.rend(); ++it) {
      const std::byte* p = cur.data();
      const bool in0 = scratch[0].data() != nullptr && p >= scratch[0].data() &&
                       p < scratch[0].data() + scratch[0].capacity();
      ZF_ASSIGN_OR_RETURN(cur, (*it)->decode(cur, std::nullopt, scratch[in0 ? 1 : 0]));
    }
    const ArrayToBytesCodec& a2b = chain.array_to_bytes();
    const ChunkSpec& spec = chain.array_to_bytes_spec();
    if (a2b.supports_partial_read()) {  // a shard behind bytes→bytes codecs, now in memory
      MemoryReader reader(cur, name);
      bool found = true;
      return read_shard(a2b, spec, reader, s, d, found);
    }
    const VlenCodec* vlen = as_vlen_codec(a2b);
    if (vlen == nullptr)
      return internal_error("codec '" + a2b.name() + "' does not decode variable-length elements");
    // A chunk read whole keeps its decoded payload and its slots point into it; otherwise the
    // selected items are copied out and the payload goes with this call.
    const bool whole = s.is_full(spec.shape);
    if (whole) {
      Buffer* holder = nullptr;
      for (Buffer& b : scratch)
        if (b.data() != nullptr && cur.data() >= b.data() && cur.data() < b.data() + b.capacity())
          holder = &b;
      Buffer kept = holder != nullptr ? std::move(*holder) : Buffer::copy_of(cur);
      if (holder == nullptr) cur = kept.span();
      arenas_.keep(std::move(kept));
    }
    std::vector<VlenItem> items;
    ZF_RETURN_IF_ERROR(vlen->split(cur, spec.num_elements(), items));
    // Stored items always point somewhere (an empty one at kNoBytes): null marks the fill value.
    static std::byte kNoBytes{};
    if (whole) {
      for_each_selected(spec.shape, s, d, [&](std::int64_t i, std::byte* slot) {
        const VlenItem& item = items[i];
        const Slot out{item.size > 0 ? item.data : &kNoBytes, item.size};
        std::memcpy(slot, &out, sizeof(Slot));
      });
      return {};
    }
    std::size_t total = 0;
    for_each_selected(spec.shape, s, d,
                      [&](std::int64_t i, std::byte*) { total += items[i].size; });
    std::byte* arena = total > 0 ? arenas_.allocate(total) : &kNoBytes;
    for_each_selected(spec.shape, s, d, [&](std::int64_t i, std::byte* slot) {
      const VlenItem& item = items[i];
      Slot out{arena, item.size};
      if (item.size > 0) std::memcpy(arena, item.data, item.size);
      arena += item.size;
      std::memcpy(slot, &out, sizeof(Slot));
    });
    return {};
  }

 private:
  Status read_shard(const ArrayToBytesCodec& a2b, const ChunkSpec& spec, const ByteReader& reader,
                    const Selection& s, const StridedView& d, bool& found) const {
    std::vector<LeafRead> reads;
    std::vector<StridedView> fills;  // empty inner chunks: their slots keep the fill value
    ZF_RETURN_IF_ERROR(a2b.plan_partial_read(reader, spec, s, d, ctx_, reads, fills, found));
    if (!found || reads.empty()) return {};
    return read_leaves(
        reader, reads, ctx_,
        [&](const LeafRead& it, const ByteReader& window) {
          bool inner_found = true;
          return read_partial(*it.chain, window, it.sel, it.dest, inner_found);
        },
        [&](const LeafRead& it, ConstByteSpan stored) {
          return decode(*it.chain, stored, it.sel, it.dest, reader.describe());
        });
  }

  const DecodeContext& ctx_;
  Arenas& arenas_;
};

// One chunk of the array grid into its slots.
Status read_chunk(const Array& array, const VlenReader& reader, const ChunkBlock& block,
                  const StridedView& view) {
  const CodecChain& chain = array.codecs();
  const std::string key = array.chunk_key(block.chunk);
  Status s;
  if (chain.supports_partial_read()) {
    StoreKeyReader value(array.store(), key);
    bool found = true;
    s = reader.read_partial(chain, value, block.in_chunk, view, found);
  } else {
    auto value = array.store().get(key);
    if (!value.ok()) {
      s = std::move(value).take_status();
    } else if (*value) {
      s = reader.decode(chain, (*value)->span(), block.in_chunk, view,
                        array.store().describe_key(key));
    }
  }
  if (s.ok()) return s;
  return std::move(s).annotate(array.describe() + ": chunk '" +
                               array.relative_chunk_key(block.chunk) + "'");
}

}  // namespace

Result<VlenData> read_vlen(const Array& array, const Selection& region,
                           const ReadOptions& options) {
  if (!array.dtype().is_variable_length())
    return invalid_argument(array.describe() + " has fixed-size " + array.dtype().v3_name() +
                            " elements; read it with Array::read");
  auto count = checked_product(region.count);
  if (!count.ok()) return std::move(count).take_status().annotate(array.describe());
  const auto n = static_cast<std::size_t>(*count);
  VlenData out;
  std::vector<Slot> slots;
  try {
    slots.resize(n);
    out.offsets.resize(n + 1);
    out.missing.resize(n);
  } catch (const std::bad_alloc&) {
    return out_of_range(array.describe() + ": a region of " + std::to_string(n) +
                        " variable-length elements does not fit in memory");
  }
  StridedView dest{reinterpret_cast<std::byte*>(slots.data()), region.count,
                   c_strides(region.count, sizeof(Slot))};
  ZF_RETURN_IF_ERROR(array.validate_region(region, dest));

  Arenas arenas;
  if (n > 0) {
    const auto blocks = chunk_blocks(region, array.metadata().chunk_shape);
    ThreadPool* pool = array.store().fetch_pool(options.pool);
    DecodeContext ctx{pool, options.buffers, array.store().coalescing()};
    ctx.shard_indexes = options.shard_indexes;
    const VlenReader reader(ctx, arenas);
    ZF_RETURN_IF_ERROR(parallel_for(pool, blocks.size(), [&](std::size_t i) -> Status {
      return read_chunk(array, reader, blocks[i], block_view(dest, blocks[i]));
    }));
  }

  // Lay the items out contiguously; elements of missing chunks get the fill value's bytes.
  const std::vector<std::byte>& fill = array.metadata().fill_value;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out.missing[i] = slots[i].data == nullptr ? 1 : 0;
    total += out.missing[i] ? fill.size() : slots[i].size;
  }
  try {
    out.bytes.resize(total);
  } catch (const std::bad_alloc&) {
    return out_of_range(array.describe() + ": " + std::to_string(total) +
                        " bytes of variable-length elements do not fit in memory");
  }
  std::uint64_t pos = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out.offsets[i] = static_cast<std::int64_t>(pos);
    const std::byte* src = out.missing[i] ? fill.data() : slots[i].data;
    const std::uint64_t size = out.missing[i] ? fill.size() : slots[i].size;
    if (size > 0) std::memcpy(out.bytes.data() + pos, src, size);
    pos += size;
  }
  out.offsets[n] = static_cast<std::int64_t>(pos);
  return out;
}

}  // namespace zarrflow
