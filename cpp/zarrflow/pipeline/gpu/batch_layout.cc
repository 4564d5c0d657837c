#include "zarrflow/pipeline/gpu/batch_layout.h"

#include <algorithm>

#include "zarrflow/store/local_files.h"

namespace zarrflow::gpu {
namespace {

constexpr std::uint64_t kStagingAlign = 256;  // satisfies every nvCOMP alignment

// Whether a whole chunk fills its destination in its own element order: decoded in place, or,
// uncompressed, copied as it is. A transformed item never is: its elements change size or value
// on the way.
bool dense_in_encoded_order(const Item& it, const Selection& enc_sel, const StridedView& enc_dest) {
  const ChunkSpec& spec = it.chain->array_to_bytes_spec();
  return it.tf == nullptr && it.program->swap_unit <= 1 && enc_sel.is_full(spec.shape) &&
         enc_dest.is_c_contiguous(spec.dtype.size);
}

// Whether an uncompressed chunk whose decoder consumes `payload_size` bytes is copied up as it
// is, straight into its destination (Placement::copy_up).
bool copied_as_stored(const Item& it, bool dense, bool gpu_cache, std::uint64_t payload_size) {
  return dense && it.program->codec == GpuCodec::kNone && !it.cached && !it.direct && !gpu_cache &&
         payload_size == decoded_size(it);
}

// Where one GPU-decoded (kGpu) item goes; see place_outputs.
Placement place_gpu_item(const Item& it, bool gpu_cache, OutputLayout& layout) {
  Placement t;
  t.enc_sel = it.sel;
  t.enc_dest = it.dest;
  it.chain->to_encoded(t.enc_sel, t.enc_dest);
  if (it.dup_of >= 0) return t;  // scatters from its first occurrence's decoded chunk
  const std::uint64_t n = decoded_size(it);
  const bool dense = dense_in_encoded_order(it, t.enc_sel, t.enc_dest);
  const auto addr = reinterpret_cast<std::uintptr_t>(t.enc_dest.data);
  t.copy_up = copied_as_stored(it, dense, gpu_cache, it.payload.size);
  t.in_place = dense && it.program->codec != GpuCodec::kNone && addr % 16 == 0;
  if (!t.in_place && it.program->codec != GpuCodec::kNone) {
    t.out_offset = layout.out;
    layout.out = align_up(layout.out + n, 256);
  }
  if (it.blosc && it.blosc->needs_scratch()) {
    t.shuffled_offset = layout.shuffled;
    layout.shuffled = align_up(layout.shuffled + n, 256);
  }
  return t;
}

}  // namespace

bool streams_to_host_tf(const Item& it, const StagingOptions& options) {
  if (it.tf == nullptr || it.mode != Mode::kGpu || it.program->codec != GpuCodec::kNone ||
      it.program->crc32c || it.program->swap_unit > 1 || it.shared || it.host_cached ||
      options.caching || options.io != IoPath::kAuto || it.stored_size != decoded_size(it) ||
      it.arr->store().io_pool() != nullptr)  // remote: one request per chunk, not per piece
    return false;
  const ChunkSpec& spec = it.chain->array_to_bytes_spec();
  Selection sel = it.sel;
  StridedView dest = it.dest;
  it.chain->to_encoded(sel, dest);
  return sel.is_full(spec.shape) && dest.is_c_contiguous(out_type_size(it.tf->out));
}

Result<StagingLayout> lay_out_staging(std::vector<Item>& items, std::span<const std::size_t> piece,
                                      const StagingOptions& options) {
  StagingLayout total;
  total.slots.assign(piece.size(), {0, 0});
  for (std::size_t k = 0; k < piece.size(); ++k) {
    Item& it = items[piece[k]];
    if (it.mode == Mode::kFill || it.cached) continue;
    if (it.dup_of >= 0) {  // shares its first occurrence's bytes; counted as if it did not
      const Item& first = items[std::size_t(it.dup_of)];
      if (first.mode == Mode::kFill || first.cached) continue;
      if (first.host_tf) {
        total.converted_unshared =
            align_up(total.converted_unshared + converted_block_bytes(first), 256);
      } else if (!first.direct) {
        const std::uint64_t lead = first.range ? first.range->offset % 4096 : 0;
        total.staged_unshared += align_up(lead + first.stored_size, 4096);
      }
      continue;
    }
    it.host_tf = streams_to_host_tf(it, options);
    if (it.host_tf) {  // read in pieces and converted: no staging slot
      it.host_tf_offset = total.converted;
      total.converted = align_up(total.converted + converted_block_bytes(it), 256);
      total.converted_unshared =
          align_up(total.converted_unshared + converted_block_bytes(it), 256);
      continue;
    }
    it.direct = options.cufile && it.mode == Mode::kGpu && !it.range &&
                it.arr->store().local_files() != nullptr && it.program->codec == GpuCodec::kNone &&
                !it.program->crc32c;
    if (it.direct) {
      if (it.stored_size != decoded_size(it))
        return annotate(it, corrupt_data("bytes: chunk has " + std::to_string(it.stored_size) +
                                         " bytes, expected " + std::to_string(decoded_size(it))));
      it.direct_offset = total.direct;
      total.direct = align_up(total.direct + it.stored_size, kStagingAlign);
      continue;
    }
    // 4 KiB-aligned slots with room for an O_DIRECT read of the aligned superset.
    const std::uint64_t lead = it.range ? it.range->offset % 4096 : 0;
    it.staging_offset = total.staged;
    total.slots[k] = {it.staging_offset, it.staging_offset + it.stored_size};
    total.staged += align_up(lead + it.stored_size, 4096);
    total.staged_unshared += align_up(lead + it.stored_size, 4096);
  }
  return total;
}

HostBlockLayout lay_out_host_blocks(std::vector<Item>& items, std::span<const std::size_t> piece) {
  HostBlockLayout total;
  for (std::size_t idx : piece) {
    Item& it = items[idx];
    if (it.mode != Mode::kCpu) continue;
    it.host_tf = it.tf != nullptr && it.dest.is_c_contiguous(out_type_size(it.tf->out));
    if (it.dup_of >= 0) {
      const Item& first = items[std::size_t(it.dup_of)];
      if (first.mode == Mode::kCpu && same_block(first, it)) {
        it.reuses_block = true;
        it.cpu_offset = first.cpu_offset;
        it.host_tf_offset = first.host_tf_offset;
        total.decoded_unshared = align_up(total.decoded_unshared + cpu_block_bytes(it), 256);
        if (it.host_tf)
          total.converted_unshared =
              align_up(total.converted_unshared + converted_block_bytes(it), 256);
        continue;
      }
    }
    it.cpu_offset = total.decoded;
    total.decoded = align_up(total.decoded + cpu_block_bytes(it), 256);
    total.decoded_unshared = align_up(total.decoded_unshared + cpu_block_bytes(it), 256);
    if (it.host_tf) {
      it.host_tf_offset = total.converted;
      total.converted = align_up(total.converted + converted_block_bytes(it), 256);
      total.converted_unshared =
          align_up(total.converted_unshared + converted_block_bytes(it), 256);
    }
  }
  return total;
}

std::byte* copied_into_place_while_read(const Item& it, bool gpu_cache) {
  if (it.mode != Mode::kGpu || it.dup_of >= 0 || it.host_tf || it.program->crc32c) return nullptr;
  Selection sel = it.sel;
  StridedView dest = it.dest;
  it.chain->to_encoded(sel, dest);
  // Without a checksum trailer an uncompressed chunk's payload is all of its stored bytes
  // (locate_payload refuses any other size), so this is place_outputs' decision made early.
  const bool dense = dense_in_encoded_order(it, sel, dest);
  return copied_as_stored(it, dense, gpu_cache, it.stored_size) ? dest.data : nullptr;
}

bool uploads_while_read(const Item& it) {
  return it.mode == Mode::kGpu && it.program->codec != GpuCodec::kNone && it.dup_of < 0 &&
         !it.cached && !it.host_tf && !it.direct;
}

OutputLayout place_outputs(const std::vector<Item>& items, std::span<const std::size_t> piece,
                           bool gpu_cache) {
  OutputLayout layout;
  layout.items.resize(piece.size());
  for (std::size_t k = 0; k < piece.size(); ++k) {
    const Item& it = items[piece[k]];
    Placement& t = layout.items[k];
    if (it.host_tf) {  // normalised and cast on the host: copied up as it is
      t.copy_up = true;
    } else if (it.mode == Mode::kCpu) {  // decoded into pinned memory shaped like its destination
      t.copy_up = it.tf == nullptr && it.dest.is_c_contiguous(it.chain->spec().dtype.size);
      layout.any_cpu_scatter = layout.any_cpu_scatter || !t.copy_up;
    } else if (it.mode == Mode::kGpu) {
      t = place_gpu_item(it, gpu_cache, layout);
    }
  }
  // Device staging mirrors the pinned staging for the items decoded from it.
  for (std::size_t k = 0; k < piece.size(); ++k) {
    const Item& it = items[piece[k]];
    if (it.mode == Mode::kGpu && !it.direct && !it.cached && it.dup_of < 0 &&
        !layout.items[k].copy_up) {
      layout.items[k].from_staging = true;
      layout.staged = std::max(layout.staged, it.staging_offset + it.stored_size);
      layout.any_staged = true;
    }
  }
  return layout;
}

}  // namespace zarrflow::gpu
