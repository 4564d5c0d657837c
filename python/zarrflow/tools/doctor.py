"""``zarrflow doctor``: what this installation of zarrflow is and which of its paths are on.

It prints the build (distribution, version, CUDA runtime and the GPU architectures compiled in),
the NVIDIA driver, each visible GPU and whether zarrflow's kernels run on it, nvCOMP and cuFile,
and the thread and GPU memory defaults a read or a loader would use here. Every path that is off
is named with the reason (the same messages as ``cuda_status()`` and ``nvcomp_status()``), so a
user can paste the output into a bug report.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from importlib import metadata

from .. import __version__, _core, _gpu, _placement, _threads


def arch_summary(archs: list[str]) -> str:
    """CMake's CUDA_ARCHITECTURES list in words: '75-real' is SASS only, '120' SASS and PTX,
    '120-virtual' PTX only."""
    sass, ptx = [], []
    for a in archs:
        number, _, kind = a.partition("-")
        if kind in ("", "real"):
            sass.append(f"sm_{number}")
        if kind in ("", "virtual"):
            ptx.append(f"compute_{number}")
    parts = [f"SASS {', '.join(sass)}" if sass else "no SASS"]
    parts.append(f"PTX {', '.join(ptx)}" if ptx else "no PTX (no GPU newer than the SASS list)")
    return "; ".join(parts)


def driver_version() -> str | None:
    """The NVIDIA kernel module's version (e.g. '580.65.06'), or None without one."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
    except OSError:
        return None
    for word in first.split():
        if word[:1].isdigit() and "." in word:
            return word
    return None


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _thread_line() -> str:
    try:
        threads = _threads.default_threads()
        nice = _threads.default_nice()
        placed = _threads.placement()
    except ValueError as e:
        return f"threads: off because {e}"
    env = os.environ.get("ZARRFLOW_NUM_THREADS")
    if env:
        why = "ZARRFLOW_NUM_THREADS"
    elif placed.cpus:
        why = f"CPUs {_placement.format_cpu_list(placed.cpus)}: {placed.reason}"
    else:
        ranks = _placement.local_ranks()
        why = f"{_threads._cpu_count()} CPUs this process may use"
        if ranks > 1 and not _placement.bound_already(_placement.process_cpus()):
            why += f" / LOCAL_WORLD_SIZE {ranks}"
    where = "" if placed.cpus or env else f"; placed by the scheduler: {placed.reason}"
    return f"threads: {threads} decoding threads ({why}), nice +{nice}{where}"


def _memory_line() -> str:
    setting = os.environ.get("ZARRFLOW_GPU_MEMORY_LIMIT")
    source = (f"ZARRFLOW_GPU_MEMORY_LIMIT={setting}" if setting
              else f"default {_gpu.DEFAULT_LIMIT:g}")
    if not _gpu.cuda_available():
        return f"GPU memory limit: {source} of a GPU's memory (no usable GPU here)"
    try:
        limit = _gpu.gpu_memory_limit()
    except ValueError as e:
        return f"GPU memory limit: off because {e}"
    amount = _gib(limit) if limit else "none"
    return f"GPU memory limit: {amount} on GPU 0 ({source})"


def _zstd_line(nvcomp_status: str) -> str:
    """Which decoder takes zstd chunks on the GPU (ZARRFLOW_GPU_ZSTD; docs/settings.md), given
    why nvCOMP is off ("" when it is loaded)."""
    choice = os.environ.get("ZARRFLOW_GPU_ZSTD", "auto")
    nvcomp = not nvcomp_status
    used = {"nvcomp": "nvCOMP's decoder", "zarrflow": "zarrflow's decoder"}[
        _core.zstd_decoder_used(nvcomp)]
    why = " (nvCOMP is off)" if not nvcomp else ""
    return f"zstd on the GPU: {used}{why}, ZARRFLOW_GPU_ZSTD={choice}"


