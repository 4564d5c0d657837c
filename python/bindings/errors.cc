// Failed Status → the zarrflow.errors exception of its code (python/zarrflow/errors.py maps each
// class to a built-in one too: NodeNotFoundError is a KeyError, StoreIOError an OSError, ...).
#include <exception>
#include <string>

#include "bindings.h"
#include "status_error.h"

namespace nb = nanobind;

namespace zarrflow::py {
namespace {

const char* exception_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgumentError";
    case ErrorCode::kInvalidMetadata:
      return "MetadataError";
    case ErrorCode::kNotFound:
      return "NodeNotFoundError";
    case ErrorCode::kUnimplemented:
      return "UnsupportedError";
    case ErrorCode::kCorruptData:
      return "CorruptChunkError";
    case ErrorCode::kChecksumMismatch:
      return "ChecksumError";
    case ErrorCode::kIoError:
      return "StoreIOError";
    case ErrorCode::kPathEscape:
      return "PathEscapeError";
    case ErrorCode::kOutOfRange:
      return "ZarrflowIndexError";
    case ErrorCode::kResourceExhausted:
      return "ZarrflowMemoryError";
    default:
      return "ZarrflowError";
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object errors = nb::module_::import_("zarrflow.errors");
      nb::object cls = errors.attr(exception_name(e.status.code()));
      // With its length: a message may hold a NUL byte (a key read from a listing or metadata),
      // which a C string would cut off.
      const std::string& msg = e.status.message();
      nb::object text = nb::steal(PyUnicode_DecodeUTF8(
          msg.data(), static_cast<Py_ssize_t>(msg.size()), "backslashreplace"));
      if (!text.is_valid()) {
        PyErr_Clear();
        text = nb::str("(undecodable message)");
      }
      PyErr_SetObject(cls.ptr(), text.ptr());
    }
  });
}

}  // namespace zarrflow::py
