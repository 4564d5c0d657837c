"""zarrflow.Tensor hand-off through DLPack, on the host (runs everywhere, CI included), and the
clear error a GPU read gives on a machine without one."""

from pathlib import Path

import numpy as np
import pytest

import zarrflow

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


@pytest.mark.skipif(zarrflow.cuda_available(), reason="this machine has a GPU")
def test_cuda_read_without_a_gpu_says_why():
    with pytest.raises(zarrflow.UnsupportedError) as e:
        zarrflow.open(STORE)["t"].read(device="cuda")
    assert zarrflow.cuda_status() in str(e.value)


def test_device_argument_is_checked():
    arr = zarrflow.open(STORE)["t"]
    with pytest.raises(ValueError):
        arr.read(device="tpu")
    with pytest.raises(ValueError):
        arr.read(device="cuda", gpu_decode="sometimes")
