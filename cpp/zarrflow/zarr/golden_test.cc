// Stores written by zarr-python (tests/data/golden, made by make_golden.py there) read by zarrflow
// and compared, element for element, with what zarr-python reads from them (expected.json):
// metadata, the number of chunks zarr-python left out, and whole, strided and Fortran-order reads,
// on the calling thread and on a pool.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zarrflow/core/strided.h"
#include "zarrflow/core/thread_pool.h"
#include "zarrflow/store/file_store.h"
#include "zarrflow/zarr/hierarchy.h"

namespace zarrflow {
namespace {

namespace fs = std::filesystem;

// tests/data/golden of this checkout, found upwards from the working directory (ctest runs in
// the build tree inside the repository, scripts/gpu_run.sh in its root) or from the test binary.
fs::path golden_dir() {
  std::vector<fs::path> starts = {fs::current_path()};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  for (fs::path p : starts) {
    for (;; p = p.parent_path()) {
      if (fs::is_regular_file(p / "tests/data/golden/expected.json"))
        return p / "tests/data/golden";
      if (p == p.root_path() || p.empty()) break;
    }
  }
  return {};
}

const nlohmann::json& expected() {
  static const nlohmann::json kExpected = [] {
    const fs::path dir = golden_dir();
    if (dir.empty()) return nlohmann::json::object();
    std::ifstream in(dir / "expected.json");
    return nlohmann::json::parse(in);
  }();
  return kExpected;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [name, value] : expected().items()) names.push_back(name);
  return names;
}

// Element `i` of a native-order buffer of the NumPy type `dtype`, as a double (every golden
// value is exact in one).
double element(const std::vector<std::byte>& buf, const std::string& dtype, std::size_t i) {
  auto load = [&]<typename T>(T) {
    T v;
    std::memcpy(&v, buf.data() + i * sizeof(T), sizeof(T));
    return static_cast<double>(v);
  };
  if (dtype == "int8") return load(std::int8_t{});
  if (dtype == "int16") return load(std::int16_t{});
  if (dtype == "int32") return load(std::int32_t{});
  if (dtype == "int64") return load(std::int64_t{});
  if (dtype == "uint8") return load(std::uint8_t{});
  if (dtype == "uint16") return load(std::uint16_t{});
  if (dtype == "uint32") return load(std::uint32_t{});
  if (dtype == "float32") return load(float{});
  if (dtype == "float64") return load(double{});
  ADD_FAILURE() << "golden data type " << dtype << " has no comparison here";
  return 0;
}

class Golden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& name = GetParam();
    want_ = expected().at(name);
    const auto slash = name.find('/');
    auto store = FileStore::open((golden_dir() / name.substr(0, slash)).string());
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    auto node = open_node(*store, name.substr(slash + 1));
    ASSERT_TRUE(node.ok()) << node.status().to_string();
    ASSERT_TRUE(std::holds_alternative<std::shared_ptr<Array>>(*node)) << name;
    array_ = std::get<std::shared_ptr<Array>>(*node);
    dtype_ = want_.at("dtype").get<std::string>();
    shape_ = want_.at("shape").get<Shape>();
  }

  // Reads `sel` into a destination with element strides `order` applied (C order by default)
  // and returns it as doubles in C order of the selection.
  std::vector<double> read(const Selection& sel, ThreadPool* pool, bool fortran = false) {
    const std::int64_t esize = array_->dtype().size;
    std::int64_t n = 1;
    for (auto c : sel.count) n *= c;
    std::vector<std::byte> buf(static_cast<std::size_t>(n * esize));
    Shape strides = c_strides(sel.count, esize);
    if (fortran) {  // first dimension fastest
      std::int64_t s = esize;
      for (std::size_t d = 0; d < sel.count.size(); ++d) {
        strides[d] = s;
        s *= sel.count[d];
      }
    }
    const Status st = array_->read(sel, StridedView{buf.data(), sel.count, strides},
                                   ReadOptions{pool, nullptr, nullptr});
    EXPECT_TRUE(st.ok()) << st.to_string();
    std::vector<double> out(static_cast<std::size_t>(n));
    for (std::int64_t flat = 0; flat < n; ++flat) {  // C-order position → buffer position
      std::int64_t rest = flat, at = 0;
      for (std::size_t d = sel.count.size(); d-- > 0;) {
        at += (rest % sel.count[d]) * strides[d];
        rest /= sel.count[d];
      }
      out[static_cast<std::size_t>(flat)] =
          element(buf, dtype_, static_cast<std::size_t>(at / esize));
    }
    return out;
  }

  // zarr-python's values of `sel`, in C order.
  std::vector<double> want(const Selection& sel) const {
    const auto& values = want_.at("values");
    std::int64_t n = 1;
    for (auto c : sel.count) n *= c;
    std::vector<double> out;
    for (std::int64_t flat = 0; flat < n; ++flat) {
      std::int64_t rest = flat, at = 0, stride = 1;
      for (std::size_t d = sel.count.size(); d-- > 0;) {
        at += (sel.start[d] + (rest % sel.count[d]) * sel.step[d]) * stride;
        rest /= sel.count[d];
        stride *= shape_[d];
      }
      out.push_back(values.at(static_cast<std::size_t>(at)).get<double>());
    }
    return out;
  }

  nlohmann::json want_;
  std::shared_ptr<Array> array_;
  std::string dtype_;
  Shape shape_;
};

TEST(GoldenData, IsFound) {
  ASSERT_FALSE(golden_dir().empty())
      << "tests/data/golden not found above " << fs::current_path() << " or the test binary";
  EXPECT_GE(expected().size(), 10U);
}

TEST_P(Golden, MetadataMatches) {
  EXPECT_EQ(array_->shape(), shape_);
  EXPECT_EQ(array_->dtype().v3_name(), dtype_);
  EXPECT_EQ(array_->read_chunk_shape(), want_.at("chunks").get<Shape>());
}

TEST_P(Golden, ChunksLeftOutAreMissing) {
  auto info = array_->storage_info();
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->chunks_total - info->chunks_present,
            want_.at("missing_chunks").get<std::int64_t>());
}

TEST_P(Golden, WholeArrayMatches) {
  const Selection all = Selection::full(shape_);
  EXPECT_EQ(read(all, nullptr), want(all));
  ThreadPool pool(4);
  EXPECT_EQ(read(all, &pool), want(all));
  EXPECT_EQ(read(all, &pool, /*fortran=*/true), want(all));
}

TEST_P(Golden, StridedRegionMatches) {
  Selection sel;
  for (std::int64_t n : shape_) {  // every other element from the second (the first if only one)
    const std::int64_t start = n > 1 ? 1 : 0;
    sel.start.push_back(start);
    sel.step.push_back(2);
    sel.count.push_back((n - start + 1) / 2);
  }
  ThreadPool pool(3);
  EXPECT_EQ(read(sel, &pool), want(sel));
  EXPECT_EQ(read(sel, nullptr, /*fortran=*/true), want(sel));
}

INSTANTIATE_TEST_SUITE_P(ZarrPython, Golden, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           for (char& c : id)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return id;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Golden);

}  // namespace
}  // namespace zarrflow
