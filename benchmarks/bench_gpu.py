"""GPU read benchmark, the same-run peer read suite: decoded GB/s landing in device memory, per
codec and reader, warm and cold page cache, with CPU cost and the hardware ceilings.

Same ERA5-like data as bench_read.py: a float32 (N, 721, 1440) array, one field per chunk,
written once per codec (tensorstore, Zarr v3; zarr-python for numcodecs LZ4, a Zarr v2 codec):
  raw, zstd-3, blosc-lz4-shuffle, blosc-zstd-bitshuffle, gzip-1, lz4, and sharded-zstd-3 (shards
  of 8 fields, inner chunks of one field, zstd level 3, crc32c index).
Readers, all ending with the decoded array in GPU memory (--readers picks some):
  zarrflow-gpu        arr.read(device="cuda"): compressed bytes to the GPU, decoded there
  zarrflow-cpu+copy   arr.read(out=pinned) on the CPU, then one pinned host-to-device copy
  tensorstore+copy    tensorstore read (new array), then torch.from_numpy(x).cuda()
  zarr-python         zarr 3 za[...] (CPU decode), then torch.from_numpy(x).cuda()
  zarr-python-gpu     zarr.config.enable_gpu(): CuPy buffers, za[...] is a CuPy array; where each
                      codec decodes (GPU or CPU) is read from the codec classes and recorded
  zarr-python+zarrs   codec_pipeline.path = zarrs.ZarrsCodecPipeline (strict: no silent fallback
                      to zarr-python's pipeline), then torch.from_numpy(x).cuda()
  kvikio-GDSStore     zarr.config.enable_gpu() on a kvikio.zarr.GDSStore: chunk files read with
                      kvikio (cuFile, or its POSIX compatibility mode) into CuPy buffers
The peers' packages beyond zarr and numcodecs, for a host without them (scripts/gpu_run.sh installs
every .whl-*/ directory): zarrs; kvikio-cu13 with libkvikio-cu13, rapids-logger, nvidia-cufile and
cuda-pathfinder (libkvikio loads the last three at import), all as cp312 wheels
(`pip download --no-deps --only-binary=:all: --python-version 3.12 ...`).
Every reader's result is checked bit-for-bit against zarrflow's CPU read before it is timed. A
reader that cannot be imported, opened, or fails, or reads different values, is recorded as
unavailable with the reason (exception type and message) and the run goes on.
Warm: page cache filled, median of --runs timed runs. Cold: every file of the store dropped from
the page cache (posix_fadvise DONTNEED) before each of --cold-runs runs. CPU cost: the process's
user + system time (getrusage) over a run / decoded GB (median over the runs). Thread counts are
the host's cores for every reader (--threads), and recorded.
Ceilings measured in the same run: pinned and pageable H2D bandwidth, O_DIRECT read bandwidth of
the raw store, the raw store read through cuFile / O_DIRECT / pinned staging, and per codec the
stage ceilings of zarrflow-gpu's warm read (benchmarks/ceilings.py): (a) staging, the chunks'
stored bytes read by --threads host threads into pinned memory (page cache warm); (b) pinned H2D;
(c) the GPU decode stage, the decode kernels' GPU time in as many warm reads on one read stream
(chunks already in device memory; no other batch's kernels beside them); (d) zarrflow-gpu end
to end; with d ÷ min(a × ratio, b × ratio, c) and its target.
The stage ceilings alone (about a minute on a 16-core H100 host, stores written once):

    python benchmarks/bench_gpu.py --readers zarrflow-gpu --name bench_ceilings \
        --codecs raw,zstd-3,blosc-lz4-shuffle,sharded-zstd-3 --runs 5 --cold-runs 1

(benchmarks/bench_ceilings.sh runs it with the loader's ceilings and the decode cost to a model.)
Writes NAME.json, NAME.md (rewritten after each codec, so a cut-off run leaves what it measured)
and NAME.png into --out (NAME: --name, default bench_gpu). --cpu-dry-run runs the CPU side without
a GPU (no torch): store writing, the CPU readers into NumPy with no copy to the GPU, and staging
into pageable memory.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import os
import platform
import resource
import statistics
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_read as br  # noqa: E402
import ceilings as stage_ceilings  # noqa: E402

import zarrflow  # noqa: E402

CODECS = dict(br.CODECS)
CODECS["gzip-1"] = [{"name": "gzip", "configuration": {"level": 1}}]
LZ4 = "lz4"
SHARDED = "sharded-zstd-3"
SHARD_FIELDS = 8
ALL_CODECS = list(CODECS) + [LZ4, SHARDED]

READERS = {
    "zarrflow-gpu": 'arr.read(device="cuda"): compressed bytes → pinned staging → one H2D copy per '
                    "batch → GPU decoders (zstd: nvCOMP's where loaded, else zarrflow's; "
                    "nvCOMP deflate; zarrflow's LZ4/Blosc kernels)",
    "zarrflow-cpu+copy": "arr.read(out=pinned) on the CPU threads, then one pinned H2D copy",
    "tensorstore+copy": "tensorstore read (new array), then torch.from_numpy(x).cuda() (pageable H2D)",
    "zarr-python": "zarr-python 3 za[...] (CPU decode, numcodecs), then torch.from_numpy(x).cuda()",
    "zarr-python-gpu": "zarr.config.enable_gpu(): CuPy buffers, za[...] returns a CuPy array; "
                       "decode on the GPU only for GPU codec classes (see 'decode on')",
    "zarr-python+zarrs": "zarr-python with codec_pipeline.path=zarrs.ZarrsCodecPipeline (strict), "
                         "then torch.from_numpy(x).cuda()",
    "kvikio-GDSStore": "zarr.config.enable_gpu() on kvikio.zarr.GDSStore: chunk files read by kvikio "
                       "(cuFile or POSIX compat mode) into CuPy buffers; codecs as zarr-python-gpu",
}
GPU_ONLY = {"zarrflow-gpu", "zarr-python-gpu", "kvikio-GDSStore"}
ZARRFLOW = {"zarrflow-gpu", "zarrflow-cpu+copy"}


class Unavailable(Exception):
    """A reader cannot run on this store; the message says why."""


def why(e: BaseException) -> str:
    """Exception type and message (and its cause's, where it was raised from one), on one line."""
    s = str(e) if isinstance(e, Unavailable) else f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    c = e.__cause__ or (e.__context__ if not str(e) else None)
    if c is not None:
        s += f" (from {type(c).__name__}: {c})"
    return " ".join(s.split())[:400]


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def drop_cache(path: Path) -> None:
    for f in path.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def write_lz4(path: Path, data: np.ndarray) -> None:
    import numcodecs
    import zarr

    a = zarr.create_array(str(path), shape=data.shape, chunks=(1,) + data.shape[1:], dtype="float32",
                          compressors=numcodecs.LZ4(), zarr_format=2, fill_value=0.0)
    for i in range(0, len(data), 16):
        a[i:i + 16] = data[i:i + 16]
    (path / ".complete").touch()


def write_sharded(path: Path, data: np.ndarray, threads: int) -> None:
    """Zarr v3 shards of SHARD_FIELDS fields, inner chunks of one field, zstd level 3 (tensorstore)."""
    import tensorstore as ts

    spec = br.ts_spec(path, "raw", threads, len(data))
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}] + br.CODECS["zstd-3"]
    spec["metadata"]["chunk_grid"]["configuration"]["chunk_shape"] = [SHARD_FIELDS, br.NLAT, br.NLON]
    spec["metadata"]["codecs"] = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, br.NLAT, br.NLON], "codecs": inner,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"}}]
    arr = ts.open(spec).result()
    step = 2 * SHARD_FIELDS
    for i in range(0, len(data), step):
        j = min(i + step, len(data))
        arr[i:j].write(data[i:j]).result()
    (path / ".complete").touch()


