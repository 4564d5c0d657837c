"""What a build reports about itself: build_info(), the CUDA status messages, the warning for two
zarrflow builds installed together, and nvCOMP of another CUDA major version being passed over."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings

import pytest

import zarrflow
from zarrflow import _core, _gpu


def test_build_info_describes_the_build():
    info = zarrflow.build_info()
    assert set(info) == {"distribution", "cuda_runtime", "cuda_archs", "driver_cuda", "cuda_status"}
    assert info["distribution"] in ("source", *_gpu.DISTRIBUTIONS)
    assert info["cuda_status"] == zarrflow.cuda_status()
    if _core.built_with_cuda():
        assert info["cuda_runtime"].split(".")[0].isdigit()
        assert info["cuda_archs"] and all(a.split("-")[0].isdigit() for a in info["cuda_archs"])
    else:
        assert info["cuda_runtime"] is None and info["cuda_archs"] == []
        assert info["cuda_status"] == "zarrflow was built without CUDA"


@pytest.mark.skipif(zarrflow.cuda_available(), reason="this machine has a usable GPU")
def test_cuda_status_says_why_the_gpu_path_is_off():
    status = zarrflow.cuda_status()
    reasons = ("built without CUDA", "no NVIDIA driver", "older than the CUDA",
               "no CUDA GPU is visible", "cannot run zarrflow's GPU kernels")
    assert any(r in status for r in reasons), status


def test_nvcomp_extra_names_the_builds_cuda_major():
    """An installed wheel's [nvcomp] extra pulls nvCOMP for its own CUDA major version; the CPU
    wheel has no such extra."""
    from importlib import metadata

    dist = zarrflow.build_info()["distribution"]
    if dist == "source":
        pytest.skip("a build from the repository, not a wheel")
    extras = metadata.metadata(dist).get_all("Provides-Extra") or []
    nvcomp = [r for r in metadata.requires(dist) or [] if "nvcomp" in r.split(";", 1)[-1]]
    if dist == "zarrflow":
        assert "nvcomp" not in extras and not nvcomp, (extras, nvcomp)
    else:
        major = dist.removeprefix("zarrflow-cu")
        assert nvcomp and all(r.startswith(f"nvidia-libnvcomp-cu{major}") for r in nvcomp), nvcomp


def test_two_builds_installed_together_are_named(monkeypatch):
    monkeypatch.setattr(_gpu, "_this_distribution", lambda: "zarrflow-cu13")
    monkeypatch.setattr(_gpu, "installed_distributions", lambda: ["zarrflow-cu12", "zarrflow-cu13"])
    with pytest.warns(RuntimeWarning, match="zarrflow-cu12 and zarrflow-cu13 are installed together"):
        _gpu._warn_if_several_installed()


def test_one_build_installed_says_nothing(monkeypatch):
    monkeypatch.setattr(_gpu, "_this_distribution", lambda: "zarrflow-cu13")
    monkeypatch.setattr(_gpu, "installed_distributions", lambda: ["zarrflow-cu13"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _gpu._warn_if_several_installed()


FAKE_NVCOMP = r"""
#include <stdint.h>
typedef struct { uint32_t version; uint32_t cudart_version; } props_t;
int nvcompGetProperties(props_t* p) { p->version = 5000000; p->cudart_version = CUDART; return 0; }
"""


@pytest.mark.skipif(not _core.built_with_cuda(), reason="zarrflow was built without CUDA")
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the stand-in")
def test_nvcomp_for_another_cuda_major_is_passed_over(tmp_path):
    # A stand-in libnvcomp that reports a CUDA major version other than zarrflow's runtime.
    runtime_major = int(zarrflow.build_info()["cuda_runtime"].split(".")[0])
    other = 12 if runtime_major != 12 else 13
    src = tmp_path / "fake_nvcomp.c"
    src.write_text(FAKE_NVCOMP)
    lib = tmp_path / "libnvcomp.so.5"
    subprocess.run(["cc", "-shared", "-fPIC", f"-DCUDART={other * 1000}", str(src), "-o", str(lib)],
                   check=True)
    code = (
        "import zarrflow; from zarrflow import _core; "
        f"_core.set_nvcomp_library([{str(lib)!r}]); print(_core.nvcomp_status())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert f"nvCOMP for CUDA {runtime_major} not found" in out, out
    assert f"{lib}: built for CUDA {other}.0, this zarrflow for CUDA {runtime_major}." in out, out
