"""Write docs/performance.md and its plots from the result files in docs/results.

    python benchmarks/make_performance_page.py            # the page and the plots (matplotlib)
    python benchmarks/make_performance_page.py --no-plots # the page only
    python benchmarks/make_performance_page.py --check    # exit 1 when a committed file differs

The prose is benchmarks/performance_page.md; each ``{{name}}`` in it is replaced by a table or a
figure that benchmarks/performance_tables.py computes from the JSON files; the README's summary
table (between its "performance summary" comments) is written the same way. To add a result, put
its JSON in docs/results, compute what the page shows from it there, and rerun this command. A
section between ``<!-- if FILE -->`` and ``<!-- end if -->`` appears only when docs/results holds
FILE.
tests/test_performance_page.py checks that the committed files are what this command writes
(the page and the README; not the plots, whose bytes depend on matplotlib's version).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import performance_tables  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
TEMPLATE = ROOT / "benchmarks" / "performance_page.md"
PAGE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"
PLACEHOLDER = re.compile(r"\{\{\s*([a-z0-9_]+)\s*\}\}")
OPTIONAL = re.compile(r"<!-- if ([\w.-]+) -->\n(.*?)<!-- end if -->\n(\n?)", re.S)
SUMMARY = re.compile(r"(<!-- performance summary: [^\n]*-->\n).*?(<!-- end of the performance summary -->)",
                     re.S)
HEADER = ("<!-- Written by `python benchmarks/make_performance_page.py` from docs/results/*.json "
          "and benchmarks/performance_page.md: edit those, not this page. -->\n")


def render(template: str, values: dict[str, str]) -> str:
    """The template with every placeholder replaced; every value must be used exactly where named."""
    used = set(PLACEHOLDER.findall(template))
    missing, unused = used - values.keys(), values.keys() - used
    if missing or unused:
        raise SystemExit(f"{TEMPLATE.name}: placeholders without a value {sorted(missing)}, "
                         f"values without a placeholder {sorted(unused)}")
    return HEADER + reflow(PLACEHOLDER.sub(lambda m: values[m.group(1)], template))


def reflow(text: str, width: int = 100) -> str:
    """Prose paragraphs wrapped to ``width`` columns (the figures put in change their length);
    headings, tables, lists, images and comments as they are."""
    paragraphs = text.split("\n\n")
    for i, para in enumerate(paragraphs):
        if para and not para.lstrip().startswith(("#", "|", "!", "-", "<!--", "```")):
            paragraphs[i] = textwrap.fill(" ".join(para.split("\n")), width,
                                          break_long_words=False, break_on_hyphens=False)
    return "\n\n".join(paragraphs)


def present_sections(template: str, results: Path) -> str:
    """The template without its optional sections (``<!-- if FILE -->`` ... ``<!-- end if -->``)
    whose result file is not in ``results``; the markers of the others dropped."""
    return OPTIONAL.sub(lambda m: m.group(2) + m.group(3) if (results / m.group(1)).exists() else "",
                        template)


def page(results: Path = RESULTS, template: Path = TEMPLATE) -> str:
    """The page as this command writes it."""
    return render(present_sections(template.read_text(), results), performance_tables.all_values(results))


def readme(text: str, results: Path = RESULTS) -> str:
    """``text`` (the README) with its performance summary table written from the results."""
    if not SUMMARY.search(text):
        raise SystemExit("README.md has no '<!-- performance summary: ... -->' ... "
                         "'<!-- end of the performance summary -->' block")
    summary = performance_tables.summary_table(results)
    return SUMMARY.sub(lambda m: m.group(1) + "\n" + summary + "\n\n" + m.group(2), text)


def plots(results: Path) -> list[Path]:
    """Redraw the page's plots from the result files; returns the files written."""
    import json

    import bench_gpu
    import bench_read
    import bench_sm_cost
    import bench_rechunk
    import bench_remote
    import plot_loader
    import plot_node
    import plot_train

    def load(name: str) -> dict:
        return json.loads((results / name).read_text())

    drawn = {
        "bench_read_16cores.png": lambda p: bench_read.plot(load("bench_read_16cores.json"), p),
        "bench_read_2cores.png": lambda p: bench_read.plot(load("bench_read_2cores.json"), p),
        "bench_gpu_h100.png": lambda p: bench_gpu.plot(load("bench_gpu_h100.json"), p),
        "bench_loader_h100.png": lambda p: plot_loader.plot(
            [load("bench_loader_h100_run2.json"), load("bench_loader_h100.json")], p),
        "bench_loader_h200.png": lambda p: plot_loader.plot(
            [load("bench_loader_h200.json"), load("bench_loader_h200_run2.json")], p),
        "train_unet_h100.png": lambda p: plot_train.plot(
            [load("train_unet_6ch_h100.json"), load("train_unet_71ch_h100.json")], p),
        "bench_rechunk.png": lambda p: bench_rechunk.plot(
            [load("bench_rechunk_16cores.json"), load("bench_rechunk_2cores.json")], p),
        "bench_remote.png": lambda p: bench_remote.plot(load("bench_remote.json"), p),
        "node_and_split_h100.png": lambda p: plot_node.plot(
            *[load(n) for n in performance_tables.NODE_PLOT_FILES], p),
    }
    if (results / performance_tables.SM_COST).exists():
        drawn["bench_sm_cost.png"] = lambda p: bench_sm_cost.plot(load(performance_tables.SM_COST), p)
    for name, draw in drawn.items():
        draw(results / name)
    return [results / name for name in drawn]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed page, write nothing")
    ap.add_argument("--no-plots", action="store_true", help="write the page only")
    args = ap.parse_args(argv)
    written = {PAGE: page(), README: readme(README.read_text())}
    if args.check:
        stale = [path for path, text in written.items() if path.read_text() != text]
        for path in stale:
            name = str(path.relative_to(ROOT))
            sys.stdout.writelines(difflib.unified_diff(path.read_text().splitlines(True),
                                                       written[path].splitlines(True),
                                                       f"{name} (committed)", f"{name} (generated)"))
        if stale:
            print("the performance figures differ from docs/results: run "
                  "python benchmarks/make_performance_page.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in written.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    if not args.no_plots:
        for path in plots(RESULTS):
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
