"""`zarrflow inspect PATH` prints the hierarchy with, per array: shape, dtype, chunk and shard shape,
dims, codecs, stored bytes, compression ratio and chunks present/missing.

The exact layout is free; the tests look inside each array's section (from the line naming the
array to the line naming the next one) for the values, accepting the common spellings:
shape "(10, 12)" / "[10, 12]" / "10 x 12"; counts "present 5 ... missing 4" or "5/9".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import corpus as C

import zarrflow  # the package under test: a hard requirement, never skipped


@dataclass
class ArrInfo:
    name: str
    shape: tuple
    dtype_names: tuple  # accepted spellings
    chunks: tuple
    shards: tuple | None
    codec_names: tuple
    dims: tuple | None
    total_chunks: int  # stored objects (shards for sharded arrays)
    present_chunks: int
    inner_total: int | None = None  # inner chunks, for sharded arrays
    inner_present: int | None = None
    stored_bytes: int = 0
    nbytes: int = 0


def _stored_bytes(path: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            if f in ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                continue
            n += 1
            size += os.path.getsize(os.path.join(dirpath, f))
    return n, size


@pytest.fixture(scope="module")
def cli_stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[ArrInfo], list[ArrInfo]]:
    zarr = C.require("zarr")
    numcodecs = C.require("numcodecs")
    zc = zarr.codecs
    base = tmp_path_factory.mktemp("cli")
    v3root, v2root = base / "v3store", base / "v2store"

    def build() -> tuple[list[ArrInfo], list[ArrInfo]]:
        g = zarr.open_group(str(v3root), mode="w", zarr_format=3, attributes={"title": "cli"})
        sub = g.create_group("sub")
        a = sub.create_array("temps", shape=(10, 12), chunks=(4, 5), dtype="int16",
                             compressors=[zc.ZstdCodec(level=3)], fill_value=0,
                             dimension_names=["y", "x"])
        a[:8, :10] = (np.arange(80, dtype="int16") % 7).reshape(8, 10) + 1  # chunks of row 2 / col 2 missing
        s = g.create_array("sharded", shape=(18, 16), chunks=(3, 4), shards=(6, 8), dtype="float32",
                           compressors=[zc.GzipCodec(level=5)], fill_value=0.0)
        s[:, :] = 1.5
        s[0:3, 0:4] = 0.0  # one inner chunk equal to the fill -> left empty in its shard
        v2 = zarr.open_group(str(v2root), mode="w", zarr_format=2)
        b = v2.create_array("legacy", shape=(7, 9), chunks=(3, 3), dtype="<f8",
                            compressors=numcodecs.Blosc(cname="zstd", clevel=5, shuffle=1),
                            fill_value=float("nan"), attributes={"_ARRAY_DIMENSIONS": ["lat", "lon"]})
        b[:3, :] = np.arange(27, dtype="<f8").reshape(3, 9)  # only chunk row 0 present

        n_t, sz_t = _stored_bytes(v3root / "sub" / "temps")
        n_s, sz_s = _stored_bytes(v3root / "sharded")
        n_l, sz_l = _stored_bytes(v2root / "legacy")
        v3 = [
            ArrInfo("temps", (10, 12), ("int16", "<i2", "i2"), (4, 5), None, ("zstd",), ("y", "x"),
                    9, n_t, stored_bytes=sz_t, nbytes=10 * 12 * 2),
            ArrInfo("sharded", (18, 16), ("float32", "<f4", "f4"), (3, 4), (6, 8), ("shard", "gzip"), None,
                    6, n_s, inner_total=6 * 4, inner_present=6 * 4 - 1, stored_bytes=sz_s,
                    nbytes=18 * 16 * 4),
        ]
        v2l = [ArrInfo("legacy", (7, 9), ("float64", "<f8", "f8"), (3, 3), None, ("blosc",), ("lat", "lon"),
                       9, n_l, stored_bytes=sz_l, nbytes=7 * 9 * 8)]
        return v3, v2l

    v3, v2l = C._quiet(build)
    assert v3[0].present_chunks == 4 and v3[1].present_chunks == 6 and v2l[0].present_chunks == 3
    # exactly one inner chunk of the sharded array is absent (marked empty in its shard index)
    empty = 0
    for f in (v3root / "sharded" / "c").rglob("*"):
        if f.is_file():
            idx = np.frombuffer(f.read_bytes()[-68:-4], "<u8").reshape(-1, 2)
            empty += int(np.all(idx == np.uint64(2**64 - 1), axis=1).sum())
    assert empty == 1
    return v3root, v2root, v3, v2l


def run_cli(*args: str, module: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    if module:
        cmd = [sys.executable, "-m", "zarrflow", *args]
    else:
        script = Path(sys.executable).parent / ("zarrflow.exe" if os.name == "nt" else "zarrflow")
        assert script.exists(), f"console script {script} is not installed next to {sys.executable}"
        cmd = [str(script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _num_seq(nums: tuple) -> str:
    return r"\D{1,4}".join(rf"(?<![\d.]){n}(?![\d.])" if i == 0 else rf"{n}(?![\d.])" for i, n in enumerate(nums))


def _sections(out: str, names: list[str]) -> dict[str, str]:
    lines = out.splitlines()
    starts = {}
    for n in names:
        idx = [i for i, ln in enumerate(lines) if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", ln)]
        assert idx, f"array {n!r} not listed in:\n{out}"
        starts[n] = idx[0]
    order = sorted(starts, key=starts.get)
    secs = {}
    for i, n in enumerate(order):
        end = starts[order[i + 1]] if i + 1 < len(order) else len(lines)
        secs[n] = "\n".join(lines[starts[n]:end])
    return secs


def _floats(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)\s*x\b", text)] + \
        [float(x) for x in re.findall(r"ratio\W{0,5}(\d+(?:\.\d+)?)", text, re.I)]


def _check_counts(sec: str, present: int, total: int) -> bool:
    missing = total - present
    if re.search(rf"(?<!\d){present}\s*/\s*{total}(?!\d)", sec):
        return True
    p = re.search(rf"present\D{{0,12}}(?<!\d){present}(?!\d)|(?<!\d){present}(?!\d)\s*present", sec, re.I)
    m = re.search(rf"missing\D{{0,12}}(?<!\d){missing}(?!\d)|(?<!\d){missing}(?!\d)\s*missing", sec, re.I)
    return bool(p and m)


def check_array_section(sec: str, info: ArrInfo) -> None:
    assert re.search(_num_seq(info.shape), sec), f"shape {info.shape} not in section:\n{sec}"
    assert any(re.search(rf"(?<![\w]){re.escape(d)}(?![\w])", sec) for d in info.dtype_names), \
        f"dtype {info.dtype_names[0]} not in section:\n{sec}"
    assert re.search(_num_seq(info.chunks), sec), f"chunks {info.chunks} not in section:\n{sec}"
    if info.shards:
        assert re.search(_num_seq(info.shards), sec), f"shards {info.shards} not in section:\n{sec}"
    for c in info.codec_names:
        assert c in sec.lower(), f"codec {c!r} not in section:\n{sec}"
    if info.dims:
        for d in info.dims:
            assert re.search(rf"(?<![\w]){d}(?![\w])", sec), f"dim {d!r} not in section:\n{sec}"
    ok = _check_counts(sec, info.present_chunks, info.total_chunks)
    if info.inner_total is not None:
        ok = ok or _check_counts(sec, info.inner_present, info.inner_total)
    assert ok, (f"present/missing ({info.present_chunks}/{info.total_chunks}"
                f"{'' if info.inner_total is None else f' or inner {info.inner_present}/{info.inner_total}'})"
                f" not in section:\n{sec}")
    # the compression ratio, by any of the sensible definitions: logical bytes / stored bytes, or
    # decoded bytes of the stored chunks (full-size or average-size) / stored bytes
    ratios = _floats(sec)
    assert ratios, f"no compression ratio ('2.5x' or 'ratio 2.5') in section:\n{sec}"
    itemsize = info.nbytes // int(np.prod(info.shape))
    full_outer = int(np.prod(info.shards or info.chunks)) * itemsize
    full_inner = int(np.prod(info.chunks)) * itemsize
    candidates = [info.nbytes / info.stored_bytes,
                  info.present_chunks * full_outer / info.stored_bytes,
                  info.present_chunks * info.nbytes / info.total_chunks / info.stored_bytes]
    if info.inner_total is not None:
        candidates += [info.inner_present * full_inner / info.stored_bytes,
                       info.inner_present * info.nbytes / info.inner_total / info.stored_bytes]
    assert any(abs(r - c) <= 0.15 * c + 0.05 for r in ratios for c in candidates), \
        f"ratio(s) {ratios} not close to {candidates} in section:\n{sec}"


def test_inspect_v3_group(cli_stores) -> None:
    v3root, _, v3, _ = cli_stores
    r = run_cli("inspect", str(v3root))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = r.stdout
    assert "sub" in out
    secs = _sections(out, [i.name for i in v3])
    for info in v3:
        check_array_section(secs[info.name], info)


def test_inspect_v2_group(cli_stores) -> None:
    _, v2root, _, v2l = cli_stores
    r = run_cli("inspect", str(v2root))
    assert r.returncode == 0, r.stderr
    secs = _sections(r.stdout, ["legacy"])
    check_array_section(secs["legacy"], v2l[0])


def test_inspect_single_array(cli_stores) -> None:
    v3root, _, v3, _ = cli_stores
    r = run_cli("inspect", str(v3root / "sharded"))
    assert r.returncode == 0, r.stderr
    check_array_section(r.stdout, v3[1])


def test_inspect_console_script(cli_stores) -> None:
    v3root, _, v3, _ = cli_stores
    r = run_cli("inspect", str(v3root), module=False)
    assert r.returncode == 0, r.stderr
    secs = _sections(r.stdout, [i.name for i in v3])
    check_array_section(secs["temps"], v3[0])


def test_inspect_missing_path_fails_cleanly(tmp_path: Path) -> None:
    r = run_cli("inspect", str(tmp_path / "nope.zarr"))
    assert r.returncode != 0
    assert "nope.zarr" in (r.stderr + r.stdout)
    assert "Traceback" not in r.stderr


def test_inspect_reports_bad_metadata_cleanly(tmp_path: Path) -> None:
    p = tmp_path / "broken"
    p.mkdir()
    (p / "zarr.json").write_text("{not json")
    r = run_cli("inspect", str(p))
    assert r.returncode != 0
    assert "broken" in (r.stderr + r.stdout)
    assert "Traceback" not in r.stderr


def test_zarrflow_importable_in_subprocess() -> None:
    """The CLI runs the same package the tests import."""
    r = subprocess.run([sys.executable, "-c", "import zarrflow, sys; print(zarrflow.__file__)"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve() == Path(zarrflow.__file__).resolve()


def test_the_runtime_package_imports_no_tool() -> None:
    """zarrflow, its Loader and its xarray engine load without the tools (and what they need to
    write stores); `python -m zarrflow` still runs the CLI."""
    code = ("import sys, zarrflow, zarrflow.loader, zarrflow.xarray_backend\n"
            "print(sorted(m for m in sys.modules if m.startswith('zarrflow.tools')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
    r = subprocess.run([sys.executable, "-m", "zarrflow", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "inspect" in r.stdout, r.stderr


def test_inspect_marks_unreadable_arrays_and_goes_on(tmp_path: Path) -> None:
    zarr = pytest.importorskip("zarr")
    root = tmp_path / "odd.zarr"
    g = zarr.open_group(str(root), mode="w", zarr_format=3)
    for name in ("a_good", "b_bad_json", "c_bad_type", "d_good"):
        g.create_array(name, shape=(4,), chunks=(2,), dtype="float32")[...] = 1.0
    sub = g.create_group("sub")
    sub.create_array("e_bad", shape=(3,), dtype="int8")
    (root / "b_bad_json" / "zarr.json").write_text("{ not json")
    meta = json.loads((root / "c_bad_type" / "zarr.json").read_text())
    meta["data_type"] = "no_such_type"
    (root / "c_bad_type" / "zarr.json").write_text(json.dumps(meta))
    (root / "sub" / "e_bad" / "zarr.json").write_text("[]")
    r = run_cli("inspect", str(root))
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    for name in ("b_bad_json", "c_bad_type", "e_bad"):
        (i,) = [i for i, line in enumerate(lines) if f"{name}  [unreadable]" in line]
        assert "Error: " in lines[i + 1] and name in lines[i + 1]  # the reason, naming the file
    assert "no_such_type" in r.stdout
    for name in ("a_good", "d_good"):
        assert f"{name}  [array]" in r.stdout
    assert "3 member(s) could not be read: b_bad_json, c_bad_type, sub/e_bad" in r.stderr


def test_version_and_help_texts(capsys) -> None:
    r = run_cli("--version")  # its text: test_doctor.py
    assert r.returncode == 0 and r.stdout.startswith(f"zarrflow {zarrflow.__version__} (")
    from zarrflow.tools import cli

    for args in (["--help"], ["inspect", "--help"], ["synth", "--help"], ["rechunk", "--help"],
                 ["bench", "--help"], ["doctor", "--help"]):
        with pytest.raises(SystemExit) as e:
            cli.main(args)
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert "usage: zarrflow" in out
        for markup in ("``", ":class:", ":func:", "*your*"):
            assert markup not in out, (args, markup)
        if args[0] == "inspect":
            assert "cannot be read is marked" in out and "URL" in out