def store_path(data_dir: Path, n: int, codec: str) -> Path:
    return data_dir / f"era5_{n}x{br.NLAT}x{br.NLON}_{codec}.zarr"


def write_stores(data_dir: Path, n: int, codecs: list[str], threads: int,
                 failed: Callable[[str, str], None]) -> dict[str, Path]:
    """The store of each codec, of ``n`` fields (written once, reused while complete); a codec
    whose store cannot be written is passed to ``failed`` with the reason and left out."""
    paths: dict[str, Path] = {}
    fields = None
    for codec in codecs:
        path = store_path(data_dir, n, codec)
        if not (path / ".complete").exists():
            try:
                if fields is None:
                    fields = br.make_fields(n)
                if codec == LZ4:
                    write_lz4(path, fields)
                elif codec == SHARDED:
                    write_sharded(path, fields, threads)
                else:
                    br.CODECS[codec] = CODECS[codec]
                    br.write_store(path, codec, fields, threads)
            except Exception as e:  # noqa: BLE001 (e.g. zarr missing for the LZ4 store)
                failed(codec, f"store not written: {why(e)}")
                continue
        paths[codec] = path
    # Dirty pages of a store just written cannot be dropped from the page cache: flush them, or the
    # first "cold" runs read from memory (tensorstore syncs its writes; zarr-python does not).
    os.sync()
    return paths


def o_direct_read_gbps(path: Path, threads: int) -> float:
    files = sorted(f for f in path.rglob("*") if f.is_file() and f.stat().st_size >= 4096)
    drop_cache(path)
    block = 4 << 20

    def read(f: Path) -> int:
        fd = os.open(f, os.O_RDONLY | os.O_DIRECT)
        buf = np.empty(block + 4096, np.uint8)
        off = (-buf.ctypes.data) % 4096
        mv = memoryview(buf[off:off + block])
        total = 0
        try:
            while True:
                n = os.preadv(fd, [mv], total)
                total += n
                if n < block:
                    return total
        finally:
            os.close(fd)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        n = sum(ex.map(read, files))
    return n / 1e9 / (time.perf_counter() - t0)


def peer_versions() -> dict:
    return {name: br.peer_version(name) for name in
            ("zarr", "numcodecs", "zarrs", "kvikio-cu13", "libkvikio-cu13", "cupy-cuda13x", "cupy",
             "tensorstore", "torch", "numpy")}


def zarr_gpu_facts() -> dict:
    """What zarr.config.enable_gpu() sets in the installed zarr, and whether it has a GPU codec
    (zarr-python's nvCOMP zstd codec, zarr.codecs.gpu, imports the nvidia-nvcomp-cu13 package as
    nvidia.nvcomp; zarr 3.1.x has neither: every codec decodes on the CPU through numcodecs)."""
    import importlib.util

    def found(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False
    try:
        import zarr

        keys = ("buffer", "ndbuffer", "codecs.zstd", "codecs.blosc", "codecs.gzip")
        with zarr.config.enable_gpu():
            sets = {k: zarr.config.get(k, None) for k in keys}
    except Exception as e:  # noqa: BLE001
        return {"error": why(e)}
    return {"enable_gpu_sets": sets, "zarr.codecs.gpu": found("zarr.codecs.gpu"),
            "nvidia.nvcomp": found("nvidia.nvcomp"), "cupy": found("cupy")}


class Ctx:
    """What every reader shares: the GPU (or none, in a dry run), the reference result of the
    codec being measured, reused buffers."""

    def __init__(self, args, shape: tuple[int, ...]):
        self.args, self.threads, self.dry, self.shape = args, args.threads, args.cpu_dry_run, shape
        self.torch = None
        if not self.dry:
            import torch

            self.torch = torch
            self.pinned = torch.empty(shape, dtype=torch.float32, pin_memory=True)
            self.pinned_np = self.pinned.numpy()
            self.dev = torch.empty(shape, dtype=torch.float32, device="cuda")
        else:
            self.pinned_np = np.empty(shape, np.float32)
        self.ref = np.empty(shape, np.float32)   # zarrflow's CPU read of the current codec
        self.ref_dev = None

    def staging_buffer(self) -> np.ndarray:
        """The pinned buffer (pageable in a dry run) as bytes, for the staging ceiling."""
        return self.pinned_np.view(np.uint8).reshape(-1)

    def set_reference(self, arr) -> None:
        arr.read(out=self.ref)
        if not self.dry:
            self.ref_dev = self.torch.from_numpy(self.ref).cuda()

    def sync(self) -> None:
        if not self.dry:
            self.torch.cuda.synchronize()

    def to_gpu(self, x: np.ndarray):
        """The peers' one host-to-device copy (pageable memory, as a user would write it)."""
        return x if self.dry else self.torch.from_numpy(x).cuda()

    def check(self, x, gpu_result: bool) -> str | None:
        """None when ``x`` (NumPy, torch, CuPy or zarrflow.Tensor) equals the reference bit for bit
        and lives where it should; else what is wrong."""
        if isinstance(x, np.ndarray):
            if gpu_result:
                return "result is a NumPy array in host memory, not on the GPU"
            if x.shape != self.ref.shape or x.dtype != self.ref.dtype:
                return f"result has shape {x.shape} {x.dtype}, expected {self.ref.shape} float32"
            ok = np.array_equal(x.view(np.uint32), self.ref.view(np.uint32))
        else:
            torch = self.torch
            t = x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)
            if t.device.type != "cuda":
                return f"result is on {t.device}, not on the GPU"
            if tuple(t.shape) != self.shape or t.dtype != torch.float32:
                return f"result has shape {tuple(t.shape)} {t.dtype}, expected {self.shape} float32"
            ok = torch.equal(t.view(torch.int32), self.ref_dev.view(torch.int32))
        return None if ok else "values differ from zarrflow's CPU read"

    def timed(self, fn, runs: int, cold_path: Path | None) -> tuple[float, float, list[float], list[float]]:
        walls, cpus = [], []
        for _ in range(runs):
            if cold_path is not None:
                drop_cache(cold_path)
            self.sync()
            c0, t0 = cpu_s(), time.perf_counter()
            fn()
            self.sync()
            walls.append(time.perf_counter() - t0)
            cpus.append(cpu_s() - c0)
        return statistics.median(walls), statistics.median(cpus), walls, cpus


