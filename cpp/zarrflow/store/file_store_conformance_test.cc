// FileStore against the Store contract (store_conformance_test.h), in a temporary directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "zarrflow/store/file_store.h"
#include "zarrflow/store/store_conformance_test.h"

namespace zarrflow::conformance {
namespace {

namespace fs = std::filesystem;

class FileHarness {
 public:
  static constexpr bool kLists = true;

  FileHarness()
      : root_(fs::temp_directory_path() /
              ("zarrflow-conformance-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(root_);
  }
  ~FileHarness() { fs::remove_all(root_); }
  FileHarness(const FileHarness&) = delete;
  FileHarness& operator=(const FileHarness&) = delete;

  std::shared_ptr<Store> make(const std::map<std::string, std::string>& values) {
    for (const auto& [key, value] : values) {
      const fs::path path = root_ / key;
      fs::create_directories(path.parent_path());
      std::ofstream(path, std::ios::binary) << value;
    }
    fs::create_directories(root_);
    auto store = FileStore::open(root_.string());
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? *store : nullptr;
  }

 private:
  fs::path root_;
};

INSTANTIATE_TYPED_TEST_SUITE_P(File, StoreConformance, FileHarness);

}  // namespace
}  // namespace zarrflow::conformance
