"""The API reference (docs/api/) documents every public name of zarrflow, and the docstrings
say what each parameter is: numpydoc's checks, as the documentation build runs them
(docs/conf.py), on every public function, class and method; ``help(zarrflow.Loader)`` lists
every parameter the Loader takes."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import inspect
import pydoc
import re
import runpy
from pathlib import Path

import pytest

import zarrflow
from zarrflow.loader.loader import _parameters

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"
DIRECTIVE = re.compile(r"^\.\. (?:auto\w+|currentmodule)::\s*(\S+)", re.M)


def documented() -> set[str]:
    """Full names of the objects the reference's autodoc directives document."""
    names = set()
    for page in API.glob("*.rst"):
        module = ""
        for m in DIRECTIVE.finditer(page.read_text()):
            line = page.read_text()[m.start():m.end()]
            target = m.group(1)
            if line.startswith(".. currentmodule::"):
                module = target
            else:
                names.add(target if target.startswith("zarrflow") else f"{module}.{target}")
    return names


def test_the_reference_documents_every_public_name() -> None:
    missing = [n for n in zarrflow.__all__ if f"zarrflow.{n}" not in documented()]
    assert not missing, f"public names missing from docs/api/*.rst: {missing}"


def _locate(name: str) -> object:
    """The object ``name`` names (None for zarrflow.torch's when PyTorch is not installed)."""
    if name.startswith("zarrflow.torch") and importlib.util.find_spec("torch") is None:
        return None
    obj = pydoc.locate(name)
    assert obj is not None, f"docs/api names {name}, which does not import"
    return obj


def test_the_reference_names_only_things_that_exist() -> None:
    for name in documented():
        _locate(name)


def test_help_of_the_loader_lists_every_parameter() -> None:
    text = pydoc.render_doc(zarrflow.Loader, renderer=pydoc.plaintext)
    own = [p for p in inspect.signature(zarrflow.Loader).parameters if p != "keywords"]
    parts = [*_parameters(zarrflow.DatasetSpec, 2), *_parameters(zarrflow.Sampler, 1),
             *(f.name for f in dataclasses.fields(zarrflow.LoaderOptions))]
    missing = [p for p in own + parts if not re.search(rf"\b{p}\b", text)]
    assert not missing, f"help(zarrflow.Loader) does not mention {missing}"


def _public_objects() -> list[tuple[str, object]]:
    """Every public function and class documented, and the public methods and properties that
    zarrflow's classes define or inherit from zarrflow, by full name."""
    out = []
    for name in sorted(documented()):
        obj = _locate(name)
        if obj is None or inspect.ismodule(obj):
            continue
        out.append((name, obj))
        if inspect.isclass(obj) and obj.__module__.startswith("zarrflow") \
                and not issubclass(obj, BaseException):
            for member in dir(obj):
                owner = next(c for c in obj.__mro__ if member in vars(c))
                value = vars(owner)[member]
                if not member.startswith("_") and owner.__module__.startswith("zarrflow") and (
                        callable(value) or isinstance(value, (property, functools.cached_property,
                                                              classmethod, staticmethod))):
                    out.append((f"{name}.{member}", value))
    return out


@pytest.mark.parametrize("name", [n for n, _ in _public_objects()])
def test_docstrings_pass_numpydoc_checks(name: str) -> None:
    validate = pytest.importorskip("numpydoc.validate")
    checks = runpy.run_path(str(ROOT / "docs" / "conf.py"))["numpydoc_validation_checks"]
    errors = [f"{code}: {msg}" for code, msg in validate.validate(name)["errors"]
              if code in checks]
    assert not errors, f"{name}: {errors}"
