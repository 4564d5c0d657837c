#include "zarrflow/store/retry_policy.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace zarrflow {

double RetryPolicy::cap(int attempt) const {
  const int n = std::clamp(attempt - 2, 0, 40);
  return std::min(max_delay_s, base_delay_s * std::ldexp(1.0, n));
}

double RetryPolicy::delay(int attempt, std::optional<double> retry_after) const {
  thread_local std::minstd_rand engine{std::random_device{}()};
  const double c = cap(attempt);
  // Half fixed, half jitter: never zero (a hot retry loop helps no one), still decorrelated.
  const double d = std::uniform_real_distribution<double>(c / 2, c)(engine);
  if (retry_after && *retry_after > d) return std::min(*retry_after, max_delay_s);
  return d;
}

bool retryable_http_status(long status) {
  return status == 408 || status == 429 || (status >= 500 && status != 501 && status != 505);
}

}  // namespace zarrflow
