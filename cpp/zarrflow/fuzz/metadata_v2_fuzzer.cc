// libFuzzer target: Zarr v2 metadata — `.zarray` and `.zattrs` (an array: dtype typestrs, fill
// values, order, compressor and filters turned into a codec chain) or `.zgroup` and `.zattrs`
// (a group) — opened from a store through open_node, as zarrflow.open does.
// Input: the first document (.zarray, then as .zgroup) NUL the .zattrs document (optional).
#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace {

void open_v2(const char* key, std::string_view doc, const std::string_view* zattrs) {
  auto store = std::make_shared<zarrflow::MemoryStore>();
  (void)store->set(key, doc);
  if (zattrs) (void)store->set(".zattrs", *zattrs);
  auto node = zarrflow::open_node(store, "", 2);
  zarrflow::fuzz::note(key, node.status());
  if (!node.ok()) zarrflow::fuzz::require_not_internal(node.status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto docs = zarrflow::fuzz::split_documents(data, size);
  const std::string_view* zattrs = docs.size() > 1 ? &docs[1] : nullptr;
  open_v2(".zarray", docs[0], zattrs);
  open_v2(".zgroup", docs[0], zattrs);
  return 0;
}
