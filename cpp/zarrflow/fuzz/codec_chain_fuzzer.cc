// libFuzzer target: whole codec chains built from fuzzed metadata, decoding fuzzed chunk bytes
// through the public read path: the array's zarr.json (v3: any codecs, sharding included) or
// .zarray (v2: order, filters, compressor) is opened from a store holding one stored chunk at
// the grid origin, and a region covering that chunk is read. The read must either fill the
// destination or fail with a zarrflow error; arrays whose chunk exceeds kMaxDecodedBytes are
// skipped to keep executions fast.
// Input: u8 flags (bit 0: v2, bit 1: every other element, bit 2: reversed destination strides) |
//        metadata text | NUL | stored chunk bytes.
#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow;
  fuzz::InputReader in(data, size);
  const std::uint8_t flags = in.u8();
  const bool v2 = (flags & 1) != 0, strided = (flags & 2) != 0, reversed = (flags & 4) != 0;
  const std::string_view rest = in.rest_text();
  const std::size_t nul = std::min(rest.find('\0'), rest.size());
  const std::string_view metadata = rest.substr(0, nul);
  const std::string_view chunk = rest.substr(std::min(nul + 1, rest.size()));

  auto store = std::make_shared<MemoryStore>();
  (void)store->set(v2 ? ".zarray" : "zarr.json", metadata);
  auto node = open_node(store, "", v2 ? 2 : 3);
  fuzz::note("open", node.status());
  if (!node.ok()) {
    fuzz::require_not_internal(node.status());
    return 0;
  }
  auto* found = std::get_if<std::shared_ptr<Array>>(&*node);
  if (found == nullptr) return 0;
  const Array& array = **found;
  const Shape& chunk_shape = array.metadata().chunk_shape;

  std::uint64_t chunk_bytes = array.dtype().size;
  for (const std::int64_t n : chunk_shape)
    if (__builtin_mul_overflow(chunk_bytes, static_cast<std::uint64_t>(n), &chunk_bytes)) return 0;
  if (chunk_bytes > fuzz::kMaxDecodedBytes) return 0;
  (void)store->set(array.chunk_key(Shape(chunk_shape.size(), 0)), chunk);

  Selection region{Shape(chunk_shape.size(), 0), {}, Shape(chunk_shape.size(), strided ? 2 : 1)};
  std::int64_t elements = 1;
  for (std::size_t i = 0; i < chunk_shape.size(); ++i) {
    const std::int64_t extent = std::min(chunk_shape[i], array.shape()[i]);
    region.count.push_back(strided ? (extent + 1) / 2 : extent);
    elements *= region.count.back();
  }
  if (elements == 0) return 0;
  fuzz::Destination dest = fuzz::make_destination(region.count, array.dtype().size, reversed);
  const Status read = array.read(region, dest.view, ReadOptions{});
  fuzz::note("read", read);
  fuzz::require_not_internal(read);
  return 0;
}
