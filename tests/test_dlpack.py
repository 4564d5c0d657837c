"""zarrflow.Tensor hand-off through DLPack, on the host (runs everywhere, CI included), the clear
error a GPU read gives on a machine without one, and GPU reads on a GPU this build has no kernel
image for (decoded on the host, copied up)."""

from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow import _core

STORE = Path(__file__).parent / "data" / "earthkit_test_zarr"


def test_host_tensor_is_shared_with_numpy_without_a_copy():
    arr = zarrflow.open(STORE)["t"]
    t = arr.read((slice(0, 1), slice(0, 2), slice(10, 30), slice(None, None, 3)), device="cpu")
    assert isinstance(t, zarrflow.Tensor)
    assert t.__dlpack_device__() == (1, 0)
    assert t.shape == (1, 2, 20, 120)
    x = np.from_dlpack(t)
    assert x.ctypes.data == t.data_ptr  # same memory
    assert np.array_equal(x, arr[0:1, 0:2, 10:30, ::3])
    del t  # the consumer keeps the memory alive
    assert np.array_equal(x, arr[0:1, 0:2, 10:30, ::3])


def test_every_export_is_independent():
    arr = zarrflow.open(STORE)["z"]
    t = arr.read(device="cpu")
    a, b = np.from_dlpack(t), np.from_dlpack(t)
    assert a.ctypes.data == b.ctypes.data
    del a
    assert np.array_equal(b, arr[...])


def test_dlpack_refuses_to_copy():
    t = zarrflow.open(STORE)["t"].read(device="cpu")
    with pytest.raises(ValueError):
        t.__dlpack__(copy=True)


# A GPU whose memory zarrflow uses although this build has no kernel image for it.
KERNELS_MISSING = not zarrflow.cuda_available() and _core.cuda_device_status() == ""


@pytest.mark.skipif(zarrflow.cuda_available() or KERNELS_MISSING, reason="this machine has a GPU")
def test_cuda_read_without_a_gpu_says_why():
    with pytest.raises(zarrflow.UnsupportedError) as e:
        zarrflow.open(STORE)["t"].read(device="cuda")
    assert zarrflow.cuda_status() in str(e.value)


@pytest.mark.gpu
@pytest.mark.skipif(not KERNELS_MISSING, reason="needs a GPU this build has no kernel image for")
def test_cuda_read_on_a_gpu_without_kernel_image_decodes_on_the_host(monkeypatch):
    """The region is decoded by the host threads and copied up: the same bytes, said once; a
    read that insists on the GPU's decoders (gpu_decode="on") fails with cuda_status()."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(zarrflow._gpu, "_said", set())  # as in a fresh process
    arr = zarrflow.open(STORE)["t"]
    region = (slice(0, 1), slice(0, 2), slice(10, 30), slice(None, None, 3))
    with pytest.warns(RuntimeWarning, match="cannot run zarrflow's GPU kernels") as said:
        first = arr.read(region, device="cuda")
        second = arr.read(device="cuda")
    assert len([w for w in said if "cannot run zarrflow's GPU kernels" in str(w.message)]) == 1
    assert first.__dlpack_device__() == (2, 0)
    assert np.array_equal(torch.from_dlpack(first).cpu().numpy(), arr[0:1, 0:2, 10:30, ::3])
    assert np.array_equal(torch.from_dlpack(second).cpu().numpy(), arr[...])
    assert arr.last_read_report["h2d_bytes"] == arr[...].nbytes
    with pytest.raises(zarrflow.UnsupportedError) as e:
        arr.read(device="cuda", gpu_decode="on")
    assert zarrflow.cuda_status() in str(e.value)


def test_device_argument_is_checked():
    arr = zarrflow.open(STORE)["t"]
    with pytest.raises(ValueError):
        arr.read(device="tpu")
    with pytest.raises(ValueError):
        arr.read(device="cuda", gpu_decode="sometimes")
