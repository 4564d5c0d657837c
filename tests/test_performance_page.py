"""docs/performance.md and the README's summary table are what
``python benchmarks/make_performance_page.py`` writes from docs/results, so they never drift from
the result files; and docs/results holds only files the page shows."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
SCRIPT = ROOT / "benchmarks" / "make_performance_page.py"


def _generator():
    spec = importlib.util.spec_from_file_location("make_performance_page", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_check_command_passes_on_the_committed_files() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr


def test_committed_page_and_readme_are_what_the_generator_writes() -> None:
    gen = _generator()
    assert (ROOT / "docs" / "performance.md").read_text() == gen.page()
    readme = (ROOT / "README.md").read_text()
    assert readme == gen.readme(readme)


def test_the_page_is_short_and_shows_every_result_file() -> None:
    page = (ROOT / "docs" / "performance.md").read_text()
    assert page.count("\n") <= 300
    shown = set(re.findall(r"\]\(results/([^)]+)\)", page))
    kept = {p.name for p in RESULTS.iterdir()}
    assert kept - shown == set(), "result files the page does not show"
    assert shown - kept == set(), "the page shows result files that are not there"


def test_tables_follow_the_json(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns("*.png"))
    data = json.loads((results / "bench_read_16cores.json").read_text())
    run = next(r for r in data["runs"] if r["codec"] == "raw" and r["reader"] == "zarrflow")
    run["GBps"] = 98.76
    (results / "bench_read_16cores.json").write_text(json.dumps(data))
    gen = _generator()
    page = gen.page(results)
    raw_row = next(line for line in page.splitlines() if line.startswith("| raw | 1.00 | 98.8 |"))
    assert "| 36.0 | 11.6 |" in raw_row
    assert page != gen.page()


def test_every_placeholder_needs_a_value_and_every_value_a_placeholder() -> None:
    gen = _generator()
    assert gen.render("a {{x}} b", {"x": "1"}).endswith("a 1 b")
    with pytest.raises(SystemExit, match="without a value.*'y'"):
        gen.render("{{x}} {{y}}", {"x": "1"})
    with pytest.raises(SystemExit, match="without a placeholder.*'z'"):
        gen.render("{{x}}", {"x": "1", "z": "2"})
