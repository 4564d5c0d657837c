#include "zarrflow/pipeline/gpu/host_work.h"

#include <algorithm>
#include <memory>

#include "zarrflow/store/local_files.h"

namespace zarrflow::gpu {
namespace {

Status to_cpu(Item& it, std::string why) {
  it.mode = Mode::kCpu;
  it.cpu_reason = std::move(why);
  return {};
}

// Blosc: the plan of its blocks and streams; inner zstd/zlib streams get the same host
// validation as whole chunks.
Status check_blosc(Item& it, ConstByteSpan stored, std::uint64_t n, const GpuDecoders& gpu) {
  auto plan = make_blosc_plan(stored.subspan(it.payload.offset, it.payload.size));
  if (!plan.ok()) {
    if (plan.status().code() == ErrorCode::kUnimplemented)
      return to_cpu(it, plan.status().message());
    return annotate(it, std::move(plan).take_status());
  }
  if (plan->nbytes != n)
    return annotate(it, corrupt_data("blosc: header says " + std::to_string(plan->nbytes) +
                                     " decoded bytes, expected " + std::to_string(n)));
  for (const auto& s : plan->streams) {
    if (s.kind != BloscStreamKind::kZstd && s.kind != BloscStreamKind::kZlib) continue;
    if (s.kind == BloscStreamKind::kZlib && !gpu.nvcomp) return to_cpu(it, gpu.nvcomp_missing);
    ChainProgram inner;
    inner.codec = s.kind == BloscStreamKind::kZstd ? GpuCodec::kZstd : GpuCodec::kDeflate;
    auto p = locate_payload(inner, stored.subspan(it.payload.offset + s.src_offset, s.src_size),
                            s.dst_size);
    if (!p.ok()) return annotate(it, std::move(p).take_status());
    if (p->cpu) return to_cpu(it, "blosc " + p->reason);
  }
  it.blosc = std::move(plan).value();
  return {};
}

}  // namespace

Status read_stored(Item& it, std::byte* slot, IoPath io, std::atomic<std::int64_t>& direct_reads) {
  const std::uint64_t offset = it.range ? it.range->offset : 0;
  const LocalFiles* files = it.arr->store().local_files();
  Result<bool> r = false;
  if (files != nullptr && io == IoPath::kDirect) {
    const std::uint64_t size = align_up(offset % 4096 + it.stored_size, 4096);
    bool direct = false;
    r = files->read_direct(it.key, offset, it.stored_size, ByteSpan(slot, size), &direct);
    if (direct) ++direct_reads;
    // A whole value must be exactly its size (it may have changed since it was measured).
    if (r.ok() && *r && !it.range) {
      auto now = it.arr->store().size(it.key);
      if (now.ok() && *now && **now != it.stored_size)
        r = corrupt_data("chunk changed size while it was read");
    }
  } else {
    ByteSpan dst(slot, it.stored_size);
    r = it.range ? it.arr->store().read_range_into(it.key, offset, dst)
                 : it.arr->store().read_exact(it.key, dst);
  }
  if (!r.ok()) return annotate(it, std::move(r).take_status());
  if (!*r) it.mode = Mode::kFill;  // deleted since its size was taken
  return {};
}

Status read_converted(Item& it, std::byte* dst, std::atomic<std::uint64_t>& nans) {
  // Bytes read, then converted from the cache: a whole number of elements of every type.
  constexpr std::uint64_t kPiece = 256 << 10;
  thread_local std::unique_ptr<std::uint64_t[]> piece(new std::uint64_t[kPiece / 8]);
  const std::uint64_t base = it.range ? it.range->offset : 0;
  const std::uint32_t osize = out_type_size(it.tf->out);
  const std::uint32_t elem = in_type_size(it.tf->in);
  std::uint64_t found = 0;
  for (std::uint64_t at = 0; at < it.stored_size; at += kPiece) {
    const std::uint64_t n = std::min(kPiece, it.stored_size - at);
    auto r = it.arr->store().read_range_into(
        it.key, base + at, ByteSpan(reinterpret_cast<std::byte*>(piece.get()), n));
    if (!r.ok()) return annotate(it, std::move(r).take_status());
    if (!*r) {  // deleted since its size was taken: the fill value, like any missing chunk
      it.mode = Mode::kFill;
      it.host_tf = false;
      return {};
    }
    found += normalize_cast(piece.get(), dst + at / elem * osize, n / elem, *it.tf);
  }
  nans += found;
  return {};
}

Status check_gpu_item(Item& it, const std::byte* staged, const GpuDecoders& gpu) {
  const ConstByteSpan stored(staged + it.staging_offset, it.stored_size);
  const std::uint64_t n = decoded_size(it);
  auto payload = locate_payload(*it.program, stored, n);
  if (!payload.ok()) return annotate(it, std::move(payload).take_status());
  it.payload = *payload;
  if (it.payload.cpu) return to_cpu(it, it.payload.reason);
  const GpuCodec codec = it.program->codec;
  if (codec == GpuCodec::kLz4 && gpu.decode == GpuDecode::kAuto && n > kLz4GpuMaxBlock)
    return to_cpu(it,
                  "numcodecs LZ4 chunks over 1 MiB are single LZ4 blocks, which the host threads "
                  "decode several times faster than one GPU warp each (gpu_decode='on' keeps "
                  "them on the GPU)");
  if (codec == GpuCodec::kDeflate && !gpu.nvcomp) return to_cpu(it, gpu.nvcomp_missing);
  if (codec == GpuCodec::kBlosc) return check_blosc(it, stored, n, gpu);
  return {};
}

Status decode_on_host(const Item& it, const std::byte* staged, ByteSpan out, BufferPool* buffers) {
  const ConstByteSpan stored(staged + it.staging_offset, it.stored_size);
  StridedView host{out.data(), it.sel.count, c_strides(it.sel.count, it.chain->spec().dtype.size)};
  const DecodeContext ctx{nullptr, buffers, it.arr->store().coalescing()};
  return annotate(it, it.chain->decode_into(stored, it.sel, host, ctx));
}

}  // namespace zarrflow::gpu
