"""`zarrflow doctor` and `zarrflow --version`: what the installed build is, which paths are on, and
why a path is off, with the messages of cuda_status() and nvcomp_status()."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import zarrflow
from zarrflow import _core
from zarrflow.tools import doctor


def run_zarrflow(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("ZARRFLOW_NUM_THREADS", "ZARRFLOW_GPU_MEMORY_LIMIT", "ZARRFLOW_GPU_ZSTD",
                            "LOCAL_WORLD_SIZE")}
    return subprocess.run([sys.executable, "-m", "zarrflow", *args], capture_output=True,
                          text=True, env={**environ, **env}, timeout=120)


def lines_starting(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


def test_doctor_names_the_build_python_threads_and_memory():
    r = run_zarrflow("doctor")
    assert r.returncode == 0, r.stderr
    info = zarrflow.build_info()
    (first,) = lines_starting(r.stdout, "zarrflow ")
    assert first.startswith(f"zarrflow {zarrflow.__version__} ({info['distribution']}) in ")
    assert first.endswith(os.path.dirname(zarrflow.__file__))
    assert lines_starting(r.stdout, f"Python {sys.version.split()[0]} ")
    (threads,) = lines_starting(r.stdout, "threads: ")
    assert "decoding threads" in threads and "nice +" in threads
    assert len(lines_starting(r.stdout, "GPU memory limit: ")) == 1


def test_doctor_thread_line_follows_the_environment():
    r = run_zarrflow("doctor", ZARRFLOW_NUM_THREADS="3", ZARRFLOW_THREAD_NICE="0")
    assert "threads: 3 decoding threads (ZARRFLOW_NUM_THREADS), nice +0" in r.stdout
    r = run_zarrflow("doctor", ZARRFLOW_NUM_THREADS="0")
    assert r.returncode == 0
    assert "threads: off because ZARRFLOW_NUM_THREADS must be >= 1, got '0'" in r.stdout


@pytest.mark.skipif(_core.built_with_cuda(), reason="this build has CUDA")
def test_doctor_without_cuda_says_which_wheel_has_it():
    out = run_zarrflow("doctor").stdout
    (line,) = lines_starting(out, "GPU path: ")
    assert line.startswith("GPU path: off because zarrflow was built without CUDA")
    assert "zarrflow-cu12 or zarrflow-cu13" in line
    assert not lines_starting(out, "nvCOMP") and not lines_starting(out, "GPU 0")


@pytest.mark.skipif(not _core.built_with_cuda(), reason="zarrflow was built without CUDA")
def test_doctor_with_cuda_names_runtime_architectures_and_driver():
    out = run_zarrflow("doctor").stdout
    info = zarrflow.build_info()
    assert f"CUDA runtime: {info['cuda_runtime']} (linked in)" in out
    (archs,) = lines_starting(out, "CUDA architectures: ")
    assert archs == f"CUDA architectures: {doctor.arch_summary(info['cuda_archs'])}"
    (driver,) = lines_starting(out, "NVIDIA driver: ")
    if info["driver_cuda"]:
        assert driver.endswith(f"supports CUDA {info['driver_cuda']}")


@pytest.mark.skipif(zarrflow.cuda_available(), reason="this machine has a usable GPU")
def test_doctor_says_why_the_gpu_path_is_off():
    out = run_zarrflow("doctor").stdout
    (line,) = lines_starting(out, "GPU path: ")
    if _core.built_with_cuda() and _core.cuda_device_status():  # no GPU memory to use either
        assert line == f"GPU path: off because {zarrflow.cuda_status()}; reads run on the host"
    elif _core.built_with_cuda():  # a GPU without a kernel image in this build
        assert line == (f"GPU path: off because {zarrflow.cuda_status()}; device reads decode on "
                        "the host and copy to the GPU")
    # nvCOMP and cuFile are only looked for where the GPU path is on.
    assert not lines_starting(out, "nvCOMP") and not lines_starting(out, "cuFile")
    assert "(no usable GPU here)" in lines_starting(out, "GPU memory limit: ")[0]


@pytest.mark.skipif(not zarrflow.cuda_available(), reason="needs a GPU zarrflow's kernels run on")
def test_doctor_on_a_gpu_lists_it_and_nvcomp():
    out = run_zarrflow("doctor", ZARRFLOW_GPU_MEMORY_LIMIT="0.25").stdout
    assert "GPU path: on" in out.splitlines()
    gpu0 = lines_starting(out, "GPU 0: ")
    assert len(gpu0) == 1 and gpu0[0].endswith(": zarrflow's kernels run")
    (nvcomp,) = lines_starting(out, "nvCOMP: ")
    status = zarrflow.nvcomp_status()
    assert nvcomp.startswith("nvCOMP: on, ") if not status else status.splitlines()[0] in nvcomp
    (zstd,) = lines_starting(out, "zstd on the GPU: ")
    assert zstd == ("zstd on the GPU: nvCOMP's decoder, ZARRFLOW_GPU_ZSTD=auto" if not status else
                    "zstd on the GPU: zarrflow's decoder (nvCOMP is off), ZARRFLOW_GPU_ZSTD=auto")
    forced = run_zarrflow("doctor", ZARRFLOW_GPU_ZSTD="zarrflow").stdout
    assert "zstd on the GPU: zarrflow's decoder" in forced, forced
    assert len(lines_starting(out, "cuFile (io='cufile' only): ")) == 1
    (limit,) = lines_starting(out, "GPU memory limit: ")
    assert limit.endswith("on GPU 0 (ZARRFLOW_GPU_MEMORY_LIMIT=0.25)")


def test_an_unknown_zstd_decoder_is_reported_not_raised(monkeypatch):
    from zarrflow import _gpu

    monkeypatch.setenv("ZARRFLOW_GPU_ZSTD", "fastest")
    monkeypatch.setattr(_gpu, "_configured", False)
    (line,) = doctor._decoder_lines()
    assert line == ("nvCOMP and zstd on the GPU: off because ZARRFLOW_GPU_ZSTD must be 'auto', "
                    "'zarrflow' or 'nvcomp', got 'fastest'")
    assert not _gpu._configured  # the next GPU read reads the variable again


def test_architecture_summary():
    assert doctor.arch_summary(["75-real", "90-real", "120"]) == (
        "SASS sm_75, sm_90, sm_120; PTX compute_120")
    assert doctor.arch_summary(["80-real"]) == (
        "SASS sm_80; no PTX (no GPU newer than the SASS list)")
    assert doctor.arch_summary(["90-virtual"]) == "no SASS; PTX compute_90"


def test_version_names_distribution_and_cuda():
    r = run_zarrflow("--version")
    assert r.returncode == 0
    info = zarrflow.build_info()
    cuda = f"CUDA {info['cuda_runtime']}" if info["cuda_runtime"] else "no CUDA"
    assert r.stdout.strip() == f"zarrflow {zarrflow.__version__} ({info['distribution']}, {cuda})"
