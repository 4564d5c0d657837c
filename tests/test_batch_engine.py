"""The loader's C++ batch engine through the binding: its request tables equal the NumPy
construction they replaced bit for bit, and its passes, drops and shutdown behave as the Loader
relies on (the engine's scheduling is tested in C++: pipeline/batch_engine_test.cc)."""

from __future__ import annotations

import numpy as np
import pytest

import zarrflow
from zarrflow import _core

from test_loader import VARS, anemoi_store, store  # noqa: F401 (fixtures)


def numpy_requests(ld, times: np.ndarray, origins: np.ndarray) -> np.ndarray:
    """The request table as the loader built it with NumPy: one row per (sample, step,
    channel), channels fastest, from the per-channel template rows."""
    _, rows, time_col, space_cols = ld._templates()
    steps = ld.h + ld.k
    C, B = len(rows), len(times)
    inner = int(np.prod(ld.spatial_shape))
    offsets = np.array([-(ld.h - 1) + j for j in range(ld.h)]
                       + [ld.lead + j for j in range(ld.k)], np.int64)
    table = np.tile(rows, (B * steps, 1))
    n = len(table)
    idx = np.arange(n)
    table[:, 2] = idx * inner
    table[idx, np.tile(time_col, B * steps)] = np.repeat(
        (times[:, None] + offsets[None, :]).reshape(-1), C)
    per_row_origin = np.repeat(origins, steps * C, axis=0)
    for k in range(space_cols.shape[1]):
        table[idx, np.tile(space_cols[:, k], B * steps)] = per_row_origin[:, k]
    return table


@pytest.mark.parametrize("kw", [
    dict(batch_size=4),
    dict(batch_size=3, input_steps=3, lead=2, target_steps=2, layout="BTCHW",
         crop={"latitude": (2, 6), "longitude": (1, 11)}),
    dict(batch_size=5, input_dims={"latitude": 4, "longitude": 6},
         input_overlap={"latitude": 2, "longitude": 2}),
    dict(batch_size=2, input_steps=2, target_steps=0, layout="BTCHW"),
], ids=["plain", "steps-and-crop", "windows", "no-targets"])
def test_request_tables_equal_the_numpy_construction(store, kw):
    ld = zarrflow.Loader(store, VARS + ["data@z500"], device="cpu", output="numpy", seed=3, **kw)
    for epoch in (0, 1):
        for batch in ld.batches(epoch):
            times, origins = ld.spec.locate(batch)
            _, table = ld._requests(times, origins)
            want = numpy_requests(ld, times, origins)
            assert table.dtype == np.int64 and table.shape == want.shape
            assert np.array_equal(table, want)


def test_request_tables_of_an_anemoi_layout(anemoi_store):
    ld = zarrflow.Loader(anemoi_store, ["data@2t", "data@msl"], channel_dim="variable",
                         batch_size=3, device="cpu", output="numpy",
                         input_dims={"cell": 200})
    for batch in ld.batches():
        times, origins = ld.spec.locate(batch)
        assert np.array_equal(ld._requests(times, origins)[1], numpy_requests(ld, times, origins))


def test_plans_refuse_templates_and_samples_that_do_not_fit(store):
    ld = zarrflow.Loader(store, VARS, device="cpu", output="numpy")
    _, rows, time_col, space_cols = ld._templates()
    with pytest.raises(zarrflow.ZarrflowError, match="time column"):
        _core.BatchPlan(rows, time_col[:1], space_cols, np.array([0, 1]), [8, 12])
    with pytest.raises(zarrflow.ZarrflowError, match="window"):
        _core.BatchPlan(rows, time_col, space_cols, np.array([0, 1]), [8])
    plan = ld._plan()
    with pytest.raises(zarrflow.ZarrflowError, match="3 origin values for 2 samples"):
        plan.table(np.array([0, 1]), np.zeros((1, 3), np.int64))


def test_passes_end_drop_and_close(store):
    ld = zarrflow.Loader(store, VARS, batch_size=4, device="cpu", output="numpy", shuffle=False,
                         prime_next_epoch=False)
    first = next(iter(ld))  # makes the engine
    engine = ld._engine
    batches = ld.batches()
    run = ld._submit(batches, read_ahead=False)
    tensor, report, timing, _ = engine.take(run.id)
    assert np.array_equal(np.from_dlpack(tensor)[:, 0], first["x"], equal_nan=True)
    assert report["chunks"] > 0 and len(timing) == 10
    with pytest.raises(zarrflow.ZarrflowError, match="batch sizes"):
        engine.submit(np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros((2, 2), np.int64),
                      [3], False)
    engine.drop(run.id)
    with pytest.raises(RuntimeError, match="dropped"):
        engine.take(run.id)
    empty = ld._submit([], read_ahead=False)
    assert engine.take(empty.id) is None
    engine.close()
    assert engine.live_workers == 0
    with pytest.raises(RuntimeError, match="closed"):
        engine.take(ld._submit(batches, read_ahead=False).id)
