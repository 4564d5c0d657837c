"""Peer-only checks of the conformance corpus (no zarrflow needed).

They prove the oracle is right before zarrflow is compared against it:
* the writing peer reads back exactly what was written (data where written, the spec's fill value
  parsed from the JSON on disk everywhere else), bit for bit, NaN payloads included;
* the other peer, where it supports the case, reads the same bytes;
* the metadata we derive from disk (chunks/shards/fill) agrees with zarr-python's view;
* each case really has what its name claims on disk (missing chunks, shard index location, ...).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import corpus as C


def test_peer_roundtrip_matches_source(built: C.Built) -> None:
    C.assert_bitwise_equal(C.native(built.expected), built.source, f"{built.case_id} ({built.peer})")


CROSS = [c.id for c in C.CASES if c.cross]


@pytest.mark.parametrize("case_id", CROSS)
def test_other_peer_reads_same_bytes(corpus: C.Corpus, case_id: str) -> None:
    b = corpus.get(case_id)
    other = C.CASES_BY_ID[case_id].cross
    got = C.zarr_read(b.path) if other == "zarr" else C.ts_read(b.path, b.meta.zarr_format)
    C.assert_bitwise_equal(C.native(got), C.native(b.expected), f"{case_id} read by {other}")


ZARR_READABLE = [c.id for c in C.CASES if c.peer == "zarr" or c.cross == "zarr"]


@pytest.mark.parametrize("case_id", ZARR_READABLE)
def test_derived_metadata_agrees_with_zarr_python(corpus: C.Corpus, case_id: str, quiet_warnings) -> None:
    zarr = C.require("zarr")
    b = corpus.get(case_id)
    a = zarr.open_array(str(b.path), mode="r")
    assert tuple(a.shape) == b.meta.shape
    assert tuple(a.chunks) == b.meta.chunks
    assert (None if a.shards is None else tuple(a.shards)) == b.meta.shards
    assert C.native(np.empty(0, a.dtype)).dtype == b.meta.dtype
    if b.meta.fill is None:
        assert a.fill_value is None
    else:
        assert C.fill_as_bytes(a.fill_value, b.meta.dtype) == b.meta.fill.tobytes()
    assert dict(a.attrs) == b.meta.attrs
    if b.meta.zarr_format == 3:
        dn = a.metadata.dimension_names
        assert (None if dn is None else tuple(dn)) == b.meta.dims


def _chunk_files(path: Path) -> list[str]:
    out = []
    for dirpath, _, files in os.walk(path):
        for f in files:
            if f in ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                continue
            out.append(os.path.relpath(os.path.join(dirpath, f), path).replace(os.sep, "/"))
    return sorted(out)


def _grid(shape: tuple, chunks: tuple) -> int:
    return int(np.prod([-(-s // c) for s, c in zip(shape, chunks)])) if shape else 1


def _touched(shape: tuple, outer: tuple, region: tuple | None) -> int:
    """Number of outer chunks (shards) that intersect the written region."""
    if region is None:
        return 0
    n = 1
    for s, c, r in zip(shape, outer, region):
        start, stop, _ = r.indices(s)
        n *= len({i // c for i in range(start, stop)})
    return n


@pytest.mark.parametrize("case_id", [c.id for c in C.CASES if c.peer != "hand"])
def test_only_written_chunks_exist(corpus: C.Corpus, case_id: str) -> None:
    """Peers store nothing outside the written region: everything else must come from the fill."""
    built = corpus.get(case_id)
    m = built.meta
    files = _chunk_files(built.path)
    touched = _touched(m.shape, m.shards or m.chunks, built.region)
    assert len(files) <= touched, (files, touched)


def test_many_cases_mix_present_and_missing_chunks(corpus: C.Corpus) -> None:
    mixed = []
    for cid in C.CASE_IDS:
        b = corpus.get(cid)
        m = b.meta
        total = _grid(m.shape, m.shards or m.chunks)
        n = len(_chunk_files(b.path))
        if 0 < n < total:
            mixed.append(cid)
    assert len(mixed) >= len(C.CASE_IDS) // 2, mixed


def test_chunk_key_encodings_on_disk(corpus: C.Corpus) -> None:
    dot = _chunk_files(corpus.get("zp3-keys-dot-int32").path)
    assert dot and all(f.startswith("c.") and "/" not in f for f in dot), dot
    v2dot = _chunk_files(corpus.get("zp3-keys-v2-dot-int32").path)
    assert v2dot and all("/" not in f and not f.startswith("c") for f in v2dot), v2dot
    v2slash = _chunk_files(corpus.get("zp3-keys-v2-slash-float32").path)
    assert v2slash and all(f.count("/") == 2 and not f.startswith("c") for f in v2slash), v2slash
    slash = _chunk_files(corpus.get("zp2-sep-slash-int16").path)
    assert slash and all(f.count("/") == 2 for f in slash), slash
    tsdot = _chunk_files(corpus.get("ts3-keys-dot-uint16").path)
    assert tsdot and all(f.startswith("c.") for f in tsdot), tsdot
    zero_d = _chunk_files(corpus.get("zp3-0d-float64").path)
    assert zero_d == ["c"], zero_d
    assert _chunk_files(corpus.get("zp2-0d-float64").path) == ["0"]


def _meta(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())


def test_sharding_layout_on_disk(corpus: C.Corpus) -> None:
    start = _meta(corpus.get("zp3-shard-start-zstd-float64").path)["codecs"][0]["configuration"]
    assert start["index_location"] == "start"
    end = _meta(corpus.get("zp3-shard-end-zstd-int32").path)["codecs"][0]["configuration"]
    assert end["index_location"] == "end"
    implicit = _meta(corpus.get("ts3-shard-end-implicit-gzip").path)["codecs"][0]["configuration"]
    assert "index_location" not in implicit  # tensorstore leaves the default out
    nested = _meta(corpus.get("zp3-shard-nested-start-uint16").path)["codecs"][0]["configuration"]
    assert nested["codecs"][0]["name"] == "sharding_indexed"
    only_bytes = _meta(corpus.get("zp3-shard-start-idx-bytes-only-int64").path)["codecs"][0]
    assert only_bytes["configuration"]["index_codecs"] == [{"name": "bytes", "configuration": {"endian": "little"}}]


def _shard_index(path: Path, key: str, n_inner: int, location: str, crc: bool) -> np.ndarray:
    raw = (path / key).read_bytes()
    size = n_inner * 16 + (4 if crc else 0)
    idx = raw[:size] if location == "start" else raw[-size:]
    return np.frombuffer(idx[: n_inner * 16], "<u8").reshape(-1, 2)


def test_sparse_shards_have_empty_inner_chunks(corpus: C.Corpus) -> None:
    """Inner chunks never written are marked empty (2**64-1, 2**64-1) in the shard index."""
    b = corpus.get("zp3-shard-sparse-inner-uint16")
    files = _chunk_files(b.path)
    assert files, "no shards written"
    empty = 0
    for f in files:
        idx = _shard_index(b.path, f, 9, "end", True)
        empty += int(np.sum(np.all(idx == np.uint64(2**64 - 1), axis=1)))
    assert empty > 0
    b = corpus.get("ts3-shard-sparse-inner-fill")
    for f in _chunk_files(b.path):
        idx = _shard_index(b.path, f, 9, "end", True)
        assert np.any(np.all(idx == np.uint64(2**64 - 1), axis=1)), f


def test_fill_forms_on_disk(corpus: C.Corpus) -> None:
    def fv(cid: str) -> object:
        p = corpus.get(cid).path
        m = json.loads(((p / "zarr.json") if (p / "zarr.json").exists() else (p / ".zarray")).read_text())
        return m["fill_value"]

    assert fv("zp3-fill-nan-float32") == "NaN"
    assert fv("zp3-fill-inf-float64") == "Infinity"
    assert fv("zp3-fill-neginf-float16") == "-Infinity"
    assert fv("zp2-fill-nan-float32") == "NaN"
    assert fv("zp2-fill-null-int32") is None
    assert fv("zp2-fill-complex-complex128") == [1.0, 2.0]
    assert fv("ts2-raw-complex64-fill-pair") == [1.0, "NaN"]
    assert fv("hand-fill-hex-float32-nan-payload") == "0x7fc00001"
    assert fv("hand-r24-gzip-2d") == [0xAA, 0xBB, 0xCC]
    b = corpus.get("hand-fill-hex-float32-nan-payload")
    assert b.meta.fill.view("<u4") == 0x7FC00001
    assert b.source.view("<u4")[-1, -1] == 0x7FC00001


def test_nan_payloads_survive_in_data(corpus: C.Corpus) -> None:
    """The data generator plants NaN payloads; at least one must be in a written region."""
    b = corpus.get("zp3-bytes-le-float32")
    bits = b.source.view("<u4").reshape(-1)
    assert np.any(bits == 0x7FC00123) or np.any(bits == 0xFFC00000)


def test_groups_on_disk(group_built: C.GroupBuilt) -> None:
    p = group_built.path
    if group_built.zarr_format == 3:
        root = json.loads((p / "zarr.json").read_text())
        assert root["node_type"] == "group"
        assert bool(root.get("consolidated_metadata")) == group_built.consolidated
    else:
        assert (p / ".zgroup").exists()
        assert (p / ".zmetadata").exists() == group_built.consolidated
    for name, arr in group_built.arrays.items():
        assert (p / name).is_dir()
        assert arr.size > 0


# --------------------------------------------------------------------------------------------
# the comparison helpers themselves must be strict
# --------------------------------------------------------------------------------------------


def test_bitwise_compare_sees_nan_payloads() -> None:
    a = np.array([0x7FC00000, 1], "<u4").view("<f4")
    b = np.array([0x7FC00001, 1], "<u4").view("<f4")
    C.assert_bitwise_equal(a, a.copy())
    with pytest.raises(AssertionError, match="differ bitwise"):
        C.assert_bitwise_equal(b, a)


def test_bitwise_compare_normalises_byte_order_of_expected_only() -> None:
    le = np.arange(6, dtype="<i4").reshape(2, 3)
    be = le.astype(">i4")
    C.assert_bitwise_equal(le, be)  # expected may be big-endian: compared after conversion
    with pytest.raises(AssertionError, match="dtype"):
        C.assert_bitwise_equal(be, le)  # but zarrflow's result must be native
    with pytest.raises(AssertionError, match="shape"):
        C.assert_bitwise_equal(le.reshape(3, 2), le)
    with pytest.raises(AssertionError, match="dtype"):
        C.assert_bitwise_equal(le.astype("<i8"), le)
    with pytest.raises(AssertionError):
        C.assert_bitwise_equal(np.array(-0.0), np.array(0.0))


def test_fill_as_bytes_forms() -> None:
    f4 = np.dtype("<f4")
    assert C.fill_as_bytes(float("nan"), f4) == np.array(np.nan, f4).tobytes()
    assert C.fill_as_bytes(np.array(0x7FC00001, "<u4").view(f4)[()], f4) == bytes.fromhex("0100c07f")
    assert C.fill_as_bytes([1, 2, 3], np.dtype("V3")) == b"\x01\x02\x03"
    assert C.fill_as_bytes(b"\x01\x02", np.dtype("V2")) == b"\x01\x02"
    assert C.fill_as_bytes(1 + 2j, np.dtype("<c8")) == np.array(1 + 2j, "<c8").tobytes()
    assert C.fill_as_bytes([1.0, 2.0], np.dtype("<c16")) == np.array(1 + 2j, "<c16").tobytes()


def test_parse_fill_spec_forms() -> None:
    assert C.parse_fill("NaN", np.dtype("<f8")).view("<u8") == 0x7FF8000000000000
    assert C.parse_fill("-Infinity", np.dtype("<f2")) == -np.inf
    assert C.parse_fill("0x7fc00001", np.dtype("<f4")).view("<u4") == 0x7FC00001
    assert C.parse_fill("0x8000000000000000", np.dtype("<f8")).tobytes() == np.array(-0.0).tobytes()
    c = C.parse_fill(["0x7fc00001", "-Infinity"], np.dtype("<c8"))
    assert c.reshape(1).view("<u4").tolist() == [0x7FC00001, 0xFF800000]
    assert C.parse_fill([1, 2, 3], np.dtype("V3")).tobytes() == b"\x01\x02\x03"
    assert C.parse_fill(None, np.dtype("<i4")) is None
    assert C.parse_fill(True, np.dtype("?")) == np.True_
    assert C.parse_fill(2**64 - 1, np.dtype("<u8")) == np.uint64(2**64 - 1)


def test_selection_battery_is_valid_numpy() -> None:
    for shape, chunks in [((), ()), ((100,), (16,)), ((13, 11), (4, 5)), ((5, 6, 4, 7), (2, 3, 3, 4)),
                          ((0, 5), (2, 2))]:
        x = np.zeros(shape)
        sels = C.selections(shape, chunks)
        assert len(sels) >= 2
        for sel in sels:
            x[sel]  # must not raise
