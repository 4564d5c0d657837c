#include "zarrflow/pipeline/gpu/read_plan.h"

#include <algorithm>
#include <atomic>
#include <utility>

namespace zarrflow::gpu {
namespace {

std::size_t hash_of(const StoredChunkId& k) {
  std::size_t h = std::hash<std::string_view>()(k.key);
  for (std::uint64_t v :
       {std::uint64_t(reinterpret_cast<std::uintptr_t>(k.store)), k.offset, k.length})
    h ^= std::hash<std::uint64_t>()(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// An item of `arr`'s chunk `b`, before it knows where its bytes are.
Item item_of(const Array& arr, const ChunkBlock& b, const ElementTransform* tf) {
  Item it;
  it.arr = &arr;
  it.chain = &arr.codecs();
  it.chunk = b.chunk;
  it.fill = &arr.codecs().spec().fill_value;
  it.tf = tf;
  return it;
}

// The items of one shard: fills for its empty inner chunks (or all of it, when it is missing),
// then one item per inner chunk to read.
Status gather_shard(const Array& arr, const ChunkBlock& b, const StridedView& dest,
                    const ElementTransform* tf, const DecodeContext& ctx, std::vector<Item>& out) {
  const std::string key = arr.chunk_key(b.chunk);
  StoreKeyReader reader(arr.store(), key);
  std::vector<LeafRead> reads;
  std::vector<StridedView> fills;
  bool found = true;
  const StridedView view = block_view(dest, b);
  Status s = arr.codecs().plan_partial_read(reader, b.in_chunk, view, ctx, reads, fills, found);
  if (!s.ok()) return std::move(s).annotate(arr.describe() + ": " + where(arr, b.chunk));
  if (!found) fills.push_back(view);
  out.reserve(fills.size() + reads.size());
  for (const auto& f : fills) {
    Item& it = out.emplace_back(item_of(arr, b, tf));
    it.mode = Mode::kFill;
    it.dest = f;
    it.sel.count = f.shape;
  }
  for (auto& r : reads) {
    Item& it = out.emplace_back(item_of(arr, b, tf));
    it.key = key;
    it.range = r.range;
    it.chain = r.chain;
    it.sel = std::move(r.sel);
    it.dest = std::move(r.dest);
    it.inner = std::move(r.inner);
  }
  return {};
}

// Moves each duplicate right behind its first occurrence (see group_duplicates).
void move_duplicates_behind_first(std::vector<Item>& items) {
  std::vector<std::vector<std::size_t>> dups(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].dup_of >= 0) dups[std::size_t(items[i].dup_of)].push_back(i);
  std::vector<Item> grouped;
  grouped.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].dup_of >= 0) continue;
    const auto at = std::int64_t(grouped.size());
    grouped.push_back(std::move(items[i]));
    for (std::size_t d : dups[i]) {
      grouped.push_back(std::move(items[d]));
      grouped.back().dup_of = at;
    }
  }
  items = std::move(grouped);
}

void split_host_share(std::vector<Item>& items, double host_share) {
  double acc = 0;
  for (auto& it : items) {
    if (it.mode != Mode::kGpu || it.program->codec == GpuCodec::kNone) continue;
    if (it.dup_of >= 0) {
      it.mode = items[std::size_t(it.dup_of)].mode;
      continue;
    }
    acc += std::min(host_share, 1.0);
    if (acc >= 1.0 - 1e-9) {
      acc -= 1.0;
      it.mode = Mode::kCpu;  // cpu_reason stays empty: asked for, nothing to report
    }
  }
}

}  // namespace

const ChainProgram* ChainPrograms::of(const CodecChain* chain) {
  auto it = programs_.find(chain);
  if (it == programs_.end()) it = programs_.emplace(chain, analyze_chain(*chain)).first;
  return &it->second;
}

bool ChainPrograms::has(GpuCodec codec) const {
  for (const auto& [chain, program] : programs_)
    if (program.codec == codec) return true;
  return false;
}

Status check_requests(std::span<const ReadRequest> requests,
                      std::span<const ElementTransform> transforms) {
  for (const auto& r : requests) ZF_RETURN_IF_ERROR(r.array->validate_region(r.region, r.dest));
  if (!transforms.empty() && transforms.size() != requests.size())
    return invalid_argument(std::to_string(transforms.size()) + " element transforms for " +
                            std::to_string(requests.size()) + " requests");
  for (std::size_t i = 0; i < transforms.size(); ++i) {
    const DataType& dt = requests[i].array->dtype();
    if (transforms[i].out != OutType::kStored && in_type_of(dt) != transforms[i].in)
      return invalid_argument(requests[i].array->describe() +
                              ": the element transform reads another type than the array's " +
                              dt.v3_name());
  }
  return {};
}

