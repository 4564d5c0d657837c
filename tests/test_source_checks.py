"""The sources as committed: C++ formatted by the pinned clang-format (.clang-format), Python
free of pyflakes' findings (unused imports and variables, undefined names) and, outside tests and
benchmarks, of lines over 100 columns (pyproject's [tool.ruff]). Both tools come with the `test`
extra; each check skips where its tool is absent."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLANG_FORMAT_VERSION = "14.0.6"  # pyproject's `test` extra pins the same


def tracked(*patterns: str) -> list[str]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return out.stdout.split()


def clang_format() -> str:
    """The pinned clang-format: the `test` extra's (beside this Python), else one on PATH of the
    same version."""
    beside = Path(sys.executable).parent / "clang-format"
    exe = str(beside) if beside.exists() else shutil.which("clang-format")
    if exe is None:
        pytest.skip("clang-format is not installed (pip install 'zarrflow[test]')")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if CLANG_FORMAT_VERSION not in version:
        pytest.skip(f"clang-format {CLANG_FORMAT_VERSION} formats these sources; found {version}")
    return exe


def test_cpp_sources_are_formatted():
    files = tracked("*.cc", "*.h", "*.cu", "*.cuh")
    assert files
    run = subprocess.run([clang_format(), "--dry-run", "--Werror", *files], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, ("clang-format would change these lines (run `clang-format -i` "
                                 "on the files):\n" + run.stderr[:4000])


def test_python_sources_pass_ruff_checks():
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (pip install 'zarrflow[test]')")
    tracked("*.py")  # a checkout, not an installed copy
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                          "--output-format", "concise", "."], cwd=ROOT, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout[:4000] + run.stderr[:2000]
