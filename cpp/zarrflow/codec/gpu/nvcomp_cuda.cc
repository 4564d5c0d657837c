#include "zarrflow/codec/gpu/nvcomp.h"

#include <dlfcn.h>

#include <mutex>

namespace zarrflow::gpu {
namespace {

// The decompression options of every algorithm: 64 bytes, backend first, the rest zero.
struct DecompressOpts {
  int backend = 0;  // NVCOMP_DECOMPRESS_BACKEND_DEFAULT
  char reserved[60] = {};
};
static_assert(sizeof(DecompressOpts) == 64);

struct Properties {
  std::uint32_t version;
  std::uint32_t cudart_version;
};

using GetPropertiesFn = int (*)(Properties*);
using StatusStringFn = const char* (*)(int);
using AlignmentsFn = int (*)(DecompressOpts, NvcompAlignment*);
using TempSizeFn = int (*)(std::size_t, std::size_t, DecompressOpts, std::size_t*, std::size_t,
                           cudaStream_t);
using DecompressFn = int (*)(const void* const*, const std::size_t*, const std::size_t*,
                             std::size_t*, std::size_t, void*, std::size_t, void* const*,
                             DecompressOpts, int*, cudaStream_t);

const char* kAlgoSymbol[4] = {"Zstd", "LZ4", "Deflate", "Gzip"};

std::mutex g_mu;
std::vector<std::string> g_candidates;
StatusStringFn g_status_string = nullptr;

}  // namespace

const char* nvcomp_algo_name(NvcompAlgo a) {
  static const char* names[4] = {"zstd", "lz4", "deflate", "gzip"};
  return names[int(a)];
}

void set_nvcomp_library(std::vector<std::string> candidates) {
  std::lock_guard lock(g_mu);
  g_candidates = std::move(candidates);
}

std::string cuda_major_text(std::uint32_t cudart_version) {
  return std::to_string(cudart_version / 1000) + "." + std::to_string(cudart_version % 1000 / 10);
}

Result<const Nvcomp*> load_nvcomp() {
  std::vector<std::string> tried;
  {
    std::lock_guard lock(g_mu);
    tried = g_candidates;
  }
  for (const char* soname : {"libnvcomp.so.6", "libnvcomp.so.5", "libnvcomp.so"})
    tried.emplace_back(soname);
  const int cuda_major = CUDART_VERSION / 1000;
  const std::string wheel = "nvidia-libnvcomp-cu" + std::to_string(cuda_major);
  // The first candidate that loads, is nvCOMP and was built for this CUDA major version: one for
  // another CUDA version is skipped (its runtime may need a newer driver than this build's).
  void* handle = nullptr;
  std::string path, errors;
  Properties props{};
  for (const auto& c : tried) {
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      errors += "\n  " + c + ": " + (e ? e : "not found");
      continue;
    }
    auto props_fn = reinterpret_cast<GetPropertiesFn>(dlsym(h, "nvcompGetProperties"));
    Properties p{};
    if (props_fn == nullptr || props_fn(&p) != 0) {
      errors += "\n  " + c + ": not nvCOMP (no nvcompGetProperties)";
      dlclose(h);
      continue;
    }
    if (p.cudart_version != 0 && static_cast<int>(p.cudart_version / 1000) != cuda_major) {
      errors += "\n  " + c + ": built for CUDA " + cuda_major_text(p.cudart_version) +
                ", this zarrflow for CUDA " + cuda_major_text(CUDART_VERSION);
      dlclose(h);
      continue;
    }
    handle = h;
    path = c;
    props = p;
    break;
  }
  if (handle == nullptr)
    return unimplemented("nvCOMP for CUDA " + std::to_string(cuda_major) +
                         " not found (pip install " + wheel +
                         "); zstd and deflate chunks decode on the CPU; tried:" + errors);
  auto sym = [&](const std::string& name) { return dlsym(handle, name.c_str()); };
  auto* n = new Nvcomp();  // lives for the process (the library stays loaded)
  n->handle_ = handle;
  n->path_ = path;
  n->version_ = props.version;
  for (int a = 0; a < 4; ++a) {
    const std::string base = std::string("nvcompBatched") + kAlgoSymbol[a] + "Decompress";
    n->algos_[a].temp_size = sym(base + "GetTempSize");
    n->algos_[a].decompress = sym(base + "Async");
    auto align = reinterpret_cast<AlignmentsFn>(sym(base + "GetRequiredAlignments"));
    if (n->algos_[a].temp_size == nullptr || n->algos_[a].decompress == nullptr ||
        align == nullptr) {
      delete n;
      dlclose(handle);
      return unimplemented(path + " lacks " + base +
                           "Async/GetTempSize/GetRequiredAlignments "
                           "(nvCOMP 5 or newer is needed)");
    }
    if (align(DecompressOpts{}, &n->align_[a]) != 0) n->align_[a] = {8, 8, 8};
  }
  g_status_string = reinterpret_cast<StatusStringFn>(sym("nvcompGetStatusString"));
  return static_cast<const Nvcomp*>(n);
}

Result<const Nvcomp*> Nvcomp::get() {
  static const Result<const Nvcomp*> loaded = load_nvcomp();
  return loaded;
}

const char* Nvcomp::status_string(int status) {
  if (g_status_string != nullptr) return g_status_string(status);
  return "nvCOMP error";
}

Status Nvcomp::temp_size(NvcompAlgo a, std::size_t num_chunks, std::size_t max_uncompressed,
                         std::size_t total_uncompressed, std::size_t* temp_bytes,
                         cudaStream_t stream) const {
  auto fn = reinterpret_cast<TempSizeFn>(algos_[int(a)].temp_size);
  const int st =
      fn(num_chunks, max_uncompressed, DecompressOpts{}, temp_bytes, total_uncompressed, stream);
  if (st != 0)
    return io_error(std::string("nvCOMP ") + nvcomp_algo_name(a) +
                    " temp size: " + status_string(st));
  return {};
}

Status Nvcomp::decompress(NvcompAlgo a, const void* const* d_src, const std::size_t* d_src_bytes,
                          const std::size_t* d_dst_capacity, std::size_t* d_actual_bytes,
                          std::size_t num_chunks, void* d_temp, std::size_t temp_bytes,
                          void* const* d_dst, int* d_statuses, cudaStream_t stream) const {
  auto fn = reinterpret_cast<DecompressFn>(algos_[int(a)].decompress);
  const int st = fn(d_src, d_src_bytes, d_dst_capacity, d_actual_bytes, num_chunks, d_temp,
                    temp_bytes, d_dst, DecompressOpts{}, d_statuses, stream);
  if (st != 0)
    return io_error(std::string("nvCOMP ") + nvcomp_algo_name(a) +
                    " decompress: " + status_string(st));
  return {};
}

}  // namespace zarrflow::gpu
