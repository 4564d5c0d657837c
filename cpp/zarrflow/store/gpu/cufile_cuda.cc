#include "zarrflow/store/gpu/cufile.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace zarrflow::gpu {
namespace {

// Our declarations of the cufile.h ABI.
struct CUfileError_t {
  int err;     // CUfileOpError; 0 = CU_FILE_SUCCESS
  int cu_err;  // CUresult
};
struct CUfileDescr_t {
  int type;  // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
  union {
    int fd;
    void* handle;
  } handle;
  const void* fs_ops;
};
using CUfileHandle_t = void*;
using DriverOpenFn = CUfileError_t (*)();
using HandleRegisterFn = CUfileError_t (*)(CUfileHandle_t*, CUfileDescr_t*);
using HandleDeregisterFn = void (*)(CUfileHandle_t);
using ReadFn = ssize_t (*)(CUfileHandle_t, void*, std::size_t, off_t, off_t);

}  // namespace

Result<const CuFile*> open_cufile() {
  void* h = nullptr;
  std::string tried;
  for (const char* name : {"libcufile.so.0", "libcufile.so.1", "libcufile.so"}) {
    h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) break;
    tried += std::string(" ") + name;
  }
  if (h == nullptr) return unimplemented("cuFile not found (tried" + tried + ")");
  auto open = reinterpret_cast<DriverOpenFn>(dlsym(h, "cuFileDriverOpen"));
  auto* c = new CuFile();  // process lifetime, like the driver
  c->handle_register_ = dlsym(h, "cuFileHandleRegister");
  c->handle_deregister_ = dlsym(h, "cuFileHandleDeregister");
  c->read_ = dlsym(h, "cuFileRead");
  if (open == nullptr || c->handle_register_ == nullptr || c->handle_deregister_ == nullptr ||
      c->read_ == nullptr) {
    delete c;
    return unimplemented("libcufile lacks cuFileDriverOpen/HandleRegister/Read");
  }
  const CUfileError_t e = open();
  if (e.err != 0) {
    delete c;
    return unimplemented("cuFileDriverOpen failed (error " + std::to_string(e.err) + ")");
  }
  struct stat st;
  c->mode_ = ::stat("/proc/driver/nvidia-fs", &st) == 0 ? "GPUDirect (nvidia-fs loaded)"
                                                        : "compatibility mode (no nvidia-fs)";
  return static_cast<const CuFile*>(c);
}

Result<const CuFile*> CuFile::get() {
  static const Result<const CuFile*> opened = open_cufile();
  return opened;
}

Status CuFile::read(const std::string& path, void* dst, std::size_t size, off_t offset) const {
  // GDS wants O_DIRECT descriptors; fall back to a plain one where the file system refuses.
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path + ": cannot open: " + std::strerror(errno));
  CUfileDescr_t d{};
  d.type = 1;
  d.handle.fd = fd;
  CUfileHandle_t fh = nullptr;
  const CUfileError_t e = reinterpret_cast<HandleRegisterFn>(handle_register_)(&fh, &d);
  if (e.err != 0) {
    ::close(fd);
    return io_error(path + ": cuFileHandleRegister failed (error " + std::to_string(e.err) + ")");
  }
  std::size_t done = 0;
  Status s;
  while (done < size) {
    const ssize_t n =
        reinterpret_cast<ReadFn>(read_)(fh, dst, size - done, offset + off_t(done), off_t(done));
    if (n <= 0) {
      s = io_error(path + ": cuFileRead returned " + std::to_string(n));
      break;
    }
    done += std::size_t(n);
  }
  reinterpret_cast<HandleDeregisterFn>(handle_deregister_)(fh);
  ::close(fd);
  return s;
}

}  // namespace zarrflow::gpu
