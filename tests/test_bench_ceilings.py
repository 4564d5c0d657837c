"""The measurement tooling of the stage ceilings and of the decode cost to a model
(benchmarks/ceilings.py, bench_sm_cost.py and the ceilings parts of bench_gpu.py and
bench_loader.py): where the stored bytes are, staging into a buffer, the ceiling arithmetic and
tables, and CPU dry runs of the scripts. The figures the scripts measure are timings: only their
consistency is checked here."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_gpu as bg  # noqa: E402
import bench_loader as bl  # noqa: E402
import bench_read as br  # noqa: E402
import bench_sm_cost as sm  # noqa: E402
import ceilings as cl  # noqa: E402

pytest.importorskip("tensorstore")


def size_gb(fields: int) -> str:
    """--size-gb for exactly ``fields`` fields."""
    return str((fields * br.FIELD_BYTES - 1000) / 1e9)


# --- where the stored bytes are ------------------------------------------------------------------
def write_shard(path: Path, pieces: list[bytes | None], location: str = "end") -> None:
    """A shard file: the pieces one after another, None for a chunk not stored, and its index
    (offset, nbytes per chunk, then a 4-byte checksum whose value is not read here)."""
    index_size = 16 * len(pieces) + 4
    at = index_size if location == "start" else 0
    body, entries = b"", []
    for p in pieces:
        if p is None:
            entries += [cl.EMPTY, cl.EMPTY]
        else:
            entries += [at + len(body), len(p)]
            body += p
    index = struct.pack(f"<{len(entries)}Q", *entries) + b"\0\0\0\0"
    path.write_bytes(index + body if location == "start" else body + index)


@pytest.mark.parametrize("location", ["end", "start"])
def test_shard_index_pieces_skip_chunks_not_stored(tmp_path, location):
    f = tmp_path / "0"
    write_shard(f, [b"aaaa", None, b"bbbbbb"], location)
    config = {"chunk_shape": [1, 4], "shard_shape": [3, 4], "index_location": location,
              "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}
    pieces = cl.shard_index_pieces(f, config)
    data = f.read_bytes()
    assert [data[p.offset:p.offset + p.length] for p in pieces] == [b"aaaa", b"bbbbbb"]


def test_a_file_shorter_than_its_index_is_named(tmp_path):
    f = tmp_path / "0"
    f.write_bytes(b"xx")
    config = {"chunk_shape": [1], "shard_shape": [4], "index_codecs": [{"name": "bytes"}]}
    with pytest.raises(ValueError, match="shorter than its shard index"):
        cl.shard_index_pieces(f, config)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """bench_gpu's chunked and sharded zstd stores and its raw store, 3 fields each."""
    d = tmp_path_factory.mktemp("stores")
    paths = bg.write_stores(d, 3, ["raw", "zstd-3", bg.SHARDED], 2, lambda c, why: pytest.fail(why))
    return paths


@pytest.mark.parametrize("codec", ["raw", "zstd-3", bg.SHARDED])
def test_stored_pieces_are_the_chunks_stored_bytes(stores, codec):
    import numcodecs

    pieces = cl.stored_pieces(stores[codec])
    assert len(pieces) == 3  # one per field, inner chunks of the shard included
    files = {p.file for p in pieces}
    for p in pieces:
        raw = p.file.read_bytes()[p.offset:p.offset + p.length]
        decoded = raw if codec == "raw" else numcodecs.Zstd().decode(raw)
        assert len(decoded) == br.FIELD_BYTES
    on_disk = sum(f.stat().st_size for f in files)
    index = (16 * bg.SHARD_FIELDS + 4) * len(files) if codec == bg.SHARDED else 0
    assert sum(p.length for p in pieces) + index == on_disk


def test_stored_pieces_of_a_zarr_v2_group(tmp_path):
    zarr = pytest.importorskip("zarr")
    g = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=2)
    for name in ("a", "b"):
        a = g.create_array(name, shape=(4, 8), chunks=(2, 8), dtype="float32")
        a[...] = np.arange(32, dtype="float32").reshape(4, 8)
    pieces = cl.stored_pieces(tmp_path / "g.zarr")
    assert sorted(p.file.relative_to(tmp_path / "g.zarr").as_posix() for p in pieces) == \
        ["a/0.0", "a/1.0", "b/0.0", "b/1.0"]


def test_a_store_without_chunks_is_an_error(tmp_path):
    (tmp_path / "zarr.json").write_text(json.dumps({"node_type": "array", "codecs": []}))
    with pytest.raises(ValueError, match="no stored chunks"):
        cl.stored_pieces(tmp_path)


