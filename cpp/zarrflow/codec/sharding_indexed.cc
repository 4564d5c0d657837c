// `sharding_indexed` (array→bytes): a shard holds many inner chunks plus an index of where each is.
// Spec: https://zarr-specs.readthedocs.io/en/latest/v3/codecs/sharding-indexed/index.html
// Example: {"name": "sharding_indexed", "configuration": {
//   "chunk_shape": [1, 721, 1440],
//   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", ...}],
//   "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
//   "index_location": "end"}}
// The index is (offset, nbytes) uint64 pairs per inner chunk in C order; 2^64-1 in both marks an
// empty inner chunk (fill value). Partial reads fetch the index with one range request, then only
// the inner chunks the selection touches, with nearby ranges coalesced into single requests.
// Inner chunks decode in parallel; nested sharding reads through a window of the outer shard.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "zarrflow/codec/builtin.h"
#include "zarrflow/codec/codec_chain.h"
#include "zarrflow/codec/json_config.h"
#include "zarrflow/codec/leaf_reads.h"
#include "zarrflow/codec/shard_indexes.h"
#include "zarrflow/codec/sharding_indexed.h"

namespace zarrflow {
namespace {

constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

class ShardingCodec final : public ArrayToBytesCodec {
 public:
  ShardingCodec(Shape inner_shape, Shape grid, CodecChain inner, CodecChain index,
                std::uint64_t index_size, bool index_at_end)
      : inner_shape_(std::move(inner_shape)),
        grid_(std::move(grid)),
        inner_(std::move(inner)),
        index_(std::move(index)),
        index_size_(index_size),
        index_at_end_(index_at_end) {
    if (const auto bound = inner_.max_encoded_size()) max_inner_bytes_ = stored_size_cap(*bound);
  }

  [[nodiscard]] std::string name() const override { return "sharding_indexed"; }
  [[nodiscard]] std::string describe() const override {
    return "sharding_indexed(chunk_shape=" + format_coords(inner_shape_) + ", index at " +
           (index_at_end_ ? "end" : "start") + ") [" + inner_.describe() + "]";
  }
  [[nodiscard]] std::optional<std::int64_t> encoded_size(const ChunkSpec&) const override {
    return std::nullopt;
  }
  // The index plus every inner chunk at its own bound.
  [[nodiscard]] std::optional<std::uint64_t> max_encoded_size(const ChunkSpec&) const override {
    const auto inner = inner_.max_encoded_size();
    if (!inner) return std::nullopt;
    std::uint64_t all = *inner;
    for (const auto n : grid_)
      if (__builtin_mul_overflow(all, static_cast<std::uint64_t>(n), &all)) return std::nullopt;
    return add_bounds(all, index_size_);
  }
  [[nodiscard]] bool supports_partial_read() const override { return true; }
  [[nodiscard]] const Shape& inner_shape() const { return inner_shape_; }

  Status decode_into(ConstByteSpan encoded, const ChunkSpec& spec, const Selection& sel,
                     const StridedView& dest, const DecodeContext& ctx) const override {
    if (encoded.size() < index_size_)
      return corrupt_data("sharding_indexed: shard has " + std::to_string(encoded.size()) +
                          " bytes, less than its " + std::to_string(index_size_) + "-byte index");
    const ConstByteSpan index_bytes = index_at_end_ ? encoded.subspan(encoded.size() - index_size_)
                                                    : encoded.subspan(0, index_size_);
    ZF_ASSIGN_OR_RETURN(auto index, decode_index(index_bytes, ctx));
    const auto blocks = chunk_blocks(sel, inner_shape_);
    return parallel_for(ctx.pool, blocks.size(), [&](std::size_t b) -> Status {
      const ChunkBlock& blk = blocks[b];
      const StridedView view = block_view(dest, blk);
      ZF_ASSIGN_OR_RETURN(auto entry, lookup(index, blk.chunk, encoded.size()));
      if (!entry) {
        if (ctx.counters != nullptr) ctx.counters->count_missing();
        fill_strided(view, spec.fill_value.data(), spec.dtype.size);
        return {};
      }
      if (ctx.counters != nullptr && !inner_.supports_partial_read())  // nested shards count theirs
        ctx.counters->count_stored(entry->length);
      return inner_
          .decode_into(encoded.subspan(entry->offset, entry->length), blk.in_chunk, view, ctx)
          .annotate("inner chunk " + format_coords(blk.chunk));
    });
  }

