"""Icechunk repositories: zarrflow's CPU reader against zarr-python + icechunk, and the time from
opening a repository to the first chunk of a 1M-chunk array.

    python benchmarks/bench_icechunk.py --gb 0.25 --threads 2          # small, a laptop
    python benchmarks/bench_icechunk.py --gb 2 --threads 16 --s3       # + the loopback S3 server

Read: one (time, lat, lon) float32 array of zstd chunks (1, 721, 1440) written by icechunk (spec
1 with icechunk 1.x), read whole, best of --repeat, by zarrflow (threads=N) and zarr-python +
icechunk (zarr's async concurrency and thread pool set to N), both from the same repository on
local disk (and, with --s3, from moto's S3 server on loopback). Open: a (1_000_000,) array of
1M virtual chunk references in one manifest; the time of zarrflow.open(repo)["a"][0] (ref →
snapshot → manifest → chunk), median of --repeat runs in one process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("RUST_LOG", "error")


def make_read_repo(path: Path, gb: float) -> tuple[int, int]:
    import icechunk as ic
    import zarr

    lat, lon = 721, 1440
    nt = max(1, int(gb * 1e9 / (lat * lon * 4)))
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)))
    session = repo.writable_session("main")
    a = zarr.create_array(store=session.store, name="t2m", shape=(nt, lat, lon),
                          chunks=(1, lat, lon), dtype="float32",
                          compressors=zarr.codecs.ZstdCodec(level=3))
    y, x = np.meshgrid(np.linspace(-3, 3, lat), np.linspace(-6, 6, lon), indexing="ij")
    rng = np.random.default_rng(0)
    for t in range(nt):  # smooth fields with noise: compresses like reanalysis data (~1.5-3x)
        field = 280 + 10 * np.sin(y + t / 5) * np.cos(x - t / 7)
        a[t] = (field + rng.normal(0, 0.05, (lat, lon))).astype("float32")
    session.commit("bench")
    return nt, nt * lat * lon * 4


def make_open_repo(path: Path, n: int, target: Path) -> None:
    import icechunk as ic
    import zarr

    target.write_bytes(np.arange(16, dtype="float32").tobytes())
    prefix = f"file://{target.parent}/"
    cfg = ic.RepositoryConfig.default()
    cfg.set_virtual_chunk_container(ic.VirtualChunkContainer(prefix,
                                                             ic.local_filesystem_store(str(target.parent))))
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)), config=cfg,
                                authorize_virtual_chunk_access={prefix: None})
    session = repo.writable_session("main")
    zarr.create_array(store=session.store, name="a", shape=(n,), chunks=(1,), dtype="float32",
                      compressors=None)
    loc = f"{prefix}{target.name}"
    specs = [ic.VirtualChunkSpec(index=[i], location=loc, offset=4 * (i % 16), length=4)
             for i in range(n)]
    session.store.set_virtual_refs("a", specs, validate_containers=False)
    session.commit("1M virtual chunks")


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def read_zarrflow(url: str, threads: int, options: dict | None) -> np.ndarray:
    import zarrflow

    return zarrflow.open(url, threads=threads, storage_options=options)["t2m"][...]


def read_zarr_python(repo_path: Path | None, threads: int, s3: dict | None) -> np.ndarray:
    import icechunk as ic
    import zarr

    zarr.config.set({"async.concurrency": threads, "threading.max_workers": threads})
    if s3 is None:
        storage = ic.local_filesystem_storage(str(repo_path))
    else:
        storage = ic.s3_storage(bucket=s3["bucket"], prefix=s3["prefix"], region="us-east-1",
                                endpoint_url=s3["endpoint_url"], allow_http=True,
                                access_key_id=s3["key"], secret_access_key=s3["secret"],
                                force_path_style=True)
    repo = ic.Repository.open(storage)
    return zarr.open_array(repo.readonly_session(branch="main").store, path="t2m", mode="r")[...]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gb", type=float, default=0.25, help="decoded size of the read array")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--chunks-open", type=int, default=1_000_000)
    p.add_argument("--s3", action="store_true", help="also read from moto's S3 server")
    p.add_argument("--dir", help="work directory (default: a temporary one)")
    args = p.parse_args(argv)
    import zarrflow

    work = Path(args.dir or tempfile.mkdtemp(prefix="zarrflow-bench-icechunk-"))
    results: dict = {"threads": args.threads, "cpus": os.cpu_count()}
    repo = work / "read"
    if not repo.exists():
        nt, nbytes = make_read_repo(repo, args.gb)
    else:
        nbytes = zarrflow.open(repo)["t2m"].nbytes
    results["decoded_bytes"] = nbytes
    a = read_zarrflow(str(repo), args.threads, None)
    b = read_zarr_python(repo, args.threads, None)
    assert a.tobytes() == b.tobytes(), "zarrflow and zarr-python disagree"
    del b
    for name, fn in (("zarrflow_local", lambda: read_zarrflow(str(repo), args.threads, None)),
                     ("zarr_python_local", lambda: read_zarr_python(repo, args.threads, None))):
        t = best(fn, args.repeat)
        results[name] = {"seconds": round(t, 4), "GB/s": round(nbytes / t / 1e9, 3)}
        print(f"{name:22s} {t:8.3f} s  {nbytes / t / 1e9:7.3f} GB/s", flush=True)
    if args.s3:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from servers.s3_server import MotoS3Server

        with MotoS3Server() as srv:
            srv.create_bucket("bench")
            srv.upload_dir(repo, "bench", "read")
            opts = dict(endpoint_url=srv.endpoint, key=srv.access_key, secret=srv.secret_key)
            s3 = dict(bucket="bench", prefix="read", endpoint_url=srv.endpoint,
                      key=srv.access_key, secret=srv.secret_key)
            for name, fn in (
                    ("zarrflow_s3", lambda: read_zarrflow("s3://bench/read", args.threads, opts)),
                    ("zarr_python_s3", lambda: read_zarr_python(None, args.threads, s3))):
                t = best(fn, args.repeat)
                results[name] = {"seconds": round(t, 4), "GB/s": round(nbytes / t / 1e9, 3)}
                print(f"{name:22s} {t:8.3f} s  {nbytes / t / 1e9:7.3f} GB/s", flush=True)
    big = work / "open"
    if not big.exists():
        t0 = time.perf_counter()
        (work / "target").mkdir(exist_ok=True)
        make_open_repo(big, args.chunks_open, work / "target" / "values.bin")
        print(f"wrote the {args.chunks_open}-chunk repository in {time.perf_counter() - t0:.1f} s")
    prefix = f"file://{work / 'target'}/"
    opens = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        value = zarrflow.open(big, virtual_chunk_containers=[prefix])["a"][0]
        opens.append(time.perf_counter() - t0)
        assert value == 0.0
    results["open_to_first_chunk_ms"] = {"chunks": args.chunks_open,
                                         "median": round(statistics.median(opens) * 1e3, 1),
                                         "all": [round(x * 1e3, 1) for x in opens]}
    print(f"open → first chunk of a {args.chunks_open}-chunk array: median "
          f"{statistics.median(opens) * 1e3:.1f} ms ({', '.join(f'{x * 1e3:.1f}' for x in opens)})")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
