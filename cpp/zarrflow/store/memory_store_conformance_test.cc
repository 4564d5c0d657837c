// MemoryStore against the Store contract (store_conformance_test.h).
#include "zarrflow/store/memory_store.h"
#include "zarrflow/store/store_conformance_test.h"

namespace zarrflow::conformance {
namespace {

struct MemoryHarness {
  static constexpr bool kLists = true;
  std::shared_ptr<Store> make(const std::map<std::string, std::string>& values) {
    auto store = std::make_shared<MemoryStore>("memory");
    for (const auto& [key, value] : values) EXPECT_TRUE(store->set(key, value).ok()) << key;
    return store;
  }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Memory, StoreConformance, MemoryHarness);

}  // namespace
}  // namespace zarrflow::conformance
