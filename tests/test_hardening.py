"""Hostile stores and exhausted resources: every case ends in a zarrflow error naming the file or
chunk (or in correct data), never in a crash, a hang or an allocation sized by the input.

Cases that crashed or hung the process before they were fixed run in a child interpreter
(`run_child`), with a timeout: a regression then fails its test instead of the whole run. Address
space limits (RLIMIT_AS) make allocations and thread starts fail for real; RLIMIT_NPROC would be
simpler for threads but does not apply to root, which containers and CI often run as. Sanitizer
runtimes reserve terabytes of address space, so those tests skip under them.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import corpus as C
import zarrflow
from test_bad_input import ARR, N_INNER, _index_span, crc32c, expect, make_sharded, make_store

SANITIZED = "asan" in os.environ.get("LD_PRELOAD", "")
needs_address_limit = pytest.mark.skipif(SANITIZED, reason="RLIMIT_AS cannot be set under ASan")

# Imported by every child: limits the address space to what the child uses now plus `extra`.
CHILD_PRELUDE = """
import json, resource, sys, warnings
import numpy as np
import zarrflow

def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")

def limit_address_space(extra):
    resource.setrlimit(resource.RLIMIT_AS, (vm_size() + extra, resource.RLIM_INFINITY))

def report(**kw):
    print("RESULT " + json.dumps(kw))
"""

STACK = 8 << 20  # the children's default thread stack size (glibc takes it from RLIMIT_STACK)


def _child_limits() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard == resource.RLIM_INFINITY or hard >= STACK:
        resource.setrlimit(resource.RLIMIT_STACK, (STACK, hard))


def run_child(*parts: str, timeout: float = 120) -> dict:
    """Runs CHILD_PRELUDE and `parts` (each dedented) in a new interpreter; returns what the child
    passed to report()."""
    code = "\n".join([CHILD_PRELUDE] + [textwrap.dedent(p) for p in parts])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=timeout, preexec_fn=_child_limits)
    results = [ln[len("RESULT "):] for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and results, (
        f"child exited with {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-3000:]}")
    return json.loads(results[-1])


def child_error(call: str) -> str:
    """Child code running `call` and reporting the exception's class names and message."""
    return f"""
    try:
        {call}
        report(error=None)
    except Exception as e:
        report(error=[c.__name__ for c in type(e).__mro__], message=str(e))
    """


# --------------------------------------------------------------------------------------------
# stored chunks larger than their codecs can produce
# --------------------------------------------------------------------------------------------

BIG = 64 << 30  # a sparse file: no disk blocks, far more than memory


@pytest.mark.parametrize("codec", ["zstd", "gzip", "none"])
@pytest.mark.parametrize("whole", [True, False], ids=["whole", "part"])
def test_sparse_chunk_file_is_refused_without_reading_it(tmp_path: Path, codec: str,
                                                         whole: bool) -> None:
    zarr = C.require("zarr")
    compressors = {"zstd": zarr.codecs.ZstdCodec(), "gzip": zarr.codecs.GzipCodec(),
                   "none": None}[codec]
    s = make_store(tmp_path, compressors=compressors)
    os.truncate(s.chunk(0, 1), BIG)
    a = zarrflow.open(s.arr)
    sel = (slice(0, 4), slice(5, 10)) if whole else (slice(1, 2), slice(6, 7))
    expect(zarrflow.CorruptChunkError, lambda: a[sel], ARR, "chunk 'c/0/1'", str(BIG))
    np.testing.assert_array_equal(a[:, :5], s.data[:, :5])  # the other chunks still read


def test_sparse_shard_read_with_others_is_refused(tmp_path: Path) -> None:
    """Both shards read in parallel, one of them a sparse 64 GiB file: when its allocation was
    attempted, the std::bad_alloc escaped a pool thread and aborted the process."""
    s = make_sharded(tmp_path)
    os.truncate(s.chunk(1, 0), BIG)
    got = run_child(f"a = zarrflow.open({str(s.arr)!r}, threads=2)", child_error("a[...]"))
    assert "CorruptChunkError" in got["error"], got
    assert ARR in got["message"] and s.key(1, 0) in got["message"] and str(BIG) in got["message"]


def test_shard_index_entry_larger_than_its_inner_chunk_can_be(tmp_path: Path) -> None:
    """A valid index (checksum and all) at the end of a sparse 64 GiB shard that says inner chunk
    0 is 60 GiB long: refused from the entry, never read."""
    s = make_sharded(tmp_path)
    p = s.chunk(1, 0)
    raw = p.read_bytes()
    a, _ = _index_span(raw, "end", True)
    entries = np.frombuffer(raw[a: a + N_INNER * 16], "<u8").reshape(-1, 2).copy()
    entries[0] = (0, 60 << 30)
    body = entries.astype("<u8").tobytes()
    os.truncate(p, BIG)
    with open(p, "r+b") as f:
        f.seek(BIG - len(body) - 4)
        f.write(body + struct.pack("<I", crc32c(body)))
    arr = zarrflow.open(s.arr)
    expect(zarrflow.CorruptChunkError, lambda: arr[8:9, 0:1], ARR, s.key(1, 0),
           "any encoding of the inner chunk")


