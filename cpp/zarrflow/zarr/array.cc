#include "zarrflow/zarr/array.h"

#include "zarrflow/codec/sharding_indexed.h"
#include "zarrflow/store/byte_reader.h"

namespace zarrflow {

namespace {

// Decoded bytes of chunks of `shape` (nullopt when that overflows 64 bits).
std::optional<std::uint64_t> decoded_bytes(const Shape& shape, std::size_t item_size) {
  auto n = checked_product(shape, static_cast<std::int64_t>(item_size));
  if (!n.ok() || *n < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*n);
}

std::string format_bytes_limit(std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes (max_chunk_bytes)";
}

// Refuses chunks (and shard indexes) whose decoded size exceeds the per-chunk limit.
Status check_chunk_limits(const ArrayMetadata& md, const CodecChain& chain,
                          const OpenLimits& limits) {
  const Shape* inner = sharding_inner_shape(chain.array_to_bytes());
  const Shape& unit = inner ? *inner : md.chunk_shape;
  const auto bytes = decoded_bytes(unit, md.dtype.size);
  const std::string what = std::string(inner ? "inner chunk" : "chunk") + " shape " +
                           format_coords(unit) + " of " + std::to_string(md.dtype.size) +
                           "-byte elements";
  if (!bytes) return invalid_metadata(what + " overflows 64 bits");
  if (*bytes > limits.max_chunk_bytes)
    return invalid_metadata(what + " is " + std::to_string(*bytes) +
                            " bytes decoded, more than the per-chunk limit of " +
                            format_bytes_limit(limits.max_chunk_bytes));
  if (inner) {
    // The shard index: 16 bytes per inner chunk, decoded whole for every shard read.
    Shape grid(unit.size());
    for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = md.chunk_shape[i] / unit[i];
    const auto index = decoded_bytes(grid, 16);
    if (!index || *index > limits.max_chunk_bytes)
      return invalid_metadata("shard index of " + format_coords(grid) +
                              " inner chunks is more than the per-chunk limit of " +
                              format_bytes_limit(limits.max_chunk_bytes));
  }
  return {};
}

// See Array::max_stored_chunk_bytes.
std::uint64_t max_stored_bytes(const ArrayMetadata& md, const CodecChain& chain,
                               const OpenLimits& limits) {
  if (const auto bound = chain.max_encoded_size()) return stored_size_cap(*bound);
  const std::uint64_t decoded = decoded_bytes(md.chunk_shape, md.dtype.size).value_or(UINT64_MAX);
  return std::max(limits.max_chunk_bytes,
                  stored_size_cap(decoded > UINT64_MAX / 2 ? UINT64_MAX : 2 * decoded));
}

}  // namespace

Result<std::shared_ptr<Array>> Array::open(std::shared_ptr<const Store> store, std::string path,
                                           ArrayMetadata metadata, const OpenLimits& limits,
                                           std::string document) {
  const std::string where = "array '" + store->describe_key(path) + "'";
  auto chain = build_codec_chain(metadata);
  if (!chain.ok()) return std::move(chain).take_status().annotate(where);
  ZF_RETURN_IF_ERROR_CTX(check_chunk_limits(metadata, *chain, limits), where);
  const std::uint64_t max_stored = max_stored_bytes(metadata, *chain, limits);
  return std::shared_ptr<Array>(new Array(std::move(store), std::move(path), std::move(metadata),
                                          std::move(chain).value(), max_stored,
                                          std::move(document)));
}

Array::Array(std::shared_ptr<const Store> store, std::string path, ArrayMetadata md,
             CodecChain chain, std::uint64_t max_stored_bytes, std::string document)
    : store_(std::move(store)),
      path_(std::move(path)),
      md_(std::move(md)),
      chain_(std::move(chain)),
      max_stored_bytes_(max_stored_bytes) {
  if (const Shape* inner = sharding_inner_shape(chain_.array_to_bytes()))
    inner_chunk_shape_ = *inner;
  raw_native_ = chain_.is_identity();
  name_ = store_->describe_key(path_);
  // Text instead of DOMs: nlohmann's tree takes several times the text's size.
  metadata_json_ = document.empty() ? md_.raw.dump() : std::move(document);
  md_.raw = nullptr;
  attributes_json_ = md_.attributes.dump();
  md_.attributes = nlohmann::json::object();
}

const Shape& Array::read_chunk_shape() const {
  return inner_chunk_shape_ ? *inner_chunk_shape_ : md_.chunk_shape;
}

std::optional<Shape> Array::shard_shape() const {
  if (inner_chunk_shape_) return md_.chunk_shape;
  return std::nullopt;
}

std::string Array::chunk_key(const Shape& chunk) const {
  return join_key(path_, md_.key_encoding.key(chunk));
}

Status Array::validate_region_impl(const Selection& region, const StridedView& dest) const {
  const std::size_t nd = md_.shape.size();
  if (region.start.size() != nd || region.count.size() != nd || region.step.size() != nd)
    return invalid_argument("region has " + std::to_string(region.start.size()) +
                            " dimensions, the array has " + std::to_string(nd));
  if (dest.shape != region.count || dest.strides.size() != nd)
    return invalid_argument("destination shape does not match the region");
  for (std::size_t i = 0; i < nd; ++i) {
    const auto start = region.start[i], count = region.count[i], step = region.step[i];
    if (step < 1)
      return invalid_argument("region step must be >= 1 in dimension " + std::to_string(i));
    if (count < 0 || start < 0)
      return out_of_range("negative region in dimension " + std::to_string(i));
    if (count == 0) continue;
    std::int64_t last = 0;
    if (__builtin_mul_overflow(count - 1, step, &last) ||
        __builtin_add_overflow(last, start, &last) || last >= md_.shape[i])
      return out_of_range("region [" + std::to_string(start) + ", " + std::to_string(start) +
                          " + " + std::to_string(count) + "×" + std::to_string(step) +
                          ") exceeds dimension " + std::to_string(i) + " of size " +
                          std::to_string(md_.shape[i]));
  }
  return {};
}

Status Array::validate_region(const Selection& region, const StridedView& dest) const {
  return validate_region_impl(region, dest).annotate(describe());
}

Status Array::read(const Selection& region, const StridedView& dest,
                   const ReadOptions& options) const {
  if (md_.dtype.is_variable_length())  // no fixed-size elements: zarr/vlen_read.h reads them
    return unimplemented(describe() + ": " + md_.dtype.v3_name() +
                         " elements have no fixed size; read them with read_vlen");
  ZF_RETURN_IF_ERROR(validate_region(region, dest));
  if (region.empty()) return {};
  // Planning allocates too (a list of the chunks a region touches can be long).
  try {
    const auto blocks = chunk_blocks(region, md_.chunk_shape);
    ThreadPool* pool = store_->fetch_pool(options.pool);
    DecodeContext ctx{pool, options.buffers, store_->coalescing()};
    ctx.shard_indexes = options.shard_indexes;
    ctx.counters = options.counters;
    return parallel_for(pool, blocks.size(), [&](std::size_t i) -> Status {
      return read_chunk(blocks[i], block_view(dest, blocks[i]), ctx);
    });
  } catch (...) {
    return status_from_current_exception().annotate(describe());
  }
}

bool Array::covers_stored_part(const ChunkBlock& block) const {
  // Every element of the chunk that lies inside the array (edge chunks overhang the array).
  const Selection& sel = block.in_chunk;
  for (std::size_t d = 0; d < md_.shape.size(); ++d) {
    const std::int64_t size = md_.chunk_shape[d];
    const std::int64_t inside = std::min(size, md_.shape[d] - block.chunk[d] * size);
    if (sel.start[d] != 0 || (sel.step[d] != 1 && sel.count[d] > 1) || sel.count[d] != inside)
      return false;
  }
  return true;
}

Status Array::read_chunk(const ChunkBlock& block, const StridedView& view,
                         const DecodeContext& ctx) const {
  // Allocation failures (a large chunk's scratch, a shard's pieces) fail this chunk, named; an
  // exception thrown while naming it reaches the caller's parallel_for, which catches it too.
  try {
    return read_chunk_unguarded(block, view, ctx);
  } catch (...) {
    return status_from_current_exception().annotate("array '" + name_ + "': chunk '" +
                                                    md_.key_encoding.key(block.chunk) + "'");
  }
}

Status Array::read_chunk_unguarded(const ChunkBlock& block, const StridedView& view,
                                   const DecodeContext& ctx) const {
  const std::string key = chunk_key(block.chunk);
  auto annotate = [&](Status s) {
    return std::move(s).annotate("array '" + name_ + "': chunk '" +
                                 md_.key_encoding.key(block.chunk) + "'");
  };
  const auto& spec = chain_.spec();
  auto fill = [&] {
    if (ctx.counters != nullptr) ctx.counters->count_missing();
    fill_strided(view, spec.fill_value.data(), spec.dtype.size);
    return Status();
  };
  // Shards count their inner chunks as they decode them (the sharding codec); other chunks here.
  auto stored = [&](std::uint64_t bytes) {
    if (ctx.counters != nullptr && !chain_.supports_partial_read())
      ctx.counters->count_stored(bytes);
  };
  // A shard read in part: its index first, then only the inner chunks needed. A shard read
  // whole is one request for the whole value (decoded below): on object stores the index
  // round trip and the split into coalesced ranges would cost more than they save.
  if (chain_.supports_partial_read() && !covers_stored_part(block)) {
    StoreKeyReader reader(*store_, key);
    bool found = true;
    Status s = chain_.partial_decode_into(reader, block.in_chunk, view, ctx, found);
    if (!s.ok()) return annotate(std::move(s));
    return found ? Status() : fill();
  }
  if (raw_native_ && block.in_chunk.is_full(spec.shape) && view.is_c_contiguous(spec.dtype.size)) {
    // Uncompressed chunk read whole: straight from the store into the destination.
    auto found =
        store_->read_exact(key, ByteSpan(view.data, static_cast<std::size_t>(spec.nbytes())));
    if (!found.ok()) return annotate(std::move(found).take_status());
    if (!*found) return fill();
    stored(static_cast<std::uint64_t>(spec.nbytes()));
    return {};
  }
  auto value = store_->get(key, max_stored_bytes_);
  if (!value.ok()) return annotate(std::move(value).take_status());
  if (!*value) return fill();
  stored((*value)->size());
  Status s = chain_.decode_into((*value)->span(), block.in_chunk, view, ctx);
  return s.ok() ? s : annotate(std::move(s));
}

Result<StorageInfo> Array::storage_info() const {
  StorageInfo info;
  Shape grid(md_.shape.size());
  for (std::size_t i = 0; i < grid.size(); ++i)
    grid[i] = (md_.shape[i] + md_.chunk_shape[i] - 1) / md_.chunk_shape[i];
  auto total = checked_product(grid);
  info.chunks_total = total.ok() ? *total : INT64_MAX;
  ZF_ASSIGN_OR_RETURN(auto entries, store_->list(path_));
  const std::size_t skip = path_.empty() ? 0 : path_.size() + 1;
  for (const auto& e : entries) {
    const std::string_view rel = std::string_view(e.key).substr(skip);
    auto coords = md_.key_encoding.parse(rel, md_.shape.size());
    if (!coords) continue;
    bool inside = true;
    for (std::size_t i = 0; i < grid.size(); ++i) inside = inside && (*coords)[i] < grid[i];
    if (!inside) continue;
    ++info.chunks_present;
    info.stored_bytes += e.size;
  }
  return info;
}

ThreadPool* requests_pool(std::span<const ReadRequest> requests, ThreadPool* fallback) {
  return requests.empty() ? fallback : requests.front().array->store().fetch_pool(fallback);
}

Status read_many(std::span<const ReadRequest> requests, const ReadOptions& options) {
  return parallel_for(requests_pool(requests, options.pool), requests.size(), [&](std::size_t i) {
    return requests[i].array->read(requests[i].region, requests[i].dest, options);
  });
}

}  // namespace zarrflow
