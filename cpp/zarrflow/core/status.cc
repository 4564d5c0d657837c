#include "zarrflow/core/status.h"

#include <exception>
#include <new>

namespace zarrflow {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kInvalidMetadata:
      return "invalid metadata";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kUnimplemented:
      return "unimplemented";
    case ErrorCode::kCorruptData:
      return "corrupt data";
    case ErrorCode::kChecksumMismatch:
      return "checksum mismatch";
    case ErrorCode::kIoError:
      return "I/O error";
    case ErrorCode::kPathEscape:
      return "path escapes store";
    case ErrorCode::kOutOfRange:
      return "out of range";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kResourceExhausted:
      return "resource exhausted";
  }
  return "unknown";
}

Status& Status::annotate(std::string_view context) & {
  if (!ok() && !context.empty()) {
    std::string m;
    m.reserve(context.size() + 2 + message_.size());
    m.append(context).append(": ").append(message_);
    message_ = std::move(m);
  }
  return *this;
}

Status&& Status::annotate(std::string_view context) && { return std::move(annotate(context)); }

Status status_from_current_exception() {
  // Building the message allocates: under memory pressure that may fail too, so the fallback is
  // a Status whose message is a literal (a std::string that fits its small-string buffer does
  // not allocate).
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return resource_exhausted("out of memory");
  } catch (const std::exception& e) {
    try {
      return internal_error(std::string("unexpected exception: ") + e.what());
    } catch (...) {
      return internal_error("unexpected");
    }
  } catch (...) {
    return internal_error("unexpected");
  }
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

}  // namespace zarrflow