# --------------------------------------------------------------------------------------------
# special files where a value should be
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["chunk", "metadata"])
@pytest.mark.parametrize("zarr_format", [3, 2])
def test_fifo_is_an_error_naming_the_key_not_a_hang(tmp_path: Path, where: str,
                                                    zarr_format: int) -> None:
    s = make_store(tmp_path, zarr_format=zarr_format)
    target = s.chunk(0, 0) if where == "chunk" else s.meta_file()
    target.unlink()
    os.mkfifo(target)
    got = run_child(child_error(f"zarrflow.open({str(s.arr)!r})[...]"), timeout=60)
    assert "StoreIOError" in got["error"], got
    assert target.name in got["message"] and "FIFO" in got["message"], got


# --------------------------------------------------------------------------------------------
# metadata documents: nesting, size, types
# --------------------------------------------------------------------------------------------


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("doc", ["zarr.json", ".zattrs", ".zmetadata"])
def test_deeply_nested_metadata_is_a_metadata_error(tmp_path: Path, doc: str) -> None:
    """100,000 levels in 200 KB: a MetadataError naming the file, not a stack overflow."""
    zarr = C.require("zarr")
    s = make_store(tmp_path, zarr_format=3 if doc == "zarr.json" else 2)
    if doc == ".zmetadata":
        C._quiet(lambda: zarr.consolidate_metadata(str(s.root)))
        target, opened = s.root / ".zmetadata", s.root
    else:
        target, opened = s.arr / doc, s.arr
    text = target.read_text() if target.exists() else "{}"
    target.write_text(text[: text.rindex("}")] + (", " if text.strip() != "{}" else "") +
                      f'"deep": {_deep(100_000)}}}')
    got = run_child(child_error(f"zarrflow.open({str(opened)!r})"))
    assert "MetadataError" in got["error"], got
    assert doc in got["message"] and "nests deeper than 256 levels" in got["message"], got


