#include "zarrflow/pipeline/gpu/read_item.h"

namespace zarrflow::gpu {

std::string where(const Array& arr, const Shape& chunk, const Shape& inner) {
  std::string s = "chunk '" + arr.relative_chunk_key(chunk) + "'";
  if (!inner.empty()) s += ": inner chunk " + format_coords(inner);
  return s;
}

Status annotate(const Item& it, Status s) {
  return std::move(s).annotate(it.arr->describe() + ": " + where(it));
}

bool same_block(const Item& a, const Item& b) {
  const bool same_tf =
      (a.tf == nullptr) == (b.tf == nullptr) && (a.tf == nullptr || same_transform(*a.tf, *b.tf));
  return same_tf && a.host_tf == b.host_tf && a.sel.start == b.sel.start &&
         a.sel.count == b.sel.count && a.sel.step == b.sel.step;
}

StoredChunkId stored_chunk(const Item& it) {
  return {&it.arr->store(), it.key, it.range ? it.range->offset : 0,
          it.range ? it.range->length : ~std::uint64_t{0}};
}

}  // namespace zarrflow::gpu
