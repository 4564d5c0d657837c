"""docs/settings.md lists what the code has: every Loader parameter with its default, every
storage option, and every ZARRFLOW_* environment variable the package reads."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import zarrflow
from zarrflow import _remote

ROOT = Path(__file__).resolve().parent.parent
SETTINGS = ROOT / "docs" / "settings.md"


def table(section: str) -> dict[str, str]:
    """{name: default cell} of the first table under `## section`."""
    text = SETTINGS.read_text()
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    rows = {}
    for line in text[start:end if end > 0 else None].splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|", line)
        if m:
            rows[m.group(1)] = m.group(2)
    assert rows, f"no table under '## {section}' in {SETTINGS}"
    return rows


def loader_defaults() -> dict[str, object]:
    """Loader parameters and their defaults: the constructor's, and the fields of the option
    dataclasses where the package has them."""
    out: dict[str, object] = {}
    for p in inspect.signature(zarrflow.Loader.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        out[p.name] = p.default
    for name in ("LoaderOptions", "Sampler"):
        cls = getattr(zarrflow.loader, name, None) or getattr(zarrflow, name, None)
        if cls is not None and dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if f.init and not f.name.startswith("_"):
                    out.setdefault(f.name, f.default)
    return out


def test_every_loader_parameter_is_listed_with_its_default() -> None:
    rows = table("Loader")
    missing = sorted(set(loader_defaults()) - set(rows))
    assert not missing, f"settings.md does not list Loader parameter(s) {missing}"
    wrong = []
    for name, default in loader_defaults().items():
        if default in (inspect.Parameter.empty, dataclasses.MISSING):
            continue
        cell = rows[name].strip("`")
        try:
            documented = ast.literal_eval(cell)
        except (ValueError, SyntaxError):
            wrong.append(f"{name}: {rows[name]!r} is not a Python literal (the code has {default!r})")
            continue
        if documented != default or type(documented) is not type(default):
            wrong.append(f"{name}: settings.md says {rows[name]}, the code has {default!r}")
    assert not wrong, "\n".join(wrong)


def test_every_storage_option_is_listed() -> None:
    known = set(_remote._TRANSPORT) | _remote._S3_KEYS | _remote._GCS_KEYS
    rows = set(table("Storage options"))
    assert known == rows, (f"not in settings.md: {sorted(known - rows)}; "
                           f"in settings.md but not accepted: {sorted(rows - known)}")


def test_every_environment_variable_is_listed() -> None:
    used = set()
    for path in (ROOT / "python" / "zarrflow").rglob("*.py"):
        used |= set(re.findall(r"\"(ZARRFLOW_[A-Z_]+)\"", path.read_text()))
    documented = {name for name in table("Environment variables") if name.startswith("ZARRFLOW_")}
    assert used == documented, (f"read but not in settings.md: {sorted(used - documented)}; "
                                f"in settings.md but read nowhere: {sorted(documented - used)}")
