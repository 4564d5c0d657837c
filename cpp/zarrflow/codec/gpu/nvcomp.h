// nvCOMP's batched low-level C API, loaded at run time with dlopen (CUDA builds only).
//
// nvCOMP is proprietary, so zarrflow never links or vendors it: it is found in the user's install
// (the `nvidia-libnvcomp-cu13` wheel: nvidia/libnvcomp/lib64/libnvcomp.so.6, or a system copy).
// The Python package passes the wheel's library path before the first GPU read; C++ users can
// call set_nvcomp_library(). The prototypes below are our own declarations of the documented
// nvCOMP 5/6 ABI (decompression options are a 64-byte struct whose first field selects the
// backend; zero means "default").
// Thread-safety: load once (guarded), then immutable; the functions are stream-ordered.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow::gpu {

enum class NvcompAlgo { kZstd, kLz4, kDeflate, kGzip };

const char* nvcomp_algo_name(NvcompAlgo a);

struct NvcompAlignment {
  std::size_t input = 1, output = 1, temp = 1;
};

class Nvcomp {
 public:
  // The loaded library, or the reason it could not be loaded (kUnimplemented).
  static Result<const Nvcomp*> get();

  [[nodiscard]] std::uint32_t version() const { return version_; }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] NvcompAlignment alignment(NvcompAlgo a) const { return align_[int(a)]; }

  Status temp_size(NvcompAlgo a, std::size_t num_chunks, std::size_t max_uncompressed,
                   std::size_t total_uncompressed, std::size_t* temp_bytes,
                   cudaStream_t stream) const;

  // All pointer arrays live in device memory; statuses are nvcompStatus_t (int) per chunk.
  Status decompress(NvcompAlgo a, const void* const* d_src, const std::size_t* d_src_bytes,
                    const std::size_t* d_dst_capacity, std::size_t* d_actual_bytes,
                    std::size_t num_chunks, void* d_temp, std::size_t temp_bytes,
                    void* const* d_dst, int* d_statuses, cudaStream_t stream) const;

  static const char* status_string(int status);

 private:
  struct Algo {
    void* temp_size = nullptr;
    void* decompress = nullptr;
  };
  Algo algos_[4];
  NvcompAlignment align_[4];
  std::uint32_t version_ = 0;
  std::string path_;
  void* handle_ = nullptr;

  friend Result<const Nvcomp*> load_nvcomp();
};

// Extra candidate paths to try first (the Python package passes the wheel's library). Must be
// called before the first GPU read to have an effect.
void set_nvcomp_library(std::vector<std::string> candidates);

}  // namespace zarrflow::gpu
