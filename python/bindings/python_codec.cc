// The foreign-codec factory for Python: a codec zarrflow has no native decoder for (pcodec, zfpy,
// any other numcodecs codec) is decoded by numcodecs, through zarrflow/_foreign_codecs.py.
//
// GIL: the factory (at array open) and every decode acquire the GIL themselves, from whichever
// thread the codec layer calls them on. That is safe because every binding that opens arrays or
// reads chunks releases the GIL before it waits on zarrflow's threads (array.cc, gpu.cc,
// pipeline.cc), so no thread holds the GIL while waiting on one that needs it. Decodes on several
// threads run in parallel where the Python codec releases the GIL while it works. The stored bytes
// reach Python as a read-only memoryview (no copy); the result is copied once, straight into the
// destination when the chunk is read whole.
#include "python_codec.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <atomic>
#include <cstring>

#include "zarrflow/codec/foreign.h"

namespace nb = nanobind;

namespace zarrflow::py {
namespace {

#if defined(Py_LIMITED_API) && Py_LIMITED_API < 0x030D0000
// The stable ABI of the 3.12+ wheels has no finalization query before 3.13: an atexit hook
// (install_python_codecs) marks the start of shutdown, a little before the interpreter's own flag.
std::atomic<bool> g_exiting{false};
#endif

// False once the interpreter is shutting down: a thread that then asked for the GIL would never
// get it, so decodes fail and Python objects are leaked instead.
bool python_alive() {
#if defined(Py_LIMITED_API) && Py_LIMITED_API < 0x030D0000
  return Py_IsInitialized() && !g_exiting.load();
#elif PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// "ValueError: message" of the Python exception being handled.
std::string describe_exception(const nb::python_error& e) {
  std::string type = nb::cast<std::string>(nb::handle(e.type()).attr("__name__"));
  std::string message = nb::cast<std::string>(nb::str(e.value()));
  return message.empty() ? type : type + ": " + message;
}

class PythonDecoder final : public ForeignDecoder {
 public:
  PythonDecoder(std::string name, nb::object decode, std::string description)
      : name_(std::move(name)), decode_(std::move(decode)), description_(std::move(description)) {}

  ~PythonDecoder() override {
    if (!python_alive()) {
      decode_.release();  // no GIL to be had: leak the callable
      return;
    }
    nb::gil_scoped_acquire gil;
    decode_.reset();
  }

  [[nodiscard]] std::string describe() const override { return description_; }

  Status decode(ConstByteSpan in, const Output& output) const override {
    if (!python_alive())
      return internal_error(name_ + ": cannot decode with numcodecs while Python shuts down");
    nb::gil_scoped_acquire gil;
    try {
      nb::object view = nb::steal(
          PyMemoryView_FromMemory(reinterpret_cast<char*>(const_cast<std::byte*>(in.data())),
                                  static_cast<Py_ssize_t>(in.size()), PyBUF_READ));
      if (!view.is_valid()) throw nb::python_error();
      Status s = copy_result(decode_(view), output);
      // The stored bytes go away after this call: invalidate the view, so that a codec keeping a
      // reference gets an error rather than freed memory (fails harmlessly while one is exported).
      if (PyObject* r = PyObject_CallMethod(view.ptr(), "release", nullptr)) Py_DECREF(r);
      PyErr_Clear();
      return s;
    } catch (const nb::python_error& e) {
      return corrupt_data(name_ + " (numcodecs): " + describe_exception(e));
    }
  }

 private:
  // Copies the bytes of `result` (any C-contiguous buffer) where `output` says.
  static Status copy_result(nb::object result, const Output& output) {
    Py_buffer buf;
    if (PyObject_GetBuffer(result.ptr(), &buf, PyBUF_C_CONTIGUOUS) != 0) throw nb::python_error();
    const auto n = static_cast<std::size_t>(buf.len);
    Result<ByteSpan> dst = output(n);
    if (dst.ok() && n > 0) std::memcpy(dst->data(), buf.buf, n);
    PyBuffer_Release(&buf);
    return dst.status();
  }

  std::string name_;
  nb::object decode_;
  std::string description_;
};

Result<std::shared_ptr<const ForeignDecoder>> make_python_decoder(const ForeignCodecRequest& r) {
  if (!python_alive()) return unimplemented("codec '" + r.name + "': Python is shutting down");
  nb::gil_scoped_acquire gil;
  try {
    nb::list shape;
    for (auto d : r.spec.shape) shape.append(d);
    nb::object made =
        nb::module_::import_("zarrflow._foreign_codecs")
            .attr("make_decoder")(
                r.name, r.config.dump(),
                r.kind == CodecKind::kArrayToBytes ? "array_to_bytes" : "bytes_to_bytes",
                r.spec.dtype.numpy_str(), nb::tuple(shape));
    nb::tuple t = nb::cast<nb::tuple>(made);
    return std::shared_ptr<const ForeignDecoder>(
        std::make_shared<PythonDecoder>(r.name, nb::borrow(t[0]), nb::cast<std::string>(t[1])));
  } catch (const nb::python_error& e) {
    // A missing package (ImportError) leaves the codec unsupported; anything else is the codec
    // refusing its configuration.
    if (e.matches(PyExc_ImportError))
      return unimplemented(nb::cast<std::string>(nb::str(e.value())));
    return invalid_metadata("codec '" + r.name + "': numcodecs refused the configuration " +
                            r.config.dump() + ": " + describe_exception(e));
  } catch (const std::exception& e) {
    return internal_error("codec '" + r.name + "': " + e.what());
  }
}

}  // namespace

void install_python_codecs() {
#if defined(Py_LIMITED_API) && Py_LIMITED_API < 0x030D0000
  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] { g_exiting = true; }));
#endif
  set_foreign_codec_factory(make_python_decoder);
}

}  // namespace zarrflow::py
