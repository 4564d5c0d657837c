#include "zarrflow/pipeline/gpu/decode_jobs.h"

#include <algorithm>
#include <cstring>

namespace zarrflow::gpu {
namespace {

const std::uint8_t* u8(const std::byte* p) { return reinterpret_cast<const std::uint8_t*>(p); }
std::uint8_t* w8(std::byte* p) { return reinterpret_cast<std::uint8_t*>(p); }

// Builds one piece's jobs item by item.
class JobBuilder {
 public:
  JobBuilder(std::vector<Item>& items, const DeviceAreas& areas, DecodeJobs& jobs)
      : items_(items), areas_(areas), jobs_(jobs) {}

  Status add(std::size_t idx, const Placement& t) {
    Item& it = items_[idx];
    switch (it.mode) {
      case Mode::kFill:
        return scatter(it, nullptr, it.sel.count, Selection::full(it.sel.count), it.dest, 1,
                       it.fill);
      case Mode::kCpu:
        ++(it.reuses_block ? jobs_.deduplicated : jobs_.cpu_decoded);
        if (t.copy_up) return {};
        return scatter(it, areas_.cpu + it.cpu_offset, it.sel.count, Selection::full(it.sel.count),
                       it.dest, 1, nullptr);
      case Mode::kGpu:
        return it.dup_of >= 0 ? add_duplicate(it, t) : add_decoded(it, t, idx);
    }
    return {};
  }

 private:
  // A scatter job of `sel` of a chunk of `shape` at `src` (null: `fill`) into `dest`.
  Status scatter(const Item& it, const std::byte* src, const Shape& shape, const Selection& sel,
                 const StridedView& dest, std::uint32_t swap_unit,
                 const std::vector<std::byte>* fill) {
    auto j =
        make_scatter(src, shape, sel, dest, it.chain->spec().dtype.size, swap_unit, fill, it.tf);
    if (!j) return annotate(it, unimplemented("destination has too many dimensions for the GPU"));
    if (j->count) jobs_.scatters.push_back(*j);
    return {};
  }

  // Scatters from its first occurrence's decoded chunk.
  Status add_duplicate(const Item& it, const Placement& t) {
    const Item& first = items_[std::size_t(it.dup_of)];
    if (first.d_decoded == nullptr)
      return annotate(it, internal_error("shared chunk has no decoded copy"));
    ZF_RETURN_IF_ERROR(scatter(it, first.d_decoded, it.chain->array_to_bytes_spec().shape,
                               t.enc_sel, t.enc_dest, it.program->swap_unit, nullptr));
    ++jobs_.deduplicated;
    return {};
  }

  Status add_decoded(Item& it, const Placement& t, std::size_t idx) {
    ++jobs_.gpu_decoded;
    const std::byte* src = it.cached   ? it.cached_bytes + it.payload.offset
                           : it.direct ? areas_.direct + it.direct_offset
                                       : areas_.staging + it.staging_offset + it.payload.offset;
    std::byte* out = t.in_place ? t.enc_dest.data : areas_.out + t.out_offset;
    const auto item = static_cast<std::uint32_t>(idx);
    const std::uint64_t n = decoded_size(it);
    switch (it.program->codec) {
      case GpuCodec::kNone:
        // copied up (as stored, or converted by the host) into place; else the stored bytes
        // are the elements
        out = t.copy_up ? it.dest.data : const_cast<std::byte*>(src);
        break;
      case GpuCodec::kZstd:
        jobs_.zstd.add(src, it.payload.size, out, n, item);
        break;
      case GpuCodec::kDeflate:  // the trailer follows the payload: CRC-32 (gzip) or Adler-32
        jobs_.checksums.push_back({w8(out), u8(src + it.payload.size), n,
                                   it.program->gzip ? kChecksumCrc32 : kChecksumAdler32,
                                   std::uint32_t(jobs_.deflate.size())});
        jobs_.deflate.add(src, it.payload.size, out, n, item);
        break;
      case GpuCodec::kLz4:
        // zarrflow's own decoder, not nvCOMP's: nvCOMP's LZ4 decoded corrupted blocks that
        // liblz4 rejects without reporting an error, and was slower on 4 MB single-block chunks
        // (docs/design_measurements.md, "LZ4 blocks by zarrflow's kernel, not nvCOMP's").
        add_stream(
            {u8(src), w8(out), std::uint32_t(it.payload.size), std::uint32_t(n), kStreamLz4, 0},
            item);
        break;
      case GpuCodec::kBlosc:
        add_blosc(*it.blosc, src, out,
                  it.blosc->needs_scratch() ? areas_.shuffled + t.shuffled_offset : nullptr, item);
        break;
    }
    it.d_decoded = out;
    if (t.in_place || t.copy_up) return {};
    return scatter(it, out, it.chain->array_to_bytes_spec().shape, t.enc_sel, t.enc_dest,
                   it.program->swap_unit, nullptr);
  }

  void add_stream(const StreamJob& job, std::uint32_t item) {
    jobs_.streams.push_back(job);
    jobs_.stream_item.push_back(item);
  }

