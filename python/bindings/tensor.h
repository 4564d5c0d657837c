// zarrflow.Tensor: a read's result in host or GPU memory, handed to PyTorch / CuPy / JAX / NumPy
// through DLPack without a copy.
//
// Ownership: the tensor shares its memory with every DLPack capsule it exported; the memory goes
// back to zarrflow's pool only when the tensor object and every consumer have released it.
// Streams: a GPU tensor carries the CUDA event recorded after its read; `__dlpack__(stream=s)`
// makes the consumer's stream `s` wait on that event (no host synchronisation), and remembers
// `s`: when the last owner lets go, the memory returns to the pool only after the work queued on
// those streams up to that moment has run (`release_after`), so a consumer that drops a batch
// while its kernels are still queued never sees the memory rewritten under them.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "zarrflow/core/dtype.h"

namespace zarrflow::py {

struct TensorState {
  std::shared_ptr<void> owner;  // keeps the memory alive
  void* data = nullptr;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements
  DataType dtype;
  int device_type = 1;  // DLPack: 1 = CPU, 2 = CUDA
  int device_id = 0;
  // Makes `stream` (a cudaStream_t as an integer; 1/2 = legacy / per-thread default) wait until
  // the data is ready. Empty for host tensors.
  std::function<void(std::uintptr_t stream)> wait_on;
  // GPU tensors: the streams consumers named in __dlpack__, and how to hand `owner` back once
  // they have passed the release point (set by whoever allocated the memory).
  std::vector<std::uintptr_t> consumers;
  std::function<void(std::shared_ptr<void> owner, const std::vector<std::uintptr_t>& streams)>
      release_after;

  TensorState() = default;
  TensorState(const TensorState&) = delete;
  TensorState& operator=(const TensorState&) = delete;
  ~TensorState() {
    if (owner && release_after && !consumers.empty()) release_after(std::move(owner), consumers);
  }
};

struct Tensor {
  std::shared_ptr<TensorState> state;
};

// A C-contiguous tensor of `dtype` and `shape` over `data`, kept alive by `owner` (DLPack device
// type 1: host memory, 2: CUDA).
std::shared_ptr<TensorState> tensor_state(const DataType& dtype,
                                          const std::vector<std::int64_t>& shape, void* data,
                                          std::shared_ptr<void> owner, int device_type,
                                          int device_id);

// DLPack capsule ("dltensor") sharing `state`.
nanobind::object to_dlpack(const std::shared_ptr<TensorState>& state);

void bind_tensor(nanobind::module_& m);

}  // namespace zarrflow::py
