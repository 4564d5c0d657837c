"""The examples in README.md and docs/*.md run as written.

A fenced ``python`` block preceded by ``<!-- test: REQUIREMENTS -->`` is an example to run.
REQUIREMENTS name what it needs besides zarrflow: ``cpu`` (nothing), ``torch`` (PyTorch
installed), ``gpu`` (a usable CUDA GPU), ``s3`` (the page's ``s3://`` URLs answered by a local
S3 server through ``AWS_ENDPOINT_URL``), ``http`` (``https://data.example.org`` replaced by a
local range server's URL). The blocks of one page run in order in one namespace, in a
directory holding the stores the pages use: ``era5.zarr`` (``zarrflow synth era5.zarr``) and
``wb2.zarr`` (``zarrflow synth wb2.zarr --layout wb2``), written on a smaller grid so that the
tests stay fast; the examples do not depend on the grid. Each page gets one test per kind of
block it has: the ``cpu`` blocks alone, and then, for a page with blocks that need more, those
blocks with the ``cpu`` blocks before them (skipped where the requirement is missing).

Links between the pages are checked too: every relative link names a file in the repository,\nand every #anchor a heading of the page it points to.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!--\s*test:\s*([a-z0-9 ,]+?)\s*-->\s*\n```python\n(.*?)\n```", re.S)
KNOWN = {"cpu", "torch", "gpu", "s3", "http"}
SMALL_GRID = "73x144"
HTTP_PLACEHOLDER = "https://data.example.org"
S3_BUCKET = "my-bucket"


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    needs: frozenset[str]
    code: str


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    out = []
    for m in MARKER.finditer(text):
        needs = frozenset(re.split(r"[ ,]+", m.group(1).strip())) - {"cpu"}
        unknown = needs - KNOWN
        assert not unknown, f"{page.name}: unknown test requirement(s) {sorted(unknown)}"
        line = text.count("\n", 0, m.start(2)) + 1
        out.append(Block(page.name, line, needs, m.group(2)))
    return out


def cases() -> list:
    params = []
    for page in PAGES:
        found = blocks(page)
        if not found:
            continue
        params.append(pytest.param(page, frozenset(), id=f"{page.name}-cpu"))
        for needs in sorted({b.needs for b in found if b.needs}, key=sorted):
            params.append(pytest.param(page, needs, id=f"{page.name}-{'-'.join(sorted(needs))}"))
    return params


def _synth(path: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "zarrflow", "synth", str(path), "--grid", SMALL_GRID,
                    "--quiet", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("doc_stores")
    _synth(root / "era5.zarr")
    _synth(root / "wb2.zarr", "--layout", "wb2")
    return root


def _skip_unless_available(needs: frozenset[str]) -> None:
    if "torch" in needs:
        pytest.importorskip("torch")
    if "gpu" in needs:
        import zarrflow

        if not zarrflow.cuda_available():
            pytest.skip(f"no usable GPU: {zarrflow.cuda_status()}")
    if "s3" in needs:
        pytest.importorskip("moto")
        pytest.importorskip("boto3")


@contextlib.contextmanager
def _services(needs: frozenset[str], workdir: Path):
    """Local servers the blocks' URLs resolve to: (URL replacements, environment)."""
    with contextlib.ExitStack() as stack:
        replace, env = {}, {}
        if "http" in needs:
            sys.path.insert(0, str(ROOT / "tests"))
            from servers.range_server import RangeServer

            srv = stack.enter_context(RangeServer(workdir))
            replace[HTTP_PLACEHOLDER] = srv.url.rstrip("/")
        if "s3" in needs:
            sys.path.insert(0, str(ROOT / "tests"))
            from servers.s3_server import MotoS3Server

            srv = stack.enter_context(MotoS3Server())
            srv.create_bucket(S3_BUCKET)
            for name in ("era5.zarr", "wb2.zarr"):
                srv.upload_dir(workdir / name, S3_BUCKET, name)
            env = {"AWS_ENDPOINT_URL": srv.endpoint, "AWS_ACCESS_KEY_ID": srv.access_key,
                   "AWS_SECRET_ACCESS_KEY": srv.secret_key, "AWS_REGION": "us-east-1"}
        yield replace, env


@pytest.mark.parametrize("page,needs", cases())
def test_page_examples(page: Path, needs: frozenset[str], stores: Path, tmp_path: Path,
                       monkeypatch) -> None:
    _skip_unless_available(needs)
    for name in ("era5.zarr", "wb2.zarr"):
        shutil.copytree(stores / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    # The blocks to run: every cpu block, and for a page's other kind, its blocks, in page order
    # (a block of that kind may use names the cpu blocks before it defined).
    chosen = [b for b in blocks(page) if not b.needs or b.needs == needs]
    if needs:
        last = max(i for i, b in enumerate(chosen) if b.needs == needs)
        chosen = chosen[: last + 1]
    with _services(needs, tmp_path) as (replace, env):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        namespace: dict = {"__name__": f"docs_example_{page.stem}"}
        for block in chosen:
            code = block.code
            for old, new in replace.items():
                code = code.replace(old, new)
            # Compiled under the page's name and line, so a failure points at the example.
            compiled = compile("\n" * (block.line - 1) + code, str(page), "exec")
            exec(compiled, namespace)


def test_readme_shows_the_setup_commands_and_a_tested_quickstart() -> None:
    readme = (ROOT / "README.md").read_text()
    for command in ("./scripts/demo.sh", "./scripts/test.sh", "zarrflow synth era5.zarr\n"):
        assert command in readme, f"README.md no longer shows {command.strip()!r}"
    quickstart = blocks(ROOT / "README.md")
    assert quickstart and not quickstart[0].needs, "the README quickstart is not a cpu example"
    assert 'zarrflow.open("era5.zarr")' in quickstart[0].code


def test_readme_quickstart_runs_as_written(tmp_path: Path, monkeypatch, capsys) -> None:
    """The quickstart on a machine without a GPU, as a newcomer types it: its console commands
    (the full-size demo store), then its Python block; the last line it prints is the one the
    README shows in that line's comment."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Quickstart")
    quickstart = readme[start:readme.index("\n## ", start + 1)]
    commands = re.findall(r"^\$ (zarrflow [^#\n]*?)\s*(?:#.*)?$", quickstart, re.M)
    assert commands, "the quickstart shows no zarrflow commands"
    monkeypatch.chdir(tmp_path)
    for command in commands:
        subprocess.run([sys.executable, "-m", "zarrflow", *command.split()[1:]], check=True,
                       capture_output=True)
    code = blocks(ROOT / "README.md")[0].code
    exec(compile(code, "README.md quickstart", "exec"), {"__name__": "quickstart"})
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    last_print = [line for line in code.splitlines() if line.startswith("print(")][-1]
    assert "#" in last_print, "the quickstart's last print() shows no output in a comment"
    shown = last_print.split("#", 1)[1]
    assert printed in shown, f"the quickstart printed {printed!r}; the README shows {shown!r}"


LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as '-'."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M):
        out.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", [*PAGES, ROOT / "ARCHITECTURE.md"], ids=lambda p: p.name)
def test_relative_links_name_files_and_headings_that_exist(page: Path) -> None:
    broken = []
    for m in LINK.finditer(page.read_text()):
        target, anchor = m.group(1), m.group(2)
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path = page.parent / target if target else page
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}#{anchor}")
    assert not broken, f"{page.name} links to files or headings that do not exist: {broken}"
