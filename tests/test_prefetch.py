"""OrderedPrefetch: results in order whatever the workers' timing, the depth bound holds, errors
arrive at their position and stop new work, close() ends the workers."""

from __future__ import annotations

import random
import threading
import time

import pytest

from zarrflow.loader._prefetch import Gate, OrderedPrefetch


class Tracker:
    def __init__(self):
        self.lock = threading.Lock()
        self.started: list[int] = []
        self.workers: set[int] = set()

    def __call__(self, item, worker):
        with self.lock:
            self.started.append(item)
            self.workers.add(worker)
        time.sleep(random.uniform(0, 0.004))
        return item * 10


@pytest.mark.parametrize("workers,depth", [(1, 1), (2, 3), (4, 2), (8, 8)])
def test_results_come_in_order(workers, depth):
    random.seed(workers * 100 + depth)
    fn = Tracker()
    p = OrderedPrefetch(fn, range(40), workers=workers, depth=depth)
    out = []
    while True:
        try:
            out.append(p.get())
        except StopIteration:
            break
    p.close()
    assert out == [i * 10 for i in range(40)]
    assert sorted(fn.started) == list(range(40))
    assert len(fn.workers) <= workers


def test_depth_bounds_items_started_ahead_of_the_consumer():
    fn = Tracker()
    p = OrderedPrefetch(fn, range(100), workers=4, depth=3)
    _until(lambda: p.ready() == 3)  # the consumer takes nothing: workers stop after `depth` items
    time.sleep(0.05)
    assert len(fn.started) == 3
    p.get()
    _until(lambda: len(fn.started) == 4)
    time.sleep(0.05)
    assert len(fn.started) == 4
    p.close()


def _until(cond, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert cond()


def test_a_shared_gate_bounds_two_prefetches_together():
    # As the loader uses it: the next prefetch starts once the current one has started all.
    gate = Gate(3)
    first, second = Tracker(), Tracker()
    a = OrderedPrefetch(first, range(5), workers=2, gate=gate)
    _until(lambda: a.ready() == 3)
    assert a.get() == 0 and a.get() == 10  # two places free: the last two items start
    _until(lambda: a.all_started() and a.ready() == 3)
    b = OrderedPrefetch(second, range(100, 110), workers=2, gate=gate)
    time.sleep(0.05)
    assert second.started == []  # no room: the first prefetch holds all three places
    assert a.get() == 20
    _until(lambda: len(second.started) == 1)  # one taken, one started
    time.sleep(0.05)
    assert len(second.started) == 1 and gate.in_flight == 3
    assert a.get() == 30 and a.get() == 40
    _until(lambda: b.ready() == 3)
    time.sleep(0.05)
    assert len(second.started) == 3 and gate.in_flight == 3
    a.close()
    b.close()  # its three finished, never-taken items give their places back
    assert gate.in_flight == 0


def test_a_shared_gate_bounds_the_producers_of_all_prefetches():
    gate = Gate(8, producers=2)
    lock, now, most = threading.Lock(), [0], [0]

    def fn(item, worker):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.01)
        with lock:
            now[0] -= 1
        return item

    a = OrderedPrefetch(fn, range(6), workers=2, gate=gate)
    b = OrderedPrefetch(fn, range(6), workers=2, gate=gate)
    assert [a.get() for _ in range(6)] + [b.get() for _ in range(6)] == list(range(6)) * 2
    assert most[0] == 2 and gate.producing == 0 and gate.in_flight == 0
    a.close()
    b.close()


def test_closing_one_prefetch_frees_its_places_for_the_other():
    gate = Gate(2)
    a = OrderedPrefetch(Tracker(), range(10), workers=2, gate=gate)
    _until(lambda: a.ready() == 2)
    second = Tracker()
    b = OrderedPrefetch(second, range(3), workers=1, gate=gate)
    time.sleep(0.05)
    assert second.started == []
    a.close()  # a wrongly guessed epoch dropped
    assert [b.get(), b.get(), b.get()] == [0, 10, 20]
    b.close()
    assert gate.in_flight == 0


def test_error_arrives_at_its_position_and_stops_new_work():
    started = []

    def fn(item, worker):
        started.append(item)
        if item == 5:
            raise ValueError("bad item 5")
        return item

    p = OrderedPrefetch(fn, range(50), workers=3, depth=4)
    got = []
    with pytest.raises(ValueError, match="bad item 5"):
        while True:
            got.append(p.get())
    assert got == [0, 1, 2, 3, 4]
    time.sleep(0.05)
    assert max(started) < 5 + 4  # nothing starts after the failure beyond what ran already
    p.close()


def test_close_joins_workers_and_get_after_close_fails():
    release = threading.Event()

    def fn(item, worker):
        release.wait(5)
        return item

    p = OrderedPrefetch(fn, range(10), workers=2, depth=2)
    release.set()
    p.get()
    p.close()
    assert not any(t.is_alive() for t in p._threads)
    with pytest.raises(RuntimeError, match="closed"):
        p.get()
    p.close()  # twice is fine


def test_empty_and_bad_arguments():
    p = OrderedPrefetch(lambda i, w: i, [], workers=2, depth=2)
    with pytest.raises(StopIteration):
        p.get()
    p.close()
    with pytest.raises(ValueError):
        OrderedPrefetch(lambda i, w: i, [1], workers=0, depth=1)


def test_a_worker_woken_by_a_take_starts_after_the_grace_only_while_results_wait(monkeypatch):
    """A worker that waited for room and is woken by the consumer taking an item while finished
    ones still wait (the consumer is handing one over) waits HANDOFF_GRACE_S before its next
    item; a worker that did not wait, or finds nothing waiting, starts at once. The grace is
    recorded in the order of events, not waited."""
    from zarrflow.loader import _prefetch

    events: list = []
    monkeypatch.setattr(_prefetch, "_sleep", lambda seconds: events.append(("grace", seconds)))

    def fn(item, worker):
        events.append(("start", item))
        return item

    def worker_waits_for_room(prefetch, ready):
        return prefetch.ready() == ready and len(prefetch._cond._waiters) == 1

    p = OrderedPrefetch(fn, range(3), workers=1, depth=2)
    _until(lambda: worker_waits_for_room(p, 2))
    assert events == [("start", 0), ("start", 1)]  # room for item 1 at once: no grace
    assert p.get() == 0  # the worker waited for room, item 1 still waits: item 2 after the grace
    _until(lambda: ("start", 2) in events)
    assert [p.get(), p.get()] == [1, 2]
    assert events == [("start", 0), ("start", 1), ("grace", _prefetch.HANDOFF_GRACE_S),
                      ("start", 2)]
    p.close()

    events.clear()
    q = OrderedPrefetch(fn, range(2), workers=1, depth=1)
    _until(lambda: worker_waits_for_room(q, 1))
    assert q.get() == 0  # nothing else waits: item 1 starts at once
    _until(lambda: ("start", 1) in events)
    assert q.get() == 1
    assert events == [("start", 0), ("start", 1)]
    q.close()
