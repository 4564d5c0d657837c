"""DecodeBalance (pipeline/decode_balance.h, through the binding): the split of decoding between
the host threads and the GPU that lets the consumer take batches fastest. Judged against a
simulated loader: a consumer whose step takes `step(share)` seconds, and producers that deliver
one batch per `supply(share)` seconds, with `depth` batches in flight (made with the share of the
moment they started)."""

import statistics

import pytest

from zarrflow._core import DecodeBalance


class Pipeline:
    def __init__(self, bal, step, supply, depth=3):
        self.bal, self.step, self.supply, self.depth = bal, step, supply, depth
        self.t = 0.0
        self.in_flight = [bal.share] * depth  # shares the next batches were made with
        self.intervals: list[float] = []
        self.shares: list[float] = []

    def run(self, batches, noise=0.0):
        for i in range(batches):
            made_with = self.in_flight.pop(0)
            self.in_flight.append(self.bal.share)
            step = self.step(made_with) * (1 + noise * ((i * 7919) % 11 - 5) / 5)
            period = self.supply(made_with)
            wait = max(0.0, period - step)
            asked = self.t + step
            self.bal.observe(asked, asked + wait, 0 if wait > 0 else 2, made_with)
            self.intervals.append(step + wait)
            self.shares.append(self.bal.share)
            self.t = asked + wait
        return self.bal.share


def test_a_loader_only_loop_moves_all_decoding_to_the_gpu_at_once():
    bal = DecodeBalance()
    p = Pipeline(bal, step=lambda s: 0.001, supply=lambda s: 0.02 + 0.2 * s)
    p.run(2)
    assert bal.share == 0.0 and bal.to_gpu == 1
    p.run(200)
    assert bal.share == 0.0  # never ready: no step back up is ever tried
    assert bal.to_host == 0


def test_a_model_the_host_keeps_up_with_keeps_host_decoding():
    # GPU decoding slows every step by up to 8%; the host supplies a batch in 0.1 s
    bal = DecodeBalance()
    p = Pipeline(bal, step=lambda s: 0.131 * (1 + 0.08 * (1 - s)), supply=lambda s: 0.1)
    p.run(500, noise=0.01)
    assert bal.share == 1.0 and bal.to_gpu == bal.to_host == 0


def test_a_host_that_cannot_keep_up_and_slows_the_model_leaves_it_all_to_the_gpu():
    # 71-channel zstd: the host needs 2.5 s per batch alone, and every share of host work
    # slows the model's step as well; the GPU alone gives 0.42 s steps and no waits
    bal = DecodeBalance()
    p = Pipeline(bal, step=lambda s: 0.42 + 0.6 * s, supply=lambda s: 0.3 + 2.5 * s)
    p.run(40)
    assert bal.share <= 0.125 and 0.0 in p.shares[-20:]
    p.run(2000)
    # up-steps are tried ever more rarely: late on, nearly every batch runs at the best split
    late = p.shares[-1000:]
    assert sum(s == 0.0 for s in late) > 0.95 * len(late)
    assert bal.patience == bal.max_patience
    assert statistics.mean(p.intervals[-1000:]) < 0.42 * 1.02


def test_it_finds_a_split_between_the_extremes():
    # the host can take 40% of the decoding before the consumer waits; each share it takes
    # makes the model's step faster (fewer decode kernels beside it)
    bal = DecodeBalance()
    p = Pipeline(bal, step=lambda s: 0.30 * (1 + 0.2 * (1 - s)), supply=lambda s: 0.75 * s)
    p.run(3000)
    late = p.shares[-1000:]
    best = max(s for s in (i / 8 for i in range(9)) if 0.75 * s <= 0.30 * (1 + 0.2 * (1 - s)))
    assert statistics.median(late) == pytest.approx(best, abs=0.13)
    assert statistics.mean(p.intervals[-1000:]) < 0.30 * (1 + 0.2 * (1 - best)) * 1.05


def test_a_burst_of_waits_costs_a_few_windows_then_the_host_takes_it_all_back():
    bal = DecodeBalance()
    p = Pipeline(bal, step=lambda s: 0.131 * (1 + 0.08 * (1 - s)), supply=lambda s: 0.1)
    p.run(20)
    asked = p.t + 0.131
    bal.observe(asked, asked + 0.04, 0, bal.share)  # a stall: 40 ms waited
    assert 0.0 < bal.share < 1.0 and bal.to_gpu == 1
    p.t = asked + 0.04
    p.run(80)
    assert bal.share == 1.0


def test_batches_made_with_another_share_and_unsettled_ones_are_not_judged():
    bal = DecodeBalance()
    for i in range(5):
        bal.observe(i, i + 0.5, 0, 1.0, settled=False)
    assert bal.share == 1.0
    bal.observe(10.0, 10.0, 1, 1.0)
    bal.observe(10.001, 10.05, 0, 1.0)  # waited: cut at once
    assert bal.share == 0.0
    for i in range(20):  # still in flight, made with share 1: says nothing about share 0
        bal.observe(11 + i, 11.5 + i, 0, 1.0)
        bal.observe(11.6 + i, 11.6 + i, 3, 1.0)
    assert bal.share == 0.0 and bal.to_gpu == 1 and bal.to_host == 0


def test_a_new_pass_does_not_judge_the_gap_between_passes():
    bal = DecodeBalance(window=2)
    bal.observe(0.0, 0.0, 1)
    bal.observe(0.1, 0.1, 1)
    bal.new_pass()
    bal.observe(60.0, 60.5, 0)  # after a validation pass: no interval, not a starvation
    assert bal.share == 1.0 and bal.to_gpu == 0


@pytest.mark.parametrize("kw", [dict(start=1.5), dict(step=0.0), dict(step=2.0), dict(window=0),
                                dict(max_patience=0), dict(tolerance=-0.1)])
def test_bad_settings(kw):
    with pytest.raises(ValueError, match="balance"):
        DecodeBalance(**kw)