def _decoder_lines() -> list[str]:
    """nvCOMP's line and the zstd decoder's, or why neither can be told: the GPU set-up reads
    ZARRFLOW_GPU_ZSTD first and refuses a value it does not know."""
    try:
        _gpu.configure()
    except ValueError as e:
        return [f"nvCOMP and zstd on the GPU: off because {e}"]
    status = _gpu.nvcomp_status()
    return [_nvcomp_line(status), _zstd_line(status)]


def _nvcomp_line(status: str) -> str:
    if status:
        return "nvCOMP: off because " + status.replace("\n", "\n    ")
    path = _core.nvcomp_library().get("path", "")
    for dist in ("nvidia-libnvcomp-cu13", "nvidia-libnvcomp-cu12"):
        try:
            found = metadata.distribution(dist)
        except metadata.PackageNotFoundError:
            continue
        if os.path.realpath(path).startswith(os.path.realpath(found.locate_file("nvidia"))):
            return f"nvCOMP: on, {path} ({dist} {found.version})"
    return f"nvCOMP: on, {path}"


def _cufile_line() -> str:
    c = _core.cufile_status()
    if c["status"]:
        return f"cuFile (io='cufile' only): off because {c['status']}"
    return f"cuFile (io='cufile' only): on, {c['mode']}"


def _gpu_lines(info: dict) -> list[str]:
    lines = []
    if not _core.built_with_cuda():
        return ["GPU path: off because zarrflow was built without CUDA (install zarrflow-cu12 or "
                "zarrflow-cu13 for GPU reads: docs/install.md)"]
    lines.append(f"CUDA runtime: {info['cuda_runtime']} (linked in)")
    lines.append(f"CUDA architectures: {arch_summary(info['cuda_archs'])}")
    driver = driver_version()
    if info["driver_cuda"]:
        lines.append(f"NVIDIA driver: {driver or 'version unknown'}, supports CUDA "
                     f"{info['driver_cuda']}")
    else:
        lines.append(f"NVIDIA driver: {driver or 'none found'}")
    for d in _core.cuda_devices():
        verdict = "zarrflow's kernels run" if not d["status"] else f"off because {d['status']}"
        lines.append(f"GPU {d['index']}: {d['name']}, sm_{d['capability'].replace('.', '')}, "
                     f"{_gib(d['memory_bytes'])}: {verdict}")
    status = info["cuda_status"]
    if not status:
        lines.append("GPU path: on")
    elif _core.cuda_device_status() == "":
        lines.append(f"GPU path: off because {status}; device reads decode on the host and copy "
                     "to the GPU")
        return lines
    else:
        lines.append(f"GPU path: off because {status}; reads run on the host")
        return lines
    lines += _decoder_lines()
    lines.append(_cufile_line())
    return lines


def report() -> list[str]:
    """The lines ``zarrflow doctor`` prints."""
    info = _gpu.build_info()
    lines = [
        f"zarrflow {__version__} ({info['distribution']}) in "
        f"{os.path.dirname(os.path.abspath(_gpu.__file__))}",
        f"Python {platform.python_version()} ({sys.executable}), {platform.system()} "
        f"{platform.machine()}, glibc {platform.libc_ver()[1] or 'unknown'}",
    ]
    installed = _gpu.installed_distributions()
    if len(installed) > 1:
        lines.append(f"installed builds: {', '.join(installed)}: keep one (docs/install.md)")
    lines += _gpu_lines(info)
    lines.append(_thread_line())
    lines.append(_memory_line())
    return lines


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser(
        "doctor", help="print the build, GPUs, driver, nvCOMP, cuFile and defaults",
        description="Print what this zarrflow is and what it can use here: version and "
                    "distribution, CUDA runtime and compiled GPU architectures, NVIDIA driver, "
                    "each GPU and whether zarrflow's kernels run on it, nvCOMP and cuFile, and "
                    "the default thread count and GPU memory limit. A path that is off is named "
                    "with the reason.")


def run(args: argparse.Namespace) -> None:
    for line in report():
        print(line)
