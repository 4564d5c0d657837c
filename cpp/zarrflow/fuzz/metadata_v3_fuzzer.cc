// libFuzzer target: Zarr v3 `zarr.json` of an array (data types, fill values, chunk grid, chunk
// key encoding, extensions, the codec chain) or of a group (attributes, inline consolidated
// metadata, whose members are then listed and opened), through open_node as zarrflow.open does.
// Input: the zarr.json text.
#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zarrflow;
  auto store = std::make_shared<MemoryStore>();
  (void)store->set("zarr.json", std::string_view(reinterpret_cast<const char*>(data), size));
  auto node = open_node(store, "", 3);
  fuzz::note("open", node.status());
  if (!node.ok()) {
    fuzz::require_not_internal(node.status());
    return 0;
  }
  if (auto* array = std::get_if<std::shared_ptr<Array>>(&*node)) {
    (void)(*array)->codecs().describe();
    return 0;
  }
  const auto& group = std::get<std::shared_ptr<Group>>(*node);
  auto names = group->member_names();
  if (!names.ok()) {
    fuzz::require_not_internal(names.status());
    return 0;
  }
  for (const std::string& name : *names) {
    auto member = group->open_member(name);
    fuzz::note(name.c_str(), member.status());
    if (!member.ok()) fuzz::require_not_internal(member.status());
  }
  return 0;
}
