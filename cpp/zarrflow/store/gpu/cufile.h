// GPUDirect Storage through cuFile, loaded at run time with dlopen (CUDA builds only).
//
// libcufile ships with the CUDA toolkit and in the `nvidia-cufile` wheel; zarrflow never links
// it. The few entry points used are declared here from the documented ABI (as KvikIO does).
// Without the nvidia-fs kernel module (VMs, containers) cuFile runs in compatibility mode: POSIX
// reads into its own bounce buffers, then a copy to the GPU.
// The read path uses cuFile only for uncompressed chunks: compressed chunks must be validated
// on the host before nvCOMP sees them, so their bytes have to pass through host memory anyway.
// Thread-safety: reads on one handle may run concurrently.
#pragma once

#include <sys/types.h>

#include <string>

#include "zarrflow/core/status.h"

namespace zarrflow::gpu {

class CuFile {
 public:
  // The opened driver, or why cuFile cannot be used (kUnimplemented).
  static Result<const CuFile*> get();
  // "GPUDirect (nvidia-fs)" or "compatibility mode (no nvidia-fs)".
  [[nodiscard]] const std::string& mode() const { return mode_; }
  // Reads `size` bytes at `offset` of the file `path` into device memory `dst`.
  Status read(const std::string& path, void* dst, std::size_t size, off_t offset) const;

 private:
  friend Result<const CuFile*> open_cufile();
  void* handle_register_ = nullptr;
  void* handle_deregister_ = nullptr;
  void* read_ = nullptr;
  std::string mode_;
};

}  // namespace zarrflow::gpu