# --- staging ---------------------------------------------------------------------------------------
def test_ring_offsets_wrap_when_the_next_piece_does_not_fit():
    assert cl.ring_offsets([4, 4, 4, 2], 10) == [0, 4, 0, 4]
    assert cl.ring_offsets([10, 10], 10) == [0, 0]
    with pytest.raises(ValueError, match="does not fit"):
        cl.ring_offsets([11], 10)


def test_staging_reads_every_piece_into_its_place(stores):
    pieces = cl.stored_pieces(stores["zstd-3"])
    total = sum(p.length for p in pieces)
    buf = np.zeros(total, np.uint8)
    offsets = cl.ring_offsets([p.length for p in pieces], total)
    cl.stage_once(pieces, offsets, buf, threads=2)
    for p, at in zip(pieces, offsets):
        assert buf[at:at + p.length].tobytes() == p.file.read_bytes()[p.offset:p.offset + p.length]
    rate = cl.staging_rate(pieces, np.empty(total // 2 + 1, np.uint8), threads=3, runs=2)
    assert rate["stored_bytes"] == total and rate["chunks"] == 3 and len(rate["walls_s"]) == 2
    assert rate["stored_GBps"] == pytest.approx(total / 1e9 / np.median(rate["walls_s"]))


def test_staging_names_a_file_that_ended_early(tmp_path):
    f = tmp_path / "c"
    f.write_bytes(b"abc")
    with pytest.raises(EOFError, match=str(f)):
        cl.stage_once([cl.Piece(f, 0, 8)], [0], bytearray(8), threads=1)


# --- the ceiling -------------------------------------------------------------------------------------
def test_the_ceiling_is_the_slowest_stage_in_decoded_bytes():
    r = cl.ceiling_row("zstd-3", 1.5, staging_GBps=30.0, h2d_GBps=50.0, decode_GBps=40.0,
                       end_to_end_GBps=36.0, compressed=True)
    assert r["staging_decoded_GBps"] == 45.0 and r["H2D_decoded_GBps"] == 75.0
    assert (r["binding"], r["ceiling_GBps"]) == ("decode", 40.0)
    assert r["of_ceiling"] == pytest.approx(0.9) and r["target"] == 0.8 and r["meets_target"]
    slow = cl.ceiling_row("zstd-3", 1.5, 30.0, 50.0, 40.0, 20.0, compressed=True)
    assert slow["meets_target"] is False


def test_uncompressed_reads_have_no_decode_stage_and_a_higher_target():
    r = cl.ceiling_row("raw", 1.0, staging_GBps=35.0, h2d_GBps=50.0, decode_GBps=999.0,
                       end_to_end_GBps=30.0, compressed=False)
    assert r["decode_decoded_GBps"] is None and r["binding"] == "staging"
    assert r["target"] == 0.9 and r["meets_target"] is False  # 30 / 35 < 0.9


def test_stages_not_measured_are_left_out():
    r = cl.ceiling_row("x", 2.0, staging_GBps=10.0, h2d_GBps=None, decode_GBps=None,
                       end_to_end_GBps=None, compressed=True)
    assert (r["binding"], r["ceiling_GBps"]) == ("staging", 20.0)
    assert r["of_ceiling"] is None and r["meets_target"] is None
    none = cl.ceiling_row("x", 2.0, None, None, None, 5.0, compressed=True)
    assert none["ceiling_GBps"] is None and none["of_ceiling"] is None


def test_the_table_marks_reads_below_target():
    rows = [cl.ceiling_row("raw", 1.0, 35.0, 50.0, None, 33.0, compressed=False),
            cl.ceiling_row("zstd-3", 1.5, 30.0, 50.0, 40.0, 20.0, compressed=True),
            cl.ceiling_row("lz4", 1.0, 30.0, None, None, None, compressed=True)]
    text = cl.ceilings_table(rows, "codec")
    lines = text.splitlines()
    assert lines[0].startswith("| codec | ratio |") and len(lines) == 5
    assert "| raw | 1.00 | 35.0 | 50.0 | n/a | 35.0 (staging) | 33.0 | 0.94 | ≥ 0.9 |" in text
    assert "**0.50**" in lines[3] and "40.0 (decode)" in lines[3]
    assert "| n/a | n/a |" in lines[4]


def test_summary_of_result_files(tmp_path, capsys):
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"gpu": "G", "ceiling_rows": [
        cl.ceiling_row("raw", 1.0, 35.0, 50.0, None, 33.0, compressed=False)]}))
    assert cl.main([str(f), str(tmp_path / "missing.json")]) == 0
    out = capsys.readouterr().out
    assert "a.json: G" in out and "| raw |" in out and "missing.json: not written" in out
    assert cl.main([str(tmp_path / "missing.json")]) == 1


