"""Who decodes: the share of GPU-decodable chunks the host threads take, steered by the consumer.

Decoding on the GPU is the fastest way to fill a batch when nothing else runs there, but in
training the decode kernels share the SMs with the model: a 6-channel U-Net step took 8% longer
next to GPU decoding and 0.2-1% longer next to host decoding (docs/performance.md). Host decoding
is only free while the host threads keep up, and not always then: 16 threads decoding zstd at
full speed slowed a 71-channel model's steps too. No fixed split is right for every model and
store, so ``DecodeBalance`` looks for the one under which the consumer takes batches fastest,
while the loader runs. It starts with the host decoding everything (``share`` = 1) and judges
the batches the consumer takes:

- **Starved** (no batch was ready and the consumer waited longer than ``wait_fraction`` of the
  time since the previous batch, and at least ``min_wait_s``): the host is too slow. The share
  drops at once, by ``step`` or in proportion to the wait, whichever is more: a consumer that
  waited 90% of the interval needs batches ten times as often, so the host keeps a tenth. A
  loader-only loop, which always waits, reaches all-GPU decoding at its first judged batch.
- **Measured**: after ``window`` judged batches at one share, the median time between batches
  is that share's cost. Then one neighbouring share is tried for a window and kept only if it
  is better: a step *down* (more GPU decoding) after the share was cut, kept only if batches
  come at least ``tolerance`` faster (the host may have been slowing the model, not only
  feeding it late); a step *up* (more host decoding) after a window in which every batch was
  ready, kept unless batches come ``tolerance`` slower or the consumer starves. A failed step up
  doubles the windows to wait before the next one (up to ``max_patience``), so a split near the
  host's limit is not retried every few batches.

Batches are planned with the share of the moment they start, and a few are always in flight, so
a batch made with another share says nothing about the current one: only batches made with the
current share are judged (``observe``'s `share`). The first batch of each pass has no interval
(``new_pass``): the time since the last batch of the previous pass is validation, not loading.
The loader also passes ``settled=False`` for batches made while zarrflow's memory pools grew:
they waited for the driver, not for the host's decoding.
"""

from __future__ import annotations

import statistics


class DecodeBalance:
    def __init__(self, start: float = 1.0, step: float = 0.125, window: int = 4,
                 max_patience: int = 32, tolerance: float = 0.02, wait_fraction: float = 0.02,
                 min_wait_s: float = 0.5e-3):
        if (not 0.0 <= start <= 1.0 or not 0.0 < step <= 1.0 or window < 1
                or max_patience < 1 or tolerance < 0):
            raise ValueError(f"bad balance settings: start={start}, step={step}, window={window}, "
                             f"max_patience={max_patience}, tolerance={tolerance}")
        self.share = start
        self.step, self.window, self.max_patience = step, window, max_patience
        self.tolerance, self.wait_fraction, self.min_wait_s = tolerance, wait_fraction, min_wait_s
        self.to_gpu = 0     # changes that moved decoding towards the GPU
        self.to_host = 0    # ... and back towards the host
        self.patience = 1   # windows to wait before the next step up
        self._intervals: list[float] = []  # judged batches at this share: time since the last
        self._all_ready = True             # ... and whether each was ready when asked for
        self._waited = 0                   # windows since the last change
        self._trial: tuple[float, float, int] | None = None  # (share, its median, direction)
        self._cut = False  # the share was cut by a starvation: the host is at its limit
        self._last_taken: float | None = None

    def new_pass(self) -> None:
        self._last_taken = None

    def observe(self, asked: float, taken: float, ready: int, share: float | None = None,
                settled: bool = True) -> None:
        """One batch taken: the consumer asked at `asked` and got it at `taken` (seconds, any
        clock), with `ready` batches finished when it asked; `share` is the share the batch was
        made with (None: the current one). `settled` False for the first batches of a pass
        nobody read ahead, which are always waited for."""
        interval = None if self._last_taken is None else taken - self._last_taken
        self._last_taken = taken
        if not settled or interval is None or (share is not None and share != self.share):
            return
        waited = taken - asked
        if (ready == 0 and self.share > 0.0
                and waited > max(self.min_wait_s, self.wait_fraction * interval)):
            self._starved(waited, interval)
            return
        self._intervals.append(interval)
        self._all_ready = self._all_ready and ready > 0
        if len(self._intervals) >= self.window:
            self._measured(statistics.median(self._intervals), self._all_ready)

    def _set(self, share: float) -> None:
        if share < self.share:
            self.to_gpu += 1
        elif share > self.share:
            self.to_host += 1
        self.share = share
        self._intervals, self._all_ready, self._waited = [], True, 0

    def _step_up_failed(self) -> None:
        self.patience = min(self.max_patience, 2 * self.patience)

    def _starved(self, waited: float, interval: float) -> None:
        if self._trial is not None and self._trial[2] > 0:  # the step up was too much
            self._step_up_failed()
        self._trial = None
        keep = max(0.0, 1.0 - waited / interval) if interval > 0 else 0.0
        share = min(self.share - self.step, self.share * keep)
        self._cut = True
        self._set(share if share >= self.step / 2 else 0.0)  # less than half a step: none

    def _measured(self, median: float, all_ready: bool) -> None:
        if self._trial is not None:
            before, before_median, direction = self._trial
            self._trial = None
            if direction < 0:
                kept = median < before_median * (1 - self.tolerance)
            else:
                kept = median <= before_median * (1 + self.tolerance)
                if not kept:
                    self._step_up_failed()
            if not kept:
                self._cut = False  # this share is the best of its neighbours: stay
                self._set(before)
                return
            # kept: measured as this share's first window; carry on in the same direction
            # (down while the host was cut back, up after the usual patience)
            if direction > 0:
                self._cut = False
        self._intervals, self._all_ready = [], True  # (_set resets them too, if it is called)
        self._waited += 1
        if self._cut and self.share > 0.0:
            self._trial = (self.share, median, -1)
            lower = self.share - self.step
            self._set(lower if lower >= self.step / 2 else 0.0)
        elif all_ready and self.share < 1.0 and self._waited >= self.patience:
            self._trial = (self.share, median, +1)
            self._set(min(1.0, self.share + self.step))
