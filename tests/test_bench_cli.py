"""`zarrflow bench`: which arrays it measures, how much it reads, what it reports, and clear errors
for what it cannot do. (The figures themselves are timings: only their consistency is checked.)"""

from __future__ import annotations

import json
from argparse import Namespace

import numpy as np
import pytest

import zarrflow
from test_cli import run_cli
from zarrflow import errors
from zarrflow.tools import bench
from zarrflow.tools.synth import SynthSpec, synth

NT, NLAT, NLON = 5, 19, 36


@pytest.fixture(scope="module")
def wb2(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "wb2.zarr"
    synth(path, SynthSpec(layout="wb2", ntime=NT, nlat=NLAT, nlon=NLON), progress=False)
    return path


def args(path, **kw) -> Namespace:
    base = dict(path=str(path), array=None, device="cpu", size_gb=1.0, runs=2, threads=None,
                json=None, quiet=True, storage_option=None, anon=False)
    return Namespace(**(base | kw))


def test_measures_every_data_array_but_not_coordinates(wb2, capsys):
    results = bench.run(args(wb2))
    names = {r.array for r in results}
    g = zarrflow.open_group(wb2)
    data_vars = {k for k, a in g.arrays() if a.ndim >= 3}
    assert names == data_vars  # not latitude, longitude, time, level (dimension coordinates)
    for r in results:
        arr = g[r.array]
        assert r.decoded_bytes == arr.nbytes  # 1 GB asked: the whole (small) array
        assert r.region == "[" + ", ".join(f"0:{s}" for s in arr.shape) + "]"
        assert len(r.runs_GBps) == 2 and r.GBps == pytest.approx(np.median(r.runs_GBps))
        assert r.first_GBps > 0 and r.core_s_per_GB >= 0
        assert r.gpu_decoded is None  # host reads: no GPU report
    out = capsys.readouterr().out
    assert "| array | region | decoded |" in out
    assert all(f"| {n} |" in out for n in names)


def test_slab_is_whole_chunks_of_about_the_size_asked(wb2):
    arr = zarrflow.open_group(wb2)["2m_temperature"]
    one_row = arr.nbytes // arr.shape[0] * arr.chunks[0]
    assert bench._slab(arr, 2.5 * one_row)[0] == slice(0, 2 * arr.chunks[0])
    assert bench._slab(arr, 1)[0] == slice(0, arr.chunks[0])  # at least one row of chunks
    assert bench._slab(arr, 1e12)[0] == slice(0, arr.shape[0])  # at most the array


def test_named_arrays_and_json(wb2, tmp_path):
    out = tmp_path / "b.json"
    bench.run(args(wb2, array=["temperature"], json=out, runs=1))
    doc = json.loads(out.read_text())
    assert doc["device"] == "cpu" and doc["runs"] == 1
    assert [a["array"] for a in doc["arrays"]] == ["temperature"]


@pytest.mark.parametrize("kw, match", [
    (dict(array=["nope"]), "no array 'nope'"),
    (dict(runs=0), "--runs"),
    (dict(size_gb=0), "--size-gb"),
    (dict(device="tpu"), "device must be"),
])
def test_bad_requests(wb2, kw, match):
    with pytest.raises(errors.ZarrflowError, match=match):
        bench.run(args(wb2, **kw))


def test_cuda_without_a_gpu_is_a_clear_error(wb2):
    if zarrflow.cuda_available():
        pytest.skip("a GPU is present")
    with pytest.raises(errors.InvalidArgumentError, match="no usable GPU"):
        bench.run(args(wb2, device="cuda"))


def test_cli(wb2):
    r = run_cli("bench", str(wb2), "--array", "2m_temperature", "--runs", "1", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "2m_temperature" in r.stdout and "GB/s" in r.stdout
    r = run_cli("bench", str(wb2 / "missing.zarr"))
    assert r.returncode == 1 and "zarrflow:" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.gpu
def test_gpu_reads_report_where_chunks_were_decoded(wb2):
    if not zarrflow.cuda_available():
        pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}")
    (r,) = bench.run(args(wb2, array=["2m_temperature"], device="cuda"))
    assert r.gpu_decoded + r.cpu_decoded > 0 and r.GBps > 0
