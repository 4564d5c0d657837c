"""Remote read benchmark: zarrflow vs tensorstore's s3 kvstore and zarr-python 3 over one loopback
S3 server (moto, tests/servers/s3_server.py), with the server's own raw GET ceiling (parallel curl)
measured in the same run.

What it does:
  1. writes an ERA5-like float32 (time, lat, lon) array locally with tensorstore in two layouts:
       chunked  chunk (1, H, W), zstd level 3 (one object per field);
       sharded  Zarr v3 shards of 8 fields of inner chunks (1, ceil(H/2), ceil(W/2)), zstd level
                3 (the shard is (8, 2*ceil(H/2), 2*ceil(W/2)), e.g. (8, 722, 1440) for 721x1440,
                as inner chunks must tile it; the grid's last row is an edge);
  2. starts moto's S3 server in its own process (pinned to a subset of the cores when there are
     more than 2; unpinned on 2 cores) and uploads both stores to one public bucket;
  3. reads each store whole (and, for the sharded store, a spatial window that touches 2 of the 4
     inner chunks of every time step, to show range coalescing) with every reader, a warm-up run
     then the median of --runs timed runs, every result checked bit-exact against the local
     source (a mismatch aborts the run):
       zarrflow           default max_in_flight (64), returning a new array (like the peers);
                          also into a reused out= array, unsigned (anon=True), and a
                          max_in_flight sweep (1, 4, 16, 64, 128) on the chunked store;
       tensorstore        zarr3 driver over its s3 kvstore ("environment" credentials),
                          s3_request_concurrency 64, data_copy_concurrency = client cores;
       zarr-python        zarr.storage.ObjectStore + obstore, and zarr.storage.FsspecStore + s3fs;
                          async.concurrency 64, threading.max_workers = client cores;
       curl -P 64 / -P 16 the raw GET ceiling: every data object of the store fetched once with
                          `curl --parallel --parallel-max N` (unsigned GETs, bodies to /dev/null;
                          also one SigV4-signed -P 64 run);
       zarrflow fetch     zarrflow's HTTP client alone: Store.get of every data object from 64
                          Python threads, no decoding (transport vs curl).
     All library readers sign their requests (SigV4; moto's auth is off, so any key passes)
     unless marked unsigned: moto answers anonymous HEADs with 403, and zarrflow (per shard, for
     partial shard reads) and s3fs (per object) HEAD before they GET.
     Every measurement gets its warm-up run first; the timed runs then go in rounds (each round
     runs every measurement of the layout once, the order rotated by one per round), so slow
     spells of a shared 2-core host spread over all readers.
Per measurement it reports stored (compressed) GB/s — the stored bytes the selection needs, the
same numerator for every reader — and decoded GB/s; requests, counted on the server side from
moto's request log (and from zarrflow's own counters, remote_stats()); bytes per request (bytes
that crossed the loopback interface, from /proc/net/dev, divided by the requests); the largest
number of requests in flight (zarrflow: observed; others: their configured limit); client CPU
core-seconds per stored GB (os.times of this process; curl: RUSAGE_CHILDREN) and the server's
CPU core-seconds per stored GB (/proc/PID/stat of the moto process); and host noise per
measurement (kernel TCP events, hypervisor steal, CPU used by other processes).

Results: <out>/bench_remote.json, bench_remote.md, bench_remote.png. The default size (512 MB
decoded, 5 runs) takes about 3 minutes on 2 cores; --quick (8 MB on a 1-degree grid, 1 run, about
15 s) writes under <work>/quick_results unless --out is given. --render JSON rewrites the table
and plot from a saved bench_remote.json.

Usage: python benchmarks/bench_remote.py [--size-mb 512] [--runs 5] [--out docs/results]
                                         [--work bench_data/remote] [--quick] [--render JSON]
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))          # tests.servers
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import zarrflow  # noqa: E402
from zarrflow.tools._progress import Progress  # noqa: E402
from bench_read import make_fields  # noqa: E402  (the same ERA5-like fields as bench_read)

BUCKET = "zarrflow-bench"
SHARD_T = 8
ZSTD = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
SWEEP = (1, 4, 16, 64, 128)
CONCURRENCY = 64                     # every reader's requests-in-flight limit
MOTO_BUFFER = 1 << 30                # objects stay in moto's memory (its default spills > 5 MB)


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class BenchError(RuntimeError):
    """A wrong result or a failed transfer: the run stops."""


# --- data ---------------------------------------------------------------------------------------
def inner_shape(nlat: int, nlon: int) -> tuple[int, int, int]:
    return (1, -(-nlat // 2), -(-nlon // 2))


def store_metadata(layout: str, shape: tuple[int, int, int]) -> dict:
    n, nlat, nlon = shape
    if layout == "chunked":
        grid, codecs = [1, nlat, nlon], [BYTES, ZSTD]
    else:
        _, hi, wi = inner_shape(nlat, nlon)
        grid = [SHARD_T, 2 * hi, 2 * wi]   # inner chunks must tile the shard (721 = 7 x 103)
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner_shape(nlat, nlon)), "codecs": [BYTES, ZSTD],
            "index_codecs": [BYTES, {"name": "crc32c"}], "index_location": "end"}}]
    return {"shape": list(shape), "data_type": "float32", "fill_value": 0.0,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "codecs": codecs, "dimension_names": ["time", "latitude", "longitude"]}


def write_local(path: Path, layout: str, data: np.ndarray, threads: int) -> None:
    import tensorstore as ts

    if path.exists():
        shutil.rmtree(path)
    arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)},
                   "metadata": store_metadata(layout, data.shape), "create": True,
                   "context": {"data_copy_concurrency": {"limit": threads}}}).result()
    bar = Progress(len(data), f"writing {layout}")
    for i in range(0, len(data), SHARD_T):
        j = min(i + SHARD_T, len(data))
        arr[i:j].write(data[i:j]).result()
        bar.update(j - i, data[i:j].nbytes)
    bar.close()
    (path / ".complete").write_text(json.dumps(store_metadata(layout, data.shape)))


def read_local(path: Path) -> np.ndarray:
    import tensorstore as ts

    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
                   ).result().read().result()


def data_objects(path: Path) -> dict[str, int]:
    """Relative key → size of every chunk/shard object (not the metadata)."""
    return {p.relative_to(path).as_posix(): p.stat().st_size
            for p in sorted(path.rglob("*")) if p.is_file() and p.relative_to(path).parts[0] == "c"}


def shard_inner_sizes(path: Path, n_inner: int) -> dict[str, np.ndarray]:
    """Shard key → (n_inner, 2) array of (offset, nbytes) from its index (at the end)."""
    out = {}
    for key in data_objects(path):
        raw = (path / key).read_bytes()
        idx = np.frombuffer(raw[-(16 * n_inner + 4):-4], dtype="<u8").reshape(n_inner, 2)
        out[key] = idx
    return out


def window(shape: tuple[int, int, int]) -> tuple[slice, slice, slice]:
    """All time steps; latitude within the first inner-chunk row; longitude straddling the inner
    boundary: 2 adjacent inner chunks of the 4 per time step (16 of 32 per shard)."""
    _, nlat, nlon = shape
    _, hi, wi = inner_shape(nlat, nlon)
    return (slice(0, shape[0]), slice(hi // 4, hi // 4 + hi // 2),
            slice(wi - wi // 2, wi + wi // 2))


def partial_needed_bytes(shape, sizes: dict[str, np.ndarray]) -> tuple[int, int]:
    """(stored bytes, inner chunks) the window touches, shard indexes included."""
    _, nlat, nlon = shape
    _, hi, wi = inner_shape(nlat, nlon)
    win = window(shape)
    ys = range(win[1].start // hi, (win[1].stop - 1) // hi + 1)
    xs = range(win[2].start // wi, (win[2].stop - 1) // wi + 1)
    ny, nx = -(-nlat // hi), -(-nlon // wi)
    total, chunks = 0, 0
    for idx in sizes.values():
        total += 16 * len(idx) + 4
        for t in range(SHARD_T):
            for y in ys:
                for x in xs:
                    k = (t * ny + y) * nx + x
                    if idx[k, 0] != 2**64 - 1:
                        total += int(idx[k, 1])
                        chunks += 1
    return total, chunks


# --- instruments --------------------------------------------------------------------------------
_ANSI = r"(?:\x1b\[[0-9;]*m)*"      # werkzeug colours non-200 lines on a terminal and in files
LOG_LINE = re.compile(rf'"{_ANSI}([A-Z]+) (\S+) HTTP/[0-9.]+{_ANSI}" (\d{{3}})')


class ServerLog:
    """Reads moto's (werkzeug's) request log from where it was last read. werkzeug writes the line
    when it sends the status line, before the body, so a response the client has finished
    receiving is always in the log already."""

    def __init__(self, path: Path):
        self.f = open(path, "rb")
        self.f.seek(0, os.SEEK_END)
        self.partial = b""

    def take(self) -> dict:
        data = self.partial + self.f.read()
        lines = data.split(b"\n")
        self.partial = lines.pop()
        out = {"requests": 0, "by_method": {}, "statuses": {}, "errors": []}
        for raw in lines:
            m = LOG_LINE.search(raw.decode(errors="replace"))
            if not m:
                continue
            method, target, status = m.group(1), m.group(2), int(m.group(3))
            out["requests"] += 1
            out["by_method"][method] = out["by_method"].get(method, 0) + 1
            out["statuses"][str(status)] = out["statuses"].get(str(status), 0) + 1
            if status >= 400 and len(out["errors"]) < 5:
                out["errors"].append(f"{method} {target} {status}")
        return out


def lo_bytes() -> int:
    """Bytes sent over the loopback interface (each loopback packet counts once)."""
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[8])
    return 0


TCP_COUNTERS = ("ListenOverflows", "TCPSynRetrans", "TCPTimeouts", "TCPLossProbes",
                "TCPFastRetrans", "TCPBacklogDrop", "PruneCalled", "TCPRcvQDrop")


def tcp_counters() -> dict[str, int]:
    """Kernel TCP counters (TcpExt) that show listen-queue overflows, SYN retransmits (1 s stalls)
    and losses on loopback; system-wide, so they include the server's side."""
    out: dict[str, int] = {}
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return out
    for head, vals in zip(lines[0::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            out.update({k: int(v) for k, v in zip(head.split()[1:], vals.split()[1:])
                        if k in TCP_COUNTERS})
    return out


def host_cpu_s() -> tuple[float, float]:
    """(busy CPU s of the whole host, CPU s stolen by the hypervisor), from /proc/stat."""
    try:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        tck = os.sysconf("SC_CLK_TCK")
        return (f[0] + f[1] + f[2] + f[5] + f[6]) / tck, f[7] / tck
    except (OSError, IndexError, ValueError):
        return float("nan"), float("nan")


def proc_cpu_s(pid: int | None) -> float:
    if not pid:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def self_usage() -> tuple[float, int, int]:
    """(system CPU s, minor page faults, involuntary context switches) of this process."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_stime, r.ru_minflt, r.ru_nivcsw


def child_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# --- measuring ----------------------------------------------------------------------------------
class Bench:
    """Measurements are added (each gets its warm-up run, which is also its first correctness
    check), then timed in rounds: every round runs each pending measurement once, in an order
    rotated by one per round, so slow spells of a noisy 2-core host (where client and server share
    the cores) spread over all readers instead of landing on one."""

    def __init__(self, args, server, results):
        self.args, self.server, self.results = args, server, results
        self.log = ServerLog(server.log_path)
        self.pid = getattr(getattr(server, "_proc", None), "pid", None)
        self.pending: list[dict] = []
        self.count = 0

    def _one(self, c: dict) -> dict:
        label = c["label"]
        if c["stats"] is not None:
            c["stats"].remote_stats(reset=True)
        if c["before"] is not None:
            c["before"]()
        self.log.take()
        u0, n0, (h0, st0) = self_usage(), tcp_counters(), host_cpu_s()
        c0, k0, s0, b0 = self_cpu_s(), child_cpu_s(), proc_cpu_s(self.pid), lo_bytes()
        t0 = time.perf_counter()
        got = c["fn"]()
        wall = time.perf_counter() - t0
        c1, k1, s1, b1 = self_cpu_s(), child_cpu_s(), proc_cpu_s(self.pid), lo_bytes()
        u1, n1, (h1, st1) = self_usage(), tcp_counters(), host_cpu_s()
        log = self.log.take()
        run = {"wall_s": wall, "client_cpu_s": (k1 - k0) if c["child"] else (c1 - c0),
               "server_cpu_s": s1 - s0, "wire_bytes": b1 - b0,
               "server": log,
               "self_sys_s": u1[0] - u0[0], "self_minflt": u1[1] - u0[1],
               "self_nivcsw": u1[2] - u0[2], "steal_s": st1 - st0,
               # CPU used on the host by anything but this process, its children and the
               # server during the run (other jobs on a shared machine disturb the timing)
               "other_cpu_s": (h1 - h0) - (c1 - c0) - (k1 - k0) - (s1 - s0),
               "tcp": {k: n1[k] - n0.get(k, 0) for k in n1 if n1[k] - n0.get(k, 0)}}
        expected = c["expected"]
        if expected is not None:
            if not isinstance(got, np.ndarray) or got.shape != expected.shape \
                    or got.dtype != expected.dtype:
                raise BenchError(f"{label}: got {type(got).__name__} "
                                 f"{getattr(got, 'shape', None)} {getattr(got, 'dtype', None)}"
                                 f", expected {expected.shape} {expected.dtype}")
            if not np.array_equal(got.view(np.uint32), expected.view(np.uint32)):
                bad = int(np.count_nonzero(got.view(np.uint32) != expected.view(np.uint32)))
                raise BenchError(f"{label}: result differs from the local source "
                                 f"({bad} of {expected.size} values)")
        elif isinstance(got, dict):
            run.update(got)
        del got
        bad = {st: n for st, n in log["statuses"].items() if int(st) >= 400}
        if bad:
            run["server_errors"] = bad
        if c["stats"] is not None:
            run["zarrflow"] = c["stats"].remote_stats()
        return run

    def add(self, *, layout: str, read: str, reader: str, fn: Callable[[], Any],
            expected: np.ndarray | None, needed: int, decoded: int | None,
            limit: int | str, stats: Any = None, params: dict | None = None,
            child: bool = False, before: Callable[[], None] | None = None) -> None:
        """Queue a measurement after its warm-up run. `fn` returns the array (checked bit-exact
        against `expected`) or, for curl, a dict of its own counts (checked by `fn`)."""
        c = dict(layout=layout, read=read, reader=reader, fn=fn, expected=expected,
                 needed=needed, decoded=decoded, limit=limit, stats=stats, params=params or {},
                 child=child, before=before, label=f"{layout}/{read}/{reader}", runs=[])
        gc.collect()
        c["warm"] = self._one(c)
        say(f"     warm-up {c['label']:<46} {c['warm']['wall_s']:.2f} s (result checked)")
        self.pending.append(c)

    def run_rounds(self, unavailable: dict) -> None:
        n = len(self.pending)
        for r in range(self.args.runs):
            t0 = time.perf_counter()
            order = self.pending[r % n:] + self.pending[:r % n] if n else []
            for c in order:
                if c.get("failed"):
                    continue
                gc.collect()
                try:
                    c["runs"].append(self._one(c))
                except BenchError:
                    raise
                except Exception as e:  # noqa: BLE001 - reported below, not dropped
                    c["failed"] = f"timed run {r + 1}: {type(e).__name__}: {e}"[:400]
                    say(f"{c['label']}: FAILED in {c['failed']}")
            say(f"     round {r + 1}/{self.args.runs}: {n} measurements in "
                f"{time.perf_counter() - t0:.1f} s")
        for c in self.pending:
            if c.get("failed"):
                unavailable[c["label"]] = c["failed"]
            else:
                self._finish(c)
        self.pending = []

    def _finish(self, c: dict) -> None:
        self.count += 1
        runs, warm, needed, decoded = c["runs"], c["warm"], c["needed"], c["decoded"]
        med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
        wall = med("wall_s")
        requests = statistics.median(r["server"]["requests"] for r in runs)
        wire = med("wire_bytes")
        res = {"layout": c["layout"], "read": c["read"], "reader": c["reader"],
               "params": c["params"], "wall_s": wall, "walls_s": [r["wall_s"] for r in runs],
               "needed_bytes": needed, "decoded_bytes": decoded,
               "stored_GBps": needed / wall / 1e9,
               "stored_GBps_best": needed / min(r["wall_s"] for r in runs) / 1e9,
               "decoded_GBps": decoded / wall / 1e9 if decoded else None,
               "requests": requests, "requests_by_method": runs[0]["server"]["by_method"],
               "statuses": runs[0]["server"]["statuses"],
               "wire_bytes": wire, "bytes_per_request": wire / requests if requests else None,
               "inflight_limit": c["limit"],
               "client_core_s_per_GB": med("client_cpu_s") / (needed / 1e9),
               "server_core_s_per_GB": med("server_cpu_s") / (needed / 1e9),
               "warmup_wall_s": warm["wall_s"], "runs": runs}
        if c["stats"] is not None:
            zs = [r["zarrflow"] for r in runs]
            res["zf_requests"] = statistics.median(z["requests"] for z in zs)
            res["zf_bytes"] = statistics.median(z["bytes"] for z in zs)
            res["zf_bytes_per_request"] = res["zf_bytes"] / max(res["zf_requests"], 1)
            res["max_in_flight_observed"] = max(z["max_in_flight"] for z in zs)
            res["retries"] = sum(z["retries"] for z in zs) + warm["zarrflow"]["retries"]
            res["io_threads"] = zs[-1]["io_threads"]
            if res["zf_requests"] != requests:
                res["note"] = (f"zarrflow counted {res['zf_requests']} requests, the server "
                               f"logged {requests}")
        tcp: dict[str, int] = {}
        for r in runs:
            for k, v in r["tcp"].items():
                tcp[k] = tcp.get(k, 0) + v
        res["tcp_events"] = tcp           # summed over the timed runs
        res["steal_s"] = sum(r["steal_s"] for r in runs)
        res["other_cpu_s"] = statistics.median(r["other_cpu_s"] for r in runs)
        res["other_cpu_s_max"] = max(r["other_cpu_s"] for r in runs)
        res["client_sys_s"] = statistics.median(r["self_sys_s"] for r in runs)
        errs = [r["server_errors"] for r in runs + [warm] if "server_errors" in r]
        if errs:
            res["server_errors"] = errs
        if "curl_bytes" in runs[0]:
            res["curl_bytes"] = runs[0]["curl_bytes"]
        self.results["measurements"].append(res)
        dec = f" {res['decoded_GBps']:.3f} GB/s decoded," if decoded else ""
        mif = (f" max in flight {res['max_in_flight_observed']}, retries {res['retries']},"
               if c["stats"] is not None else "")
        say(f"[{self.count:2d}] {c['label']:<46} {res['stored_GBps']:.3f} GB/s stored,{dec} "
            f"{requests:.0f} req ({(res['bytes_per_request'] or 0) / 1e6:.2f} MB/req),{mif} "
            f"client {res['client_core_s_per_GB']:.2f} / server {res['server_core_s_per_GB']:.2f}"
            f" core-s/GB  (median of {len(runs)}: "
            f"{', '.join(f'{w:.2f}' for w in res['walls_s'])} s)")


# --- readers ------------------------------------------------------------------------------------
def zarrflow_reader(url: str, endpoint: str, threads: int, sel, out: np.ndarray | None = None,
                    **opts):
    arr = zarrflow.open_array(url, threads=threads,
                              storage_options={"endpoint_url": endpoint, **opts})
    return arr, (lambda: arr.read(sel, out=out))


def tensorstore_reader(bucket: str, key: str, endpoint: str, threads: int, region):
    import tensorstore as ts

    spec = {"driver": "zarr3",
            "kvstore": {"driver": "s3", "bucket": bucket, "path": key + "/", "endpoint": endpoint,
                        "aws_region": "us-east-1", "aws_credentials": {"type": "environment"}},
            "context": {"s3_request_concurrency": {"limit": CONCURRENCY},
                        "data_copy_concurrency": {"limit": threads},
                        "cache_pool": {"total_bytes_limit": 0}},
            "recheck_cached_data": False}
    arr = ts.open(spec, read=True).result()
    view = arr if region is None else arr[region]
    return spec, (lambda: view.read().result())


def zarr_python_readers(bucket: str, key: str, endpoint: str, server, region,
                        unavailable: dict) -> list:
    """(name, description, fn) for zarr-python over obstore and over s3fs, whichever work."""
    out = []
    try:
        import zarr
    except ImportError as e:
        unavailable["zarr-python"] = f"zarr not importable: {e}"
        return out
    sel = Ellipsis if region is None else region
    try:
        import obstore
        from obstore.store import S3Store

        st = S3Store(bucket, prefix=key, endpoint=endpoint, region="us-east-1",
                     access_key_id=server.access_key, secret_access_key=server.secret_key,
                     client_options={"allow_http": True})
        za = zarr.open_array(zarr.storage.ObjectStore(st, read_only=True), mode="r")
        out.append(("zarr-python+obstore",
                    f"zarr.storage.ObjectStore(obstore {obstore.__version__} S3Store, SigV4)",
                    lambda: za[sel]))
    except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        unavailable["zarr-python+obstore"] = f"{type(e).__name__}: {e}"[:300]
    try:
        import s3fs

        store = zarr.storage.FsspecStore.from_url(
            f"s3://{bucket}/{key}", read_only=True,
            storage_options={"key": server.access_key, "secret": server.secret_key,
                             "endpoint_url": endpoint,
                             "client_kwargs": {"region_name": "us-east-1"}})
        zs = zarr.open_array(store, mode="r")
        out.append(("zarr-python+s3fs", f"zarr.storage.FsspecStore(s3fs {s3fs.__version__}, "
                    "SigV4: moto 403s anonymous HEADs)", lambda: zs[sel]))
    except Exception as e:  # noqa: BLE001
        unavailable["zarr-python+s3fs"] = f"{type(e).__name__}: {e}"[:300]
    return out


def zarrflow_fetch_reader(url: str, endpoint: str, objects: dict[str, int], threads: int,
                          **opts) -> Callable[[], dict]:
    """zarrflow's HTTP client without decoding: every data object fetched whole with
    Store.get (GIL released) from a Python pool of `threads` threads."""
    from concurrent.futures import ThreadPoolExecutor

    from zarrflow._remote import open_remote

    store = open_remote(url, {"endpoint_url": endpoint, "max_in_flight": threads, **opts})
    keys = list(objects)
    expect = sum(objects.values())
    pool = ThreadPoolExecutor(threads)

    def run() -> dict:
        sizes = list(pool.map(lambda k: len(store.get(k)), keys))
        if sum(sizes) != expect:
            raise BenchError(f"zarrflow store.get fetched {sum(sizes)} bytes, expected {expect}")
        return {"curl_bytes": sum(sizes)}
    return run


def curl_reader(endpoint: str, bucket: str, key: str, objects: dict[str, int], parallel: int,
                work: Path, signer=None) -> Callable[[], dict]:
    cfg = work / f"curl_{key.replace('/', '_')}.txt"
    lines = []
    for rel in objects:
        lines.append(f'url = "{endpoint}/{bucket}/{key}/{rel}"')
        lines.append('output = "/dev/null"')
    cfg.write_text("\n".join(lines) + "\n")
    expect = sum(objects.values())
    cmd = ["curl", "--parallel", "--parallel-max", str(parallel), "-s", "-S", "--fail",
           "-w", "%{http_code} %{size_download}\n", "-K", str(cfg)]
    if signer is not None:
        cmd[1:1] = ["--aws-sigv4", "aws:amz:us-east-1:s3",
                    "-u", f"{signer.access_key}:{signer.secret_key}"]

    def run() -> dict:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise BenchError(f"curl -P {parallel} failed ({p.returncode}): {p.stderr[-500:]}")
        rows = [ln.split() for ln in p.stdout.splitlines() if ln.strip()]
        got = sum(int(r[1]) for r in rows)
        codes = {r[0] for r in rows}
        if len(rows) != len(objects) or got != expect or codes != {"200"}:
            raise BenchError(f"curl -P {parallel}: {len(rows)} transfers, {got} bytes, codes "
                             f"{codes}; expected {len(objects)} transfers of {expect} bytes")
        return {"curl_bytes": got}
    return run


# --- main ---------------------------------------------------------------------------------------
def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version(), "zarrflow": zarrflow.__version__}
    for name in ("moto", "tensorstore", "zarr", "numpy", "obstore", "s3fs", "aiobotocore",
                 "botocore", "werkzeug"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    try:
        out["curl"] = subprocess.run(["curl", "--version"], capture_output=True,
                                     text=True).stdout.split("\n")[0]
    except OSError as e:
        out["curl"] = f"unavailable ({e})"
    return out


def zarrflow_build() -> dict:
    """Which zarrflow is measured: the repository commit and the extension module's identity
    (checked again at the end: a library rewritten under a running process can crash it)."""
    import hashlib

    from zarrflow import _core

    so = Path(_core.__file__)
    out = {"core": str(so), "core_sha256": hashlib.sha256(so.read_bytes()).hexdigest()[:16],
           "core_mtime": datetime.fromtimestamp(so.stat().st_mtime, timezone.utc)
           .isoformat(timespec="seconds")}
    try:
        out["commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "cpp",
                                "python"], capture_output=True, text=True).stdout.strip()
        out["cpp_or_python_dirty"] = bool(dirty)
    except OSError:
        pass
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def plan_cpus() -> tuple[list[int], list[int] | None, str]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) <= 2:
        return cpus, None, (f"{len(cpus)} cores: server and client unpinned, sharing all cores "
                            "(the client's CPU cost competes with the server's)")
    k = max(1, min(4, len(cpus) // 4))
    server, client = cpus[:k], cpus[k:]
    return client, server, f"server pinned to cores {server}, client (and curl) to {client}"


def start_server(server_cpus):
    import servers.s3_server as s3mod

    # moto keeps an object in memory up to MOTO_S3_DEFAULT_KEY_BUFFER_SIZE (default ~5 MB) and
    # spills larger ones to temporary files; raise it so shards are served from memory too.
    base_env = s3mod._server_env
    s3mod._server_env = lambda: {**base_env(), "MOTO_S3_DEFAULT_KEY_BUFFER_SIZE": str(MOTO_BUFFER)}
    try:
        return s3mod.MotoS3Server(cpus=server_cpus)
    finally:
        s3mod._server_env = base_env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=None,
                    help="decoded size of the array in MB (default 512; --quick: 8)")
    ap.add_argument("--runs", type=int, default=None, help="timed runs per measurement "
                    "(median reported; default 5, --quick: 1)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "results"))
    ap.add_argument("--work", default=str(ROOT / "bench_data" / "remote"),
                    help="scratch directory for the local stores (reused when complete)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1° grid (181x360), 8 MB, 1 run, results under --work")
    ap.add_argument("--grid", default=None, help="LATxLON (default 721x1440; --quick 181x360)")
    ap.add_argument("--render", metavar="JSON", help="only rewrite bench_remote.md/.png next to "
                    "an existing bench_remote.json (no measurement)")
    args = ap.parse_args()
    if args.render:
        path = Path(args.render)
        results = json.loads(path.read_text())
        ratios(results)
        (path.parent / "bench_remote.md").write_text(write_markdown(results))
        plot(results, path.parent / "bench_remote.png")
        return 0
    if args.size_mb is None:
        args.size_mb = 8.0 if args.quick else 512.0
    if args.runs is None:
        args.runs = 1 if args.quick else 5
    nlat, nlon = map(int, (args.grid or ("181x360" if args.quick else "721x1440")).split("x"))
    out_dir = Path(args.out) if not (args.quick and args.out == ap.get_default("out")) \
        else Path(args.work) / "quick_results"
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"   # no instance-metadata probes by any SDK
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        os.environ.pop(k, None)

    faulthandler.enable()                  # a native crash prints every thread's stack
    t_start = time.perf_counter()
    build = zarrflow_build()
    client_cpus, server_cpus, pinning = plan_cpus()
    if server_cpus:
        os.sched_setaffinity(0, client_cpus)
    threads = len(client_cpus)
    zarrflow.set_num_threads(threads)
    import zarr

    zarr.config.set({"async.concurrency": CONCURRENCY, "threading.max_workers": threads})

    field_bytes = nlat * nlon * 4
    n = max(SHARD_T, SHARD_T * round(args.size_mb * 1e6 / field_bytes / SHARD_T))
    shape = (n, nlat, nlon)
    say(f"bench_remote: {n} fields of {nlat}x{nlon} float32 = {n * field_bytes / 1e6:.0f} MB, "
        f"{args.runs} timed runs; {pinning}")

    # 1. local stores
    paths = {lay: work / f"era5_{n}x{nlat}x{nlon}_{lay}.zarr" for lay in ("chunked", "sharded")}
    data = None
    t0 = time.perf_counter()
    for lay, p in paths.items():
        meta = json.dumps(store_metadata(lay, shape))
        if not ((p / ".complete").exists() and (p / ".complete").read_text() == meta):
            if data is None:
                data = make_fields(n, nlat, nlon)
            write_local(p, lay, data, threads)
    if data is None:
        say("local stores exist (reused); reading the source back")
        data = read_local(paths["chunked"])
    if not np.array_equal(read_local(paths["sharded"]).view(np.uint32), data.view(np.uint32)):
        raise BenchError("the local sharded store differs from the chunked one")
    t_prepare = time.perf_counter() - t0

    objects = {lay: data_objects(p) for lay, p in paths.items()}
    n_inner = SHARD_T * 2 * 2
    shard_idx = shard_inner_sizes(paths["sharded"], n_inner)
    win = window(shape)
    part_needed, part_chunks = partial_needed_bytes(shape, shard_idx)
    expected_part = np.ascontiguousarray(data[win])

    results: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(), "cpu": cpu_model(),
        "cores_visible": len(os.sched_getaffinity(0)) if not server_cpus else
        len(client_cpus) + len(server_cpus),
        "client_cpus": client_cpus, "server_cpus": server_cpus, "pinning": pinning,
        "threads": threads, "versions": versions(), "zarrflow_build": build,
        "quick": args.quick, "runs": args.runs,
        "shape": list(shape), "decoded_bytes": data.nbytes,
        "layouts": {lay: {"objects": len(objects[lay]), "stored_bytes": sum(objects[lay].values()),
                          "ratio": data.nbytes / sum(objects[lay].values()),
                          "metadata": store_metadata(lay, shape)} for lay in paths},
        "partial": {"window": [[s.start, s.stop] for s in win], "needed_bytes": part_needed,
                    "inner_chunks": part_chunks, "shards": len(shard_idx),
                    "decoded_bytes": expected_part.nbytes},
        "server": {}, "settings": {}, "unavailable": {}, "measurements": []}
    for lay in paths:
        L = results["layouts"][lay]
        say(f"{lay}: {L['objects']} objects, {L['stored_bytes'] / 1e6:.1f} MB stored, "
            f"ratio {L['ratio']:.2f}")

    # 2. server + upload
    server = start_server(server_cpus)
    try:
        results["server"] = {
            "kind": "moto.server (werkzeug, threaded) in its own process, auth off, "
                    "Connection: close after every response",
            "endpoint": server.endpoint, "cpus": server_cpus or "unpinned",
            "env": {"MOTO_S3_DEFAULT_KEY_BUFFER_SIZE": MOTO_BUFFER}}
        server.create_bucket(BUCKET, public=True)
        # tensorstore's "environment" credentials; the other readers are given the keys.
        os.environ.update(AWS_ACCESS_KEY_ID=server.access_key,
                          AWS_SECRET_ACCESS_KEY=server.secret_key, AWS_REGION="us-east-1")
        t0 = time.perf_counter()
        for lay, p in paths.items():
            keys = server.upload_dir(p, BUCKET, f"{lay}.zarr", workers=8)
            if len(keys) != len(objects[lay]) + 2:   # + zarr.json + .complete
                raise BenchError(f"uploaded {len(keys)} keys for {lay}")
        t_upload = time.perf_counter() - t0
        say(f"uploaded both stores in {t_upload:.1f} s to {server.endpoint}/{BUCKET} "
            f"(server pid {getattr(server._proc, 'pid', None)})")
        # One untimed pass over every object first: the first requests a fresh moto process
        # serves are slower (imports, allocator growth), which would land on the first reader.
        for lay, p in paths.items():
            curl_reader(server.endpoint, BUCKET, f"{lay}.zarr", objects[lay], 16, work)()
        run_all(args, server, results, paths, objects, data, win, expected_part, part_needed,
                threads, work)
    finally:
        server.stop()

    results["timing_s"] = {"prepare": t_prepare, "upload": t_upload,
                           "total": time.perf_counter() - t_start}
    after = zarrflow_build()
    if after["core_sha256"] != build["core_sha256"]:
        results["warning"] = (f"zarrflow's extension module changed during the run "
                              f"({build['core_sha256']} -> {after['core_sha256']}, mtime "
                              f"{after['core_mtime']}): results mix builds")
        say(f"WARNING: {results['warning']}")
    ratios(results)
    (out_dir / "bench_remote.json").write_text(json.dumps(results, indent=1, default=str))
    md = write_markdown(results)
    (out_dir / "bench_remote.md").write_text(md)
    try:
        plot(results, out_dir / "bench_remote.png")
    except ImportError:
        say("matplotlib is not installed: no plot")
    print(md)
    say(f"bench_remote: done in {results['timing_s']['total']:.0f} s; results in {out_dir}")
    return 0


def run_all(args, server, results, paths, objects, data, win, expected_part, part_needed,
            threads, work) -> None:
    bench = Bench(args, server, results)
    ep = server.endpoint
    signed = {"key": server.access_key, "secret": server.secret_key, "region": "us-east-1"}
    settings = results["settings"]
    settings["signing"] = (
        "every reader signs (SigV4, key/secret 'testing'; moto's auth is off, so signatures are "
        "not checked but are computed and sent), except the rows marked unsigned. moto answers "
        "anonymous HEADs with 403 (real S3 allows them on a public bucket), so an unsigned reader "
        "fails wherever it HEADs: zarrflow HEADs a shard for its size before reading the shard "
        "index (partial shard reads), s3fs HEADs every object")
    settings["zarrflow"] = (f"decode pool {threads} threads; default max_in_flight "
                            f"({CONCURRENCY}) and coalesce_gap/coalesce_max")
    settings["tensorstore"] = (f"zarr3 + s3 kvstore, aws_credentials environment "
                               f"(AWS_ACCESS_KEY_ID/SECRET set in this process), context "
                               f"s3_request_concurrency {CONCURRENCY}, data_copy_concurrency "
                               f"{threads}, cache_pool 0")
    settings["zarr-python"] = (f"zarr.config async.concurrency {CONCURRENCY}, "
                               f"threading.max_workers {threads}")
    settings["curl"] = ("curl --parallel --parallel-max N -s -S --fail -K <list> (url + "
                        "output=/dev/null per data object); unsigned GETs, and one signed run "
                        "(--aws-sigv4 aws:amz:us-east-1:s3 -u testing:testing)")
    unavailable = results["unavailable"]

    def attempt(name: str, lay: str, read: str, make: Callable[[], None]) -> None:
        try:
            make()
        except BenchError:
            raise
        except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not dropped
            why = f"{type(e).__name__}: {e}"[:400]
            unavailable[f"{name} ({lay}/{read})"] = why
            say(f"{name} {lay}/{read}: unavailable: {why}")

    for lay in ("chunked", "sharded"):
        key = f"{lay}.zarr"
        url = f"s3://{BUCKET}/{key}"
        stored = sum(objects[lay].values())
        reads = [("full", None, data, stored)]
        if lay == "sharded":
            reads.append(("partial", win, expected_part, part_needed))
        say(f"--- {lay}: warm-up runs, then {args.runs} rounds over every measurement")
        for read, region, expected, needed in reads:
            common = dict(layout=lay, read=read, expected=expected, needed=needed,
                          decoded=expected.nbytes)

            def zf(name, **opts):
                def make():
                    arr, fn = zarrflow_reader(url, ep, threads, region, **opts)
                    bench.add(reader=name, fn=fn, stats=arr, limit=CONCURRENCY,
                              params={"max_in_flight": CONCURRENCY, "signed": "key" in opts},
                              **common)
                attempt(name, lay, read, make)

            def ts_():
                spec, fn = tensorstore_reader(BUCKET, key, ep, threads,
                                              None if region is None else tuple(region))
                bench.add(reader="tensorstore", fn=fn, limit=CONCURRENCY, params={"spec": spec},
                          **common)

            zf("zarrflow", **signed)
            # The same read into a reused output array (a training loop's pattern): no fresh
            # 0.5 GB allocation per read. Poisoned with NaN before each run, so a read that
            # writes nothing fails the check.
            def zf_out():
                o = np.empty_like(expected)
                arr, fn = zarrflow_reader(url, ep, threads, region, out=o, **signed)
                bench.add(reader="zarrflow out=", fn=fn, stats=arr, limit=CONCURRENCY,
                          before=lambda: o.fill(np.nan),
                          params={"max_in_flight": CONCURRENCY, "signed": True, "out": True},
                          **common)
            attempt("zarrflow out=", lay, read, zf_out)
            zf("zarrflow unsigned", anon=True)
            attempt("tensorstore", lay, read, ts_)
            for name, desc, fn in zarr_python_readers(BUCKET, key, ep, server, region,
                                                      unavailable):
                attempt(name, lay, read, lambda: bench.add(
                    reader=name, fn=fn, limit=CONCURRENCY, params={"store": desc}, **common))
        bench.add(layout=lay, read="full", reader=f"zarrflow fetch only ({CONCURRENCY} threads)",
                  fn=zarrflow_fetch_reader(url, ep, objects[lay], CONCURRENCY, **signed),
                  expected=None, needed=stored, decoded=None, limit=CONCURRENCY,
                  params={"threads": CONCURRENCY, "signed": True})
        for par, sign in ((64, False), (16, False), (64, True)):
            bench.add(layout=lay, read="full", reader=f"curl -P {par}" + (" sigv4" if sign else ""),
                      fn=curl_reader(ep, BUCKET, key, objects[lay], par, work,
                                     server if sign else None),
                      expected=None, needed=stored, decoded=None, limit=par, child=True,
                      params={"parallel_max": par, "signed": sign})
        if lay == "chunked":
            for k in SWEEP:
                arr, fn = zarrflow_reader(url, ep, threads, None, max_in_flight=k, **signed)
                bench.add(layout=lay, read="sweep", reader=f"zarrflow max_in_flight={k}",
                          fn=fn, stats=arr, limit=k, params={"max_in_flight": k},
                          expected=data, needed=stored, decoded=data.nbytes)
        bench.run_rounds(unavailable)


# --- reporting ----------------------------------------------------------------------------------
def find(results, layout, read, reader):
    for m in results["measurements"]:
        if (m["layout"], m["read"], m["reader"]) == (layout, read, reader):
            return m
    return None


def ratios(results) -> None:
    for m in results["measurements"]:
        ts_ = None if not m["decoded_bytes"] else \
            find(results, m["layout"], m["read"], "tensorstore")
        curl = find(results, m["layout"], "full", "curl -P 64")
        m["vs_tensorstore"] = m["stored_GBps"] / ts_["stored_GBps"] if ts_ else None
        m["vs_curl64"] = m["stored_GBps"] / curl["stored_GBps"] if curl else None
    verdict = {}
    for lay, reader in (("chunked", "zarrflow"), ("chunked", "zarrflow out="),
                        ("sharded", "zarrflow"), ("sharded", "zarrflow out=")):
        zf = find(results, lay, "full", reader)
        if zf:
            verdict[f"{lay}/{reader}"] = {"zarrflow_vs_tensorstore": zf["vs_tensorstore"],
                            "zarrflow_vs_curl64": zf["vs_curl64"],
                            "target_tensorstore_met": bool(zf["vs_tensorstore"]
                                                           and zf["vs_tensorstore"] >= 1.0),
                            "target_80pct_curl_met": bool(zf["vs_curl64"]
                                                          and zf["vs_curl64"] >= 0.8)}
    results["targets"] = verdict


def _f(x, fmt=".3f", none="—"):
    return none if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _tcp(m) -> str:
    ev = m.get("tcp_events") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(ev.items())) or "none"


def write_markdown(results) -> str:
    v = results["versions"]
    n, nlat, nlon = results["shape"]
    lines = [
        f"# Remote read throughput: loopback S3 (moto) — {results['date']}",
        "",
        f"{n} fields of {nlat}×{nlon} float32 ({results['decoded_bytes'] / 1e6:.0f} MB decoded), "
        f"ERA5-like (smooth fields + weather + noise, 16-bit GRIB packing), zstd level 3. "
        f"Warm-up run, then the median of {results['runs']} timed run(s); every result checked "
        f"bit-exact against the local source.",
        ""] + ([f"**WARNING: {results['warning']}**", ""] if results.get("warning") else []) + [
        "| layout | objects | stored MB | ratio | object size |",
        "|---|---:|---:|---:|---|"]
    for lay, L in results["layouts"].items():
        cg = L["metadata"]["chunk_grid"]["configuration"]["chunk_shape"]
        desc = (f"chunk {tuple(cg)}" if lay == "chunked" else
                f"shard {tuple(cg)}, inner "
                f"{tuple(L['metadata']['codecs'][0]['configuration']['chunk_shape'])}")
        lines.append(f"| {lay} | {L['objects']} | {L['stored_bytes'] / 1e6:.1f} | "
                     f"{L['ratio']:.2f} | {desc}, {L['stored_bytes'] / L['objects'] / 1e6:.2f} MB"
                     " mean |")
    P = results["partial"]
    lines += ["",
              f"Partial read (sharded): window {P['window']} (time, lat, lon) touches "
              f"{P['inner_chunks']} inner chunks in {P['shards']} shards "
              f"({P['needed_bytes'] / 1e6:.1f} MB stored incl. shard indexes, "
              f"{P['decoded_bytes'] / 1e6:.1f} MB decoded).",
              "",
              "**Columns.** *stored GB/s*: the stored (compressed) bytes the selection needs "
              "(same numerator for every reader) / median wall time. *requests*: counted by the "
              "server (moto's request log), per run. *fetched MB*: bytes over the loopback "
              "interface per run (/proc/net/dev: HTTP and TCP/IP headers included, and any other "
              "loopback traffic on the host at the time; see *other CPU* under Host noise). "
              "*MB/req*: fetched / requests. *in flight*: zarrflow: the most requests it had in "
              "flight (remote_stats); others: their configured limit (†). *wall s*: median "
              "(fastest–slowest timed run). *client / server core-s/GB*: CPU seconds per stored "
              "GB of this process (curl: its child-process rusage) and of the moto process. "
              "*÷ ts*, *÷ curl64*: stored GB/s over tensorstore's and over the curl -P 64 "
              "ceiling's.",
              ""]
    head = ("| layout | read | reader | stored GB/s | decoded GB/s | wall s (min–max) | "
            "requests | fetched MB | MB/req | in flight | retries | client core-s/GB | "
            "server core-s/GB | ÷ ts | ÷ curl64 |")
    lines += [head, "|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m in results["measurements"]:
        if m["read"] == "sweep":
            continue
        zf = "max_in_flight_observed" in m
        inflight = f"{m['max_in_flight_observed']}" if zf else f"{m['inflight_limit']}†"
        lines.append(
            f"| {m['layout']} | {m['read']} | {m['reader']} | {m['stored_GBps']:.3f} | "
            f"{_f(m['decoded_GBps'])} | {m['wall_s']:.2f} ({min(m['walls_s']):.2f}–"
            f"{max(m['walls_s']):.2f}) | {m['requests']:.0f} | {m['wire_bytes'] / 1e6:.1f} | "
            f"{_f((m['bytes_per_request'] or 0) / 1e6, '.2f')} | {inflight} | "
            f"{m['retries'] if zf else '—'} | {_f(m['client_core_s_per_GB'], '.2f')} | "
            f"{_f(m['server_core_s_per_GB'], '.2f')} | {_f(m['vs_tensorstore'], '.2f')} | "
            f"{_f(m['vs_curl64'], '.2f')} |")
    lines += ["", "## Targets (full reads, stored bytes)", "",
              "| layout / reader | ÷ tensorstore | ≥ 1? | ÷ curl -P 64 | ≥ 0.8? |",
              "|---|---:|---|---:|---|"]
    for lay, t in results.get("targets", {}).items():
        lines.append(f"| {lay} | {_f(t['zarrflow_vs_tensorstore'], '.2f')} | "
                     f"{'yes' if t['target_tensorstore_met'] else 'no'} | "
                     f"{_f(t['zarrflow_vs_curl64'], '.2f')} | "
                     f"{'yes' if t['target_80pct_curl_met'] else 'no'} |")
    lines += ["", "## zarrflow: requests in flight vs throughput (chunked, full read)", "",
              "| max_in_flight | io threads | max in flight seen | stored GB/s | decoded GB/s | "
              "wall s (min–max) | requests | retries | client core-s/GB | server core-s/GB | "
              "÷ curl64 | TCP events (all runs) |",
              "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for m in results["measurements"]:
        if m["read"] != "sweep":
            continue
        lines.append(f"| {m['params']['max_in_flight']} | {m['io_threads']} | "
                     f"{m['max_in_flight_observed']} | {m['stored_GBps']:.3f} | "
                     f"{m['decoded_GBps']:.3f} | {m['wall_s']:.2f} ({min(m['walls_s']):.2f}–"
                     f"{max(m['walls_s']):.2f}) | {m['requests']:.0f} | {m['retries']} | "
                     f"{m['client_core_s_per_GB']:.2f} | {m['server_core_s_per_GB']:.2f} | "
                     f"{_f(m['vs_curl64'], '.2f')} | {_tcp(m)} |")
    notes = [f"- {m['layout']}/{m['read']}/{m['reader']}: {m['note']}"
             for m in results["measurements"] if m.get("note")]
    notes += [f"- {m['layout']}/{m['read']}/{m['reader']}: server answered errors "
              f"{m['server_errors']}" for m in results["measurements"] if m.get("server_errors")]
    methods = sorted({f"- {m['layout']}/{m['read']}/{m['reader']}: "
                      + ", ".join(f"{k} {c}" for k, c in sorted(m["requests_by_method"].items()))
                      for m in results["measurements"] if m["read"] != "sweep"})
    lines += ["", "## Requests by method (first timed run)", ""] + methods
    lines += ["", "## Host noise during the timed runs", "",
              "Kernel TCP events on loopback (system-wide TcpExt counters, summed over the timed "
              "runs; a SYN retransmit or listen overflow is a ~1 s connect stall), CPU time stolen "
              "by the hypervisor, CPU used by other processes on the host during a run (median, "
              "max; /proc/stat busy time minus this process, its children and the server; "
              "±0.02 s of tick rounding), and this process's median system CPU per run.", "",
              "| layout | read | reader | TCP events | steal s | other CPU s/run (max) | "
              "client sys s/run |",
              "|---|---|---|---|---:|---|---:|"]
    for m in results["measurements"]:
        lines.append(f"| {m['layout']} | {m['read']} | {m['reader']} | {_tcp(m)} | "
                     f"{_f(m.get('steal_s'), '.2f')} | {_f(m.get('other_cpu_s'), '.2f')} "
                     f"({_f(m.get('other_cpu_s_max'), '.2f')}) | "
                     f"{_f(m.get('client_sys_s'), '.2f')} |")
    if notes:
        lines += ["", "## Notes", ""] + notes
    if results["unavailable"]:
        lines += ["", "## Not measured", ""]
        lines += [f"- {k}: unavailable: {why}" for k, why in results["unavailable"].items()]
    lines += ["", "## Settings", ""]
    lines += [f"- {k}: {s}" for k, s in results["settings"].items()]
    b, t = results["zarrflow_build"], results["timing_s"]
    lines += ["", "## Host", "",
              f"- {results['cores_visible']} cores ({results['cpu']}); {results['pinning']}",
              f"- server: {results['server'].get('kind')}; "
              f"MOTO_S3_DEFAULT_KEY_BUFFER_SIZE={MOTO_BUFFER} (objects served from memory)",
              f"- date {results['date']}; host {results['host']}",
              f"- zarrflow build: commit {b.get('commit')}"
              f"{' (+ uncommitted cpp/python changes)' if b.get('cpp_or_python_dirty') else ''}"
              f", _core sha256 {b['core_sha256']} (built {b['core_mtime']})",
              f"- versions: zarrflow {v['zarrflow']}, moto {v['moto']}, werkzeug {v['werkzeug']}, "
              f"tensorstore {v['tensorstore']}, zarr {v['zarr']}, obstore {v['obstore']}, "
              f"s3fs {v['s3fs']} (aiobotocore {v['aiobotocore']}, botocore {v['botocore']}), "
              f"numpy {v['numpy']}, Python {v['python']}",
              f"- {v['curl']}",
              f"- run time: {t['total']:.0f} s (preparing the local stores {t['prepare']:.0f} s, "
              f"upload {t['upload']:.0f} s)"]
    return "\n".join(lines) + "\n"


def plot(results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ms = [m for m in results["measurements"] if m["read"] != "sweep"
          and not m["reader"].startswith("curl")]
    groups = list(dict.fromkeys((m["layout"], m["read"]) for m in ms))
    readers = list(dict.fromkeys(m["reader"] for m in ms))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 6), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / len(readers)
    for k, reader in enumerate(readers):
        xs, ys = [], []
        for g, (lay, read) in enumerate(groups):
            m = find(results, lay, read, reader)
            if m:
                xs.append(g + (k - (len(readers) - 1) / 2) * width)
                ys.append(m["stored_GBps"])
        ax.bar(xs, ys, width, label=reader)
    for g, (lay, read) in enumerate(groups):
        if read != "full":   # the ceiling is for reading every object whole
            continue
        for par, style in ((64, "-"), (16, ":")):
            c = find(results, lay, "full", f"curl -P {par}")
            if c:
                ax.hlines(c["stored_GBps"], g - 0.45, g + 0.45, colors="k", linestyles=style,
                          label=f"curl -P {par} (raw GET ceiling)" if lay == "chunked" else None)
        c = find(results, lay, "full", "curl -P 64")
        if c:
            ax.hlines(0.8 * c["stored_GBps"], g - 0.45, g + 0.45, colors="grey",
                      linestyles="--", label="80 % of curl -P 64" if lay == "chunked" else None)
    ax.set_xticks(range(len(groups)), [f"{lay}\n{read}" for lay, read in groups])
    ax.set_ylabel("stored (compressed) GB/s")
    ax.set_title(f"moto S3 on loopback, {results['decoded_bytes'] / 1e6:.0f} MB float32, "
                 f"{results['cores_visible']} cores")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    sw = [m for m in results["measurements"] if m["read"] == "sweep"]
    if sw:
        xs = [m["params"]["max_in_flight"] for m in sw]
        bx.plot(xs, [m["stored_GBps"] for m in sw], "o-", label="stored GB/s")
        bx.plot(xs, [m["decoded_GBps"] for m in sw], "s--", label="decoded GB/s")
        c = find(results, "chunked", "full", "curl -P 64")
        if c:
            bx.axhline(c["stored_GBps"], color="k", label="curl -P 64 (stored)")
        bx.set_xscale("log", base=2)
        bx.set_xticks(xs, [str(x) for x in xs])
        bx.set_ylim(bottom=0)
        bx.set_xlabel("zarrflow max_in_flight")
        bx.set_ylabel("GB/s")
        bx.set_title("zarrflow, chunked store: throughput vs requests in flight")
        bx.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        say(f"bench_remote: FAILED: {e}")
        sys.exit(1)
