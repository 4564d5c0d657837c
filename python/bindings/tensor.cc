#include "tensor.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>

#include <Python.h>

#include <algorithm>

#include "zarrflow/core/strided.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace zarrflow::py {
namespace {

// The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), declared here.
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

DLDataType dl_dtype(const DataType& t) {
  const std::uint8_t bits = static_cast<std::uint8_t>(t.size * 8);
  switch (t.kind) {
    case DTypeKind::kBool:
      return {6, 8, 1};
    case DTypeKind::kInt:
      return {0, bits, 1};
    case DTypeKind::kUInt:
      return {1, bits, 1};
    case DTypeKind::kFloat:
      return {2, bits, 1};
    case DTypeKind::kBFloat16:
      return {4, 16, 1};
    case DTypeKind::kComplex:
      return {5, bits, 1};
    case DTypeKind::kRaw:
      return {1, 8, 1};  // exported as bytes (a trailing axis, see below)
  }
  return {1, 8, 1};
}

struct Export {
  DLManagedTensor managed;
  std::shared_ptr<TensorState> state;
  std::vector<std::int64_t> shape, strides;
};

void delete_export(DLManagedTensor* m) { delete static_cast<Export*>(m->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // A consumer that took the tensor renamed the capsule to "used_dltensor" and owns it now.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

}  // namespace

std::shared_ptr<TensorState> tensor_state(const DataType& dtype,
                                          const std::vector<std::int64_t>& shape, void* data,
                                          std::shared_ptr<void> owner, int device_type,
                                          int device_id) {
  auto st = std::make_shared<TensorState>();
  st->data = data;
  st->owner = std::move(owner);
  st->shape = shape;
  st->strides = c_strides(shape, 1);
  st->dtype = dtype;
  st->device_type = device_type;
  st->device_id = device_id;
  return st;
}

nb::object to_dlpack(const std::shared_ptr<TensorState>& state) {
  auto* e = new Export();
  e->state = state;
  e->shape = state->shape;
  e->strides = state->strides;
  if (state->dtype.kind == DTypeKind::kRaw && state->dtype.size > 1) {
    // Raw elements of N bytes travel as a trailing axis of N bytes.
    for (auto& s : e->strides) s *= state->dtype.size;
    e->shape.push_back(state->dtype.size);
    e->strides.push_back(1);
  }
  DLTensor& t = e->managed.dl_tensor;
  t.data = state->data;
  t.device = {state->device_type, state->device_id};
  t.ndim = static_cast<std::int32_t>(e->shape.size());
  t.dtype = dl_dtype(state->dtype);
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = delete_export;
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", capsule_destructor);
  if (cap == nullptr) {
    delete e;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor",
                     "A read's result in host or GPU memory; consume it with torch.from_dlpack, "
                     "cupy.from_dlpack, jax.dlpack.from_dlpack or numpy.from_dlpack (no copy).")
      .def_prop_ro("shape",
                   [](const Tensor& t) {
                     nb::list l;
                     for (auto v : t.state->shape) l.append(v);
                     return nb::tuple(l);
                   })
      .def_prop_ro("dtype_str", [](const Tensor& t) { return t.state->dtype.numpy_str(); })
      .def_prop_ro("device_type", [](const Tensor& t) { return t.state->device_type; })
      .def_prop_ro("device_id", [](const Tensor& t) { return t.state->device_id; })
      .def_prop_ro("data_ptr",
                   [](const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.state->data); })
      .def("__dlpack_device__",
           [](const Tensor& t) { return nb::make_tuple(t.state->device_type, t.state->device_id); })
      .def(
          "__dlpack__",
          [](const Tensor& t, nb::object stream, nb::object max_version, nb::object dl_device,
             nb::object copy) {
            if (!copy.is_none() && nb::cast<bool>(copy))
              throw nb::value_error("zarrflow.Tensor exports without copying (copy=True asked)");
            if (t.state->device_type == 2) {
              // Array API: None = the legacy default stream (1); -1 = do not synchronise.
              std::intptr_t s = stream.is_none() ? 1 : nb::cast<std::intptr_t>(stream);
              if (s != -1 && t.state->wait_on) t.state->wait_on(static_cast<std::uintptr_t>(s));
              // Released after the consumer's stream; one that synchronises on its own (-1):
              // after the legacy stream, i.e. everything queued on blocking streams.
              const auto after = static_cast<std::uintptr_t>(s == -1 ? 1 : s);
              auto& c = t.state->consumers;
              if (std::find(c.begin(), c.end(), after) == c.end()) c.push_back(after);
            }
            return to_dlpack(t.state);
          },
          "stream"_a = nb::none(), "max_version"_a = nb::none(), "dl_device"_a = nb::none(),
          "copy"_a = nb::none());
}

}  // namespace zarrflow::py
