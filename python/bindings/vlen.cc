#include "vlen.h"

#include <nanobind/ndarray.h>

#include <memory>

namespace nb = nanobind;

namespace zarrflow::py {

nb::list vlen_objects(const VlenData& data, bool text) {
  const std::size_t n = data.missing.size();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
  if (list == nullptr) throw nb::python_error();
  nb::list out = nb::steal<nb::list>(list);
  const char* base = reinterpret_cast<const char*>(data.bytes.data());
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = base + data.offsets[i];
    const auto size = static_cast<Py_ssize_t>(data.offsets[i + 1] - data.offsets[i]);
    PyObject* item =
        text ? PyUnicode_DecodeUTF8(p, size, "strict") : PyBytes_FromStringAndSize(p, size);
    if (item == nullptr) throw nb::python_error();
    // PyList_SetItem, not the PyList_SET_ITEM macro: the 3.12+ wheels use the stable ABI.
    PyList_SetItem(list, static_cast<Py_ssize_t>(i), item);
  }
  return out;
}

nb::tuple vlen_buffers(VlenData data) {
  auto owned = std::make_shared<VlenData>(std::move(data));
  nb::bytes bytes(reinterpret_cast<const char*>(owned->bytes.data()), owned->bytes.size());
  // The offsets and the mask are views of `owned`, kept alive by their capsule.
  nb::capsule owner(new std::shared_ptr<VlenData>(owned),
                    [](void* p) noexcept { delete static_cast<std::shared_ptr<VlenData>*>(p); });
  const std::size_t n = owned->missing.size();
  nb::ndarray<nb::numpy, std::int64_t, nb::ndim<1>> offsets(owned->offsets.data(), {n + 1}, owner);
  nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>> missing(owned->missing.data(), {n}, owner);
  return nb::make_tuple(offsets, bytes, missing);
}

}  // namespace zarrflow::py
