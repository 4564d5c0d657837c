"""Shared fixtures for the zarrflow conformance suites.

The corpus (tests/corpus.py) is written by the peers (zarr-python 3, tensorstore) into one
session-wide temporary directory, lazily: a case is built the first time a test asks for it, so
`pytest -k <case>` stays cheap. This conftest deliberately does not import zarrflow, so the peer
checks in test_corpus.py run even before the package builds.
"""

from __future__ import annotations


import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as _corpus  # noqa: E402


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> _corpus.Corpus:
    return _corpus.Corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(params=_corpus.CASE_IDS)
def built(request: pytest.FixtureRequest, corpus: _corpus.Corpus) -> _corpus.Built:
    """One corpus case (parametrized over all of them; ids are the case ids)."""
    return corpus.get(request.param)


@pytest.fixture(params=list(_corpus.GROUP_CASES))
def group_built(request: pytest.FixtureRequest, corpus: _corpus.Corpus) -> _corpus.GroupBuilt:
    return corpus.group(request.param)


@pytest.fixture
def quiet_warnings():
    """zarr-python warns about v2 numcodecs objects and v3 consolidated metadata; silence them."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for mod in ("zarr", "numcodecs", "tensorstore", "ml_dtypes", "numpy"):
        try:
            m = __import__(mod)
            lines.append(f"{mod} {getattr(m, '__version__', '?')}")
        except ImportError:
            lines.append(f"{mod} MISSING (cases needing it skip)")
    return ["peers: " + ", ".join(lines), f"corpus: {len(_corpus.CASE_IDS)} array cases"]


