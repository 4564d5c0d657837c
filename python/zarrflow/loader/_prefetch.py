"""Ordered prefetch on a few worker threads: the loader's batches, produced ahead of the consumer.

``OrderedPrefetch(fn, items, workers=2, depth=3)`` calls ``fn(item, worker)`` for each item on
``workers`` threads and hands the results out in item order. At most ``depth`` items are started
and not yet taken, which bounds the memory held by batches in flight. With two workers, batch
k+1's host work (reading, checks) runs while batch k's GPU work (copies up, decoding) does, where
one worker would run them one after the other.

Several prefetches may share one ``Gate``: its bounds (items in flight, items being produced)
then hold over all of them together. The loader starts its next epoch's prefetch while the
current one still has batches in flight, and the two share the loader's gate, so reading ahead
across the epoch boundary never holds more batches, nor runs more producers (each with its
staging buffers), than one epoch's prefetch would.

An exception raised by ``fn`` is re-raised to the consumer at that item's position, and no new
items start after it. ``close()`` stops the workers (an item being produced is finished first)
and joins them; it is safe to call more than once, from any thread, and at interpreter exit.
Threads are daemons, so a prefetch left open cannot keep the process alive.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence


class Gate:
    """At most `limit` items started and not yet taken (or dropped), and at most `producers`
    being produced at once (None: no bound beyond each prefetch's workers), over every prefetch
    made with this gate. Its condition is the lock of those prefetches."""

    def __init__(self, limit: int, producers: int | None = None):
        if limit < 1 or (producers is not None and producers < 1):
            raise ValueError(f"need a limit and producers >= 1, got {limit} and {producers}")
        self.limit, self.producers = limit, producers
        self.in_flight = 0
        self.producing = 0
        self.cond = threading.Condition()

    def full(self) -> bool:
        return self.in_flight >= self.limit or (
            self.producers is not None and self.producing >= self.producers)


# Seconds a worker waits before starting its next item when it was blocked for room and woken by
# the consumer taking an item while finished ones still wait (see _work); 0 = start at once. That
# wake-up is the moment the consumer hands its batch to its model; a worker starting a batch then
# (its Python, the GIL, its first CUDA calls) made the training thread's hand-off of a ready
# batch take ~1 ms instead of ~0.4 (H100, 6-channel U-Net: waits 1.0% of the step, 0.991 of
# synthetic; with 3 ms, 0.5% and 0.996). A consumer that waits gets its batch as soon as before,
# and workers that keep busy (a loop with no model, which takes batches as fast as they come) are
# not slowed: a first version that waited whenever items were ready cost such a loop 5-10%.
HANDOFF_GRACE_S = 0.003
_sleep = time.sleep  # how the grace is waited (tests record it instead)


class OrderedPrefetch:
    def __init__(self, fn: Callable[[Any, int], Any], items: Sequence[Any], *, workers: int = 2,
                 depth: int = 3, name: str = "zarrflow-prefetch", gate: Gate | None = None):
        if workers < 1 or depth < 1:
            raise ValueError(f"need workers >= 1 and depth >= 1, got {workers} and {depth}")
        self._fn, self._items = fn, list(items)
        self._gate = gate if gate is not None else Gate(depth)
        self._cond = self._gate.cond
        self._next = 0          # the next item to start
        self._taken = 0         # items handed to the consumer
        self._results: dict[int, tuple[bool, Any]] = {}
        self._stopped = False
        self._failed = False
        n = max(1, min(workers, len(self._items)))
        self._threads = [threading.Thread(target=self._work, args=(w,), name=f"{name}-{w}",
                                          daemon=True) for w in range(n)]
        for t in self._threads:
            t.start()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> list:
        return self._items

    @property
    def taken(self) -> int:
        return self._taken

    def ready(self) -> int:
        """Results finished and waiting for the consumer."""
        with self._cond:
            return len(self._results)

    def all_started(self) -> bool:
        """Every item has been started (the workers are finishing the last ones or are done)."""
        with self._cond:
            return self._next >= len(self._items)

    def _work(self, worker: int) -> None:
        gate = self._gate
        while True:
            with self._cond:
                blocked = False  # waited for room: woken by the consumer taking an item
                while (not self._stopped and not self._failed and self._next < len(self._items)
                       and gate.full()):
                    blocked = True
                    self._cond.wait()
                if self._stopped or self._failed or self._next >= len(self._items):
                    return
                i = self._next
                self._next += 1
                gate.in_flight += 1
                gate.producing += 1
                ahead = len(self._results)
            if blocked and ahead and HANDOFF_GRACE_S > 0:
                # Woken by the consumer taking an item while more wait for it: no hurry, and the
                # consumer is handing that batch to its model right now.
                _sleep(HANDOFF_GRACE_S)
            try:
                result = (True, self._fn(self._items[i], worker))
            except BaseException as e:  # handed to the consumer, which re-raises it
                result = (False, e)
            with self._cond:
                gate.producing -= 1
                if not result[0]:
                    self._failed = True
                if self._stopped:
                    gate.in_flight -= 1  # dropped: its place goes to whoever shares the gate
                else:
                    self._results[i] = result
                self._cond.notify_all()

    def get(self) -> Any:
        """The next result in order; StopIteration after the last one."""
        with self._cond:
            i = self._taken
            if i >= len(self._items):
                raise StopIteration
            while i not in self._results:
                if self._stopped:
                    raise RuntimeError("this prefetch was closed")
                if not any(t.is_alive() for t in self._threads):
                    raise RuntimeError(f"prefetch workers ended before item {i} was produced")
                self._cond.wait(0.5)
            ok, value = self._results.pop(i)
            self._taken += 1
            self._gate.in_flight -= 1
            self._cond.notify_all()
        if not ok:
            raise value
        return value

    def close(self, timeout: float = 60.0) -> None:
        with self._cond:
            if not self._stopped:
                self._gate.in_flight -= len(self._results)  # finished, never taken: dropped
                self._results.clear()
                self._stopped = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))
