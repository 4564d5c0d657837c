// What `zarrflow doctor` reports about the GPU side: the visible GPUs and whether zarrflow's
// kernels run on each, the nvCOMP library loaded, and whether cuFile opens. Builds without CUDA
// report no GPUs and say why the rest is off.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <string>

#include "bindings.h"

#ifdef ZARRFLOW_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "zarrflow/codec/gpu/nvcomp.h"
#include "zarrflow/core/gpu/device_memory.h"
#include "zarrflow/store/gpu/cufile.h"
#endif

namespace nb = nanobind;

namespace zarrflow::py {

#ifdef ZARRFLOW_HAVE_CUDA
namespace {

// One visible GPU: index, name, compute capability, memory and '' when zarrflow's kernels run on
// it (else why not, from the probe kernel).
nb::dict describe_device(int index, const cudaDeviceProp& p) {
  nb::dict d;
  d["index"] = index;
  d["name"] = std::string(p.name);
  d["capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
  d["memory_bytes"] = static_cast<std::size_t>(p.totalGlobalMem);
  const Status s = gpu::device_available(index);
  d["status"] = s.ok() ? std::string() : s.message();
  return d;
}

}  // namespace
#endif

void bind_cuda_info(nb::module_& m) {
  m.def(
      "cuda_device_status",
      []() -> std::string {
#ifdef ZARRFLOW_HAVE_CUDA
        const Status s = gpu::device_present();
        return s.ok() ? std::string() : s.message();
#else
        return "zarrflow was built without CUDA";
#endif
      },
      "'' when the current GPU's memory and copies can be used (a driver new enough, a GPU), "
      "even where cuda_status() says zarrflow's kernels cannot run on it; else why not");
  m.def(
      "cuda_devices",
      []() {
        nb::list out;
#ifdef ZARRFLOW_HAVE_CUDA
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
          cudaGetLastError();
          return out;  // no driver or no GPU: cuda_status() says which
        }
        for (int i = 0; i < n; ++i) {
          cudaDeviceProp p{};
          if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
            cudaGetLastError();
            continue;
          }
          out.append(describe_device(i, p));
        }
#endif
        return out;
      },
      "The visible GPUs (index, name, capability, memory_bytes, status: '' when zarrflow's "
      "kernels run on it); checking one starts its CUDA context");
  m.def(
      "nvcomp_library",
      []() {
        nb::dict d;
#ifdef ZARRFLOW_HAVE_CUDA
        auto n = gpu::Nvcomp::get();
        if (n.ok()) d["path"] = (*n)->path();
#endif
        return d;
      },
      "The nvCOMP library loaded ({'path': ...}) or {} (nvcomp_status() says why)");
  m.def(
      "cufile_status",
      []() {
        nb::dict d;
#ifdef ZARRFLOW_HAVE_CUDA
        auto c = gpu::CuFile::get();
        d["status"] = c.ok() ? std::string() : c.status().message();
        d["mode"] = c.ok() ? (*c)->mode() : std::string();
#else
        d["status"] = std::string("zarrflow was built without CUDA");
        d["mode"] = std::string();
#endif
        return d;
      },
      "cuFile (GPUDirect Storage): status '' when it opened, and its mode");
}

}  // namespace zarrflow::py