  // A Blosc chunk: its inner streams to their decoders, then its shuffled blocks un-shuffled
  // from `shuffled` into `out`.
  void add_blosc(const BloscPlan& plan, const std::byte* src, std::byte* out, std::byte* shuffled,
                 std::uint32_t item) {
    for (const auto& s : plan.streams) {
      const std::byte* ssrc = src + s.src_offset;
      std::byte* sdst = (s.to_scratch ? shuffled : out) + s.dst_offset;
      switch (s.kind) {
        case BloscStreamKind::kZstd:
          jobs_.zstd.add(ssrc, s.src_size, sdst, s.dst_size, item);
          break;
        case BloscStreamKind::kZlib:  // strip the zlib wrapper: raw deflate inside
          jobs_.checksums.push_back({w8(sdst), u8(ssrc + s.src_size - 4), s.dst_size,
                                     kChecksumAdler32, std::uint32_t(jobs_.deflate.size())});
          jobs_.deflate.add(ssrc + 2, s.src_size - 6, sdst, s.dst_size, item);
          break;
        default: {
          const std::uint32_t kind = s.kind == BloscStreamKind::kLz4       ? kStreamLz4
                                     : s.kind == BloscStreamKind::kBlosclz ? kStreamBlosclz
                                                                           : kStreamCopy;
          add_stream({u8(ssrc), w8(sdst), s.src_size, s.dst_size, kind, 0}, item);
        }
      }
    }
    for (std::uint32_t bi : plan.unshuffled) {
      const BloscBlock& blk = plan.blocks[bi];
      jobs_.unshuffles.push_back({u8(shuffled + blk.dst_offset), w8(out + blk.dst_offset), blk.size,
                                  plan.typesize, blk.unshuffle == BloscUnshuffle::kBit ? 1u : 0u});
    }
  }

  std::vector<Item>& items_;
  const DeviceAreas& areas_;
  DecodeJobs& jobs_;
};

}  // namespace

void NvcompJobs::add(const std::byte* from, std::uint64_t size, std::byte* to,
                     std::uint64_t decoded, std::uint32_t of_item) {
  src.push_back(from);
  src_bytes.push_back(size);
  capacity.push_back(decoded);
  dst.push_back(to);
  item.push_back(of_item);
  max_out = std::max<std::size_t>(max_out, decoded);
  total_out += decoded;
}

std::vector<std::uint32_t> DecodeJobs::slot_items() const {
  std::vector<std::uint32_t> out;
  out.reserve(slots());
  for (const auto* v : {&zstd.item, &deflate.item, &stream_item})
    out.insert(out.end(), v->begin(), v->end());
  return out;
}

Status build_decode_jobs(std::vector<Item>& items, std::span<const std::size_t> piece,
                         const OutputLayout& layout, const DeviceAreas& areas, DecodeJobs& jobs) {
  JobBuilder builder(items, areas, jobs);
  for (std::size_t k = 0; k < piece.size(); ++k)
    ZF_RETURN_IF_ERROR(builder.add(piece[k], layout.items[k]));
  const std::size_t first_stream_slot = jobs.zstd.size() + jobs.deflate.size();
  for (std::size_t s = 0; s < jobs.streams.size(); ++s)
    jobs.streams[s].status = std::uint32_t(first_stream_slot + s);
  return {};
}

JobTables::JobTables(const DecodeJobs& jobs) {
  tiles_.assign(jobs.scatters.size() + 1, 0);
  for (std::size_t s = 0; s < jobs.scatters.size(); ++s)
    tiles_[s + 1] = tiles_[s] + (jobs.scatters[s].count + kScatterTile - 1) / kScatterTile;
  total_tiles = tiles_.back();
  zero_status_.assign(jobs.slots(), 0);
  zero_nans_.assign(1, 0);
  any_transform = std::any_of(jobs.scatters.begin(), jobs.scatters.end(),
                              [](const ScatterJob& j) { return j.tf.out != OutType::kStored; });
  if (jobs.zstd_frames.empty()) {
    zstd = add_nvcomp(jobs.zstd);
  } else {
    zstd_frames = add(jobs.zstd_frames);
  }
  deflate = add_nvcomp(jobs.deflate);
  streams = add(jobs.streams);
  unshuffles = add(jobs.unshuffles);
  scatters = add(jobs.scatters);
  tile_starts = add(tiles_);
  status = add(zero_status_);
  nans = add(zero_nans_);
  checksums = add(jobs.checksums);
  zstd.actual = reserve(jobs.zstd.size() * sizeof(std::size_t));
  deflate.actual = reserve(jobs.deflate.size() * sizeof(std::size_t));
}

template <typename T>
std::size_t JobTables::add(const std::vector<T>& v) {
  end_ = align_up(end_, 16);
  const std::size_t at = end_;
  parts_.push_back({at, reinterpret_cast<const std::byte*>(v.data()), v.size() * sizeof(T)});
  end_ += v.size() * sizeof(T);
  return at;
}

std::size_t JobTables::reserve(std::size_t bytes) {
  end_ = align_up(end_, 16);
  const std::size_t at = end_;
  end_ += bytes;
  return at;
}

JobTables::Nvcomp JobTables::add_nvcomp(const NvcompJobs& jobs) {
  Nvcomp n{};
  n.src = add(jobs.src);
  n.src_bytes = add(jobs.src_bytes);
  n.capacity = add(jobs.capacity);
  n.dst = add(jobs.dst);
  return n;  // `actual` is reserved after the tables that are copied up
}

void JobTables::pack(std::byte* host) const {
  for (const auto& p : parts_)
    if (p.size) std::memcpy(host + p.at, p.data, p.size);
}

}  // namespace zarrflow::gpu
