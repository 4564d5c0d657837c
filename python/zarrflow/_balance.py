"""Who decodes: the share of GPU-decodable chunks the host threads take, steered by the consumer.

Decoding on the GPU is the fastest way to fill a batch when nothing else runs there, but in
training the decode kernels share the SMs with the model: a 6-channel U-Net step took 8% longer
next to GPU decoding and 0.2-1% longer next to host decoding (docs/benchmarks.md). Host decoding
is only free while the host threads keep up; when they do not, the model waits for data, which
costs more than the slower steps. No fixed split is right for every model and store, so
``DecodeBalance`` finds it while the loader runs. It starts with the host decoding everything
(``share`` = 1) and judges each batch the consumer takes:

- **Starved** (no batch was ready and the consumer waited longer than ``wait_fraction`` of the
  time since the previous batch, and at least ``min_wait_s``): the host is too slow. The share
  drops at once, by ``step`` or in proportion to the wait, whichever is more: a consumer that
  waited 90% of the interval needs batches about ten times as often, so the host keeps about a
  tenth. A loader-only loop, which always waits, reaches all-GPU decoding within a batch or two.
- **Ready** (a batch was waiting): after ``patience`` such batches in a row, ``step`` moves back
  to the host. If the first batch judged after such a probe starves, the probe failed and the
  patience doubles (up to ``max_patience``), so a split near the host's limit is not retried
  every few batches.

Batches are planned with the share of the moment they start, and a few are always in flight, so
a batch made with an older share says nothing about the current one: only batches made with the
current share are judged (``observe``'s `share`).
"""

from __future__ import annotations


class DecodeBalance:
    def __init__(self, start: float = 1.0, step: float = 0.125, patience: int = 4,
                 max_patience: int = 64, wait_fraction: float = 0.02,
                 min_wait_s: float = 0.5e-3):
        if (not 0.0 <= start <= 1.0 or not 0.0 < step <= 1.0 or patience < 1
                or max_patience < patience):
            raise ValueError(f"bad balance settings: start={start}, step={step}, "
                             f"patience={patience}, max_patience={max_patience}")
        self.share = start
        self.step, self.patience, self.max_patience = step, patience, max_patience
        self.wait_fraction, self.min_wait_s = wait_fraction, min_wait_s
        self.to_gpu = 0     # times decoding moved towards the GPU
        self.to_host = 0    # ... and back towards the host
        self._ready_run = 0
        self._probing = False  # the last change moved work to the host: not yet confirmed
        self._last_taken: float | None = None

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
        if ready > 0:
            self._probing = False
            self._ready_run += 1
            if self._ready_run >= self.patience and self.share < 1.0:
                self._ready_run = 0
                self.share = min(1.0, self.share + self.step)
                self._probing = True
                self.to_host += 1
            return
        # Nothing was ready: even a batch that arrived just in time ends the run of spare ones.
        self._ready_run = 0
        waited = taken - asked
        if waited <= max(self.min_wait_s, self.wait_fraction * interval) or self.share <= 0.0:
            return
        if self._probing:  # the host could not take the last step back
            self.patience = min(self.max_patience, 2 * self.patience)
            self._probing = False
        keep = max(0.0, 1.0 - waited / interval) if interval > 0 else 0.0
        share = min(self.share - self.step, self.share * keep)
        self.share = share if share >= self.step / 2 else 0.0  # less than half a step: none
        self.to_gpu += 1
