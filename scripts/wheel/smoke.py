"""Run by scripts/wheel/smoke.sh inside a fresh virtual environment holding only a wheel and its
dependencies: the installed zarrflow reads every array of the smoke store bit-exactly.

    python smoke.py DIR        (DIR from scripts/wheel/smoke_store.py)
"""

import sys
import time
from pathlib import Path

t0 = time.perf_counter()
import zarrflow  # noqa: E402

import_ms = (time.perf_counter() - t0) * 1e3

import numpy as np  # noqa: E402


def main() -> None:
    d = Path(sys.argv[1])
    pkg = Path(zarrflow.__file__).resolve()
    assert "site-packages" in pkg.parts, f"zarrflow imported from {pkg}, not from the wheel"
    print(f"zarrflow {zarrflow.__version__} from {pkg.parent}, import {import_ms:.0f} ms")
    print(f"build: {zarrflow.build_info()}")
    print(f"cuda_status: {zarrflow.cuda_status() or 'ok'}")
    print(f"nvcomp_status: {(zarrflow.nvcomp_status() or 'ok').splitlines()[0]}")
    expected = np.load(d / "expected.npz")
    for key in expected.files:
        store, name = key.split("__")
        got = zarrflow.open(d / store)[name][...]
        np.testing.assert_array_equal(got, expected[key], err_msg=key)
    print(f"{len(expected.files)} arrays read bit-exactly")


if __name__ == "__main__":
    main()