# --- readers: each returns (read function, info) or raises (-> unavailable) ------------------------

def zarr_decode_on(za) -> dict:
    """Where zarr-python decodes this array: from the classes its metadata resolved the codecs to
    (zarr-python's own and numcodecs' codecs run on the CPU; GPU codecs live in a module named
    *gpu* or call nvCOMP)."""
    md = za.metadata
    if md.zarr_format == 3:
        from zarr.abc.codec import BytesBytesCodec

        comp = [c for c in md.codecs if isinstance(c, BytesBytesCodec)]
    else:
        comp = [c for c in (md.compressor, *(md.filters or ())) if c is not None]
    classes = [f"{type(c).__module__}.{type(c).__qualname__}" for c in comp]
    on_gpu = [("gpu" in cls.lower() or "nvcomp" in cls.lower()) for cls in classes]
    where = ("none (uncompressed)" if not classes else "GPU" if all(on_gpu)
             else "CPU" if not any(on_gpu) else "mixed")
    return {"decode_on": where, "codec_classes": classes}


def r_zarrflow_gpu(ctx: Ctx, codec: str, path: Path):
    if ctx.dry:
        raise Unavailable("not run: --cpu-dry-run (no GPU)")
    arr = zarrflow.open_array(path)
    return (lambda: arr.read(device="cuda")), {"decode_on": "GPU (CPU for what the GPU cannot; "
                                                           "see the report)", "_arr": arr}


def r_zarrflow_cpu(ctx: Ctx, codec: str, path: Path):
    arr = zarrflow.open_array(path)
    if ctx.dry:
        return (lambda: arr.read(out=ctx.pinned_np)), {"decode_on": "CPU", "note": "no H2D (dry run)"}

    def fn():
        arr.read(out=ctx.pinned_np)
        return ctx.dev.copy_(ctx.pinned, non_blocking=True)
    return fn, {"decode_on": "CPU"}


def r_tensorstore(ctx: Ctx, codec: str, path: Path):
    import tensorstore as ts

    spec = br.ts_spec(path, codec, ctx.threads)
    if codec == LZ4:  # a Zarr v2 store: tensorstore's "zarr" (v2) driver
        spec["driver"] = "zarr"
    tsa = ts.open(spec).result()
    return (lambda: ctx.to_gpu(tsa.read().result())), {"decode_on": "CPU"}


def r_zarr_python(ctx: Ctx, codec: str, path: Path):
    import zarr

    za = zarr.open_array(str(path), mode="r")
    return (lambda: ctx.to_gpu(za[...])), zarr_decode_on(za)


def r_zarr_python_gpu(ctx: Ctx, codec: str, path: Path):
    if ctx.dry:
        raise Unavailable("not run: --cpu-dry-run (no GPU)")
    import zarr

    importlib.import_module("cupy")  # zarr's GPU buffers need it: say so here, not mid-read

    with zarr.config.enable_gpu():
        za = zarr.open_array(str(path), mode="r")

    def fn():
        with zarr.config.enable_gpu():
            return za[...]
    return fn, zarr_decode_on(za)


def r_zarrs(ctx: Ctx, codec: str, path: Path):
    import zarr

    importlib.import_module("zarrs")

    cfg = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}
    with zarr.config.set(cfg):
        za = zarr.open_array(str(path), mode="r")
    pipe = za._async_array.codec_pipeline
    if type(pipe).__name__ != "ZarrsCodecPipeline" or getattr(pipe, "impl", None) is None:
        raise Unavailable(f"zarrs pipeline not in use ({type(pipe).__name__})")

    def fn():
        with zarr.config.set(cfg):
            x = za[...]
        return ctx.to_gpu(x)
    return fn, {"decode_on": "CPU (zarrs, Rust)",
                "zarrs_config": {k: zarr.config.get(k, None) for k in
                                 ("threading.max_workers", "codec_pipeline.chunk_concurrent_minimum",
                                  "codec_pipeline.chunk_concurrent_maximum",
                                  "codec_pipeline.validate_checksums", "codec_pipeline.direct_io")}}


_KVIKIO: dict = {}