Status gather_items(const ReadRequest& request, const ElementTransform* tf,
                    const PlanOptions& options, std::vector<Item>& items) {
  const Array& arr = *request.array;
  const CodecChain& chain = arr.codecs();
  const auto blocks = chunk_blocks(request.region, arr.metadata().chunk_shape);
  // (No exact reserve here: a read gathers many requests, and growing by exactly each one's
  // items would move the whole vector every time.)
  if (!chain.supports_partial_read()) {
    for (const auto& b : blocks) {
      Item& it = items.emplace_back(item_of(arr, b, tf));
      it.key = arr.chunk_key(b.chunk);
      it.sel = b.in_chunk;
      it.dest = block_view(request.dest, b);
    }
    return {};
  }
  // Sharded: every shard's index is read in parallel (or taken from the index cache).
  std::vector<std::vector<Item>> per_shard(blocks.size());
  DecodeContext ctx{nullptr, options.buffers, arr.store().coalescing()};
  ctx.shard_indexes = options.shard_indexes;
  ThreadPool* pool = arr.store().fetch_pool(options.pool);
  ZF_RETURN_IF_ERROR(parallel_for(pool, blocks.size(), [&](std::size_t i) -> Status {
    return gather_shard(arr, blocks[i], request.dest, tf, ctx, per_shard[i]);
  }));
  for (auto& v : per_shard)
    for (auto& it : v) items.push_back(std::move(it));
  return {};
}

void group_duplicates(std::vector<Item>& items) {
  // (hash, index) sorted: equal stored chunks are neighbours, earliest first. (No hash map: a
  // read has up to ~10^5 items, and a node per item cost more than the rest of this.)
  std::vector<std::pair<std::size_t, std::size_t>> order;
  order.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].mode != Mode::kFill) order.emplace_back(hash_of(stored_chunk(items[i])), i);
  std::sort(order.begin(), order.end());
  bool any = false;
  for (std::size_t run = 0; run < order.size();) {
    std::size_t end = run + 1;
    while (end < order.size() && order[end].first == order[run].first) ++end;
    // Each item's first occurrence is the earliest one with the same id (hashes may collide);
    // it is a duplicate when that one is decoded by the same chain.
    for (std::size_t j = run + 1; j < end; ++j) {
      Item& it = items[order[j].second];
      const StoredChunkId id = stored_chunk(it);
      for (std::size_t k = run; k < j; ++k) {
        const Item& first = items[order[k].second];
        if (first.dup_of >= 0 || !(stored_chunk(first) == id)) continue;
        if (first.chain == it.chain) {
          it.dup_of = std::int64_t(order[k].second);
          any = true;
        }
        break;
      }
    }
    run = end;
  }
  if (any) move_duplicates_behind_first(items);
}

void choose_decoders(std::vector<Item>& items, ChainPrograms& programs,
                     const PlanOptions& options) {
  for (auto& it : items) {
    if (it.mode == Mode::kFill) continue;
    it.program = programs.of(it.chain);
    if (options.decode == GpuDecode::kOff) {
      it.mode = Mode::kCpu;
      it.cpu_reason = "gpu_decode=off";
    } else if (!it.program->gpu) {
      it.mode = Mode::kCpu;
      it.cpu_reason = it.program->reason;
    }
  }
  if (options.host_share > 0) split_host_share(items, options.host_share);
}

Status measure_stored_sizes(std::vector<Item>& items, ThreadPool* pool) {
  // Only whole values go to the pool: a task per item costs about a microsecond, and a
  // 71-channel batch of 103-row inner chunks has 15,904 items.
  std::vector<std::size_t> unsized;
  for (std::size_t i = 0; i < items.size(); ++i) {
    Item& it = items[i];
    if (it.mode == Mode::kFill || it.cached || it.host_cached) continue;
    if (it.range) {
      it.stored_size = it.range->length;
    } else {
      unsized.push_back(i);
    }
  }
  ThreadPool* io = items.empty() ? pool : items.front().arr->store().fetch_pool(pool);
  return parallel_for(io, unsized.size(), [&](std::size_t u) -> Status {
    Item& it = items[unsized[u]];
    auto size = it.arr->store().size(it.key);
    if (!size.ok()) return annotate(it, std::move(size).take_status());
    if (!*size) {
      it.mode = Mode::kFill;
    } else if (**size > it.arr->max_stored_chunk_bytes()) {
      // Staged whole: a chunk larger than its codecs can produce is refused before allocation.
      return annotate(it, value_too_large(it.arr->store().describe_key(it.key), **size,
                                          it.arr->max_stored_chunk_bytes()));
    } else {
      it.stored_size = **size;
    }
    return {};
  });
}

