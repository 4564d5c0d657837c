"""The GPU read path and the GPU loader over a remote store (HTTP range server on loopback):
compressed bytes fetched by the I/O pool straight into pinned staging, decoded on the GPU, equal
to the local CPU read byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

import corpus as C
import zarrflow
from servers.range_server import RangeServer
from test_gpu import GPU_MARKS, cpu_bytes, host_bytes, needs_gpu_kernels  # skips without a GPU

pytestmark = GPU_MARKS
zarr = pytest.importorskip("zarr")
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def http_corpus(corpus):
    with RangeServer(corpus.root) as srv:
        yield srv


def test_gpu_read_over_http_equals_local_cpu(built: C.Built, http_corpus, corpus) -> None:
    url = f"{http_corpus.url}/{built.path.relative_to(corpus.root).as_posix()}"
    remote = zarrflow.open(url)
    local = zarrflow.open(built.path)
    got = host_bytes(remote.read(device="cuda"))
    assert np.array_equal(got, cpu_bytes(C.native(local[...]))), built.case_id


@needs_gpu_kernels
def test_gpu_loader_streams_from_http(tmp_path) -> None:
    path = tmp_path / "era5.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    rng = np.random.default_rng(3)
    for name in ("t2m", "z500", "u500"):
        a = root.create_array(name, shape=(24, 32, 64), chunks=(1, 32, 64), dtype="float32",
                              dimension_names=["time", "latitude", "longitude"],
                              compressors=[zarr.codecs.ZstdCodec(level=3)])
        a[...] = rng.standard_normal((24, 32, 64)).astype("float32")
    zarr.consolidate_metadata(str(path))
    kw = dict(batch_size=4, dtype="bfloat16", normalize={"mean": [0, 0, 0], "std": [1, 1, 1]},
              output="torch", shuffle=True, seed=5)
    names = ["t2m", "z500", "u500"]
    with RangeServer(tmp_path) as srv:
        remote = list(zarrflow.Loader(f"{srv.url}/era5.zarr", names, device="cuda", **kw))
    local = list(zarrflow.Loader(path, names, device="cpu", **kw))
    assert len(remote) == len(local) > 0
    for r, l in zip(remote, local):  # bf16 compared by bits
        assert r["x"].is_cuda
        assert np.array_equal(r["x"].view(torch.int16).cpu().numpy(), l["x"].view(torch.int16).numpy())
        assert np.array_equal(r["y"].view(torch.int16).cpu().numpy(), l["y"].view(torch.int16).numpy())
