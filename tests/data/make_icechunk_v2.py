"""Writes the spec-2 Icechunk golden repositories under tests/data/icechunk_v2/.

icechunk 2.x writes spec 2 and needs Python >= 3.12, so these repositories are made once on a
machine that has it and committed; tests/test_icechunk.py reads them with zarrflow and compares
with the arrays this script saved beside them (read back by zarr-python + icechunk 2.x).

    python3.12 -m venv /tmp/ic2 && /tmp/ic2/bin/pip install "icechunk>=2,<3" "zarr>=3.1" numpy
    /tmp/ic2/bin/python tests/data/make_icechunk_v2.py

Layout written (the same content as tests/icechunk_repos.make_repository):
  icechunk_v2/repo/             the repository (arrays zstd, blosc, sharded, coord, split, virt;
                                commits first, second; tag v1; branch dev with a third commit)
  icechunk_v2/expected.npz      every array at main, v1 and dev, as zarr-python reads them
  icechunk_v2/snapshots.json    the snapshot ids of the three commits and the icechunk version
Virtual chunks point at file:///tmp/zarrflow-icechunk-v2/raw.bin (absolute, as icechunk
stores them); the test writes that file again before reading.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from icechunk_repos import make_repository, zarr_python_arrays  # noqa: E402

VIRTUAL_DIR = Path("/tmp/zarrflow-icechunk-v2")


def main() -> None:
    import icechunk

    out = HERE / "icechunk_v2"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    info = make_repository(out, data_dir=VIRTUAL_DIR)
    shutil.rmtree(out / "data", ignore_errors=True)
    arrays = {}
    for label, ref in (("main", {"branch": "main"}), ("v1", {"tag": "v1"}),
                       ("dev", {"branch": "dev"})):
        for name, value in zarr_python_arrays(info["path"], info["prefix"], **ref).items():
            arrays[f"{label}/{name}"] = value
    np.savez_compressed(out / "expected.npz", **arrays)
    (out / "snapshots.json").write_text(json.dumps(
        {"first": info["first"], "second": info["second"], "third": info["third"],
         "prefix": info["prefix"], "icechunk": icechunk.__version__}, indent=1) + "\n")
    print(f"wrote {out} with icechunk {icechunk.__version__}")


if __name__ == "__main__":
    main()
