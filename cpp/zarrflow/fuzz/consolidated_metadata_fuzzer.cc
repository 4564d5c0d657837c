// libFuzzer target: consolidated metadata — Zarr v2 `.zmetadata` beside a `.zgroup`, or a Zarr v3
// group `zarr.json` with inline "consolidated_metadata" — opened as a group whose members (and
// their members, a few levels down) are listed and opened from the consolidated documents alone.
// Input: u8 format (bit 0: v3) | the .zmetadata (v2) or zarr.json (v3) text.
#include "zarrflow/fuzz/fuzz_util.h"
#include "zarrflow/store/memory_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace {

using namespace zarrflow;

// Opens up to `budget` members of `group`, descending into member groups up to `depth` levels.
void walk(const Group& group, int depth, int& budget) {
  auto names = group.member_names();
  if (!names.ok()) {
    fuzz::require_not_internal(names.status());
    return;
  }
  for (const std::string& name : *names) {
    if (budget-- <= 0) return;
    auto member = group.open_member(name);
    fuzz::note(name.c_str(), member.status());
    if (!member.ok()) {
      fuzz::require_not_internal(member.status());
      continue;
    }
    if (auto* g = std::get_if<std::shared_ptr<Group>>(&*member); g && depth > 0)
      walk(**g, depth - 1, budget);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::InputReader in(data, size);
  const bool v3 = (in.u8() & 1) != 0;
  auto store = std::make_shared<MemoryStore>();
  if (v3) {
    (void)store->set("zarr.json", in.rest_text());
  } else {
    (void)store->set(".zgroup", std::string_view(R"({"zarr_format": 2})"));
    (void)store->set(".zmetadata", in.rest_text());
  }
  auto node = open_node(store, "", v3 ? 3 : 2);
  fuzz::note("open", node.status());
  if (!node.ok()) {
    fuzz::require_not_internal(node.status());
    return 0;
  }
  if (auto* g = std::get_if<std::shared_ptr<Group>>(&*node)) {
    int budget = 64;
    walk(**g, 3, budget);
  }
  return 0;
}
