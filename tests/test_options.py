"""LoaderOptions: defaults that work on any machine (device and output "auto"), settings checked
when made, and what "auto" resolves to with and without a GPU or PyTorch (simulated)."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow.loader import LoaderError, LoaderOptions
from zarrflow.loader import options as options_mod

from t2m_arrays import create_t2m

zarr = pytest.importorskip("zarr")

NT, NLAT, NLON = 9, 4, 6


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("options") / "small.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    create_t2m(root, np.arange(NT * NLAT * NLON, dtype="float32").reshape(NT, NLAT, NLON))
    return path


@pytest.fixture
def installed(monkeypatch):
    """Pretend exactly these optional packages are installed."""
    def pretend(*names: str) -> None:
        monkeypatch.setattr(options_mod, "_installed", lambda module: module in names)
    return pretend


@pytest.fixture
def gpu(monkeypatch):
    """Pretend zarrflow can use a GPU (resolution only: nothing is read on it)."""
    monkeypatch.setattr(options_mod._gpu, "configure", lambda: None)
    monkeypatch.setattr(options_mod._gpu, "cuda_available", lambda: True)


def test_defaults_are_auto_and_documented():
    opts = LoaderOptions()
    assert (opts.device, opts.output, opts.layout, opts.dtype) == ("auto", "auto", "auto",
                                                                    "float32")
    doc = LoaderOptions.__doc__
    for name in LoaderOptions.fields():  # every setting is in the Parameters section
        assert f"\n    {name} : " in doc or f", {name} : " in doc, name


def test_without_a_gpu_or_torch_the_default_loader_reads_numpy_on_the_cpu(store, installed):
    if zarrflow.cuda_available():
        pytest.skip("this machine has a GPU")
    installed()  # neither torch nor cupy
    ld = zarrflow.Loader(store, ["t2m"], batch_size=2, shuffle=False)
    assert (ld.on_gpu, ld.device, ld.output, ld.layout) == (False, "cpu", "numpy", "BCHW")
    batch = next(iter(ld))
    assert isinstance(batch["x"], np.ndarray) and batch["x"].shape == (2, 1, NLAT, NLON)
    np.testing.assert_array_equal(batch["x"][1, 0], zarrflow.open(store)["t2m"][1])


def test_auto_output_follows_what_is_installed(installed):
    opts = LoaderOptions()
    installed("torch", "cupy")
    assert opts.resolve_output(on_gpu=False) == "torch"
    installed("cupy")
    assert opts.resolve_output(on_gpu=False) == "numpy"
    assert opts.resolve_output(on_gpu=True) == "cupy"
    installed()
    with pytest.raises(LoaderError, match="needs PyTorch or CuPy.*output='zarrflow'"):
        opts.resolve_output(on_gpu=True)


def test_a_missing_output_package_fails_when_the_loader_is_made(store, installed):
    installed()
    for output in ("torch", "cupy", "jax"):
        with pytest.raises(LoaderError, match=f"output='{output}' needs {output}.*pip install"):
            zarrflow.Loader(store, ["t2m"], device="cpu", output=output)
    with pytest.raises(LoaderError, match="output='numpy' needs device='cpu'"):
        LoaderOptions(output="numpy").resolve_output(on_gpu=True)


def test_auto_device_is_the_gpu_when_usable(gpu, monkeypatch):
    assert LoaderOptions().resolve_device() == ("cuda", 0)
    assert LoaderOptions(device="cuda:1").resolve_device() == ("cuda", 1)
    # PyTorch's current device once PyTorch has initialised CUDA (torch.cuda.set_device).
    cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 3)
    monkeypatch.setitem(__import__("sys").modules, "torch", types.SimpleNamespace(cuda=cuda))
    assert LoaderOptions().resolve_device() == ("cuda", 3)
    assert LoaderOptions(device="cuda").resolve_device() == ("cuda", 3)
    assert LoaderOptions(device="cuda:0").resolve_device() == ("cuda", 0)
    assert LoaderOptions(device="cpu").resolve_device() == ("cpu", 0)


def test_auto_device_without_a_gpu_is_the_cpu_and_cuda_says_what_to_do(store, monkeypatch):
    monkeypatch.setattr(options_mod._gpu, "cuda_available", lambda: False)
    monkeypatch.setattr(options_mod._gpu, "cuda_status", lambda: "no CUDA driver")
    assert LoaderOptions().resolve_device() == ("cpu", 0)
    with pytest.raises(LoaderError, match="no GPU can be used: no CUDA driver. Use device='cpu'"):
        zarrflow.Loader(store, ["t2m"], device="cuda")


def test_auto_layout_follows_the_time_steps(store):
    assert LoaderOptions().resolve_layout(1, 1) == "BCHW"
    assert LoaderOptions().resolve_layout(1, 0) == "BCHW"
    assert LoaderOptions().resolve_layout(2, 1) == "BTCHW"
    assert LoaderOptions().resolve_layout(1, 3) == "BTCHW"
    ld = zarrflow.Loader(store, ["t2m"], batch_size=2, input_steps=2, target_steps=3,
                         device="cpu", output="numpy", shuffle=False)
    batch = next(iter(ld))
    assert ld.layout == "BTCHW"
    assert batch["x"].shape == (2, 2, 1, NLAT, NLON) and batch["y"].shape == (2, 3, 1, NLAT, NLON)


@pytest.mark.parametrize("changes, match", [
    (dict(device="gpu"), "device must be 'auto', 'cpu', 'cuda' or 'cuda:N'"),
    (dict(output="tensorflow"), "output must be one of"),
    (dict(dtype="float64"), "dtype must be one of"),
    (dict(layout="NHWC"), "layout must be one of"),
    (dict(missing="skip"), "missing must be one of"),
    (dict(gpu_decode="yes"), "gpu_decode must be one of"),
    (dict(prefetch=0), "prefetch must be an integer >= 1"),
    (dict(workers=0), "workers must be an integer >= 1 or None"),
    (dict(threads=1.5), "threads must be an integer >= 1 or None"),
    (dict(progress=-1), "progress must be an integer >= 0"),
    (dict(host_decode_share=2), r"host_decode_share must be in \[0, 1\] or 'auto'"),
    (dict(cache_gb=-1), "cache_gb must be a number >= 0"),
    (dict(host_cache_gb="1"), "host_cache_gb must be a number >= 0"),
])
def test_bad_settings_fail_when_made(changes, match):
    with pytest.raises(LoaderError, match=match):
        LoaderOptions(**changes)
    with pytest.raises(LoaderError, match=match):  # a changed copy is checked too
        dataclasses.replace(LoaderOptions(), **changes)


def test_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        LoaderOptions().device = "cpu"
