"""benchmarks/decode_split.py: the best host/GPU split of decoding next to a model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from decode_split import best_split  # noqa: E402


def test_at_the_best_share_host_and_gpu_take_the_same_time():
    synthetic, gpu, host = 46.0, 30.0, 9.0
    best = best_split(synthetic, gpu, host)
    h = best["host_share"]
    t_s, t_g, t_h = 1 / synthetic, 1 / gpu, 1 / host
    host_time = h * t_h
    model_time = t_s + (1 - h) * (t_g - t_s)
    assert host_time == pytest.approx(model_time)
    assert best["samples_per_s"] == pytest.approx(1 / host_time)
    assert best["real_over_synthetic"] == pytest.approx(t_s / host_time)
    # Better than either extreme, worse than no decoding at all.
    assert max(gpu, host) < best["samples_per_s"] < synthetic


def test_a_host_that_keeps_up_alone_needs_no_gpu_decoding():
    best = best_split(46.0, 30.0, 50.0)
    assert best["host_share"] == 1.0
    assert best["real_over_synthetic"] == 1.0


def test_gpu_decoding_within_noise_of_free_takes_everything_it_can():
    # The all-GPU run measured a hair faster than synthetic: it counts as costing nothing, and
    # the best split then leaves the host only what keeps the step at the model's own time.
    best = best_split(46.0, 46.5, 20.0)
    assert best["real_over_synthetic"] == pytest.approx(1.0)
    assert best["host_share"] == pytest.approx(20.0 / 46.0)


@pytest.mark.parametrize("rates", [(0, 1, 1), (1, -1, 1), (1, 1, 0)])
def test_rates_must_be_positive(rates):
    with pytest.raises(ValueError, match="positive"):
        best_split(*rates)
