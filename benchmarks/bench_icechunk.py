"""Icechunk repositories: zarrflow (CPU, and into GPU memory) against zarr-python + icechunk at the
same thread count, from local disk and from a loopback S3 server, and the time from opening a
repository to the first chunk of a 1M-chunk array.

    python benchmarks/bench_icechunk.py --gb 0.1 --out /tmp/ic          # small, CPU only
    python benchmarks/bench_icechunk.py --gb 2 --s3 --gpu --out $OUT    # a GPU host
    python benchmarks/bench_icechunk.py --render $OUT/bench_icechunk.json   # table + plot again

What it does, in one process:
  1. writes, with whatever `icechunk` is importable (1.x writes spec 1, 2.x spec 2), a repository
     holding one (time, 721, 1440) float32 array "t2m" of zstd (level 3) chunks (1, 721, 1440),
     --gb decoded (smooth fields plus noise, which zstd compresses about 1.3x), and
     a repository holding a (--chunks-open,) float32 array of that many virtual chunk references
     (4-byte ranges of one local file). Both are kept in --work and reused when they match.
  2. reads "t2m" whole with each reader, from the repository's directory and, with --s3, over
     S3 from a loopback endpoint serving that directory: tests/servers/s3_files_server.py (a
     stdlib S3 endpoint in processes of its own, --s3-processes of them) or, with
     --s3-server nginx, tests/servers/s3_nginx_server.py (nginx answering object GETs in
     --s3-processes worker processes, the stdlib server behind it for lists):
       zarrflow            zarrflow.open(..., threads=N)["t2m"][...]          -> NumPy
       zarr-python         zarr.open_array(icechunk session store)[...]      -> NumPy
                           (async.concurrency = threading.max_workers = N)
     and with --gpu (torch and CUDA needed):
       zarrflow-gpu        .read(device="cuda"): compressed bytes to the GPU, decoded there
                           -> torch.from_dlpack
       zarr-python->cuda   the zarr-python read, then torch.from_numpy(x).cuda()
     N = --threads for every reader; over S3 also the requests in flight (zarrflow's
     max_in_flight, zarr's async.concurrency). icechunk's own Rust runtime sizes its thread pool
     itself. Every reader's first (warm-up) result is compared bit for bit with zarr-python's
     local read; then --repeat timed rounds run every reader once each (the order rotated per
     round), and the median is reported. Local reads come from the page cache (the repository
     was just written or read).
     Over S3 it then fetches the stored chunks alone (raw GETs, no decoding) from the same
     server with Python threads: a lower bound of what the server delivers (with the stdlib
     server, the bound of every reader there).
  3. opens the 1M-chunk repository and reads its first chunk (refs -> snapshot -> manifest ->
     chunk), max(2 * --repeat + 1, 7) times in this process, the first one reported separately
     (nothing of the repository cached in the process yet, its files in the page cache), with
     the process CPU time of each; then times the floor of an open: its largest manifest's zstd
     payload decompressed by numcodecs' Zstd into memory already mapped (best and median of 8).

Progress goes to stderr; results to <out>/bench_icechunk.json, .md and .png (the plot when
matplotlib is importable; --render draws it elsewhere from the JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
for _name in ("ICECHUNK_LOG", "RUST_LOG"):  # icechunk warns about local storage on every open
    os.environ[_name] = os.environ.get(_name) or "error"

LAT, LON = 721, 1440
BUCKET, READ_REPO, OPEN_REPO = "bench", "read", "open"


def say(msg: str) -> None:
    print(f"[bench_icechunk {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- repositories ---------------------------------------------------------------------------

def field(t: int, rng: np.random.Generator) -> np.ndarray:
    y, x = np.meshgrid(np.linspace(-3, 3, LAT, dtype="float32"),
                       np.linspace(-6, 6, LON, dtype="float32"), indexing="ij")
    smooth = 280 + 10 * np.sin(y + t / 5) * np.cos(x - t / 7)
    return (smooth + rng.normal(0, 0.05, (LAT, LON)).astype("float32")).astype("float32")


def make_read_repo(path: Path, nt: int, threads: int) -> None:
    import icechunk as ic
    import zarr

    zarr.config.set({"async.concurrency": max(threads, 4), "threading.max_workers": threads})
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)))
    session = repo.writable_session("main")
    a = zarr.create_array(store=session.store, name="t2m", shape=(nt, LAT, LON),
                          chunks=(1, LAT, LON), dtype="float32",
                          compressors=zarr.codecs.ZstdCodec(level=3))
    rng = np.random.default_rng(0)
    t0, batch, last = time.perf_counter(), 16, 0.0
    for start in range(0, nt, batch):
        stop = min(start + batch, nt)
        a[start:stop] = np.stack([field(t, rng) for t in range(start, stop)])
        now = time.perf_counter() - t0
        if now - last > 10 or stop == nt:
            last = now
            say(f"writing {path.name}: {stop}/{nt} fields "
                f"({stop * LAT * LON * 4 / 1e9:.2f} GB decoded) in {now:.0f} s")
    session.commit("bench")


def make_open_repo(path: Path, n: int, target: Path) -> None:
    import icechunk as ic
    import zarr

    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(np.arange(16, dtype="float32").tobytes())
    prefix = f"file://{target.parent}/"
    cfg = ic.RepositoryConfig.default()
    cfg.set_virtual_chunk_container(
        ic.VirtualChunkContainer(prefix, ic.local_filesystem_store(str(target.parent))))
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)), config=cfg,
                                authorize_virtual_chunk_access={prefix: None})
    session = repo.writable_session("main")
    zarr.create_array(store=session.store, name="a", shape=(n,), chunks=(1,), dtype="float32",
                      compressors=None)
    loc = f"{prefix}{target.name}"
    specs = [ic.VirtualChunkSpec(index=[i], location=loc, offset=4 * (i % 16), length=4)
             for i in range(n)]
    session.store.set_virtual_refs("a", specs, validate_containers=False)
    session.commit(f"{n} virtual chunks")


def ensure_repo(path: Path, spec: dict, make: Callable[[], None]) -> dict:
    """Writes the repository unless `path` holds one made with the same `spec` (a sidecar JSON)."""
    import icechunk

    spec = dict(spec, icechunk=icechunk.__version__)
    sidecar = path.with_suffix(".json")
    if path.exists() and sidecar.exists() and json.loads(sidecar.read_text()) == spec:
        say(f"reusing {path}")
        return spec
    if path.exists():
        import shutil

        shutil.rmtree(path)
    t0 = time.perf_counter()
    make()
    say(f"wrote {path} in {time.perf_counter() - t0:.1f} s")
    sidecar.write_text(json.dumps(spec))
    return spec


def repo_facts(path: Path) -> dict:
    from zarrflow import _core

    repo = _core.open_icechunk_repository(_core.open_file_store(str(path)))
    manifests = sorted((p.stat().st_size for p in (path / "manifests").iterdir()), reverse=True)
    stored = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return {"spec_version": repo.spec_version, "manifests": len(manifests),
            "largest_manifest_bytes": manifests[0] if manifests else 0, "stored_bytes": stored}


# --- readers --------------------------------------------------------------------------------

class Readers:
    """The read functions, each returning what it read (NumPy array or torch tensor)."""

    def __init__(self, repo: Path, threads: int, s3: dict | None):
        self.repo, self.threads, self.s3 = repo, threads, s3

    def _url_and_options(self, where: str) -> tuple[str, dict | None]:
        if where == "local":
            return str(self.repo), None
        s3 = self.s3
        return (f"s3://{BUCKET}/{READ_REPO}",
                dict(endpoint_url=s3["endpoint"], key="bench", secret="bench", region="us-east-1",
                     max_in_flight=self.threads))

    def zarrflow(self, where: str) -> Callable[[], Any]:
        import zarrflow

        url, opts = self._url_and_options(where)
        return lambda: zarrflow.open(url, threads=self.threads, storage_options=opts)["t2m"][...]

    def zarrflow_gpu(self, where: str) -> Callable[[], Any]:
        import torch
        import zarrflow

        url, opts = self._url_and_options(where)

        def read():
            arr = zarrflow.open(url, threads=self.threads, storage_options=opts)["t2m"]
            out = torch.from_dlpack(arr.read(device="cuda"))
            self.last_gpu_report = getattr(arr, "last_read_report", None)
            return out
        return read

    def _zarr_python_array(self, where: str):
        import icechunk as ic
        import zarr

        zarr.config.set({"async.concurrency": self.threads, "threading.max_workers": self.threads})
        if where == "local":
            storage = ic.local_filesystem_storage(str(self.repo))
        else:
            storage = ic.s3_storage(bucket=BUCKET, prefix=READ_REPO, region="us-east-1",
                                    endpoint_url=self.s3["endpoint"], allow_http=True,
                                    access_key_id="bench", secret_access_key="bench",
                                    force_path_style=True)
        repo = ic.Repository.open(storage)
        return zarr.open_array(repo.readonly_session(branch="main").store, path="t2m", mode="r")

    def zarr_python(self, where: str) -> Callable[[], Any]:
        return lambda: self._zarr_python_array(where)[...]

    def zarr_python_cuda(self, where: str) -> Callable[[], Any]:
        import torch

        return lambda: torch.from_numpy(self._zarr_python_array(where)[...]).cuda()


def same_bits(x: Any, ref: np.ndarray) -> bool:
    if isinstance(x, np.ndarray):
        return x.shape == ref.shape and np.array_equal(x.view(np.uint32), ref.view(np.uint32))
    import torch

    t = x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)
    return (t.device.type == "cuda" and tuple(t.shape) == ref.shape
            and bool(torch.equal(t.view(torch.int32),
                                 torch.from_numpy(ref.view(np.int32)).to(t.device))))


def run_reads(readers: Readers, places: list[str], gpu: bool, repeat: int, nbytes: int,
              stored: int, ref: np.ndarray) -> list[dict]:
    sync = (lambda: None)
    if gpu:
        import torch

        sync = torch.cuda.synchronize
    plan = []
    for where in places:
        plan += [("zarrflow", where, readers.zarrflow(where)),
                 ("zarr-python", where, readers.zarr_python(where))]
        if gpu:
            plan += [("zarrflow-gpu", where, readers.zarrflow_gpu(where)),
                     ("zarr-python->cuda", where, readers.zarr_python_cuda(where))]
    rows = {(name, where): {"reader": name, "storage": where, "seconds": []}
            for name, where, _ in plan}
    for name, where, fn in plan:  # warm-up and check
        say(f"warm-up and check: {name} ({where})")
        t0 = time.perf_counter()
        x = fn()
        sync()
        rows[(name, where)]["warmup_seconds"] = round(time.perf_counter() - t0, 4)
        if not same_bits(x, ref):
            raise SystemExit(f"{name} ({where}) read something else than zarr-python (local)")
        del x
        if name == "zarrflow-gpu" and getattr(readers, "last_gpu_report", None):
            rep = readers.last_gpu_report
            rows[(name, where)]["gpu_report"] = {k: v for k, v in rep.items()
                                                 if isinstance(v, (int, float, str))}
    for r in range(repeat):
        order = plan[r % len(plan):] + plan[:r % len(plan)]
        for name, where, fn in order:
            sync()
            c0, t0 = time.process_time(), time.perf_counter()
            x = fn()
            sync()
            rows[(name, where)]["seconds"].append(round(time.perf_counter() - t0, 4))
            rows[(name, where)].setdefault("cpu_seconds", []).append(
                round(time.process_time() - c0, 3))
            del x
        say(f"round {r + 1}/{repeat}: " + ", ".join(
            f"{n} ({w}) {rows[(n, w)]['seconds'][-1]:.2f} s" for n, w, _ in plan))
    out = []
    for row in rows.values():
        med = statistics.median(row["seconds"])
        row.update(median_seconds=med, decoded_GBps=round(nbytes / med / 1e9, 3),
                   stored_GBps=round(stored / med / 1e9, 3))
        out.append(row)
    for row in out:  # speed-ups against zarr-python on the same storage
        base = "zarr-python->cuda" if row["reader"] == "zarrflow-gpu" else "zarr-python"
        peer = rows.get((base, row["storage"]))
        if row["reader"].startswith("zarrflow") and peer:
            row[f"speedup_vs_{base}"] = round(peer["median_seconds"] / row["median_seconds"], 2)
    return out


def measure_open(repo: Path, prefix: str, repeat: int) -> dict:
    import zarrflow

    walls, cpus = [], []
    for _ in range(max(2 * repeat + 1, 7)):
        c0, t0 = time.process_time(), time.perf_counter()
        g = zarrflow.open(repo, virtual_chunk_containers=[prefix])
        value = g["a"][0]
        walls.append((time.perf_counter() - t0) * 1e3)
        cpus.append((time.process_time() - c0) * 1e3)
        if value != 0.0:
            raise SystemExit(f"the first chunk of {repo} holds {value}, expected 0.0")
    from zarrflow import _core
    from zarrflow._icechunk import open_repository

    store = open_repository(str(repo), _core.open_file_store(str(repo)), None, {prefix: None})
    store.get("a/c/0")
    loaded = store.manifests_loaded
    return {"first_ms": round(walls[0], 1), "first_cpu_ms": round(cpus[0], 1),
            "median_ms": round(statistics.median(walls[1:]), 1),
            "median_cpu_ms": round(statistics.median(cpus[1:]), 1),
            "all_ms": [round(w, 1) for w in walls], "all_cpu_ms": [round(c, 1) for c in cpus],
            "manifests_read_for_the_first_chunk": loaded,
            **manifest_decompression(repo)}


ICECHUNK_HEADER_BYTES = 39  # magic, implementation name, spec version, file type, compression


def manifest_decompression(repo: Path, rounds: int = 8) -> dict:
    """The largest manifest's zstd payload decompressed alone, into memory already mapped: what
    one core needs for it before any chunk reference can be looked up (numcodecs' Zstd; {} where
    numcodecs is not installed)."""
    try:
        from numcodecs import Zstd
    except ImportError:
        return {}
    path = max((repo / "manifests").iterdir(), key=lambda p: p.stat().st_size)
    raw = path.read_bytes()
    if raw[ICECHUNK_HEADER_BYTES - 1] != 1:  # not zstd-compressed
        return {}
    body, codec = raw[ICECHUNK_HEADER_BYTES:], Zstd()
    out = np.ones(len(codec.decode(body)), dtype=np.uint8)  # every page mapped
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        codec.decode(body, out=out)
        times.append((time.perf_counter() - t0) * 1e3)
    return {"manifest_decompress_best_ms": round(min(times), 1),
            "manifest_decompress_median_ms": round(statistics.median(times), 1),
            "manifest_decoded_bytes": int(out.size)}


# --- output ---------------------------------------------------------------------------------

def measure_raw_gets(readers: Readers, repeat: int) -> dict:
    """What the S3 server delivers of the stored chunks alone, without decoding: every object
    under the read repository's chunks/ fetched whole with zarrflow's HTTP client from
    `readers.threads` Python threads (each fetch releases the GIL; its body is then copied once
    into a bytes object, so this is a lower bound of the server's rate), `repeat` rounds, the
    median. With the stdlib server it bounds the readers above; nginx serves faster than this
    Python client takes, and a reader may then pass it."""
    from concurrent.futures import ThreadPoolExecutor

    from zarrflow import _remote

    url, opts = readers._url_and_options("s3")
    store = _remote.open_remote(url, opts)
    keys = [k for k, _ in store.list("chunks")]
    seconds, nbytes = [], 0
    with ThreadPoolExecutor(readers.threads) as pool:
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            nbytes = sum(pool.map(lambda k: len(store.get(k)), keys))
            seconds.append(time.perf_counter() - t0)
    med = statistics.median(seconds)
    return {"objects": len(keys), "bytes": nbytes, "seconds": [round(x, 4) for x in seconds],
            "median_seconds": round(med, 4), "stored_GBps": round(nbytes / med / 1e9, 3)}


def markdown(res: dict) -> str:
    env = res["environment"]
    lines = [f"# Icechunk read benchmark ({env['host']})", "",
             f"{env['cpus']} CPUs, {res['threads']} threads per reader; GPU: {env.get('gpu', 'none')}; "
             f"icechunk {env['icechunk']} (spec {res['read_repo']['spec_version']}), "
             f"zarr {env['zarr']}, Python {env['python']}; load average {env['load_before']} "
             f"before, {env['load_after']} after.", "",
             f"Array t2m: {res['decoded_bytes'] / 1e9:.2f} GB decoded, "
             f"{res['read_repo']['stored_bytes'] / 1e9:.2f} GB stored, "
             f"{res['read_repo']['chunks']} zstd chunks of (1, 721, 1440); median of "
             f"{res['repeat']} rounds.", "",
             "| storage | reader | median s | decoded GB/s | stored GB/s | speed-up |",
             "|---|---|---:|---:|---:|---:|"]
    for row in res["reads"]:
        speed = next((f"{v}x vs {k[len('speedup_vs_'):]}" for k, v in row.items()
                      if k.startswith("speedup_vs_")), "")
        lines.append(f"| {row['storage']} | {row['reader']} | {row['median_seconds']:.3f} | "
                     f"{row['decoded_GBps']:.2f} | {row['stored_GBps']:.2f} | {speed} |")
    g = res.get("s3_raw_gets")
    if g:
        lines += ["", f"The S3 server ({res.get('s3_server', 'stdlib')}, "
                      f"{res.get('s3_processes', 1)} process(es)) delivers the "
                      f"{g['objects']} stored chunks alone (raw GETs, {res['threads']} threads, no "
                      f"decoding, zarrflow's HTTP client from Python threads) at "
                      f"{g['stored_GBps']:.2f} GB/s (median of {len(g['seconds'])}): a lower "
                      f"bound of what the server delivers."]
    o = res.get("open")
    if o:
        lines += ["", f"Open to the first chunk of a {o['chunks']}-chunk array (spec "
                      f"{o['spec_version']}, {o['manifests']} manifest(s), largest "
                      f"{o['largest_manifest_bytes'] / 1e6:.1f} MB stored): first open "
                      f"{o['first_ms']} ms ({o['first_cpu_ms']} ms CPU), then median "
                      f"{o['median_ms']} ms ({o['median_cpu_ms']} ms CPU) over "
                      f"{len(o['all_ms']) - 1} opens; manifests read: "
                      f"{o['manifests_read_for_the_first_chunk']}."]
        if "manifest_decompress_best_ms" in o:
            lines[-1] += (f" The manifest's payload decompressed alone ({o['manifest_decoded_bytes'] / 1e6:.1f}"
                          f" MB, memory already mapped): {o['manifest_decompress_best_ms']} ms best, "
                          f"{o['manifest_decompress_median_ms']} ms median of 8.")
    return "\n".join(lines) + "\n"


def plot(res: dict, path: Path) -> bool:
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    places = list(dict.fromkeys(r["storage"] for r in res["reads"]))
    readers = list(dict.fromkeys(r["reader"] for r in res["reads"]))
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(readers)
    for i, name in enumerate(readers):
        vals = [next((r["decoded_GBps"] for r in res["reads"]
                      if r["reader"] == name and r["storage"] == p), 0) for p in places]
        ax.bar([j + i * width for j in range(len(places))], vals, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(places))], places)
    ax.set_ylabel("decoded GB/s (median)")
    env = res["environment"]
    ax.set_title(f"Icechunk, {res['decoded_bytes'] / 1e9:.1f} GB, {res['threads']} threads, "
                 f"{env['host']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def write_outputs(res: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_icechunk.json").write_text(json.dumps(res, indent=1))
    (out / "bench_icechunk.md").write_text(markdown(res))
    drawn = plot(res, out / "bench_icechunk.png")
    say(f"wrote {out}/bench_icechunk.json, .md" + (", .png" if drawn else
                                                  " (no plot: matplotlib is not importable)"))


# --- main -----------------------------------------------------------------------------------

def environment(gpu: bool) -> dict:
    import icechunk
    import zarr

    env = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
           "numpy": np.__version__, "zarr": zarr.__version__, "icechunk": icechunk.__version__,
           "load_before": round(os.getloadavg()[0], 2)}
    if gpu:
        import torch

        env.update(gpu=torch.cuda.get_device_name(), torch=torch.__version__)
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gb", type=float, default=0.25, help="decoded size of t2m (default 0.25)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--chunks-open", type=int, default=1_000_000)
    p.add_argument("--s3", action="store_true", help="also read over S3 (loopback server)")
    p.add_argument("--s3-processes", type=int, default=1, help="processes of the loopback S3 "
                   "server (default 1; one Python process's GIL bounds what it serves), or "
                   "nginx's worker processes")
    p.add_argument("--s3-server", choices=["stdlib", "nginx"], default="stdlib",
                   help="the loopback S3 server: stdlib (s3_files_server.py) or nginx in front "
                        "of it (s3_nginx_server.py; nginx from $NGINX or PATH)")
    p.add_argument("--gpu", action="store_true", help="also read into GPU memory (torch, CUDA)")
    p.add_argument("--work", type=Path, help="where the repositories go (default: a temporary "
                   "directory); kept and reused")
    p.add_argument("--out", type=Path, help="where the results go (default: <work>/results)")
    p.add_argument("--render", type=Path, metavar="JSON", help="only write the table and plot "
                   "of a saved bench_icechunk.json, next to it")
    args = p.parse_args(argv)
    if args.render:
        write_outputs(json.loads(args.render.read_text()), args.render.parent)
        return 0
    sys.path.insert(0, str(ROOT / "tests"))
    import zarrflow

    work = args.work or Path(tempfile.mkdtemp(prefix="zarrflow-bench-icechunk-"))
    bucket = work / "s3" / BUCKET
    bucket.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {"threads": args.threads, "repeat": args.repeat,
                           "environment": environment(args.gpu)}
    say(f"work directory {work}; {args.threads} threads; icechunk "
        f"{res['environment']['icechunk']}")

    nt = max(1, round(args.gb * 1e9 / (LAT * LON * 4)))
    repo = bucket / READ_REPO
    ensure_repo(repo, {"fields": nt}, lambda: make_read_repo(repo, nt, args.threads))
    res["read_repo"] = dict(repo_facts(repo), chunks=nt)
    nbytes = nt * LAT * LON * 4
    res["decoded_bytes"] = nbytes
    say(f"reference read (zarr-python + icechunk, local) of {nbytes / 1e9:.2f} GB")
    readers = Readers(repo, args.threads, None)
    ref = readers.zarr_python("local")()
    places = ["local"]
    server = None
    if args.s3:
        if args.s3_server == "nginx":
            from servers.s3_nginx_server import S3NginxServer

            server = S3NginxServer(work / "s3", workers=args.s3_processes)
        else:
            from servers.s3_files_server import S3FilesServer

            server = S3FilesServer(work / "s3", processes=args.s3_processes)
        readers.s3 = {"endpoint": server.endpoint}
        res["s3_processes"] = args.s3_processes
        res["s3_server"] = args.s3_server
        places.append("s3")
        say(f"S3 server ({args.s3_server}) at {server.endpoint} (pid {server.pid}, "
            f"{args.s3_processes} process(es)) serving {work / 's3'}")
    try:
        res["reads"] = run_reads(readers, places, args.gpu, args.repeat, nbytes,
                                 res["read_repo"]["stored_bytes"], ref)
        if server is not None:
            say("raw GETs of the stored chunks from the S3 server")
            res["s3_raw_gets"] = measure_raw_gets(readers, args.repeat)
    finally:
        if server is not None:
            server.stop()
    del ref

    big = work / OPEN_REPO
    target = work / "target" / "values.bin"
    say(f"open benchmark: a {args.chunks_open}-chunk repository")
    ensure_repo(big, {"chunks": args.chunks_open},
                lambda: make_open_repo(big, args.chunks_open, target))
    res["open"] = dict(measure_open(big, f"file://{target.parent}/", args.repeat),
                       chunks=args.chunks_open, **repo_facts(big))
    res["environment"]["load_after"] = round(os.getloadavg()[0], 2)
    res["environment"]["zarrflow"] = getattr(zarrflow, "__version__", "")
    write_outputs(res, args.out or work / "results")
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