def import_kvikio() -> tuple[Any, Any, str]:
    """kvikio and kvikio.zarr. libkvikio loads libcufile through cuda.pathfinder, which searches
    site-packages but not PYTHONPATH entries; if that fails, preload the libcufile.so.0 of an
    nvidia-cufile wheel found on sys.path and import once more (said in the notes)."""
    if "mod" not in _KVIKIO:
        note = ""
        try:
            import kvikio.zarr
        except ModuleNotFoundError:
            raise
        except Exception as e:  # noqa: BLE001 (pathfinder's DynamicLibNotFoundError is a RuntimeError)
            libs = [d / sub / "libcufile.so.0" for d in map(Path, sys.path)
                    for sub in ("nvidia/cu13/lib", "nvidia/cufile/lib")]
            lib = next((f for f in libs if f.is_file()), None)
            if lib is None:
                raise
            ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
            note = f"first import failed ({why(e)}); preloaded {lib}"
            for m in [m for m in sys.modules if m.split(".")[0] in ("kvikio", "libkvikio")]:
                del sys.modules[m]
            import kvikio.zarr
        import kvikio
        import kvikio.defaults  # not imported by `import kvikio`

        _KVIKIO["mod"] = (kvikio, kvikio.zarr, note)
    return _KVIKIO["mod"]


def kvikio_settings(kvikio) -> dict:
    out = {}
    for k in ("compat_mode", "num_threads", "task_size", "gds_threshold", "bounce_buffer_size",
              "auto_direct_io_read"):
        try:
            v = kvikio.defaults.get(k)
            out[k] = str(getattr(v, "name", v))
        except Exception as e:  # noqa: BLE001 (older/newer kvikio without this setting)
            out[k] = f"? ({type(e).__name__})"
    try:
        out["is_compat_mode_preferred"] = bool(kvikio.defaults.is_compat_mode_preferred())
    except Exception:  # noqa: BLE001
        pass
    return out


def r_kvikio(ctx: Ctx, codec: str, path: Path):
    if ctx.dry:
        raise Unavailable("not run: --cpu-dry-run (no GPU)")
    import zarr

    importlib.import_module("cupy")
    kvikio, kz, note = import_kvikio()
    kvikio.defaults.set({"num_threads": ctx.threads})

    def open_and_read_one():
        with zarr.config.enable_gpu():
            za = zarr.open_array(kz.GDSStore(str(path), read_only=True), mode="r")
            za[0]
        return za

    try:  # with no nvidia-fs, cuFile may refuse files in kvikio's default (AUTO) mode
        za = open_and_read_one()
    except Exception as e:  # noqa: BLE001
        if "compat_note" in _KVIKIO:
            raise
        kvikio.defaults.set({"compat_mode": kvikio.CompatMode.ON})
        _KVIKIO["compat_note"] = f"default mode failed ({why(e)}); ran with compat_mode=ON (POSIX reads)"
        za = open_and_read_one()
    info: dict = {k: v for k, v in (("import_note", note), ("compat_note", _KVIKIO.get("compat_note")))
                  if v}
    info.update(zarr_decode_on(za))
    info["kvikio"] = kvikio_settings(kvikio)

    def fn():
        with zarr.config.enable_gpu():
            return za[...]
    return fn, info


FACTORIES: dict[str, Callable] = {
    "zarrflow-gpu": r_zarrflow_gpu, "zarrflow-cpu+copy": r_zarrflow_cpu,
    "tensorstore+copy": r_tensorstore, "zarr-python": r_zarr_python,
    "zarr-python-gpu": r_zarr_python_gpu, "zarr-python+zarrs": r_zarrs, "kvikio-GDSStore": r_kvikio,
}
assert list(FACTORIES) == list(READERS)


# --- the run -----------------------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=None,
                    help="decoded size of each store (default 2; 0.25 with --quick)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for every reader (default: this host's cores)")
    ap.add_argument("--data", default="bench_data", help="where the stores are written (reused)")
    ap.add_argument("--out", default="bench_results", help="where results go")
    ap.add_argument("--name", default="bench_gpu", help="the result files' name: NAME.json, .md, .png "
                                                         "(default bench_gpu)")
    ap.add_argument("--runs", type=int, default=None, help="warm timed runs (default 3; 2 with --quick)")
    ap.add_argument("--cold-runs", type=int, default=None, help="cold timed runs (default 2; 1 with --quick)")
    ap.add_argument("--codecs", default=",".join(ALL_CODECS), help="comma list (default all)")
    ap.add_argument("--readers", default="all", help="comma list of " + ", ".join(READERS) + " (default all)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 0.25 GB, 2 warm runs, 1 cold")
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="no GPU, no torch: CPU readers into NumPy, no H2D copy; GPU readers listed as not run")
    ap.add_argument("--budget-s", type=float, default=420,
                    help="wall seconds since start after which remaining measurements are skipped and "
                         "listed as skipped (default 420)")
    args = ap.parse_args(argv)
    if args.size_gb is None:
        args.size_gb = 0.25 if args.quick else 2.0
    if args.runs is None:
        args.runs = 2 if args.quick else 3
    if args.cold_runs is None:
        args.cold_runs = 1 if args.quick else 2
    args.codec_list = [c for c in args.codecs.split(",") if c]
    bad = [c for c in args.codec_list if c not in ALL_CODECS]
    args.reader_list = list(READERS) if args.readers == "all" else [r for r in args.readers.split(",") if r]
    bad += [r for r in args.reader_list if r not in READERS]
    if bad:
        ap.error(f"unknown codec/reader: {', '.join(bad)} (codecs: {', '.join(ALL_CODECS)}; "
                 f"readers: {', '.join(READERS)})")
    return args


