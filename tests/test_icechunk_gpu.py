"""GPU reads of Icechunk repositories and Kerchunk references equal CPU reads (marked `gpu`;
skips cleanly without a usable GPU): native, inline, sharded, split-manifest and virtual chunks
reach pinned staging through the reference stores like any chunk."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import zarrflow

pytestmark = pytest.mark.gpu
if not zarrflow.cuda_available():
    pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}", allow_module_level=True)
torch = pytest.importorskip("torch")
icechunk = pytest.importorskip("icechunk")

from icechunk_repos import make_repository  # noqa: E402


def _host(t) -> bytes:
    x = torch.from_dlpack(t).contiguous().reshape(-1)
    return x.view(torch.uint8).cpu().numpy().tobytes()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> dict:
    os.environ.setdefault("RUST_LOG", "error")
    return make_repository(tmp_path_factory.mktemp("icechunk-gpu"))


@pytest.mark.parametrize("ref", ["main", "v1", "dev"])
def test_gpu_reads_equal_cpu_reads(repo, ref) -> None:
    g = zarrflow.open(repo["path"], ref=ref, virtual_chunk_containers={repo["prefix"]: None})
    for name in ("zstd", "blosc", "sharded", "coord", "split", "virt"):
        a = g[name]
        cpu = a[...]
        assert _host(a.read(device="cuda")) == cpu.tobytes(), (ref, name)
        region = tuple(slice(1, n - 1) for n in a.shape)
        assert _host(a.read(region, device="cuda")) == np.ascontiguousarray(cpu[region]).tobytes()


def test_gpu_reads_of_kerchunk_references(tmp_path) -> None:
    h5py = pytest.importorskip("h5py")
    pytest.importorskip("kerchunk")
    from kerchunk.hdf import SingleHdf5ToZarr

    path = tmp_path / "gen.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=rng.standard_normal((20, 30)).astype("f4"))
        f.create_dataset("deflate", data=rng.integers(0, 1000, (20, 30)).astype("i4"),
                         chunks=(5, 10), shuffle=True, compression="gzip")
    fo = tmp_path / "refs.json"
    fo.write_text(json.dumps(SingleHdf5ToZarr(str(path), inline_threshold=0).translate()))
    g = zarrflow.open(fo)
    for name in ("plain", "deflate"):
        assert _host(g[name].read(device="cuda")) == g[name][...].tobytes(), name
