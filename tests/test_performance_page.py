"""docs/performance.md and the README's summary table are what
``python benchmarks/make_performance_page.py`` writes from docs/results, so they never drift from
the result files; and docs/results holds only files the docs show."""

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


def test_the_page_is_short_and_the_docs_show_every_result_file() -> None:
    page = (ROOT / "docs" / "performance.md").read_text()
    assert page.count("\n") <= 300
    # The performance page shows most; a feature's page may show its own benchmark's files.
    docs = "".join(p.read_text() for p in sorted((ROOT / "docs").glob("*.md")))
    shown = set(re.findall(r"\]\(results/([^)]+)\)", docs))
    kept = {p.name for p in RESULTS.iterdir()}
    assert kept - shown == set(), "result files no page shows"
    assert shown - kept == set(), "the docs show result files that are not there"


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


def test_optional_sections_appear_only_with_their_result_file(tmp_path: Path) -> None:
    gen = _generator()
    template = "a\n\n<!-- if x.json -->\n## X\n\nx {{v}}\n<!-- end if -->\n\n## B\n"
    assert gen.present_sections(template, tmp_path) == "a\n\n## B\n"
    (tmp_path / "x.json").write_text("{}")
    assert gen.present_sections(template, tmp_path) == "a\n\n## X\n\nx {{v}}\n\n## B\n"