def main(argv=None) -> int:
    t_start = time.monotonic()
    args = parse_args(argv)
    if not args.cpu_dry_run and not zarrflow.cuda_available():
        print(f"no GPU: {zarrflow.cuda_status()} (--cpu-dry-run runs the CPU side only)", file=sys.stderr)
        return 1
    n = max(1, int(np.ceil(args.size_gb * 1e9 / br.FIELD_BYTES)))
    nbytes = n * br.FIELD_BYTES
    gb = nbytes / 1e9
    data_dir, out_dir = Path(args.data), Path(args.out)
    data_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)

    # zarr-python sizes its thread pool at first use (the LZ4 store is written with it): set first.
    zarr_cfg: dict | str
    try:
        import zarr

        zarr_cfg = br.zarr_thread_config(args.threads)
        zarr.config.set(zarr_cfg)
    except ImportError as e:
        zarr_cfg = f"zarr not importable: {why(e)}"
    zarrflow.set_num_threads(args.threads)

    results: dict = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
        "cores_visible": len(os.sched_getaffinity(0)), "threads": args.threads, "fields": n,
        "decoded_bytes": nbytes, "cpu_dry_run": args.cpu_dry_run, "quick": args.quick,
        "runs_warm": args.runs, "runs_cold": args.cold_runs, "readers": args.reader_list,
        "codecs": args.codec_list, "zarrflow": zarrflow.__version__, "versions": peer_versions(),
        "thread_settings": {
            "zarrflow": f"zarrflow.set_num_threads({args.threads})",
            "tensorstore": f"data_copy_concurrency={args.threads}, file_io_concurrency={args.threads}",
            "zarr-python (also -gpu, +zarrs, kvikio)": zarr_cfg,
            "zarrs": f"num_threads = threading.max_workers = {args.threads}; chunk concurrency: zarrs' default",
            "kvikio": f"kvikio.defaults num_threads={args.threads} (its I/O pool), plus zarr-python's pool",
            "numcodecs blosc": "called from zarr's worker threads: one blosc thread per chunk",
        },
        "reader_descriptions": {r: READERS[r] for r in args.reader_list},
        "zarr_gpu": zarr_gpu_facts(),
        "ceilings": {}, "runs": [], "reader_info": {}, "unavailable": {}, "mismatches": [],
        "budget_s": args.budget_s, "name": args.name, "staging": {},
    }

    def unavailable(reader: str, codec: str, reason: str) -> None:
        results["unavailable"].setdefault(reader, {})[codec] = reason
        print(f"{codec:<22} {reader:<18} unavailable: {reason}", flush=True)

    def not_written(codec: str, reason: str) -> None:
        for r in args.reader_list:
            unavailable(r, codec, reason)

    paths = write_stores(data_dir, n, args.codec_list, args.threads, not_written)
    results["store_seconds"] = time.monotonic() - t_start

    ctx = Ctx(args, (n, br.NLAT, br.NLON))
    ceilings = results["ceilings"]
    if not args.cpu_dry_run:
        torch = ctx.torch
        results["gpu"] = torch.cuda.get_device_name()
        results["nvcomp"] = zarrflow.nvcomp_status() or "loaded"
        ceilings["pinned_h2d_GBps"] = stage_ceilings.pinned_h2d_gbps(torch, nbytes, pinned=ctx.pinned,
                                                                     dev=ctx.dev)
        host = np.ones(ctx.shape, np.float32)  # pages touched, as a reader's fresh result would be
        pg = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.from_numpy(host).cuda()
            torch.cuda.synchronize()
            pg.append(gb / (time.perf_counter() - t0))
        del host
        ceilings["pageable_h2d_GBps"] = statistics.median(pg)
    else:
        results["gpu"] = "none (--cpu-dry-run)"
    if "raw" in paths:
        try:
            ceilings["o_direct_read_GBps"] = o_direct_read_gbps(paths["raw"], args.threads)
        except OSError as e:
            ceilings["o_direct_read_error"] = why(e)
    print(json.dumps(ceilings), flush=True)

    for codec in args.codec_list:
        if codec not in paths:
            continue
        path = paths[codec]
        stored = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        ctx.set_reference(zarrflow.open_array(path))
        for reader in args.reader_list:
            if time.monotonic() - t_start > args.budget_s:
                unavailable(reader, codec, f"skipped: --budget-s {args.budget_s:.0f} s spent before "
                                           "this measurement")
                continue
            measure(ctx, results, reader, codec, path, stored, unavailable)
        ctx.ref_dev = None
        free_gpu_pools()
        measure_staging(ctx, results, codec, path, t_start)
        write_outputs(results, out_dir, plot_too=False)

    if "raw" in paths and not args.cpu_dry_run:
        io_ceilings(ctx, results, paths["raw"], nbytes, t_start)

    results["total_seconds"] = time.monotonic() - t_start
    table = write_outputs(results, out_dir, plot_too=True)
    print(table)
    return 1 if results["mismatches"] else 0


def measure_staging(ctx: Ctx, results: dict, codec: str, path: Path, t_start: float) -> None:
    """The staging ceiling (a) of one codec's store: its chunks' stored bytes read by the
    readers' thread count into pinned memory, warm page cache, median of --runs."""
    into = results.setdefault("staging", {})
    if time.monotonic() - t_start > ctx.args.budget_s:
        into[codec] = {"error": f"skipped: --budget-s {ctx.args.budget_s:.0f} s spent"}
        return
    try:
        into[codec] = stage_ceilings.staging_rate(stage_ceilings.stored_pieces(path),
                                                  ctx.staging_buffer(), ctx.threads, ctx.args.runs)
    except (OSError, ValueError) as e:
        into[codec] = {"error": why(e)}
    print(f"{codec:<22} {'staging':<18} warm {into[codec].get('stored_GBps', float('nan')):7.2f} "
          "stored GB/s into " + ("pageable memory (dry run)" if ctx.dry else "pinned memory"), flush=True)


def ceiling_rows(results: dict) -> list[dict]:
    """Per codec with a staging rate: the stage ceilings against zarrflow-gpu's warm read."""
    warm = {r["codec"]: r for r in results["runs"]
            if r["reader"] == "zarrflow-gpu" and r["cache"] == "warm" and "GBps" in r}
    rows = []
    for codec in results["codecs"]:
        staged = results.get("staging", {}).get(codec, {})
        if "stored_GBps" not in staged:
            continue
        g = warm.get(codec, {})
        rows.append(stage_ceilings.ceiling_row(
            codec, results["decoded_bytes"] / staged["stored_bytes"], staged["stored_GBps"],
            results["ceilings"].get("pinned_h2d_GBps"), g.get("gpu_decode_GBps"), g.get("GBps"),
            compressed=codec != "raw"))
    return rows