std::uint64_t counted_decoded(const Item& item) {
  if (item.mode == Mode::kFill) return 0;
  return item.cached ? decoded_size(item) / 2 : decoded_size(item);
}

PiecePlanner::PiecePlanner(std::vector<Item>& items, PieceBounds bounds)
    : items_(items), bounds_(bounds) {
  std::uint64_t total_staged = 0, total_decoded = 0;
  std::uint64_t staged = 0, decoded = 0;
  for (const auto& it : items_) {
    if (it.dup_of >= 0) continue;
    if (pieces_ == 0 || exceeds(staged, decoded, it)) {
      ++pieces_;
      staged = decoded = 0;
    }
    staged += it.stored_size;
    decoded += counted_decoded(it);
    total_staged += it.stored_size;
    total_decoded += counted_decoded(it);
  }
  decoded_binds_ = total_decoded * double(bounds_.staged) >= total_staged * double(bounds_.decoded);
  remaining_ = decoded_binds_ ? total_decoded : total_staged;
}

bool PiecePlanner::exceeds(std::uint64_t staged, std::uint64_t decoded, const Item& it) const {
  return staged + it.stored_size > bounds_.staged ||
         decoded + counted_decoded(it) > bounds_.decoded;
}

std::vector<std::size_t> PiecePlanner::next(std::uint64_t* decoded_bytes) {
  std::vector<std::size_t> piece;
  std::uint64_t staged = 0, decoded = 0, actual = 0;
  const std::uint64_t pieces_left = made_ < pieces_ ? pieces_ - made_ : 1;
  const std::uint64_t target = (remaining_ + pieces_left - 1) / pieces_left;
  const auto filled = [&] { return decoded_binds_ ? decoded : staged; };
  while (next_ < items_.size()) {
    Item& it = items_[next_];
    if (it.dup_of >= 0) {
      items_[std::size_t(it.dup_of)].shared = true;
      piece.push_back(next_++);
      continue;
    }
    if (!piece.empty() && ((target > 0 && filled() >= target) || exceeds(staged, decoded, it)))
      break;
    staged += it.stored_size;
    decoded += counted_decoded(it);
    if (it.mode != Mode::kFill) actual += decoded_size(it);
    piece.push_back(next_++);
  }
  remaining_ -= std::min(remaining_, filled());
  ++made_;
  if (decoded_bytes != nullptr) *decoded_bytes = actual;
  return piece;
}

namespace {
std::atomic<int> g_zstd_decoder{int(ZstdDecoder::kAuto)};
}  // namespace

void set_zstd_decoder(ZstdDecoder d) { g_zstd_decoder.store(int(d)); }

ZstdDecoder zstd_decoder() { return ZstdDecoder(g_zstd_decoder.load()); }

bool zstd_by_nvcomp(bool nvcomp_loaded) {
  return nvcomp_loaded && zstd_decoder() != ZstdDecoder::kZarrflow;
}

int read_lanes(int asked, bool nvcomp, bool zarrflow_zstd, int most) {
  if (nvcomp) return 1;
  if (zarrflow_zstd && asked > 1) return std::min(2 * asked, most);
  return asked;
}

bool parse_zstd_decoder(std::string_view name, ZstdDecoder* d) {
  if (name == "auto") {
    *d = ZstdDecoder::kAuto;
  } else if (name == "zarrflow") {
    *d = ZstdDecoder::kZarrflow;
  } else if (name == "nvcomp") {
    *d = ZstdDecoder::kNvcomp;
  } else {
    return false;
  }
  return true;
}

std::uint64_t nvcomp_piece_bytes(std::uint64_t gpu_total, std::uint64_t available,
                                 std::uint64_t read_budget) {
  const std::uint64_t room = read_budget != 0 ? read_budget / kNvcompPieceFootprint : available / 8;
  return std::clamp<std::uint64_t>(std::min(gpu_total / 24, room), std::uint64_t{256} << 20,
                                   std::uint64_t{8} << 30);
}

}  // namespace zarrflow::gpu