def test_nesting_within_the_limit_reads(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    m = json.loads(s.meta_file().read_text())
    m["attributes"] = {"deep": json.loads(_deep(200))}
    s.meta_file().write_text(json.dumps(m))
    a = zarrflow.open(s.arr)
    assert "deep" in a.attrs
    np.testing.assert_array_equal(a[...], s.data)
    expect(zarrflow.MetadataError, lambda: zarrflow.open(s.arr, limits={"max_metadata_depth": 100}),
           ARR, "max_metadata_depth")


def test_metadata_document_over_the_size_limit(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    m = json.loads(s.meta_file().read_text())
    m["attributes"] = {"pad": "x" * (64 << 20)}  # past the 64 MiB default
    s.meta_file().write_text(json.dumps(m))
    expect(zarrflow.MetadataError, open_direct_with(s), ARR, "zarr.json", "max_metadata_bytes")
    s2 = make_store(tmp_path / "small")
    m = json.loads(s2.meta_file().read_text())
    m["attributes"] = {"pad": "x" * 1000}
    s2.meta_file().write_text(json.dumps(m))
    g = zarrflow.open(s2.root, limits={"max_metadata_bytes": 1000})  # members inherit the limit
    expect(zarrflow.MetadataError, lambda: g[ARR], ARR, "zarr.json", "max_metadata_bytes")
    assert len(zarrflow.open(s2.arr, limits={"max_metadata_bytes": 2000}).attrs["pad"]) == 1000


def open_direct_with(s: Any, **kw: Any) -> Any:
    return lambda: zarrflow.open(s.arr, **kw)


def test_unknown_limit_name(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    with pytest.raises(ValueError, match="did you mean 'max_chunk_bytes'"):
        zarrflow.open(s.arr, limits={"max_chunk_byte": 1})


WRONG_VALUES = [5, "x", [], {}, None, True, 2.5]


def _sweep(tmp_path: Path, zarr_format: int) -> list[tuple[str, Any, str]]:
    """Every top-level field of the array's metadata set to every JSON type: opening (and reading)
    either works or raises a zarrflow error; returns those that raised something else."""
    s = make_store(tmp_path, zarr_format=zarr_format)
    original = json.loads(s.meta_file().read_text())
    fields = list(original) + (["attributes"] if zarr_format == 3 else [])
    escaped = []
    for field in fields:
        for value in WRONG_VALUES:
            m = dict(original)
            m[field] = value
            s.meta_file().write_text(json.dumps(m))
            try:
                zarrflow.open(s.arr)[...]
            except zarrflow.ZarrflowError as e:
                if isinstance(e, zarrflow.MetadataError):
                    assert ARR in str(e), (field, value, str(e))
            except Exception as e:  # noqa: BLE001 - what the sweep looks for
                escaped.append((field, value, f"{type(e).__name__}: {e}"))
    return escaped


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_wrong_json_types_are_zarrflow_errors(tmp_path: Path, zarr_format: int) -> None:
    assert _sweep(tmp_path, zarr_format) == []


@pytest.mark.parametrize("value", WRONG_VALUES)
def test_wrong_json_types_in_consolidated_metadata(tmp_path: Path, value: Any) -> None:
    zarr = C.require("zarr")
    s = make_store(tmp_path)
    C._quiet(lambda: zarr.consolidate_metadata(str(s.root)))
    root = json.loads((s.root / "zarr.json").read_text())
    members = root["consolidated_metadata"]["metadata"]
    members[ARR]["node_type"] = value
    members["g1"]["attributes"] = value
    (s.root / "zarr.json").write_text(json.dumps(root))
    try:
        zarrflow.open(s.root)[ARR][...]
    except zarrflow.ZarrflowError as e:
        assert not isinstance(e, zarrflow.MetadataError) or "zarr.json" in str(e), str(e)


def test_consolidated_metadata_kind_of_wrong_type(tmp_path: Path) -> None:
    zarr = C.require("zarr")
    s = make_store(tmp_path)
    C._quiet(lambda: zarr.consolidate_metadata(str(s.root)))
    root = json.loads((s.root / "zarr.json").read_text())
    root["consolidated_metadata"]["kind"] = 5
    (s.root / "zarr.json").write_text(json.dumps(root))
    expect(zarrflow.MetadataError, lambda: zarrflow.open(s.root), str(s.root / "zarr.json"))


# --------------------------------------------------------------------------------------------
# chunk sizes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_chunk_shape_over_the_per_chunk_limit_is_refused_at_open(tmp_path: Path,
                                                                 zarr_format: int) -> None:
    """2^31 x 8 float32 chunks: valid Zarr of 64 GiB per chunk, refused before any read."""
    s = make_store(tmp_path, zarr_format=zarr_format, dtype="float32")
    m = json.loads(s.meta_file().read_text())
    m["shape"] = [2**32, 8]
    if zarr_format == 3:
        m["chunk_grid"]["configuration"]["chunk_shape"] = [2**31, 8]
    else:
        m["chunks"] = [2**31, 8]
    s.meta_file().write_text(json.dumps(m))
    expect(zarrflow.MetadataError, open_direct_with(s), ARR, "68719476736 bytes decoded",
           "max_chunk_bytes")
    a = zarrflow.open(s.arr, limits={"max_chunk_bytes": 1 << 40})
    assert a.chunks == (2**31, 8)


# --------------------------------------------------------------------------------------------
# exhausted resources
# --------------------------------------------------------------------------------------------


@needs_address_limit
@pytest.mark.parametrize("stacks", [4, 0], ids=["some", "none"])
def test_threads_that_cannot_start_warn_and_reads_still_work(tmp_path: Path, stacks: int) -> None:
    """threads=512 where the address space holds `stacks` thread stacks: a RuntimeWarning, and the
    pool's threads (or the calling thread alone) read the right data."""
    s = make_store(tmp_path, shape=(64, 40), chunks=(4, 5))
    got = run_child(f"""
    path = {str(s.arr)!r}
    expected = zarrflow.open(path)[...]  # imports, default pool, first-read allocations
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    limit_address_space({stacks} * stack + stack // 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = zarrflow.open(path, threads=512)
        same = bool((a[...] == expected).all())
    report(same=same, threads=a._executor.threads,
           warnings=[str(w.message) for w in caught if w.category is RuntimeWarning])
    """)
    assert got["same"], got
    assert got["threads"] <= stacks, got
    assert len(got["warnings"]) == 1 and f"started {got['threads']} of 512" in got["warnings"][0]


@needs_address_limit
def test_out_of_memory_while_decoding_names_array_and_chunk(tmp_path: Path) -> None:
    """A 64 MiB zstd chunk read in part needs 64 MiB of scratch; with 32 MiB of address space to
    spare that allocation fails: a ZarrflowMemoryError (a MemoryError) naming the chunk."""
    zarr = C.require("zarr")
    root = tmp_path / "big.zarr"
    C._quiet(lambda: zarr.create_array(store=str(root), shape=(4096, 4096), chunks=(4096, 4096),
                                       dtype="float32", compressors=zarr.codecs.ZstdCodec(),
                                       fill_value=1.0).__setitem__(Ellipsis, 0.0))
    # No read before the limit: the executor's buffer pool would keep the scratch for reuse.
    got = run_child(f"""
    a = zarrflow.open({str(root)!r})
    limit_address_space(32 << 20)
    """, child_error("a[0:2, 0:2]"))
    assert got["error"] is not None and "ZarrflowMemoryError" in got["error"], got
    assert "MemoryError" in got["error"], got
    assert "chunk 'c/0/0'" in got["message"] and "big.zarr" in got["message"], got


# --------------------------------------------------------------------------------------------
# messages
# --------------------------------------------------------------------------------------------


def test_key_with_a_nul_byte_is_named_whole(tmp_path: Path) -> None:
    s = make_store(tmp_path)
    g = zarrflow.open(s.root)
    err = expect(zarrflow.PathEscapeError, lambda: g["g1\x00/bad_arr"], "contains a NUL byte")
    assert "g1\\x00/bad_arr" in str(err), str(err)