def _ceiling_results(results: Path, loader: bool = True, dry: bool = False,
                     second_round: bool = False, loader_date: str | None = None) -> None:
    """Result files of the ceilings and decode-cost sections, shaped and sized as the scripts
    write them (the figures are made up: the page's layout is what is tested)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ceilings as cl

    common = {"gpu": "NVIDIA H100 80GB HBM3", "cores_visible": 16, "date": "2026-01-02T03:04:05+00:00",
              "cpu_dry_run": dry}
    rows = [cl.ceiling_row("raw", 1.0, 35.0, 50.0, None, 33.0, compressed=False),
            cl.ceiling_row("blosc-lz4-shuffle", 1.5, 30.0, 50.0, 48.0, 20.0, compressed=True)]
    rows += [cl.ceiling_row(c, 1.6, 30.0, 50.0, 40.0, 35.0, compressed=True)
             for c in ("zstd-3", "sharded-zstd-3")]
    reads = common | {"threads": 16, "decoded_bytes": 2_000_000_000, "runs_warm": 5, "nvcomp": "loaded",
                      "ceilings": {"pinned_h2d_GBps": 50.0}, "ceiling_rows": rows}
    (results / "bench_ceilings.json").write_text(json.dumps(reads))
    (results / "bench_ceilings_run2.json").unlink(missing_ok=True)
    if second_round:  # blosc-lz4 meets its target the second time, raw misses it
        again = [cl.ceiling_row("raw", 1.0, 35.0, 50.0, None, 30.0, compressed=False),
                 cl.ceiling_row("blosc-lz4-shuffle", 1.5, 30.0, 50.0, 48.0, 40.0, compressed=True)]
        (results / "bench_ceilings_run2.json").write_text(json.dumps(reads | {"ceiling_rows": again}))
    if loader:
        runs = []
        for store in ("wb2 v2 blosc-lz4, 6 ch", "stacked v3 zstd, 71 ch"):
            for workers in ("default: 3 workers", "2 workers"):
                row = cl.ceiling_row("x", 1.6, 30.0, 50.0, 40.0, 35.0, compressed=True)
                runs.append(row | {"store": store, "loader": f"zarrflow-gpu ({workers})"})
        (results / "bench_loader_ceilings.json").write_text(json.dumps(
            common | {"ceiling_rows": runs} | ({"date": loader_date} if loader_date else {})))
    sm = {"codec": "zstd-3", "decode_on": "GPU", "reads_alone_GBps": 18.0, "reads_beside_job_GBps": 9.0,
          "job_slowdown": 0.1, "alone_runs_differ": 0.002, "unit_s_per_GB": 3.0, "gpu_ms_per_GB": 22.7}
    cost = [sm | {"codec": c} for c in ("raw", "zstd-3", "blosc-lz4-shuffle", "blosc-zstd-bitshuffle",
                                        "gzip-1", "lz4", "sharded-zstd-3")]
    cost += [sm | {"codec": c, "decode_on": "host", "unit_s_per_GB": -0.01, "gpu_ms_per_GB": -0.1}
             for c in ("zstd-3", "blosc-lz4-shuffle")]
    cost.append({"codec": "gzip-1", "decode_on": "host", "error": "skipped"})
    (results / "bench_sm_cost.json").write_text(json.dumps(common | {
        "units": 132, "unit": "SM", "job": "150 x 16384² bf16 matmuls", "decoded_bytes": 2_000_000_000,
        "rows": cost}))


def test_ceilings_and_decode_cost_sections(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results, ignore=shutil.ignore_patterns("*.png"))
    _ceiling_results(results)
    page = _generator().page(results)
    assert page.count("\n") <= 300
    assert "## Against the stage ceilings" in page and "## Decode cost to a model" in page
    assert "| blosc-lz4 shuffle | 1.50 | 45.0 | 75.0 | 48.0 | 20.0 | **0.44** (staging) | 0.8 |" in page
    assert "| Loader, 71 ch zstd (default: 3 workers) | 1.60 |" in page
    assert "(2 workers)" not in page  # the loader's defaults only; the file holds the rest
    assert "Below its target (bold): blosc-lz4 shuffle." in " ".join(page.split())
    assert "| zstd-3 | host | 18.0 | 9.00 | 10.0% | 0.2% | -0.01 | -0.1 |" in page
    assert "| gzip-1 | host |" not in page  # a row that was not measured
    for name in ("bench_ceilings.json", "bench_loader_ceilings.json", "bench_sm_cost.json",
                 "bench_sm_cost.png"):
        assert f"(results/{name})" in page
    assert "<!--" not in page.split("\n", 1)[1]  # the markers are gone


def test_a_second_round_of_reads_shares_the_cells(tmp_path: Path) -> None:
    _ceiling_results(tmp_path, second_round=True, loader_date="2026-01-01T23:00:00+00:00")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import performance_tables

    values = performance_tables.ceilings_values(tmp_path)
    table = values["ceil_table"]
    assert "| raw | 1.00 | 35.0 / 35.0 | 50.0 / 50.0 | — / — | 33.0 / 30.0 | " in table
    assert "| blosc-lz4 shuffle | 1.50 | 45.0 / 45.0 |" in table
    assert "**0.44** (staging) / 0.89 (staging)" in table  # each round's own verdict
    assert "| zstd-3 | 1.60 | 48.0 | " in table  # read once only
    assert values["ceil_short"] == "Below its target (bold) in a round: raw; blosc-lz4 shuffle."
    assert values["ceil_run2_link"] == ", [second round](results/bench_ceilings_run2.json)"
    # zstd read once: 1 / (1/48 + 1/40) = 21.8 GB/s staging then decoding, 35 end to end
    assert values["ceil_serial"] == (": the two one after the other allow zstd-3 21.8 GB/s, reached "
                                     "to 1.60; sharded-zstd-3 21.8 GB/s, reached to 1.60.")
    assert "Loader rows from another run" in values["ceil_setup"]  # measured before the reads
    _ceiling_results(tmp_path, second_round=True)
    assert "another run" not in performance_tables.ceilings_values(tmp_path)["ceil_setup"]


def test_the_loader_rows_need_their_file(tmp_path: Path) -> None:
    _ceiling_results(tmp_path, loader=False)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import performance_tables

    values = performance_tables.ceilings_values(tmp_path)
    assert values["ceil_loader_link"] == "" and "Loader" not in values["ceil_table"]
    assert performance_tables.ceilings_values(tmp_path / "none") == {}


def test_a_dry_run_is_not_a_result(tmp_path: Path) -> None:
    _ceiling_results(tmp_path, dry=True)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import performance_tables

    with pytest.raises(SystemExit, match="dry run"):
        performance_tables.sm_cost_values(tmp_path)