def measure(ctx: Ctx, results: dict, reader: str, codec: str, path: Path, stored: int,
            unavailable: Callable) -> None:
    gb = results["decoded_bytes"] / 1e9
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fn, info = FACTORIES[reader](ctx, codec, path)
            x = fn()  # correctness check, and the warm-up (page cache, readers' own state)
            ctx.sync()
        bad = ctx.check(x, gpu_result=not ctx.dry)
        del x
    except Exception as e:  # noqa: BLE001 (any failure of a peer is a result, not a crash)
        unavailable(reader, codec, why(e))
        return
    if bad:
        unavailable(reader, codec, f"wrong result: {bad}")
        results["mismatches"].append({"codec": codec, "reader": reader, "problem": bad})
        return
    arr = info.pop("_arr", None)
    reports: list[dict] = []  # zarrflow-gpu: each timed read's report
    if arr is not None:
        read = fn

        def fn():
            t = read()
            reports.append(arr.last_read_report)
            return t
    msgs = sorted({str(w.message)[:200] for w in caught})
    if msgs:
        info["warnings"] = msgs
    results["reader_info"].setdefault(reader, {})[codec] = info
    for temp in ("warm", "cold"):
        reports.clear()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wall, cpu, walls, cpus = ctx.timed(fn, ctx.args.runs if temp == "warm" else ctx.args.cold_runs,
                                                   path if temp == "cold" else None)
        except Exception as e:  # noqa: BLE001
            unavailable(reader, codec, f"failed during the {temp} runs: {why(e)}")
            return
        row = {"codec": codec, "reader": reader, "cache": temp, "wall_s": wall, "walls_s": walls,
               "GBps": gb / wall, "cpu_s": cpu, "cpu_s_runs": cpus, "core_s_per_GB": cpu / gb,
               "ratio": results["decoded_bytes"] / stored, "stored_bytes": stored}
        if "decode_on" in info:
            row["decode_on"] = info["decode_on"]
        if arr is not None:  # zarrflow-gpu: its last read's report
            rep = arr.last_read_report
            row["report"] = {k: v for k, v in rep.items() if k != "notes"}
            row["notes"] = rep["notes"]
            if temp == "warm":
                row.update(stage_rates(one_stream_reports(ctx, fn, reports), gb, codec != "raw"))
        results["runs"].append(row)
        print(f"{codec:<22} {reader:<18} {temp:<4} {row['GBps']:7.2f} GB/s "
              f"{row['core_s_per_GB']:6.3f} core-s/GB  decode {row.get('decode_on', '?')}"
              + (f"  (GPU decode stage {row['gpu_decode_GBps']:.0f} GB/s)" if "gpu_decode_GBps" in row else ""),
              flush=True)
    if arr is not None and arr.last_read_report and arr.last_read_report.get("cpu_decoded"):
        rep = arr.last_read_report
        print(f"  note: {rep['cpu_decoded']} chunks decoded on the CPU: {rep['notes']}")


def one_stream_reports(ctx: Ctx, fn: Callable, reports: list[dict]) -> list[dict]:
    """The reports of warm reads on one read stream (ZARRFLOW_GPU_READ_STREAMS=1), as many as
    the timed runs: there no internal batch's copy or decoding overlaps another's, so their GPU
    times are the stages' own (on several streams, kernels side by side slow each other and their
    summed times overstate a stage)."""
    from zarrflow import _gpu
    r = _gpu.reader()
    before = r.read_streams
    reports.clear()
    r.set_read_streams(1)
    try:
        for _ in range(ctx.args.runs):
            fn()
            ctx.sync()
    finally:
        r.set_read_streams(before)
    return list(reports)


def stage_rates(reports: list[dict], gb: float, compressed: bool) -> dict:
    """From reads' reports: the GPU decode stage in decoded GB/s (the chunks the GPU
    decoded, equal-sized here, over the decode kernels' GPU time; median over the reads; none
    when the host threads decoded them all, as numcodecs LZ4 under gpu_decode="auto") and the
    copy stage in GB/s of bytes copied (over the H2D copies' GPU time; median)."""
    out: dict = {}
    decode = [r["decode_ms"] / 1e3 for r in reports if r.get("decode_ms", 0) > 0]
    last = reports[-1] if reports else {}
    on_gpu = last.get("gpu_decoded", 0) / max(1, last.get("gpu_decoded", 0) + last.get("cpu_decoded", 0))
    if compressed and decode and on_gpu > 0:
        out["gpu_decode_GBps"] = gb * on_gpu / statistics.median(decode)
        out["gpu_decode_s"] = decode
    h2d = [r["h2d_bytes"] / 1e9 / (r["h2d_ms"] / 1e3) for r in reports
           if r.get("h2d_ms", 0) > 0 and "h2d_bytes" in r]
    if h2d:
        out["h2d_stage_GBps"] = statistics.median(h2d)
    return out


def free_gpu_pools() -> None:
    if "cupy" in sys.modules:
        try:
            sys.modules["cupy"].get_default_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001
            pass
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def io_ceilings(ctx: Ctx, results: dict, raw: Path, nbytes: int, t_start: float) -> None:
    arr = zarrflow.open_array(raw)
    # Without nvidia-fs, cuFile needs compatibility mode allowed; ask for it for this run.
    os.environ.setdefault("CUFILE_FORCE_COMPAT_MODE", "true")
    for io in ("pinned", "direct", "cufile"):
        for temp in ("warm", "cold"):
            row = {"codec": "raw", "reader": f"io={io}", "cache": temp}
            if time.monotonic() - t_start > ctx.args.budget_s:
                row["error"] = f"skipped: --budget-s {ctx.args.budget_s:.0f} s spent"
            else:
                try:
                    if temp == "warm":
                        arr.read(device="cuda", io=io)
                    wall, cpu, walls, _ = ctx.timed(lambda: arr.read(device="cuda", io=io),
                                                    ctx.args.runs if temp == "warm" else ctx.args.cold_runs,
                                                    raw if temp == "cold" else None)
                    row.update(wall_s=wall, walls_s=walls, GBps=nbytes / 1e9 / wall,
                               core_s_per_GB=cpu / (nbytes / 1e9), io=arr.last_read_report["io"])
                except Exception as e:  # noqa: BLE001 (e.g. no cuFile: a result, not a crash)
                    row["error"] = str(e) if isinstance(e, zarrflow.ZarrflowError) else why(e)
            results["runs"].append(row)
            print(json.dumps(row), flush=True)