  Status plan_partial_read(const ByteReader& reader, const ChunkSpec& spec, const Selection& sel,
                           const StridedView& dest, const DecodeContext& ctx,
                           std::vector<LeafRead>& reads, std::vector<StridedView>& fills,
                           bool& found) const override {
    ZF_ASSIGN_OR_RETURN(auto index, load_index(reader, ctx));
    found = index->found;
    if (!found) return {};
    for (const auto& blk : chunk_blocks(sel, inner_shape_)) {
      ZF_ASSIGN_OR_RETURN(auto entry, lookup(index->entries, blk.chunk, index->shard_size));
      if (!entry) {
        fills.push_back(block_view(dest, blk));
      } else {
        reads.push_back({*entry, &inner_, blk.in_chunk, block_view(dest, blk), blk.chunk});
      }
    }
    return {};
  }

  Status partial_decode_into(const ByteReader& reader, const ChunkSpec& spec, const Selection& sel,
                             const StridedView& dest, const DecodeContext& ctx,
                             bool& found) const override {
    std::vector<LeafRead> items;
    std::vector<StridedView> fills;
    ZF_RETURN_IF_ERROR(plan_partial_read(reader, spec, sel, dest, ctx, items, fills, found));
    for (const auto& f : fills) fill_strided(f, spec.fill_value.data(), spec.dtype.size);
    count_leaves(ctx.counters, items, fills.size());
    std::sort(items.begin(), items.end(),
              [](const LeafRead& a, const LeafRead& b) { return a.range.offset < b.range.offset; });
    return read_leaves(
        reader, items, ctx,
        [&](const LeafRead& it, const ByteReader& window) {
          bool inner_found = true;
          return inner_.partial_decode_into(window, it.sel, it.dest, ctx, inner_found);
        },
        [&](const LeafRead& it, ConstByteSpan stored) {
          return inner_.decode_into(stored, it.sel, it.dest, ctx);
        });
  }

 private:
  void count_leaves(ReadCounters* counters, const std::vector<LeafRead>& reads,
                    std::size_t fills) const {
    if (counters == nullptr) return;
    for (std::size_t i = 0; i < fills; ++i) counters->count_missing();
    if (inner_.supports_partial_read()) return;  // nested shards count their own leaves
    for (const auto& r : reads) counters->count_stored(r.range.length);
  }

  // The shard's index and size, from the cache in `ctx` when it has them. The index and the
  // size (for validating entries) come in one request where the index is at the end: a suffix
  // read (on object stores a separate size query is a round trip).
  Result<std::shared_ptr<const ShardIndex>> load_index(const ByteReader& reader,
                                                       const DecodeContext& ctx) const {
    if (ctx.shard_indexes == nullptr) return read_index(reader, ctx);
    return ctx.shard_indexes->find_or_load(reader.describe(),
                                           [&] { return read_index(reader, ctx); });
  }

