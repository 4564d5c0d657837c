// Who decodes: the share of GPU-decodable chunks the host threads take, steered by the consumer.
//
// Decoding on the GPU is the fastest way to fill a batch when nothing else runs there, but in
// training the decode kernels share the SMs with the model: a 6-channel U-Net step took 8% longer
// next to GPU decoding and 0.2-1% longer next to host decoding (docs/performance.md). Host
// decoding is only free while the host threads keep up, and not always then: 16 threads decoding
// zstd at full speed slowed a 71-channel model's steps too. No fixed split is right for every
// model and store, so DecodeBalance looks for the one under which the consumer takes batches
// fastest, while the loader runs. It starts with the host decoding everything (share 1) and
// judges the batches the consumer takes:
//
// - Starved (no batch was ready and the consumer waited longer than `wait_fraction` of the time
//   since the previous batch, and at least `min_wait_s`): the host is too slow. The share drops
//   at once, by `step` or in proportion to the wait, whichever is more: a consumer that waited
//   90% of the interval needs batches ten times as often, so the host keeps a tenth. A
//   loader-only loop, which always waits, reaches all-GPU decoding at its first judged batch.
// - Measured: after `window` judged batches at one share, the median time between batches is
//   that share's cost. Then one neighbouring share is tried for a window and kept only if it is
//   better: a step down (more GPU decoding) after the share was cut, kept only if batches come
//   at least `tolerance` faster (the host may have been slowing the model, not only feeding it
//   late); a step up (more host decoding) after a window in which every batch was ready, kept
//   unless batches come `tolerance` slower or the consumer starves. A failed step up doubles the
//   windows to wait before the next one (up to `max_patience`), so a split near the host's limit
//   is not retried every few batches.
//
// Batches are planned with the share of the moment they start, and a few are always in flight,
// so a batch made with another share says nothing about the current one: only batches made with
// the current share are judged (observe's `share`). The first batch of each pass has no interval
// (new_pass): the time since the last batch of the previous pass is validation, not loading.
// The loader also passes settled = false for batches made while zarrflow's memory pools grew:
// they waited for the driver, not for the host's decoding.
//
// Thread-safe: the loader's workers read the share while its consumer reports batches.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "zarrflow/core/status.h"

namespace zarrflow {

struct DecodeBalanceSettings {
  double start = 1.0;
  double step = 0.125;
  int window = 4;
  int max_patience = 32;
  double tolerance = 0.02;
  double wait_fraction = 0.02;
  double min_wait_s = 0.5e-3;
};

struct DecodeBalanceState {
  double share = 1.0;
  long to_gpu = 0;   // changes that moved decoding towards the GPU
  long to_host = 0;  // ... and back towards the host
  int patience = 1;  // windows to wait before the next step up
};

class DecodeBalance {
 public:
  // Fails (kInvalidArgument, naming the settings) unless 0 <= start <= 1, 0 < step <= 1,
  // window >= 1, max_patience >= 1 and tolerance >= 0.
  static Result<std::unique_ptr<DecodeBalance>> create(const DecodeBalanceSettings& settings);

  double share() const;
  DecodeBalanceState state() const;
  const DecodeBalanceSettings& settings() const { return s_; }

  // A new pass begins: its first batch has no interval.
  void new_pass();
  // One batch taken: the consumer asked at `asked` and got it at `taken` (seconds, any clock),
  // with `ready` batches finished when it asked; `share` is the share the batch was made with
  // (none: the current one). `settled` false for batches whose wait says nothing about decoding.
  void observe(double asked, double taken, long ready, std::optional<double> share = {},
               bool settled = true);

 private:
  explicit DecodeBalance(const DecodeBalanceSettings& s);
  void set(double share);
  void step_up_failed();
  void starved(double waited, double interval);
  void measured(double median, bool all_ready);

  const DecodeBalanceSettings s_;
  mutable std::mutex mu_;
  DecodeBalanceState st_;
  std::vector<double> intervals_;  // judged batches at this share: time since the last
  bool all_ready_ = true;          // ... and whether each was ready when asked for
  int waited_ = 0;                 // windows since the last change
  struct Trial {
    double share, median;
    int direction;
  };
  std::optional<Trial> trial_;  // a neighbouring share being tried: the one before, its median
  bool cut_ = false;            // the share was cut by a starvation: the host is at its limit
  std::optional<double> last_taken_;
};

}  // namespace zarrflow