def write_outputs(results: dict, out_dir: Path, plot_too: bool) -> str:
    results["ceiling_rows"] = ceiling_rows(results)
    name = results.get("name", "bench_gpu")
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=2, default=str))
    table = write_table(results)
    (out_dir / f"{name}.md").write_text(table)
    if plot_too:
        try:
            plot(results, out_dir / f"{name}.png")
        except ImportError:
            print("matplotlib is not installed: no plot", file=sys.stderr)
    return table


# --- report ------------------------------------------------------------------------------------------

def _fmt(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def write_table(results: dict) -> str:
    rows = [r for r in results["runs"] if "GBps" in r and not r["reader"].startswith("io=")]
    get = {(r["codec"], r["reader"], r["cache"]): r for r in rows}
    codecs = [c for c in results["codecs"] if any(r["codec"] == c for r in rows)]
    readers = results["readers"]
    peers = [r for r in readers if r not in ZARRFLOW]
    c = results["ceilings"]
    ratio = {r["codec"]: r["ratio"] for r in rows}
    where = "host memory (CPU dry run)" if results.get("cpu_dry_run") else f"{results['gpu']} memory"
    lines = [f"{results['fields']} fields of 721×1440 float32 ({results['decoded_bytes'] / 1e9:.2f} GB "
             f"decoded) into {where}, {results['threads']} threads "
             f"({results['cores_visible']} cores visible); {results['date']}; zarrflow "
             f"{results['zarrflow']}, " + ", ".join(f"{k} {v}" for k, v in results["versions"].items()
                                                    if v != "unknown") + ".",
             ""]
    if results.get("cpu_dry_run"):
        lines += ["**CPU dry run**: no GPU; results stay in host memory (no H2D copy). Not GPU numbers.", ""]
    cl = []
    for key, label in (("pinned_h2d_GBps", "pinned H2D"), ("pageable_h2d_GBps", "pageable H2D "
                       "(torch.from_numpy(x).cuda(), the '+copy' peers' copy)"),
                       ("o_direct_read_GBps", "O_DIRECT read of the raw store (disk)")):
        if key in c:
            cl.append(f"{label} {c[key]:.2f} GB/s")
    if "o_direct_read_error" in c:
        cl.append(f"O_DIRECT read: {c['o_direct_read_error']}")
    lines += ["Ceilings: " + ("; ".join(cl) if cl else "none measured") + ". Cold-cache ceiling per "
              "codec ≈ disk × compression ratio.", ""]
    lines += ["Readers:"] + [f"- **{r}** — {results['reader_descriptions'][r]}" for r in readers] + [""]
    lines += ["Threads: " + "; ".join(f"{k}: {v if isinstance(v, str) else json.dumps(v)}"
                                      for k, v in results["thread_settings"].items()) + ".", ""]
    n_runs = {"warm": results["runs_warm"], "cold": results["runs_cold"]}
    for cache in ("warm", "cold"):
        if not any(k[2] == cache for k in get):
            continue
        title = ("warm page cache, median of {} runs" if cache == "warm" else
                 "cold page cache (store files dropped before each run), median of {} runs")
        lines += [f"### {title.format(n_runs[cache])}: decoded GB/s into GPU memory", "",
                  "| codec | ratio | " + " | ".join(readers)
                  + " | zarrflow-gpu ÷ best peer | best peer |"
                  + (" GPU decode stage GB/s |" if cache == "warm" else " disk × ratio GB/s |"),
                  "|---|---:|" + "---:|" * len(readers) + "---:|---|---:|"]
        for codec in codecs:
            vals = [get.get((codec, r, cache)) for r in readers]
            best = max(((get[(codec, p, cache)]["GBps"], p) for p in peers if (codec, p, cache) in get),
                       default=None)
            g = get.get((codec, "zarrflow-gpu", cache))
            rel = f"{g['GBps'] / best[0]:.2f}×" if g and best else "n/a"
            if cache == "warm":
                extra = _fmt(g.get("gpu_decode_GBps"), 0) if g else "n/a"
            else:
                extra = (_fmt(c["o_direct_read_GBps"] * ratio[codec]) if "o_direct_read_GBps" in c
                         else "n/a")
            lines.append(f"| {codec} | {ratio[codec]:.2f} | "
                         + " | ".join(_fmt(v["GBps"] if v else None) for v in vals)
                         + f" | {rel} | {best[1] if best else 'n/a'} | {extra} |")
        lines += ["", f"CPU core-seconds per decoded GB ({cache}; process user+system time over a run, "
                      "median):", "",
                  "| codec | " + " | ".join(readers) + " |", "|---|" + "---:|" * len(readers)]
        for codec in codecs:
            lines.append(f"| {codec} | " + " | ".join(
                _fmt(get[(codec, r, cache)]["core_s_per_GB"], 3) if (codec, r, cache) in get else "n/a"
                for r in readers) + " |")
        lines.append("")
    info = results.get("reader_info", {})
    shown = [r for r in ("zarr-python", "zarr-python-gpu", "kvikio-GDSStore", "zarr-python+zarrs")
             if r in info]
    if shown:
        lines += ["Where the zarr-python readers decode (from the codec classes zarr-python resolved; "
                  "'CPU' under enable_gpu means compressed bytes go to the GPU, back to the host for "
                  "numcodecs, and the decoded bytes up again):", "",
                  "| codec | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
        for codec in results["codecs"]:
            cells = []
            for r in shown:
                i = info[r].get(codec)
                cells.append("n/a" if i is None else i.get("decode_on", "?")
                             + (f" ({', '.join(x.rsplit('.', 1)[-1] for x in i['codec_classes'])})"
                                if i.get("codec_classes") else ""))
            lines.append(f"| {codec} | " + " | ".join(cells) + " |")
        lines.append("")
        zg = results.get("zarr_gpu", {})
        if "enable_gpu_sets" in zg:
            lines += [f"zarr {results['versions'].get('zarr')}: enable_gpu() sets "
                      + ", ".join(f"{k}={v}" for k, v in zg["enable_gpu_sets"].items())
                      + f"; module zarr.codecs.gpu {'present' if zg['zarr.codecs.gpu'] else 'absent'}; "
                      f"nvidia.nvcomp {'importable' if zg['nvidia.nvcomp'] else 'not installed'}.", ""]
        kv = next((i["kvikio"] for i in info.get("kvikio-GDSStore", {}).values() if "kvikio" in i), None)
        if kv:
            lines += ["kvikio settings: " + ", ".join(f"{k}={v}" for k, v in kv.items()) + ".", ""]
        notes = sorted({f"{r}: {i[k]}" for r in info for i in info[r].values()
                        for k in ("import_note", "compat_note") if k in i})
        if notes:
            lines += ["Notes: " + " ".join(notes), ""]
    if results["unavailable"]:
        lines += ["Unavailable (not measured), with the reason:", ""]
        for reader, per in results["unavailable"].items():
            by_reason: dict[str, list[str]] = {}
            for codec, reason in per.items():
                by_reason.setdefault(reason, []).append(codec)
            for reason, cs in by_reason.items():
                which = "all codecs" if set(cs) >= set(results["codecs"]) else ", ".join(cs)
                lines.append(f"- {reader} ({which}): unavailable: {reason}")
        lines.append("")
    if results["mismatches"]:
        lines += ["**Wrong results** (differ from zarrflow's CPU read): "
                  + "; ".join(f"{m['reader']} on {m['codec']}: {m['problem']}" for m in results["mismatches"]), ""]
    io_rows = [r for r in results["runs"] if r["reader"].startswith("io=")]
    if io_rows:
        lines += ["| raw store read (zarrflow-gpu) | cache | GB/s | path |", "|---|---|---:|---|"]
        for r in io_rows:
            lines.append(f"| {r['reader']} | {r['cache']} | "
                         + (f"{r['GBps']:.2f} | {r.get('io', '')} |" if "GBps" in r else f"— | {r['error']} |"))
        lines.append("")
    if results.get("ceiling_rows"):
        lines += ["### Ceilings of zarrflow-gpu's warm read, decoded GB/s", "",
                  "(a) the chunks' stored bytes read by the same thread count into "
                  + ("pageable memory (dry run)" if results.get("cpu_dry_run") else "pinned memory")
                  + ", (b) pinned H2D, both × ratio; (c) the GPU decode stage (decode kernels' GPU "
                  "time in as many reads on one read stream); (d) zarrflow-gpu end to end, "
                  "warm.", "",
                  stage_ceilings.ceilings_table(results["ceiling_rows"], "codec")]
    if "total_seconds" in results:
        lines.append(f"Run time {results['total_seconds']:.0f} s (stores {results['store_seconds']:.0f} s).")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in results["runs"] if "GBps" in r and not r["reader"].startswith("io=")]
    codecs = [c for c in results["codecs"] if any(r["codec"] == c for r in rows)]
    readers = results["readers"]
    get = {(r["codec"], r["reader"], r["cache"]): r for r in rows}
    ratio = {r["codec"]: r["ratio"] for r in rows}
    c = results["ceilings"]
    fig, axes = plt.subplots(1, 2, figsize=(15, 5.2), sharey=True)
    x = np.arange(len(codecs))
    width = 0.84 / max(1, len(readers))
    colours = plt.get_cmap("tab10")
    vals = [r["GBps"] for r in rows] + [v for k, v in c.items() if k.endswith("GBps")]
    lo = max(min(vals, default=0.1) / 2, 0.01)
    for ax, cache in zip(axes, ("warm", "cold")):
        for k, reader in enumerate(readers):
            xs = x + (k - (len(readers) - 1) / 2) * width
            ys = [get[(cd, reader, cache)]["GBps"] if (cd, reader, cache) in get else 0 for cd in codecs]
            ax.bar(xs, ys, width, label=reader, color=colours(k % 10))
            for xi, yi in zip(xs, ys):
                if yi == 0:
                    ax.text(xi, lo * 1.1, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
        half = 0.45
        if cache == "warm":
            if "pinned_h2d_GBps" in c:
                ax.axhline(c["pinned_h2d_GBps"], color="gray", ls="--", lw=1, label="pinned H2D")
            if "pageable_h2d_GBps" in c:
                ax.axhline(c["pageable_h2d_GBps"], color="gray", ls=":", lw=1.2, label="pageable H2D")
            first = True
            for i, cd in enumerate(codecs):
                g = get.get((cd, "zarrflow-gpu", "warm"), {}).get("gpu_decode_GBps")
                if g:
                    ax.hlines(g, i - half, i + half, color="red", lw=1.2,
                              label="GPU decode stage" if first else None)
                    first = False
        else:
            if "o_direct_read_GBps" in c:
                ax.axhline(c["o_direct_read_GBps"], color="black", ls="-.", lw=1, label="O_DIRECT disk")
                for i, cd in enumerate(codecs):
                    ax.hlines(c["o_direct_read_GBps"] * ratio[cd], i - half, i + half, color="black",
                              lw=1.2, label="disk × ratio" if i == 0 else None)
            if "pinned_h2d_GBps" in c:
                ax.axhline(c["pinned_h2d_GBps"], color="gray", ls="--", lw=1, label="pinned H2D")
        ax.set_yscale("log")
        ax.set_ylim(lo, max(vals, default=1) * 2.5)
        ax.set_xticks(x, codecs, rotation=15)
        runs = results["runs_warm"] if cache == "warm" else results["runs_cold"]
        ax.set_title(f"{cache} page cache (median of {runs})")
        ax.grid(axis="y", which="both", alpha=0.25)
        lines_ = [(h, lab) for h, lab in zip(*ax.get_legend_handles_labels()) if lab not in readers]
        if lines_:  # the ceilings, per panel; the readers once, under both
            ax.legend(*zip(*lines_), fontsize=7, loc="best", framealpha=0.9)
    handles, labels = axes[0].get_legend_handles_labels()
    keep = [(h, lab) for h, lab in zip(handles, labels) if lab in readers]
    fig.legend(*zip(*keep), loc="lower center", ncol=len(keep), fontsize=8, frameon=False)
    axes[0].set_ylabel("decoded GB/s into GPU memory (log scale)")
    dest = "host memory — CPU DRY RUN, no GPU" if results.get("cpu_dry_run") else results["gpu"]
    fig.suptitle(f"{results['decoded_bytes'] / 1e9:.2f} GB ERA5-like float32 → {dest}, "
                 f"{results['threads']} threads; n/a = unavailable (reasons in {results.get('name', 'bench_gpu')}.md)")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
