"""Sphinx configuration: the user guide (the Markdown pages of docs/ and the README) and the API
reference generated from the package's numpydoc docstrings (docs/api/).

    .venv/bin/python -m sphinx -W --keep-going -b html docs build/docs

(scripts/test.sh builds it after the tests; warnings are errors). Sphinx, not MkDocs: autodoc
imports the installed package, so the reference shows what ``help()`` shows, including the
compiled extension's classes; numpydoc is the docstring convention of NumPy, xarray and
zarr-python and validates the docstrings while building; MyST reads the guide's Markdown as it is
on GitHub.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import zarrflow

sys.path.insert(0, str(Path(__file__).resolve().parent))

project = "zarrflow"
author = "zarrflow maintainers"
copyright = "zarrflow maintainers"
version = release = zarrflow.__version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
    "_cli_help",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
templates_path: list[str] = []

# The guide's headings are linked as GitHub anchors (page.md#section-name).
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
# zarrflow.torch subclasses torch.utils.data.IterableDataset: documented without installing PyTorch.
autodoc_mock_imports = ["torch"]
autodoc_typehints = "none"          # numpydoc's Parameters sections say the types
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": False}
autodoc_inherit_docstrings = True

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# Checked on every object the reference documents; a failure is a build warning, so an error.
#   GL08: no docstring; PR01: a parameter not documented; PR02: a documented parameter that
#   does not exist; PR07: a parameter without a description; PR10: "a:b" without the space
#   numpydoc needs; RT01: a function that returns something without a Returns section.
# tests/test_api_reference.py runs the same checks on every public name.
numpydoc_validation_checks = {"GL08", "PR01", "PR02", "PR07", "PR10", "RT01"}
# len() and iter() say what they return in their one line.
numpydoc_validation_exclude = {r"\.__len__$", r"\.__iter__$"}

html_theme = "furo"
html_title = f"zarrflow {release}"
html_static_path: list[str] = []


ROOT_PAGES = {"README.md": "index.md", "ARCHITECTURE.md": "architecture.md"}
LINK = re.compile(r"\]\((?![a-z]+:|#)([^)#\s]+)")


def _site_link(target: str) -> str:
    """A link of a page at the repository root, as seen from docs/."""
    if target.startswith("docs/"):
        return target[len("docs/"):]
    return ROOT_PAGES.get(target, "../" + target)


def _repository_links(app, relative_path: Path, parent_docname: str, content: list[str]) -> None:
    """README.md and ARCHITECTURE.md are included from docs/, but their links are relative to the
    repository root: point them at this site's pages (docs/x.md -> x.md, ARCHITECTURE.md ->
    architecture.md), and other files at their place in the repository."""
    if Path(relative_path).name in ROOT_PAGES and Path(relative_path).parent.name != "docs":
        content[0] = LINK.sub(lambda m: "](" + _site_link(m.group(1)), content[0])


def setup(app) -> None:
    app.connect("include-read", _repository_links)