# --- bench_gpu: the decode stage and the rows ---------------------------------------------------------
def test_stage_rates_take_the_median_over_the_reads():
    reports = [{"decode_ms": ms, "h2d_ms": 100.0, "h2d_bytes": 1_000_000_000, "gpu_decoded": 3,
                "cpu_decoded": 1} for ms in (50.0, 100.0, 400.0)]
    got = bg.stage_rates(reports, gb=2.0, compressed=True)
    assert got["gpu_decode_GBps"] == pytest.approx(2.0 * 0.75 / 0.1)
    assert got["h2d_stage_GBps"] == pytest.approx(10.0)
    assert "gpu_decode_GBps" not in bg.stage_rates(reports, 2.0, compressed=False)
    host_only = [dict(r, gpu_decoded=0) for r in reports]
    assert "gpu_decode_GBps" not in bg.stage_rates(host_only, 2.0, compressed=True)
    assert bg.stage_rates([], 2.0, compressed=True) == {}


def test_ceiling_rows_join_staging_h2d_and_the_warm_read():
    results = {"codecs": ["raw", "zstd-3", "gzip-1"], "decoded_bytes": 3_000_000_000,
               "ceilings": {"pinned_h2d_GBps": 50.0},
               "staging": {"raw": {"stored_bytes": 3_000_000_000, "stored_GBps": 30.0},
                           "zstd-3": {"stored_bytes": 2_000_000_000, "stored_GBps": 30.0},
                           "gzip-1": {"error": "skipped"}},
               "runs": [{"codec": "zstd-3", "reader": "zarrflow-gpu", "cache": "warm", "GBps": 33.0,
                         "gpu_decode_GBps": 40.0},
                        {"codec": "zstd-3", "reader": "zarrflow-gpu", "cache": "cold", "GBps": 3.0},
                        {"codec": "raw", "reader": "tensorstore+copy", "cache": "warm", "GBps": 5.0}]}
    raw, zstd = bg.ceiling_rows(results)
    assert raw["name"] == "raw" and raw["end_to_end_GBps"] is None and raw["binding"] == "staging"
    assert zstd["ratio"] == 1.5 and zstd["binding"] == "decode"
    assert zstd["of_ceiling"] == pytest.approx(33.0 / 40.0)


def test_bench_gpu_dry_run_writes_the_staging_rates(tmp_path, stores):
    data = next(iter(stores.values())).parent
    rc = bg.main(["--cpu-dry-run", "--size-gb", size_gb(3), "--codecs",
                  f"raw,{bg.SHARDED}", "--readers", "zarrflow-cpu+copy", "--runs", "1",
                  "--cold-runs", "1", "--threads", "2", "--data", str(data), "--out", str(tmp_path),
                  "--name", "ceil"])
    assert rc == 0
    res = json.loads((tmp_path / "ceil.json").read_text())
    assert set(res["staging"]) == {"raw", bg.SHARDED}
    assert res["staging"]["raw"]["stored_bytes"] == 3 * br.FIELD_BYTES
    rows = {r["name"]: r for r in res["ceiling_rows"]}
    assert rows["raw"]["end_to_end_GBps"] is None  # no GPU read in a dry run
    assert rows[bg.SHARDED]["ratio"] > 1 and rows[bg.SHARDED]["compressed"]
    md = (tmp_path / "ceil.md").read_text()
    assert "### Ceilings of zarrflow-gpu's warm read" in md and f"| {bg.SHARDED} |" in md


# --- bench_loader: a loader run against the ceilings ----------------------------------------------------
def loader_run(**kw) -> dict:
    run = {"store": "stacked v3 zstd, 71 ch", "loader": "zarrflow-gpu (2 workers)", "wall_s": 2.0,
           "stored_GB": 20 * bl.FIELD_BYTES / 1.5 / 1e9, "gpu_decoded": 15, "cpu_decoded": 5,
           "decode_ms": 1000.0, "batch_GBps": 99.0}
    return run | kw


