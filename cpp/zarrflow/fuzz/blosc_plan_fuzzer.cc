// libFuzzer target: the GPU Blosc planner and its host reference decoder (codec/gpu/blosc_plan.h,
// blosc_host_decode.h) on arbitrary chunks. Guarantees checked, as the GPU kernels trust them:
//   * every planned stream reads inside the chunk and writes inside the decoded bytes, inside
//     its block; the streams cover the decoded bytes exactly once; every block and un-shuffle
//     entry is in range (bit un-shuffle only where the whole elements form groups of 8);
//   * a chunk the plan decodes, c-blosc (the CPU decoder) decodes too, to the same bytes: the GPU
//     path never returns data the CPU path rejects. (The plan may reject more: an LZ4 match
//     offset of 0, invalid in the format, is decoded by liblz4.)
// Input: the chunk bytes.
#include <algorithm>

#include "zarrflow/codec/gpu/blosc_host_decode.h"
#include "zarrflow/codec/gpu/blosc_plan.h"
#include "zarrflow/fuzz/fuzz_util.h"

namespace {

using namespace zarrflow;
using namespace zarrflow::gpu;

void check_plan(const BloscPlan& plan, std::size_t chunk_size) {
  fuzz::require(plan.header.cbytes == chunk_size, "plan of a chunk of another size");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> written;  // (dst_offset, dst_size)
  for (const BloscStream& s : plan.streams) {
    fuzz::require(s.src_size > 0 && s.dst_size > 0, "empty stream");
    fuzz::require(s.src_offset <= chunk_size && s.src_size <= chunk_size - s.src_offset,
                  "stream reads outside the chunk");
    fuzz::require(s.dst_offset <= plan.nbytes && s.dst_size <= plan.nbytes - s.dst_offset,
                  "stream writes outside the decoded bytes");
    if (!plan.memcpyed) {
      fuzz::require(s.block < plan.blocks.size(), "stream of a block that does not exist");
      const BloscBlock& b = plan.blocks[s.block];
      fuzz::require(
          s.dst_offset >= b.dst_offset && s.dst_offset + s.dst_size <= b.dst_offset + b.size,
          "stream writes outside its block");
      fuzz::require(s.to_scratch == (b.unshuffle != BloscUnshuffle::kNone),
                    "stream of a shuffled block not decoded into the scratch buffer");
    }
    written.emplace_back(s.dst_offset, s.dst_size);
  }
  std::sort(written.begin(), written.end());
  std::uint64_t next = 0;
  for (const auto& [offset, n] : written) {
    fuzz::require(offset == next, "streams leave a gap or overlap in the decoded bytes");
    next = offset + n;
  }
  fuzz::require(next == plan.nbytes, "streams do not cover the decoded bytes");
  for (const BloscBlock& b : plan.blocks) {
    fuzz::require(b.dst_offset <= plan.nbytes && b.size <= plan.nbytes - b.dst_offset,
                  "block outside the decoded bytes");
    fuzz::require(b.first_stream <= plan.streams.size() &&
                      b.num_streams <= plan.streams.size() - b.first_stream,
                  "block's streams out of range");
    // A block may end in a partial element: its last size % typesize bytes are copied through
    // (unshuffle.h), so only the whole elements must come in groups of 8.
    if (b.unshuffle == BloscUnshuffle::kBit)
      fuzz::require(plan.typesize > 0 && (b.size / plan.typesize) % 8 == 0,
                    "bit un-shuffle of a block whose whole elements are not groups of 8");
  }
  for (const std::uint32_t i : plan.unshuffled)
    fuzz::require(i < plan.blocks.size() && plan.blocks[i].unshuffle != BloscUnshuffle::kNone,
                  "un-shuffle entry out of range");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto cpu_codec = fuzz::make_v2_codec({{"id", "blosc"}});
  const ConstByteSpan chunk(reinterpret_cast<const std::byte*>(data), size);
  auto plan = make_blosc_plan(chunk);
  fuzz::note("make_blosc_plan", plan.status());
  if (!plan.ok()) {
    fuzz::require_not_internal(plan.status());
    return 0;
  }
  check_plan(*plan, size);
  if (plan->nbytes > fuzz::kMaxDecodedBytes) return 0;
  std::vector<std::byte> gpu_out(plan->nbytes), scratch(plan->needs_scratch() ? plan->nbytes : 0);
  const Status gpu = execute_blosc_plan(*plan, chunk, gpu_out, scratch);
  fuzz::note("execute_blosc_plan", gpu);
  fuzz::require_not_internal(gpu);
  if (!gpu.ok()) return 0;
  std::vector<std::byte> cpu_out(plan->nbytes);
  fuzz::require_ok(cpu_codec->decode_into(chunk, cpu_out),
                   "the GPU path decodes a chunk c-blosc rejects");
  fuzz::require(gpu_out == cpu_out, "the GPU path and c-blosc decode a chunk differently");
  return 0;
}
