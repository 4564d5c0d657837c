"""DecodeBalance: the host keeps decoding while the consumer finds batches ready; decoding moves
to the GPU at once, in proportion to the waits, and comes back a step at a time."""

import pytest

from zarrflow._balance import DecodeBalance


class Consumer:
    """Takes batches from `bal`'s loader: `step` seconds of work, then asks for the next one."""

    def __init__(self, bal, step=0.1):
        self.bal, self.step, self.t = bal, step, 0.0

    def take(self, wait=0.0, ready=1, n=1, share="current", settled=True):
        for _ in range(n):
            self.t += self.step
            made_with = self.bal.share if share == "current" else share
            self.bal.observe(self.t, self.t + wait, ready, made_with, settled)
            self.t += wait
        return self.bal.share


def test_a_consumer_that_always_waits_moves_all_decoding_to_the_gpu_at_once():
    bal = DecodeBalance()
    c = Consumer(bal, step=0.001)  # a loader-only loop: no work between batches
    assert c.take(wait=0.05, ready=0) == 1.0  # the first batch has no interval to judge by
    assert c.take(wait=0.05, ready=0) == 0.0 and bal.to_gpu == 1
    assert c.take(wait=0.05, ready=0, n=5) == 0.0 and bal.to_gpu == 1  # nothing left to move


def test_the_cut_is_proportional_to_the_wait_and_at_least_a_step():
    bal = DecodeBalance(step=0.125)
    c = Consumer(bal, step=0.1)
    c.take(ready=2)
    # waited 0.3 s of a 0.4 s interval: batches must come 4x as often, the host keeps 1/4
    assert c.take(wait=0.3, ready=0) == pytest.approx(0.25)
    # a short wait (0.01 of 0.11 s) still moves a whole step
    assert c.take(wait=0.01, ready=0) == pytest.approx(0.125)


def test_a_consumer_that_finds_batches_ready_keeps_host_decoding():
    bal = DecodeBalance()
    c = Consumer(bal)
    c.take(ready=2, n=50)
    c.take(ready=1, n=50)
    assert bal.share == 1.0 and bal.to_gpu == bal.to_host == 0


def test_batches_made_with_an_older_share_are_not_judged():
    bal = DecodeBalance(step=0.125)
    c = Consumer(bal, step=0.001)
    c.take(ready=0, wait=0.05, n=2)
    assert bal.share == 0.0
    # the batches still in flight were planned with share 1: their waits change nothing, and
    # they do not count as ready ones either
    c.take(ready=0, wait=0.05, n=3, share=1.0)
    c.take(ready=3, n=10, share=1.0)
    assert bal.share == 0.0 and bal.to_gpu == 1 and bal.to_host == 0


def test_decoding_returns_to_the_host_slowly_and_failed_probes_back_off():
    bal = DecodeBalance(step=0.125, patience=4)
    c = Consumer(bal, step=0.001)
    c.take(ready=0, wait=0.05, n=2)
    assert bal.share == 0.0
    c.step = 0.1  # training starts: the host could do some of the work
    assert c.take(ready=1, n=3) == 0.0
    assert c.take(ready=1) == 0.125 and bal.to_host == 1
    assert c.take(ready=1) == 0.125  # the probe held: confirmed
    assert c.take(ready=1, n=3) == 0.25 and bal.patience == 4
    # the next probe fails: its first judged batch starves; back down, and wait twice as long
    assert c.take(ready=1, n=4) == 0.375
    assert c.take(ready=0, wait=0.01) == 0.25 and bal.patience == 8
    assert c.take(ready=1, n=7) == 0.25
    assert c.take(ready=1) == 0.375


def test_short_waits_and_just_in_time_batches_change_nothing_but_end_a_ready_run():
    bal = DecodeBalance(step=0.125, patience=4, wait_fraction=0.02, min_wait_s=0.5e-3, start=0.75)
    c = Consumer(bal)
    c.take(ready=1)
    # waits under 2% of a 0.1 s step (and under 0.5 ms) are noise, not a host falling behind
    c.take(wait=0.0015, ready=0, n=4)
    c.take(wait=0.0004, ready=0, n=4)
    assert bal.share == 0.75 and bal.to_gpu == 0
    c.take(ready=1, n=3)
    c.take(wait=0.0001, ready=0)  # arrived just in time: breaks the run of ready batches
    assert c.take(ready=1, n=3) == 0.75
    assert c.take(ready=1) == 0.875


def test_unsettled_batches_are_not_judged():
    bal = DecodeBalance()
    c = Consumer(bal)
    c.take(ready=0, wait=0.5, n=5, settled=False)
    assert bal.share == 1.0 and bal.to_gpu == 0


@pytest.mark.parametrize("kw", [dict(start=1.5), dict(step=0.0), dict(step=2.0), dict(patience=0),
                                dict(patience=8, max_patience=4)])
def test_bad_settings(kw):
    with pytest.raises(ValueError, match="balance"):
        DecodeBalance(**kw)