  // The shard's index and size, read from the store.
  Result<std::shared_ptr<const ShardIndex>> read_index(const ByteReader& reader,
                                                       const DecodeContext& ctx) const {
    auto index = std::make_shared<ShardIndex>();
    Buffer index_bytes;
    if (index_at_end_) {
      auto tail = reader.read_tail(index_size_);
      if (!tail.ok() && tail.status().code() == ErrorCode::kCorruptData)
        return corrupt_data("sharding_indexed: shard is shorter than its " +
                            std::to_string(index_size_) + "-byte index (" +
                            tail.status().message() + ")");
      ZF_RETURN_IF_ERROR(tail.status());
      index->found = tail->has_value();
      if (index->found) {
        index->shard_size = (*tail)->total_size;
        index_bytes = std::move((*tail)->bytes);
      }
    } else {
      ZF_ASSIGN_OR_RETURN(auto size, reader.size());
      index->found = size.has_value();
      if (index->found) {
        index->shard_size = *size;
        if (index->shard_size < index_size_)
          return corrupt_data("sharding_indexed: shard has " + std::to_string(index->shard_size) +
                              " bytes, less than its " + std::to_string(index_size_) +
                              "-byte index");
        const ByteRange index_range = ByteRange::of(0, index_size_);
        ZF_ASSIGN_OR_RETURN(auto index_parts, reader.read({&index_range, 1}));
        index->found = index_parts.has_value();  // false: deleted between size() and read()
        if (index->found) index_bytes = std::move((*index_parts)[0]);
      }
    }
    if (index->found) {
      ZF_ASSIGN_OR_RETURN(index->entries, decode_index(index_bytes.span(), ctx));
    }
    return std::shared_ptr<const ShardIndex>(std::move(index));
  }

  // (offset, nbytes) of every inner chunk, validated against nothing yet.
  Result<std::vector<std::uint64_t>> decode_index(ConstByteSpan bytes,
                                                  const DecodeContext& ctx) const {
    const Shape& shape = index_.spec().shape;
    std::vector<std::uint64_t> index(static_cast<std::size_t>(index_.spec().num_elements()));
    StridedView view{reinterpret_cast<std::byte*>(index.data()), shape, c_strides(shape, 8)};
    DecodeContext serial = ctx;
    serial.pool = nullptr;
    ZF_RETURN_IF_ERROR_CTX(index_.decode_into(bytes, Selection::full(shape), view, serial),
                           "shard index");
    return index;
  }

  // The byte range of inner chunk `c`, nullopt when it is empty; kCorruptData when the entry
  // points outside the shard or into the index.
  Result<std::optional<ByteRange>> lookup(const std::vector<std::uint64_t>& index, const Shape& c,
                                          std::uint64_t shard_size) const {
    std::size_t linear = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      linear = linear * static_cast<std::size_t>(grid_[i]) + static_cast<std::size_t>(c[i]);
    const std::uint64_t offset = index[2 * linear], nbytes = index[2 * linear + 1];
    if (offset == kEmpty && nbytes == kEmpty) return std::optional<ByteRange>();
    // Built only for an error: this runs for every inner chunk of every read.
    const auto where = [&] {
      return "shard index entry for inner chunk " + format_coords(c) + " (offset " +
             std::to_string(offset) + ", nbytes " + std::to_string(nbytes) + ")";
    };
    std::uint64_t end = 0;
    if (offset == kEmpty || nbytes == kEmpty || __builtin_add_overflow(offset, nbytes, &end) ||
        end > shard_size)
      return corrupt_data(where() + " points past the end of the " + std::to_string(shard_size) +
                          "-byte shard");
    if (nbytes > max_inner_bytes_)
      return corrupt_data(where() + " is larger than the " + std::to_string(max_inner_bytes_) +
                          " bytes any encoding of the inner chunk can take");
    const std::uint64_t index_begin = index_at_end_ ? shard_size - index_size_ : 0;
    const std::uint64_t index_end = index_begin + index_size_;
    if (nbytes > 0 && offset < index_end && end > index_begin)
      return corrupt_data(where() + " overlaps the shard index");
    return std::optional(ByteRange::of(offset, nbytes));
  }

