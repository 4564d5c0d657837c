#include "zarrflow/pipeline/decode_balance.h"

#include <algorithm>
#include <string>

namespace zarrflow {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Result<std::unique_ptr<DecodeBalance>> DecodeBalance::create(const DecodeBalanceSettings& s) {
  if (!(s.start >= 0.0 && s.start <= 1.0) || !(s.step > 0.0 && s.step <= 1.0) || s.window < 1 ||
      s.max_patience < 1 || !(s.tolerance >= 0))
    return invalid_argument("bad balance settings: start=" + std::to_string(s.start) + ", step=" +
                            std::to_string(s.step) + ", window=" + std::to_string(s.window) +
                            ", max_patience=" + std::to_string(s.max_patience) +
                            ", tolerance=" + std::to_string(s.tolerance));
  return std::unique_ptr<DecodeBalance>(new DecodeBalance(s));
}

DecodeBalance::DecodeBalance(const DecodeBalanceSettings& s) : s_(s) { st_.share = s.start; }

double DecodeBalance::share() const {
  std::lock_guard lock(mu_);
  return st_.share;
}

DecodeBalanceState DecodeBalance::state() const {
  std::lock_guard lock(mu_);
  return st_;
}

void DecodeBalance::new_pass() {
  std::lock_guard lock(mu_);
  last_taken_.reset();
}

void DecodeBalance::observe(double asked, double taken, long ready, std::optional<double> share,
                            bool settled) {
  std::lock_guard lock(mu_);
  const std::optional<double> interval =
      last_taken_ ? std::optional<double>(taken - *last_taken_) : std::nullopt;
  last_taken_ = taken;
  if (!settled || !interval || (share && *share != st_.share)) return;
  const double waited = taken - asked;
  if (ready == 0 && st_.share > 0.0 &&
      waited > std::max(s_.min_wait_s, s_.wait_fraction * *interval)) {
    starved(waited, *interval);
    return;
  }
  intervals_.push_back(*interval);
  all_ready_ = all_ready_ && ready > 0;
  if (intervals_.size() >= std::size_t(s_.window)) measured(median(intervals_), all_ready_);
}

void DecodeBalance::set(double share) {
  if (share < st_.share) ++st_.to_gpu;
  if (share > st_.share) ++st_.to_host;
  st_.share = share;
  intervals_.clear();
  all_ready_ = true;
  waited_ = 0;
}

void DecodeBalance::step_up_failed() { st_.patience = std::min(s_.max_patience, 2 * st_.patience); }

void DecodeBalance::starved(double waited, double interval) {
  if (trial_ && trial_->direction > 0) step_up_failed();  // the step up was too much
  trial_.reset();
  const double keep = interval > 0 ? std::max(0.0, 1.0 - waited / interval) : 0.0;
  const double share = std::min(st_.share - s_.step, st_.share * keep);
  cut_ = true;
  set(share >= s_.step / 2 ? share : 0.0);  // less than half a step: none
}

void DecodeBalance::measured(double median, bool all_ready) {
  if (trial_) {
    const Trial t = *trial_;
    trial_.reset();
    bool kept;
    if (t.direction < 0) {
      kept = median < t.median * (1 - s_.tolerance);
    } else {
      kept = median <= t.median * (1 + s_.tolerance);
      if (!kept) step_up_failed();
    }
    if (!kept) {
      cut_ = false;  // this share is the best of its neighbours: stay
      set(t.share);
      return;
    }
    // kept: measured as this share's first window; carry on in the same direction (down while
    // the host was cut back, up after the usual patience)
    if (t.direction > 0) cut_ = false;
  }
  intervals_.clear();  // (set clears them too, if it is called)
  all_ready_ = true;
  ++waited_;
  if (cut_ && st_.share > 0.0) {
    trial_ = Trial{st_.share, median, -1};
    const double lower = st_.share - s_.step;
    set(lower >= s_.step / 2 ? lower : 0.0);
  } else if (all_ready && st_.share < 1.0 && waited_ >= st_.patience) {
    trial_ = Trial{st_.share, median, +1};
    set(std::min(1.0, st_.share + s_.step));
  }
}

}  // namespace zarrflow
