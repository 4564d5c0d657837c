// NVTX ranges for Nsight Systems timelines (CUDA builds only). nvtx3 is header-only and costs
// nothing unless a profiler is attached.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace zarrflow::gpu {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace zarrflow::gpu
