// Carrying a failed Status across the C++/Python boundary: binding code throws StatusError, and
// the module's exception translator (module.cc) raises the zarrflow.errors class of its code.
#pragma once

#include <exception>
#include <utility>

#include "zarrflow/core/status.h"

namespace zarrflow {

struct StatusError : std::exception {
  explicit StatusError(Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return status.message().c_str(); }
  Status status;
};

inline void throw_if_error(Status s) {
  if (!s.ok()) throw StatusError(std::move(s));
}

template <typename T>
T value_or_throw(Result<T> r) {
  if (!r.ok()) throw StatusError(std::move(r).take_status());
  return std::move(r).value();
}

}  // namespace zarrflow