def test_a_loader_run_counts_the_chunks_it_read():
    staging = {"stacked v3 zstd, 71 ch": {"stored_GBps": 30.0}}
    row = bl.loader_ceiling_row(loader_run(), staging, h2d_GBps=50.0)
    assert row["ratio"] == pytest.approx(1.5)
    assert row["end_to_end_GBps"] == pytest.approx(20 * bl.FIELD_BYTES / 1e9 / 2.0)
    assert row["decode_decoded_GBps"] == pytest.approx(15 * bl.FIELD_BYTES / 1e9)
    assert row["staging_decoded_GBps"] == pytest.approx(45.0) and row["batch_GBps"] == 99.0
    assert row["loader"] == "zarrflow-gpu (2 workers)"
    assert bl.loader_ceiling_row(loader_run(decode_ms=0.0), staging, 50.0)["decode_decoded_GBps"] is None
    assert bl.loader_ceiling_row({"error": "out of memory", **loader_run()}, staging, 50.0) is None
    assert bl.loader_ceiling_row(loader_run(store="other"), staging, 50.0) is None


# --- bench_sm_cost -------------------------------------------------------------------------------------
def test_bytes_in_window_count_reads_by_their_overlap():
    reads = [(0.0, 1.0), (1.0, 2.0), (2.0, 4.0), (5.0, 6.0), (3.0, 3.0)]
    assert sm.bytes_in_window(reads, 100, 0.5, 3.0) == pytest.approx(50 + 100 + 50)
    assert sm.bytes_in_window(reads, 100, 10.0, 11.0) == 0


def test_sm_seconds_per_gb():
    assert sm.sm_seconds_per_gb(2.0, 2.5, 132, 4e9) == pytest.approx(0.5 * 132 / 4)
    assert sm.sm_seconds_per_gb(2.0, 1.9, 100, 1e9) == pytest.approx(-10.0)  # noise is kept
    assert sm.sm_seconds_per_gb(2.0, 2.5, 132, 0) is None


def test_plan_puts_each_codecs_host_row_after_its_gpu_row():
    assert sm.plan(["raw", "zstd-3", "lz4"], ["lz4", "zstd-3"]) == [
        ("raw", "auto"), ("zstd-3", "on"), ("zstd-3", "off"), ("lz4", "on"), ("lz4", "off")]
    assert sm.plan(["raw"], ["gzip-1"]) == [("raw", "auto"), ("gzip-1", "off")]


@pytest.mark.parametrize("argv, match", [
    (["--host-codecs", "raw"], "raw"),
    (["--codecs", "zstd-9"], "zstd-9"),
    (["--window-s", "0"], "positive"),
])
def test_sm_cost_bad_arguments(argv, match, capsys):
    with pytest.raises(SystemExit):
        sm.parse_args(argv)
    assert match in capsys.readouterr().err


def test_a_failing_read_loop_raises_its_error():
    def read():
        raise OSError("chunk c/0/0/0 missing")
    loop = sm.ReadLoop(read)
    with pytest.raises(OSError, match="c/0/0/0"):
        loop.start()


def test_sm_cost_dry_run(tmp_path, stores):
    data = next(iter(stores.values())).parent
    rc = sm.main(["--cpu-dry-run", "--size-gb", size_gb(3), "--codecs", "raw,zstd-3",
                  "--host-codecs", "zstd-3", "--window-s", "0.05", "--threads", "2", "--data", str(data),
                  "--out", str(tmp_path)])
    assert rc == 0
    res = json.loads((tmp_path / "bench_sm_cost.json").read_text())
    assert res["cpu_dry_run"] and res["unit"] == "core"
    assert [(r["codec"], r["gpu_decode"], r["decode_on"]) for r in res["rows"]] == [
        ("raw", "auto", "none (uncompressed)"), ("zstd-3", "on", "host (dry run)"),
        ("zstd-3", "off", "host (dry run)")]
    for r in res["rows"]:
        assert "error" not in r, r
        assert r["reads_in_window"] >= 1 and r["decoded_GB_in_window"] > 0
        assert r["unit_s_per_GB"] == pytest.approx(
            (r["job_with_reads_s"] - sum(r["job_alone_s"]) / 2) * res["units"] / r["decoded_GB_in_window"])
    md = (tmp_path / "bench_sm_cost.md").read_text()
    assert md.startswith("**CPU dry run**") and md.count("| zstd-3 |") == 2


def test_sm_cost_plot(tmp_path):
    pytest.importorskip("matplotlib")
    row = {"codec": "zstd-3", "gpu_decode": "on", "unit_s_per_GB": 2.5}
    results = {"rows": [row, row | {"gpu_decode": "off", "unit_s_per_GB": 0.01},
                        {"codec": "lz4", "gpu_decode": "on", "error": "skipped"}],
               "unit": "SM", "units": 132, "gpu": "G", "cpu_dry_run": False}
    sm.plot(results, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")
