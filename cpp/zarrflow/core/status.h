// Status and Result<T>: the error vocabulary of every layer.
//
// Errors travel as values: a failing call returns a Status with a short code and a message; each
// layer that passes it upward prefixes what it was doing (`status.annotate("reading chunk
// 'c/0/1'")`) so the final message reads outermost-first, e.g.
//   array 'era5/t2m': chunk 'c/12/0/3': zstd: frame truncated
// The only exceptions are those of the standard library (std::bad_alloc from an allocation);
// run_guarded() turns them into a Status where no exception may pass (pool threads, chunk reads).
// The Python binding maps codes 1:1 to exception types (see python/bindings/module.cc).
// Thread-safety: values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace zarrflow {

enum class ErrorCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,    // caller passed something unusable (bad region, wrong buffer size)
  kInvalidMetadata,    // zarr.json / .zarray / codec configuration is malformed
  kNotFound,           // a node or key does not exist
  kUnimplemented,      // valid Zarr that zarrflow does not support (codec, dtype, extension)
  kCorruptData,        // stored bytes cannot be decoded or decode to the wrong size
  kChecksumMismatch,   // crc32c or a codec's own checksum failed
  kIoError,            // the operating system or a server reported an error
  kPathEscape,         // a key or path would leave the store root
  kOutOfRange,         // an index or size is outside what the array or 64 bits allow
  kInternal,           // a bug in zarrflow
  kResourceExhausted,  // memory (std::bad_alloc) or another operating-system resource ran out
};

std::string_view error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }

  [[nodiscard]] bool ok() const { return code_ == ErrorCode::kOk; }
  [[nodiscard]] ErrorCode code() const { return code_; }
  [[nodiscard]] const std::string& message() const { return message_; }

  // Prefixes `context` ("array 'x'", "chunk 'c/0'") to the message; a no-op on OK.
  Status& annotate(std::string_view context) &;
  Status&& annotate(std::string_view context) &&;

  // "<code name>: <message>", for logs and tests.
  [[nodiscard]] std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string msg) {
  return {ErrorCode::kInvalidArgument, std::move(msg)};
}
inline Status invalid_metadata(std::string msg) {
  return {ErrorCode::kInvalidMetadata, std::move(msg)};
}
inline Status not_found(std::string msg) { return {ErrorCode::kNotFound, std::move(msg)}; }
inline Status unimplemented(std::string msg) { return {ErrorCode::kUnimplemented, std::move(msg)}; }
inline Status corrupt_data(std::string msg) { return {ErrorCode::kCorruptData, std::move(msg)}; }
inline Status checksum_mismatch(std::string msg) {
  return {ErrorCode::kChecksumMismatch, std::move(msg)};
}
inline Status io_error(std::string msg) { return {ErrorCode::kIoError, std::move(msg)}; }
inline Status path_escape(std::string msg) { return {ErrorCode::kPathEscape, std::move(msg)}; }
inline Status out_of_range(std::string msg) { return {ErrorCode::kOutOfRange, std::move(msg)}; }
inline Status internal_error(std::string msg) { return {ErrorCode::kInternal, std::move(msg)}; }
inline Status resource_exhausted(std::string msg) {
  return {ErrorCode::kResourceExhausted, std::move(msg)};
}

// The Status for an exception caught at a boundary no exception may cross (a pool thread, a
// parallel_for item, a chunk read): std::bad_alloc → kResourceExhausted ("out of memory"),
// anything else → kInternal with its what(). Call only inside a catch block.
Status status_from_current_exception();

// Runs `fn` (returning Status or void) and turns any exception it throws into a Status.
template <typename F>
Status run_guarded(F&& fn) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(fn())>) {
      fn();
      return {};
    } else {
      return fn();
    }
  } catch (...) {
    return status_from_current_exception();
  }
}

// A value or the Status explaining why there is none (like std::expected<T, Status>).
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>);

 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}        // NOLINT(implicit)
  Result(Status status) : v_(std::in_place_index<1>, std::move(status)) {  // NOLINT(implicit)
    if (std::get<1>(v_).ok()) v_.template emplace<1>(internal_error("Result built from OK Status"));
  }

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  [[nodiscard]] const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  Status take_status() && { return ok() ? Status() : std::move(std::get<1>(v_)); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

namespace detail {
inline Status to_status(Status s) { return s; }
template <typename T>
Status to_status(Result<T>&& r) {
  return std::move(r).take_status();
}
}  // namespace detail

}  // namespace zarrflow

#define ZF_CONCAT_INNER(a, b) a##b
#define ZF_CONCAT(a, b) ZF_CONCAT_INNER(a, b)

// Returns the Status of `expr` (a Status or Result) from the enclosing function if it failed.
#define ZF_RETURN_IF_ERROR(expr)                                           \
  do {                                                                     \
    ::zarrflow::Status zf_status_ = ::zarrflow::detail::to_status((expr)); \
    if (!zf_status_.ok()) return zf_status_;                               \
  } while (0)

// As above, prefixing `context` (anything convertible to string_view) to the message.
#define ZF_RETURN_IF_ERROR_CTX(expr, context)                              \
  do {                                                                     \
    ::zarrflow::Status zf_status_ = ::zarrflow::detail::to_status((expr)); \
    if (!zf_status_.ok()) return std::move(zf_status_).annotate(context);  \
  } while (0)

#define ZF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)      \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

// `ZF_ASSIGN_OR_RETURN(auto x, make_x());` declares x from a Result or returns its Status.
// It expands to several statements: under an `if`, use braces.
#define ZF_ASSIGN_OR_RETURN(lhs, expr) \
  ZF_ASSIGN_OR_RETURN_IMPL(ZF_CONCAT(zf_result_, __LINE__), lhs, expr)