  Shape inner_shape_;
  Shape grid_;  // inner chunks per shard, per dimension
  CodecChain inner_;
  CodecChain index_;
  std::uint64_t index_size_;
  bool index_at_end_;
  // Largest entry accepted: the inner codecs' bound with slack (unbounded: the shard's size).
  std::uint64_t max_inner_bytes_ = UINT64_MAX;
};

Result<Shape> int_array(const nlohmann::json& cfg, const char* field) {
  if (!cfg.contains(field))
    return invalid_metadata(std::string("missing required field '") + field + "'");
  const auto& a = cfg[field];
  if (!a.is_array())
    return invalid_metadata(std::string("field '") + field +
                            "': expected an array of integers, got " + a.dump());
  Shape s;
  for (const auto& x : a) {
    if (!x.is_number_integer())
      return invalid_metadata(std::string("field '") + field + "': expected integers, got " +
                              a.dump());
    s.push_back(x.get<std::int64_t>());
  }
  return s;
}

Result<std::shared_ptr<const Codec>> make_sharding(const nlohmann::json& cfg,
                                                   const ChunkSpec& spec) {
  if (!cfg.is_object()) return invalid_metadata("configuration must be an object");
  ZF_RETURN_IF_ERROR(config::reject_unknown_fields(
      cfg, {"chunk_shape", "codecs", "index_codecs", "index_location"}));
  ZF_ASSIGN_OR_RETURN(Shape inner_shape, int_array(cfg, "chunk_shape"));
  if (inner_shape.size() != spec.shape.size())
    return invalid_metadata("'chunk_shape' has " + std::to_string(inner_shape.size()) +
                            " dimensions, the shard has " + std::to_string(spec.shape.size()));
  Shape grid(inner_shape.size());
  for (std::size_t i = 0; i < inner_shape.size(); ++i) {
    if (inner_shape[i] <= 0)
      return invalid_metadata("'chunk_shape' entries must be positive, got " +
                              format_coords(inner_shape));
    if (spec.shape[i] % inner_shape[i] != 0)
      return invalid_metadata("inner chunk shape " + format_coords(inner_shape) +
                              " does not divide the shard shape " + format_coords(spec.shape));
    grid[i] = spec.shape[i] / inner_shape[i];
  }
  ZF_ASSIGN_OR_RETURN(std::string location, config::get_string(cfg, "index_location", "end"));
  if (location != "end" && location != "start")
    return invalid_metadata("field 'index_location': expected \"start\" or \"end\", got \"" +
                            location + "\"");
  if (!cfg.contains("codecs")) return invalid_metadata("missing required field 'codecs'");
  ChunkSpec inner_spec{spec.dtype, inner_shape, spec.fill_value};
  ZF_ASSIGN_OR_RETURN(auto inner, CodecChain::from_v3_json(cfg["codecs"], inner_spec));

  Shape index_shape = grid;
  index_shape.push_back(2);
  ChunkSpec index_spec{DataType{DTypeKind::kUInt, 8}, index_shape,
                       std::vector<std::byte>(8, std::byte{0xff})};
  const nlohmann::json default_index = nlohmann::json::parse(
      R"([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}])");
  ZF_ASSIGN_OR_RETURN(
      auto index,
      CodecChain::from_v3_json(cfg.contains("index_codecs") ? cfg["index_codecs"] : default_index,
                               index_spec));
  auto index_size = index.encoded_size();
  if (!index_size)
    return invalid_metadata("'index_codecs' must produce a fixed-size index (e.g. bytes + crc32c)");
  return std::shared_ptr<const Codec>(std::make_shared<ShardingCodec>(
      std::move(inner_shape), std::move(grid), std::move(inner), std::move(index),
      static_cast<std::uint64_t>(*index_size), location == "end"));
}

}  // namespace

const Shape* sharding_inner_shape(const ArrayToBytesCodec& codec) {
  auto* s = dynamic_cast<const ShardingCodec*>(&codec);
  return s ? &s->inner_shape() : nullptr;
}

void register_sharding_codec(CodecRegistry& v3, CodecRegistry&) {
  v3.add("sharding_indexed", make_sharding);
}

}  // namespace zarrflow
