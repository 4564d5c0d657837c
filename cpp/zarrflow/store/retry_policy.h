// When and how long to wait before retrying a remote request.
//
// Exponential backoff with "full jitter" (a uniform draw below the exponential cap), so that 64
// requests failing together do not come back together; a server's Retry-After wins when it asks
// for longer, up to max_delay. Thread-safety: const methods; jitter uses a thread-local engine.
#pragma once

#include <optional>

namespace zarrflow {

struct RetryPolicy {
  int max_attempts = 8;        // including the first
  double base_delay_s = 0.05;  // cap of the first retry's delay
  double max_delay_s = 8.0;

  // The cap of the delay before attempt `attempt` (2, 3, ...): base * 2^(attempt - 2), bounded.
  [[nodiscard]] double cap(int attempt) const;
  // A jittered delay in [cap/2, cap], or Retry-After (bounded by max_delay) when that is longer.
  [[nodiscard]] double delay(int attempt, std::optional<double> retry_after = std::nullopt) const;
};

// HTTP statuses worth retrying: 408, 429 and 5xx other than 501/505 (not implemented).
bool retryable_http_status(long status);

}  // namespace zarrflow
