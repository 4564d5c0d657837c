"""Conformance corpus: small Zarr stores written by the *peers* (zarr-python 3, tensorstore).

Every case is a `Case` whose `build(root)` writes one store below `root` and returns a `Built`:

  built.path      where the node lives (pass it to zarrflow.open)
  built.expected  the array exactly as the writing peer reads it back (its dtype, maybe big-endian)
  built.source    an independent oracle: the data we wrote where we wrote it, the fill value (parsed
                  from the metadata JSON per the spec, see `parse_fill`) everywhere else
  built.meta      shape / native dtype / chunks / shards / dims / fill / attrs / codecs that zarrflow
                  must report, derived from the metadata JSON on disk (not from a peer's objects)

`path, expected = built` also works.

Peer limitations found while writing this corpus (each case that works around one says so):

* tensorstore (0.1.86) `zarr` (v2) driver: no `filters` at all ("filters are not supported") and no
  `lz4` compressor -> v2 filters and lz4 are written with zarr-python/numcodecs only.
* tensorstore `zarr3` raw types `r16`/`r24`: creating one aborts the process (CHECK failure
  "range size mismatch" in GetEffectiveDomain); opening a hand-written one wants the fill_value as
  base64 (the spec says an array of byte integers) and reads back `|V0` junk. zarr-python 3.1 has no
  `r<N>` either -> raw cases are hand-written zarr.json + chunk files, expected computed by hand.
* zarr-python 3.1 cannot read or write `bfloat16` -> bfloat16 cases come from tensorstore only.
* zarr-python 3.1 drops a float16 NaN payload given as hex fill ("0x7e01" reads back as 0x7e00);
  tensorstore keeps it -> hex-fill cases are hand-written metadata with tensorstore as the peer.
* tensorstore omits `"index_location"` when it is "end" (the default) and omits `"configuration"`
  for crc32c; zarr-python always writes both. Both forms appear in the corpus.
* zarr-python writes a v2 complex fill as `[re, im]` (non-standard for v2 but it is what is on
  disk); tensorstore writes `[re, "NaN"]`. Both appear.
"""

from __future__ import annotations

import gzip
import importlib
import json
import math
import sys
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np

# --------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------


@dataclass
class Meta:
    zarr_format: int
    shape: tuple
    dtype: np.dtype  # native byte order; bfloat16 -> ml_dtypes.bfloat16; r24 -> |V3
    chunks: tuple  # read chunk (inner chunk of the first sharding level, like zarr-python)
    shards: Optional[tuple]
    dims: Optional[tuple]
    fill: Optional[np.ndarray]  # 0-d array of `dtype`, or None (v2 "fill_value": null)
    attrs: dict
    codecs: Optional[list]  # v3: the "codecs" list exactly as stored; v2: None


@dataclass
class Built:
    case_id: str
    peer: str
    path: Path
    expected: np.ndarray
    source: np.ndarray
    meta: Meta
    cross_peer: Optional[str] = None  # the *other* peer that must read the same bytes, if any
    region: Optional[tuple] = None  # what was written (None: nothing)

    def __iter__(self) -> Iterator[Any]:
        yield self.path
        yield self.expected


@dataclass(frozen=True)
class Case:
    id: str
    peer: str  # "zarr" | "tensorstore" | "hand"
    build: Callable[[Path], Built]
    cross: Optional[str] = None  # the other peer that must read the same bytes (None: it cannot)


# --------------------------------------------------------------------------------------------
# Small helpers shared by the test modules
# --------------------------------------------------------------------------------------------


def require(module: str):
    """Imports an optional peer package, skipping the calling test when it is genuinely missing."""
    try:
        return importlib.import_module(module)
    except ImportError:
        import pytest

        pytest.skip(f"peer package {module!r} is not installed")


def bfloat16_dtype() -> np.dtype:
    return np.dtype(require("ml_dtypes").bfloat16)


def is_bfloat16(dt: np.dtype) -> bool:
    return dt.name == "bfloat16"


def is_raw(dt: np.dtype) -> bool:
    """An r<N> raw-bits type (|V<N/8>); ml_dtypes' bfloat16 also has kind 'V' but is not raw."""
    return dt.kind == "V" and dt.names is None and not is_bfloat16(dt)


def native(a: Any) -> np.ndarray:
    """`a` as an ndarray in native byte order (values unchanged, bits preserved)."""
    a = np.asarray(a)
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "<" and sys.byteorder == "big"):
        a = a.astype(a.dtype.newbyteorder("="))
    return a


def raw_bytes(a: Any) -> bytes:
    return np.ascontiguousarray(native(a)).tobytes()


def assert_bitwise_equal(actual: Any, expected: Any, what: str = "") -> None:
    """Same dtype (after converting `expected` to native order), shape and bytes (NaNs bitwise)."""
    actual = np.asarray(actual)
    expected = native(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    a = np.ascontiguousarray(actual).reshape(-1)
    e = np.ascontiguousarray(expected).reshape(-1)
    if a.tobytes() == e.tobytes():
        return
    isz = max(actual.dtype.itemsize, 1)
    av = a.view(np.uint8).reshape(-1, isz)
    ev = e.view(np.uint8).reshape(-1, isz)
    bad = np.nonzero((av != ev).any(axis=1))[0]
    first = int(bad[0])
    idx = np.unravel_index(first, expected.shape) if expected.ndim else ()
    raise AssertionError(
        f"{what}: {bad.size} of {e.size} elements differ bitwise; first at {tuple(map(int, idx))}: "
        f"got {a[first]!r} (bytes {av[first].tobytes().hex()}), "
        f"expected {e[first]!r} (bytes {ev[first].tobytes().hex()})"
    )


def fill_as_bytes(value: Any, dtype: np.dtype) -> bytes:
    """Bytes of a fill value as zarrflow may report it (numpy scalar, Python number, bytes, list)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if is_raw(dtype) and isinstance(value, (list, tuple)):
        return bytes(value)
    if is_raw(dtype):
        return np.asarray(value).tobytes()
    if dtype.kind == "c" and isinstance(value, (list, tuple)) and len(value) == 2:
        comp = np.dtype(f"f{dtype.itemsize // 2}")
        return np.asarray(value[0], comp).tobytes() + np.asarray(value[1], comp).tobytes()
    arr = np.asarray(value)
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    return native(arr).tobytes()


def selections(shape: tuple, chunks: tuple) -> list:
    """Hyperslabs exercised against every corpus case: ints, negative ints, steps, edge chunks,
    chunk-boundary-crossing and empty slices, Ellipsis. Each is valid NumPy basic indexing."""
    nd = len(shape)
    sels: list = [(), (Ellipsis,)]
    if nd == 0:
        return sels
    nonzero = all(s > 0 for s in shape)
    sels.append(tuple(slice(None) for _ in shape))
    sels.append(tuple(slice(None, None, 2) for _ in shape))
    sels.append(tuple(slice(1, None, 3) for _ in shape))
    sels.append(tuple(slice(None, None, c + 1) for c in chunks))  # step longer than a chunk
    sels.append(tuple(slice(-3, None) for _ in shape))
    sels.append(tuple(slice(-5, -1) for _ in shape))
    sels.append(tuple(slice(0, s + 10) for s in shape))  # stop past the end is clamped
    # crossing the first chunk boundary in every dim
    sels.append(tuple(slice(max(c - 1, 0), min(c + 1, s)) for s, c in zip(shape, chunks)))
    # the last (edge) chunk in every dim
    sels.append(tuple(slice((max(s - 1, 0) // c) * c, s) for s, c in zip(shape, chunks)))
    # empty selections
    sels.append((slice(2, 2),) + (slice(None),) * (nd - 1))
    sels.append((slice(5, 1),) + (Ellipsis,))
    if nonzero:
        sels.append((0,))
        sels.append((-1,))
        sels.append(tuple(s // 2 for s in shape))  # single element -> 0-d
        sels.append(tuple(-1 for _ in shape))
        sels.append(tuple(slice(s // 2, s // 2 + 1) for s in shape))  # single element, dims kept
        sels.append((Ellipsis, -1))
        sels.append((-1, Ellipsis))
        if nd >= 2:
            sels.append((0, Ellipsis, slice(None, None, 2)))
            sels.append((slice(1, None, 2), -2) + (slice(None),) * (nd - 2))
            sels.append((slice(None),) * (nd - 1) + (shape[-1] // 2,))
        if nd >= 3:
            sels.append((1, slice(None, None, 2), Ellipsis, slice(-2, None)))
    return sels


def sel_repr(sel: tuple) -> str:
    def one(s: Any) -> str:
        if s is Ellipsis:
            return "..."
        if isinstance(s, slice):
            parts = ["" if s.start is None else str(s.start), "" if s.stop is None else str(s.stop)]
            if s.step is not None:
                parts.append(str(s.step))
            return ":".join(parts)
        return str(s)

    return "[" + ", ".join(one(s) for s in sel) + "]"


# --------------------------------------------------------------------------------------------
# Data, fill values and metadata
# --------------------------------------------------------------------------------------------


def _seed(case_id: str) -> int:
    return zlib.crc32(case_id.encode())


def make_data(dtype: Any, shape: tuple, seed: int) -> np.ndarray:
    """Deterministic, compressible data with the awkward values of the type sprinkled in
    (min/max integers, NaN with payloads, +-Inf, -0.0, subnormals)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(seed)
    base = np.arange(n, dtype=np.int64)
    noise = rng.integers(0, 3, n)
    if dt.kind == "b":
        v = ((base // 3 + noise) % 2 == 0).astype(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = ((base // 2) % 97 + noise).astype(np.int64)
        if dt.kind == "i":
            v -= 40
        v = v.astype(dt)
        if n >= 8:
            v[n // 3] = info.min
            v[2 * n // 3] = info.max
            v[n // 5] = info.max - 1
    elif is_raw(dt):
        v = np.frombuffer(rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes(), dt).copy()
    elif dt.kind == "c":
        comp = np.dtype(f"{dt.byteorder}f{dt.itemsize // 2}")
        re = make_data(comp, (n,), seed + 1)
        im = make_data(comp, (n,), seed + 2)[::-1]
        v = np.empty(n, dt)
        v.real = re
        v.imag = im
    elif dt.kind == "f" or is_bfloat16(dt):
        work = np.float32 if dt.name == "bfloat16" else dt
        vals = (np.round(np.sin(base * 0.05) * 1000) / 8 + noise * 0.5).astype(np.float64)
        v = vals.astype(work)
        # specials sit between 1/8 and 5/8 of the flat array: inside the default written region
        if n >= 16:
            v[2 * n // 16] = np.nan
            v[3 * n // 16] = np.inf
            v[4 * n // 16] = -np.inf
            v[5 * n // 16] = -0.0
            v[6 * n // 16] = np.finfo(work).max
            v[7 * n // 16] = np.finfo(work).smallest_subnormal
        if dt.name == "bfloat16":
            v = v.astype(dt)
        if n >= 16:
            # NaNs with payloads and a negative NaN, set bitwise
            isz = dt.itemsize
            ut = np.dtype(f"u{isz}").newbyteorder(dt.byteorder if dt.byteorder in "<>" else "=")
            bits = v.view(ut)
            bf = dt.name == "bfloat16"
            qnan = {2: 0x7FC1 if bf else 0x7E01, 4: 0x7FC00123, 8: 0x7FF8000000000123}[isz]
            neg = {2: 0xFFC0 if bf else 0xFE00, 4: 0xFFC00000, 8: 0xFFF8000000000000}[isz]
            bits[8 * n // 16 + 1] = qnan
            bits[9 * n // 16 + 1] = neg
    else:  # pragma: no cover - corpus authoring error
        raise TypeError(f"no data generator for {dt}")
    return v.reshape(shape)


def _parse_float(v: Any, dt: np.dtype) -> np.ndarray:
    if isinstance(v, str):
        if v == "NaN":
            return np.array(np.nan).astype(dt)
        if v == "Infinity":
            return np.array(np.inf).astype(dt)
        if v == "-Infinity":
            return np.array(-np.inf).astype(dt)
        if v.startswith("0x"):
            return np.array(int(v, 16), np.uint64).astype(f"u{dt.itemsize}").view(dt)
        raise ValueError(f"bad float fill {v!r}")
    return np.array(v, np.float64).astype(dt)


def parse_fill(v: Any, dt: np.dtype) -> Optional[np.ndarray]:
    """Fill value per the Zarr v2/v3 specs, as a 0-d array of native dtype `dt` (None for null)."""
    if v is None:
        return None
    if is_raw(dt):
        return np.frombuffer(bytes(v), dt).reshape(()).copy()
    if dt.kind == "b":
        return np.array(bool(v), dt)
    if dt.kind in "iu":
        return np.array(int(v), dt)
    if dt.kind == "c":
        comp = np.dtype(f"f{dt.itemsize // 2}")
        if isinstance(v, (list, tuple)):
            re, im = (_parse_float(x, comp) for x in v)
        else:
            re, im = _parse_float(v, comp), np.array(0, comp)
        out = np.zeros(1, dt)
        out.view(comp)[0] = re
        out.view(comp)[1] = im
        return out.reshape(())
    return _parse_float(v, dt)


def _load_meta_json(path: Path) -> tuple[int, dict, dict]:
    """(zarr_format, array metadata, attributes) read straight from disk."""
    if (path / "zarr.json").exists():
        m = json.loads((path / "zarr.json").read_text())
        return 3, m, m.get("attributes", {}) or {}
    m = json.loads((path / ".zarray").read_text())
    attrs = json.loads((path / ".zattrs").read_text()) if (path / ".zattrs").exists() else {}
    return 2, m, attrs


def meta_from_disk(path: Path, dtype: np.dtype) -> Meta:
    zf, m, attrs = _load_meta_json(path)
    shape = tuple(m["shape"])
    if zf == 3:
        grid = tuple(m["chunk_grid"]["configuration"]["chunk_shape"])
        codecs = m["codecs"]
        first = next((c for c in codecs if c["name"] != "transpose"), None)
        if first is not None and first["name"] == "sharding_indexed":
            chunks, shards = tuple(first["configuration"]["chunk_shape"]), grid
        else:
            chunks, shards = grid, None
        dn = m.get("dimension_names")
        dims = tuple(dn) if dn is not None else None
        fill = parse_fill(m["fill_value"], dtype)
    else:
        chunks, shards, codecs = tuple(m["chunks"]), None, None
        dn = attrs.get("_ARRAY_DIMENSIONS")
        dims = tuple(dn) if dn is not None else None
        fill = parse_fill(m["fill_value"], dtype)
    return Meta(zf, shape, dtype, chunks, shards, dims, fill, attrs, codecs)


def default_region(shape: tuple, chunks: tuple) -> tuple:
    """Leaves the last chunk row of every dim >1 chunk unwritten (-> fill) and starts dim 0 at 1,
    so there are partially written, fully written and missing chunks."""
    reg = []
    for i, (s, c) in enumerate(zip(shape, chunks)):
        if s > c:
            reg.append(slice(1 if i == 0 else 0, s - c))
        else:
            reg.append(slice(None))
    return tuple(reg)


def _resolve_region(region: Any, shape: tuple, chunks: tuple) -> Optional[tuple]:
    if region == "default":
        return default_region(shape, chunks)
    if region == "full":
        return tuple(slice(None) for _ in shape)
    if region == "none":
        return None
    return region


def _source(data: np.ndarray, region: Optional[tuple], fill: Optional[np.ndarray]) -> np.ndarray:
    dt = native(data).dtype
    out = np.zeros(data.shape, dt)
    if fill is not None:
        out[...] = fill
    if region is not None:
        out[region] = native(data)[region]
    return out


def _quiet(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def zarr_read(path: Path) -> np.ndarray:
    zarr = require("zarr")
    return _quiet(lambda: np.asarray(zarr.open_array(str(path), mode="r")[...]))


def ts_read(path: Path, zarr_format: int) -> np.ndarray:
    ts = require("tensorstore")
    driver = "zarr3" if zarr_format == 3 else "zarr"
    t = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": str(path)}, "open": True}).result()
    return np.asarray(t.read().result())


def _finish(case_id: str, peer: str, path: Path, data: np.ndarray, region: Optional[tuple],
            cross: Optional[str], zdtype: Optional[np.dtype] = None) -> Built:
    zf = 3 if (path / "zarr.json").exists() else 2
    expected = zarr_read(path) if peer == "zarr" else ts_read(path, zf)
    dt = zdtype if zdtype is not None else native(expected).dtype
    meta = meta_from_disk(path, dt)
    src = _source(data, region, meta.fill)
    return Built(case_id, peer, path, expected, src, meta, cross, region)


# --------------------------------------------------------------------------------------------
# Case factories
# --------------------------------------------------------------------------------------------

CASES: list[Case] = []


def _add(case: Case) -> None:
    assert case.id not in {c.id for c in CASES}, case.id
    CASES.append(case)


def zp(case_id: str, *, shape: tuple, chunks: tuple, dtype: Any, zarr_format: int = 3,
       region: Any = "default", cross: Optional[str] = "tensorstore", data_dtype: Any = None,
       data: Optional[Callable[[], np.ndarray]] = None, **kw: Any) -> None:
    """A case written by zarr-python 3 `zarr.create_array` (+ a partial write)."""

    def build(root: Path) -> Built:
        zarr = require("zarr")
        path = root / case_id
        kw.setdefault("compressors", None)
        kw.setdefault("fill_value", 0)
        kw.setdefault("filters", None)

        def create() -> Any:
            return zarr.create_array(store=str(path), shape=shape, chunks=chunks, dtype=dtype,
                                     zarr_format=zarr_format, **kw)

        arr = _quiet(create)
        d = data() if data is not None else make_data(data_dtype or arr.dtype, shape, _seed(case_id))
        reg = _resolve_region(region, shape, chunks)
        if reg is not None:
            _quiet(lambda: arr.__setitem__(reg, d[reg]))
        return _finish(case_id, "zarr", path, d, reg, cross)

    _add(Case(case_id, "zarr", build, cross))


def tsc(case_id: str, *, metadata: dict, driver: str = "zarr3", region: Any = "default",
        read_chunks: Optional[tuple] = None, cross: Optional[str] = "zarr",
        data: Optional[Callable[[], np.ndarray]] = None) -> None:
    """A case written by tensorstore (`zarr3` or `zarr` driver) from an explicit metadata dict."""

    def build(root: Path) -> Built:
        ts = require("tensorstore")
        if "bfloat16" in json.dumps(metadata):
            require("ml_dtypes")
        path = root / case_id
        spec = {"driver": driver, "kvstore": {"driver": "file", "path": str(path)},
                "metadata": metadata, "create": True, "delete_existing": True}
        t = ts.open(spec).result()
        shape = tuple(t.shape)
        dt = np.dtype(t.dtype.numpy_dtype)
        if driver == "zarr" and "dtype" in metadata:
            dt = np.dtype(metadata["dtype"])  # keep big-endian data big-endian on the way in
        d = data() if data is not None else make_data(dt, shape, _seed(case_id))
        if read_chunks is not None:
            ch = read_chunks
        elif driver == "zarr":
            ch = tuple(metadata["chunks"])
        else:
            ch = tuple(metadata["chunk_grid"]["configuration"]["chunk_shape"])
        reg = _resolve_region(region, shape, ch)
        if reg is not None:
            t[reg].write(d[reg]).result()
        return _finish(case_id, "tensorstore", path, d, reg, cross)

    _add(Case(case_id, "tensorstore", build, cross))


def _v3grid(shape: tuple, chunk: tuple, data_type: str, codecs: list, **extra: Any) -> dict:
    m = {"shape": list(shape), "data_type": data_type,
         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk)}},
         "codecs": codecs}
    m.update(extra)
    return m


def _bytes(endian: Optional[str] = "little") -> dict:
    return {"name": "bytes", "configuration": {"endian": endian}} if endian else {"name": "bytes"}


def _shard(inner: tuple, codecs: list, index_codecs: Optional[list] = None,
           location: Optional[str] = None) -> dict:
    cfg: dict = {"chunk_shape": list(inner), "codecs": codecs,
                 "index_codecs": index_codecs or [_bytes(), {"name": "crc32c"}]}
    if location is not None:
        cfg["index_location"] = location
    return {"name": "sharding_indexed", "configuration": cfg}


# --- the corpus ------------------------------------------------------------------------------


def _define() -> None:  # noqa: C901 - a long, flat list of cases
    zarr_codecs = None
    try:
        from zarr import codecs as zarr_codecs  # type: ignore
    except ImportError:  # peers missing: cases still get ids; building them skips
        pass

    def zc(name: str, *a: Any, **k: Any) -> Any:
        """A zarr.codecs object, created lazily so that collection works without zarr."""
        return getattr(zarr_codecs, name)(*a, **k) if zarr_codecs is not None else None

    def nc(name: str, *a: Any, **k: Any) -> Any:
        """A numcodecs object (None when numcodecs is missing; building such a case then skips)."""
        try:
            import numcodecs
        except ImportError:
            return None
        return getattr(numcodecs, name)(*a, **k)

    s2, c2 = (13, 11), (4, 5)
    s3, c3 = (9, 10, 7), (4, 4, 3)

    # ---- zarr-python, Zarr v3: dtypes through the plain bytes codec (little and big endian) ----
    dtypes = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64", "complex64", "complex128"]
    for i, dt in enumerate(dtypes):
        zp(f"zp3-bytes-le-{dt}", shape=s2, chunks=c2, dtype=dt,
           serializer=zc("BytesCodec", endian="little"))
        if np.dtype(dt).itemsize > 1 and dt != "bool":
            zp(f"zp3-bytes-be-{dt}", shape=s3, chunks=c3, dtype=dt,
               serializer=zc("BytesCodec", endian="big"))

    # ---- zarr-python v3: blosc matrix cname x shuffle, typesize / blocksize variants ----
    cnames = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]
    shuffles = ["noshuffle", "shuffle", "bitshuffle"]
    bl_dtypes = ["int16", "float32", "uint8", "float64", "int64", "complex64", "uint32"]
    k = 0
    for cn in cnames:
        for sh in shuffles:
            dt = bl_dtypes[k % len(bl_dtypes)]
            blocksize = [0, 256, 1024][k % 3]
            zp(f"zp3-blosc-{cn}-{sh}-{dt}", shape=(40, 30), chunks=(16, 8), dtype=dt,
               compressors=[zc("BloscCodec", cname=cn, clevel=5, shuffle=sh,
                               typesize=np.dtype(dt).itemsize, blocksize=blocksize)])
            k += 1
    # typesize deliberately different from the item size (the blosc header carries the truth)
    zp("zp3-blosc-lz4-shuffle-typesize1-int32", shape=(64,), chunks=(16,), dtype="int32",
       compressors=[zc("BloscCodec", cname="lz4", shuffle="shuffle", typesize=1, blocksize=64)])
    zp("zp3-blosc-zstd-bitshuffle-typesize8-int16", shape=(50, 9), chunks=(20, 4), dtype="int16",
       compressors=[zc("BloscCodec", cname="zstd", shuffle="bitshuffle", typesize=8, blocksize=128)])
    zp("zp3-blosc-blosclz-shuffle-be-float64", shape=s3, chunks=c3, dtype="float64",
       serializer=zc("BytesCodec", endian="big"),
       compressors=[zc("BloscCodec", cname="blosclz", shuffle="shuffle", typesize=8)])

    # ---- zarr-python v3: other codecs ----
    zp("zp3-gzip-float32", shape=s2, chunks=c2, dtype="float32", compressors=[zc("GzipCodec", level=6)])
    zp("zp3-gzip-l1-uint16", shape=s3, chunks=c3, dtype="uint16", compressors=[zc("GzipCodec", level=1)])
    zp("zp3-zstd-int32", shape=s2, chunks=c2, dtype="int32", compressors=[zc("ZstdCodec", level=3)])
    zp("zp3-zstd-checksum-float64", shape=s3, chunks=c3, dtype="float64",
       compressors=[zc("ZstdCodec", level=1, checksum=True)])
    zp("zp3-crc32c-int16", shape=s2, chunks=c2, dtype="int16", compressors=[zc("Crc32cCodec")])
    zp("zp3-zstd-crc32c-uint64", shape=s2, chunks=c2, dtype="uint64",
       compressors=[zc("ZstdCodec", level=2, checksum=True), zc("Crc32cCodec")])
    zp("zp3-transpose-201-int16", shape=s3, chunks=c3, dtype="int16",
       filters=[zc("TransposeCodec", order=(2, 0, 1))])
    zp("zp3-transpose-10-be-gzip-float32", shape=s2, chunks=c2, dtype="float32",
       filters=[zc("TransposeCodec", order=(1, 0))], serializer=zc("BytesCodec", endian="big"),
       compressors=[zc("GzipCodec", level=5)])
    zp("zp3-transpose-1302-blosc-uint32", shape=(5, 6, 4, 7), chunks=(2, 3, 3, 4), dtype="uint32",
       filters=[zc("TransposeCodec", order=(1, 3, 0, 2))],
       compressors=[zc("BloscCodec", cname="lz4", shuffle="bitshuffle")])

    # ---- zarr-python v3: sharding ----
    zp("zp3-shard-end-zstd-int32", shape=(20, 20), chunks=(4, 5), shards=(8, 10), dtype="int32",
       compressors=[zc("ZstdCodec", level=1)])
    zp("zp3-shard-end-raw-float32", shape=(20, 20), chunks=(4, 5), shards=(8, 10), dtype="float32")
    zp("zp3-shard-end-blosc-transpose-be-int16", shape=(10, 11, 12), chunks=(4, 4, 4),
       shards=(8, 8, 8), dtype="int16", filters=[zc("TransposeCodec", order=(2, 0, 1))],
       serializer=zc("BytesCodec", endian="big"),
       compressors=[zc("BloscCodec", cname="lz4", shuffle="bitshuffle", typesize=2)])
    zp("zp3-shard-end-gzip-sep-dot-uint8", shape=(30, 17), chunks=(5, 4), shards=(10, 8),
       dtype="uint8", compressors=[zc("GzipCodec", level=3)],
       chunk_key_encoding={"name": "default", "separator": "."})

    def sharded_serializer(inner: tuple, codecs: list, location: str, index_codecs: Any = None) -> Any:
        kwargs = dict(chunk_shape=inner, codecs=codecs, index_location=location)
        if index_codecs is not None:
            kwargs["index_codecs"] = index_codecs
        return zc("ShardingCodec", **kwargs) if zarr_codecs is not None else None

    lazy_sharded = sharded_serializer

    if zarr_codecs is not None:
        zp("zp3-shard-start-zstd-float64", shape=(20, 20), chunks=(8, 10), dtype="float64",
           serializer=lazy_sharded((4, 5), [zc("BytesCodec"), zc("ZstdCodec", level=2)], "start"))
        zp("zp3-shard-start-idx-bytes-only-int64", shape=(16, 16), chunks=(8, 8), dtype="int64",
           serializer=lazy_sharded((4, 4), [zc("BytesCodec", endian="big")], "start",
                                   index_codecs=[zc("BytesCodec")]))
        # only a few inner chunks of each shard written: empty inner chunks stay absent
        zp("zp3-shard-sparse-inner-uint16", shape=(24, 24), chunks=(4, 4), shards=(12, 12),
           dtype="uint16", fill_value=7, compressors=[zc("ZstdCodec", level=1)],
           region=(slice(0, 3), slice(5, 14)))
        zp("zp3-shard-nested-start-uint16", shape=(16, 16), chunks=(8, 8), dtype="uint16",
           serializer=lazy_sharded(
               (4, 4), [lazy_sharded((2, 2), [zc("BytesCodec"), zc("ZstdCodec", level=1, checksum=True)],
                                     "start")], "start"),
           region=(slice(1, 13), slice(0, 11)))
        zp("zp3-shard-nested-end-gzip-float32", shape=(18, 12), chunks=(9, 12), dtype="float32",
           fill_value=float("nan"),
           serializer=lazy_sharded(
               (3, 6), [lazy_sharded((3, 3), [zc("BytesCodec"), zc("GzipCodec", level=2)], "end")], "end"),
           region=(slice(0, 10), slice(2, 12)))

    # ---- zarr-python v3: fill values, key encodings, dims, attrs, ranks ----
    zp("zp3-fill-nan-float32", shape=s2, chunks=c2, dtype="float32", fill_value=float("nan"))
    zp("zp3-fill-inf-float64", shape=s2, chunks=c2, dtype="float64", fill_value=float("inf"))
    zp("zp3-fill-neginf-float16", shape=s2, chunks=c2, dtype="float16", fill_value=float("-inf"))
    zp("zp3-fill-num-int16", shape=s2, chunks=c2, dtype="int16", fill_value=-1234)
    zp("zp3-fill-max-uint64", shape=s2, chunks=c2, dtype="uint64", fill_value=2**64 - 1)
    zp("zp3-fill-min-int64", shape=s2, chunks=c2, dtype="int64", fill_value=-(2**63))
    zp("zp3-fill-true-bool", shape=s2, chunks=c2, dtype="bool", fill_value=True)
    zp("zp3-fill-frac-float32", shape=s2, chunks=c2, dtype="float32", fill_value=-2.5)
    zp("zp3-fill-complex-complex64", shape=s2, chunks=c2, dtype="complex64", fill_value=1.5 - 2j)
    zp("zp3-fill-complex-nan-complex128", shape=s2, chunks=c2, dtype="complex128",
       fill_value=complex(float("nan"), float("inf")))
    zp("zp3-keys-dot-int32", shape=s3, chunks=c3, dtype="int32",
       chunk_key_encoding={"name": "default", "separator": "."})
    zp("zp3-keys-v2-dot-int32", shape=s3, chunks=c3, dtype="int32",
       chunk_key_encoding={"name": "v2", "separator": "."})
    zp("zp3-keys-v2-slash-float32", shape=s3, chunks=c3, dtype="float32",
       chunk_key_encoding={"name": "v2", "separator": "/"})
    zp("zp3-dims-attrs-float32", shape=s3, chunks=c3, dtype="float32",
       dimension_names=["time", None, "x"],
       attributes={"units": "K", "scale": 0.5, "nested": {"a": [1, 2, None]}, "ok": True})
    zp("zp3-dims-all-null-int8", shape=s2, chunks=c2, dtype="int8", dimension_names=[None, None])
    zp("zp3-0d-float64", shape=(), chunks=(), dtype="float64", fill_value=3.5, region="full")
    zp("zp3-0d-unwritten-int32", shape=(), chunks=(), dtype="int32", fill_value=-9, region="none")
    zp("zp3-1d-int32", shape=(100,), chunks=(16,), dtype="int32", compressors=[zc("ZstdCodec")])
    zp("zp3-4d-float32", shape=(5, 6, 4, 7), chunks=(2, 3, 3, 4), dtype="float32",
       compressors=[zc("BloscCodec", cname="zstd", shuffle="shuffle")])
    zp("zp3-unwritten-float32", shape=s2, chunks=c2, dtype="float32", fill_value=42.0, region="none")
    zp("zp3-one-chunk-uint8", shape=(7, 5), chunks=(8, 8), dtype="uint8", region="full")
    zp("zp3-empty-shape0-int32", shape=(0, 5), chunks=(2, 2), dtype="int32", region="none")

    # ---- zarr-python, Zarr v2 ----
    v2_dtypes = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
                 "<c8", "<c16", ">i2", ">i4", ">i8", ">u4", ">f4", ">f8", ">c16"]
    for dt in v2_dtypes:
        tag = dt.replace("<", "le-").replace(">", "be-").replace("|", "")
        zp(f"zp2-dtype-{tag}", shape=s2, chunks=c2, dtype=dt, zarr_format=2,
           compressors=nc("Zstd", level=1) if dt.startswith(">") else None,
           cross="tensorstore")
    # blosc matrix: 5 cnames x shuffle 0/1/2 over several typesizes (dtypes) and blocksizes
    v2_bl_dtypes = ["<i2", "<f4", "|u1", "<f8", ">i4", "<c16", "<u8"]
    k = 0
    for cn in cnames:
        for sh in (0, 1, 2):
            dt = v2_bl_dtypes[k % len(v2_bl_dtypes)]
            bs = [0, 256, 4096][k % 3]
            tag = dt.replace("<", "").replace(">", "be").replace("|", "")
            zp(f"zp2-blosc-{cn}-shuffle{sh}-{tag}", shape=(40, 30), chunks=(16, 8), dtype=dt,
               zarr_format=2, compressors=nc("Blosc", cname=cn, clevel=5, shuffle=sh, blocksize=bs))
            k += 1
    zp("zp2-zstd-float64", shape=s3, chunks=c3, dtype="<f8", zarr_format=2,
       compressors=nc("Zstd", level=3))
    # numcodecs lz4 (4-byte size header + block); tensorstore's v2 driver has no lz4
    zp("zp2-lz4-uint16", shape=s2, chunks=c2, dtype="<u2", zarr_format=2,
       compressors=nc("LZ4", acceleration=1), cross=None)
    zp("zp2-zlib-int32", shape=s2, chunks=c2, dtype="<i4", zarr_format=2, compressors=nc("Zlib", level=6))
    zp("zp2-gzip-float32", shape=s2, chunks=c2, dtype="<f4", zarr_format=2, compressors=nc("GZip", level=5))
    zp("zp2-nocompressor-float32", shape=s2, chunks=c2, dtype="<f4", zarr_format=2, compressors=None)
    # filters (tensorstore's v2 driver rejects any "filters": zarr-python is the only peer)
    zp("zp2-filter-delta-int32", shape=s2, chunks=c2, dtype="<i4", zarr_format=2,
       filters=[nc("Delta", dtype="<i4")], compressors=nc("Zlib", level=1), cross=None)
    zp("zp2-filter-delta-astype-int64", shape=(100,), chunks=(16,), dtype="<i8", zarr_format=2,
       filters=[nc("Delta", dtype="<i8", astype="<i2")], cross=None,
       data=lambda: (np.arange(100, dtype="<i8") * 3 - 7))
    zp("zp2-filter-fixedscaleoffset-float64", shape=s2, chunks=c2, dtype="<f8", zarr_format=2,
       filters=[nc("FixedScaleOffset", offset=1000, scale=4, dtype="<f8", astype="<i4")],
       compressors=nc("Zstd", level=1), cross=None,
       data=lambda: (1000 + (np.arange(143, dtype=np.int64) - 70) / 4).reshape(s2))
    zp("zp2-filter-astype-f8-as-f4", shape=s2, chunks=c2, dtype="<f8", zarr_format=2,
       filters=[nc("AsType", encode_dtype="<f4", decode_dtype="<f8")], cross=None,
       data=lambda: make_data("<f4", s2, 11).astype("<f8"))
    zp("zp2-filter-shuffle-float64", shape=s2, chunks=c2, dtype="<f8", zarr_format=2,
       filters=[nc("Shuffle", elementsize=8)], compressors=nc("Zlib", level=1), cross=None)
    zp("zp2-filter-delta-shuffle-blosc-uint16", shape=s3, chunks=c3, dtype="<u2", zarr_format=2,
       filters=[nc("Delta", dtype="<u2"), nc("Shuffle", elementsize=2)],
       compressors=nc("Blosc", cname="lz4", shuffle=0), cross=None)
    # order F, separators, fills, dims
    zp("zp2-order-F-float64", shape=s3, chunks=c3, dtype="<f8", zarr_format=2, order="F",
       compressors=nc("Zlib", level=1))
    zp("zp2-order-F-be-int32", shape=s2, chunks=c2, dtype=">i4", zarr_format=2, order="F")
    zp("zp2-order-F-blosc-bitshuffle-int16", shape=(5, 6, 4, 7), chunks=(2, 3, 3, 4), dtype="<i2",
       zarr_format=2, order="F", compressors=nc("Blosc", cname="zstd", shuffle=2))
    zp("zp2-sep-slash-int16", shape=s3, chunks=c3, dtype="<i2", zarr_format=2,
       chunk_key_encoding={"name": "v2", "separator": "/"})
    zp("zp2-sep-dot-uint32", shape=s3, chunks=c3, dtype="<u4", zarr_format=2,
       chunk_key_encoding={"name": "v2", "separator": "."})
    zp("zp2-fill-nan-float32", shape=s2, chunks=c2, dtype="<f4", zarr_format=2, fill_value=float("nan"))
    zp("zp2-fill-inf-float64", shape=s2, chunks=c2, dtype="<f8", zarr_format=2, fill_value=float("inf"))
    zp("zp2-fill-neginf-be-float32", shape=s2, chunks=c2, dtype=">f4", zarr_format=2,
       fill_value=float("-inf"))
    zp("zp2-fill-num-int16", shape=s2, chunks=c2, dtype="<i2", zarr_format=2, fill_value=-77)
    zp("zp2-fill-frac-float64", shape=s2, chunks=c2, dtype="<f8", zarr_format=2, fill_value=0.125)
    zp("zp2-fill-null-int32", shape=s2, chunks=c2, dtype="<i4", zarr_format=2, fill_value=None)
    zp("zp2-fill-true-bool", shape=s2, chunks=c2, dtype="|b1", zarr_format=2, fill_value=True)
    # zarr-python writes a v2 complex fill as [re, im] (tensorstore reads that form too)
    zp("zp2-fill-complex-complex128", shape=s2, chunks=c2, dtype="<c16", zarr_format=2,
       fill_value=1 + 2j)
    zp("zp2-dims-xarray-float32", shape=s3, chunks=c3, dtype="<f4", zarr_format=2,
       attributes={"_ARRAY_DIMENSIONS": ["time", "lat", "lon"], "long_name": "temperature"})
    zp("zp2-0d-float64", shape=(), chunks=(), dtype="<f8", zarr_format=2, fill_value=3.5, region="full")
    zp("zp2-1d-uint8", shape=(100,), chunks=(16,), dtype="|u1", zarr_format=2)
    zp("zp2-4d-int16", shape=(5, 6, 4, 7), chunks=(2, 3, 3, 4), dtype="<i2", zarr_format=2,
       compressors=nc("Zstd", level=1))
    zp("zp2-unwritten-int32", shape=s2, chunks=c2, dtype="<i4", zarr_format=2, fill_value=5,
       region="none")

    # ---- tensorstore zarr3 ----
    tsc("ts3-bfloat16-bytes-le", metadata=_v3grid(s2, c2, "bfloat16", [_bytes()]), cross=None)
    tsc("ts3-bfloat16-be-zstd-fill-nan", metadata=_v3grid(
        s3, c3, "bfloat16", [_bytes("big"), {"name": "zstd", "configuration": {"level": 1}}],
        fill_value="NaN"), cross=None)
    tsc("ts3-bfloat16-shard-blosc", metadata=_v3grid((16, 16), (8, 8), "bfloat16", [_shard(
        (4, 4), [_bytes(), {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
                                                            "shuffle": "shuffle", "typesize": 2,
                                                            "blocksize": 0}}])]),
        read_chunks=(4, 4), cross=None)
    for dt in ["bool", "int8", "uint16", "int32", "uint64", "float16", "float64", "complex64", "complex128"]:
        tsc(f"ts3-bytes-be-{dt}", metadata=_v3grid(s2, c2, dt, [_bytes("big" if dt not in ("bool", "int8") else None)]))
    tsc("ts3-transpose-201-blosc-zstd-bitshuffle-int32", metadata=_v3grid(
        s3, c3, "int32",
        [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}, _bytes("big"),
         {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle",
                                             "typesize": 4, "blocksize": 0}}],
        dimension_names=["a", None, "c"], attributes={"x": 1}, fill_value=-7))
    for cn, sh in [("blosclz", "noshuffle"), ("lz4hc", "shuffle"), ("zlib", "bitshuffle")]:
        tsc(f"ts3-blosc-{cn}-{sh}-float32", metadata=_v3grid(
            (40, 30), (16, 8), "float32",
            [_bytes(), {"name": "blosc", "configuration": {"cname": cn, "clevel": 4, "shuffle": sh,
                                                        "typesize": 4, "blocksize": 512}}]))
    tsc("ts3-gzip-crc32c-fill-neginf-float64", metadata=_v3grid(
        s3, c3, "float64", [_bytes(), {"name": "gzip", "configuration": {"level": 4}}, {"name": "crc32c"}],
        fill_value="-Infinity"))
    tsc("ts3-zstd-checksum-uint32", metadata=_v3grid(
        s2, c2, "uint32", [_bytes(), {"name": "zstd", "configuration": {"level": 5, "checksum": True}}]))
    tsc("ts3-fill-complex-nan-complex128", metadata=_v3grid(
        s2, c2, "complex128", [_bytes("big")], fill_value=[1.5, "NaN"]))
    tsc("ts3-fill-inf-float32", metadata=_v3grid(s2, c2, "float32", [_bytes()], fill_value="Infinity"))
    tsc("ts3-keys-dot-uint16", metadata=_v3grid(
        s3, c3, "uint16", [_bytes()], chunk_key_encoding={"name": "default", "configuration": {"separator": "."}}))
    tsc("ts3-keys-v2-uint16", metadata=_v3grid(
        s3, c3, "uint16", [_bytes()], chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}}))
    tsc("ts3-shard-start-zstd-checksum", metadata=_v3grid((20, 22), (8, 12), "int16", [_shard(
        (4, 4), [_bytes(), {"name": "zstd", "configuration": {"level": 3, "checksum": True}}],
        location="start")]), read_chunks=(4, 4))
    tsc("ts3-shard-end-implicit-gzip", metadata=_v3grid((20, 22), (8, 12), "float32", [_shard(
        (4, 4), [_bytes("big"), {"name": "gzip", "configuration": {"level": 1}}])]), read_chunks=(4, 4))
    tsc("ts3-shard-idx-bytes-only-transpose-inner", metadata=_v3grid((12, 10, 6), (8, 8, 6), "uint32", [_shard(
        (4, 4, 3), [{"name": "transpose", "configuration": {"order": [2, 1, 0]}}, _bytes()],
        index_codecs=[_bytes()], location="end")]), read_chunks=(4, 4, 3))
    tsc("ts3-shard-nested", metadata=_v3grid((12, 10, 6), (8, 8, 6), "int16", [_shard(
        (4, 4, 3), [_shard((2, 2, 3), [_bytes(), {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
                           index_codecs=[_bytes()], location="start")])]), read_chunks=(4, 4, 3))
    tsc("ts3-shard-sparse-inner-fill", metadata=_v3grid((24, 24), (12, 12), "float64", [_shard(
        (4, 4), [_bytes(), {"name": "zstd", "configuration": {"level": 1}}])], fill_value=-1.5),
        read_chunks=(4, 4), region=(slice(2, 5), slice(9, 15)))
    tsc("ts3-0d-int64", metadata=_v3grid((), (), "int64", [_bytes()], fill_value=12), region="full")
    tsc("ts3-4d-uint8", metadata=_v3grid((5, 6, 4, 7), (2, 3, 3, 4), "uint8", [_bytes()]))

    # ---- tensorstore zarr (v2) ----
    def v2meta(shape: tuple, chunks: tuple, dtype: str, compressor: Any, **extra: Any) -> dict:
        m = {"shape": list(shape), "chunks": list(chunks), "dtype": dtype, "compressor": compressor}
        m.update(extra)
        return m

    tsc("ts2-blosc-lz4hc-bitshuffle-be-int32-F-slash", driver="zarr", metadata=v2meta(
        s2, c2, ">i4", {"id": "blosc", "cname": "lz4hc", "clevel": 5, "shuffle": 2, "blocksize": 256},
        order="F", dimension_separator="/"))
    tsc("ts2-blosc-zstd-shuffle-float64", driver="zarr", metadata=v2meta(
        (40, 30), (16, 8), "<f8", {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 1, "blocksize": 0}))
    tsc("ts2-blosc-blosclz-noshuffle-uint16", driver="zarr", metadata=v2meta(
        (40, 30), (16, 8), "<u2", {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 0}))
    tsc("ts2-zlib-fill-nan-float64", driver="zarr", metadata=v2meta(
        s2, c2, "<f8", {"id": "zlib", "level": 3}, fill_value="NaN"))
    tsc("ts2-zstd-uint64", driver="zarr", metadata=v2meta(s3, c3, "<u8", {"id": "zstd", "level": 3}))
    tsc("ts2-gzip-be-float32-fill-neginf", driver="zarr", metadata=v2meta(
        s3, c3, ">f4", {"id": "gzip", "level": 3}, fill_value="-Infinity"))
    tsc("ts2-raw-complex64-fill-pair", driver="zarr", metadata=v2meta(
        s2, c2, "<c8", None, fill_value=[1.0, "NaN"]))
    tsc("ts2-raw-bool-order-F", driver="zarr", metadata=v2meta(s3, c3, "|b1", None, order="F"))
    tsc("ts2-0d-int16", driver="zarr", metadata=v2meta((), (), "<i2", None, fill_value=3), region="full")

    # ---- hand-written: what neither peer writes (see module docstring) ----
    _hand_raw("hand-r16-bytes", nbytes=2, shape=(5,), chunk=(2,), fill=[1, 2], codecs=[{"name": "bytes"}])
    _hand_raw("hand-r24-gzip-2d", nbytes=3, shape=(7, 5), chunk=(3, 2), fill=[0xAA, 0xBB, 0xCC],
              codecs=[{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 5}}])
    _hand_hex_fill("hand-fill-hex-float32-nan-payload", "float32", "0x7fc00001")
    _hand_hex_fill("hand-fill-hex-float16-nan-payload", "float16", "0x7e01")
    _hand_hex_fill("hand-fill-hex-float64-nan-payload", "float64", "0x7ff8000000000001")
    _hand_hex_fill("hand-fill-hex-float64-neg-zero", "float64", "0x8000000000000000")
    _hand_hex_fill("hand-fill-hex-complex64-pair", "complex64", ["0x7fc00001", "-Infinity"])
    _hand_hex_fill("hand-fill-hex-bfloat16-nan-payload", "bfloat16", "0x7fc1")


def _hand_raw(case_id: str, *, nbytes: int, shape: tuple, chunk: tuple, fill: list, codecs: list) -> None:
    """r<N> raw-bits arrays: hand-written zarr.json (spec fill form: list of byte ints) + chunks.
    Neither peer can produce/read these (see module docstring); expected is computed here."""

    def build(root: Path) -> Built:
        path = root / case_id
        (path / "c").mkdir(parents=True)
        meta = {"zarr_format": 3, "node_type": "array", "shape": list(shape),
                "data_type": f"r{nbytes * 8}",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk)}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs,
                "attributes": {"note": "raw bits"}}
        (path / "zarr.json").write_text(json.dumps(meta))
        dt = np.dtype(f"V{nbytes}")
        data = make_data(dt, shape, _seed(case_id))
        # write every chunk except the last one in C order (-> fill)
        grid = [math.ceil(s / c) for s, c in zip(shape, chunk)]
        coords = list(np.ndindex(*grid))
        written = np.zeros(shape, bool)
        for coord in coords[:-1]:
            sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coord, chunk, shape))
            block = np.zeros(chunk, dt)  # edge chunks are stored full size, padding = fill
            block[...] = np.frombuffer(bytes(fill), dt)[0]
            block[tuple(slice(0, x.stop - x.start) for x in sl)] = data[sl]
            raw = block.tobytes()
            if any(c["name"] == "gzip" for c in codecs):
                raw = gzip.compress(raw, compresslevel=5)
            key = path / "c" / Path(*map(str, coord))
            key.parent.mkdir(parents=True, exist_ok=True)
            key.write_bytes(raw)
            written[sl] = True
        m = meta_from_disk(path, dt)
        src = np.empty(shape, dt)
        src[...] = m.fill
        src[written] = data[written]
        return Built(case_id, "hand", path, src.copy(), src, m, None, None)

    _add(Case(case_id, "hand", build))


def _hand_hex_fill(case_id: str, data_type: str, fill: Any) -> None:
    """Hex fill values (NaN payloads etc.) in a hand-written zarr.json; chunk (0, 0) written with
    tensorstore, the rest left to the fill. tensorstore is the peer: zarr-python drops float16
    payloads (and has no bfloat16)."""

    def build(root: Path) -> Built:
        ts = require("tensorstore")
        if data_type == "bfloat16":
            require("ml_dtypes")
        path = root / case_id
        path.mkdir(parents=True)
        meta = {"zarr_format": 3, "node_type": "array", "shape": [6, 5], "data_type": data_type,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 3]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}
        (path / "zarr.json").write_text(json.dumps(meta))
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}).result()
        dt = np.dtype(t.dtype.numpy_dtype)
        data = make_data(dt, (6, 5), _seed(case_id))
        reg = (slice(0, 4), slice(0, 3))
        t[reg].write(data[reg]).result()
        return _finish(case_id, "tensorstore", path, data, reg, cross)

    # zarr-python loses float16 NaN payloads and has no bfloat16
    cross = "zarr" if data_type in ("float32", "float64", "complex64") else None
    _add(Case(case_id, "hand", build, cross))


_define()
CASE_IDS = [c.id for c in CASES]
CASES_BY_ID = {c.id: c for c in CASES}


# --------------------------------------------------------------------------------------------
# Groups (hierarchies, attributes, consolidated metadata)
# --------------------------------------------------------------------------------------------


@dataclass
class GroupBuilt:
    case_id: str
    path: Path
    zarr_format: int
    attrs: dict
    groups: dict  # "sub/deeper" -> attrs
    arrays: dict  # "sub/arr" -> expected ndarray (as zarr-python reads it)
    consolidated: bool


def build_group(root: Path, case_id: str, zarr_format: int, consolidated: bool) -> GroupBuilt:
    zarr = require("zarr")
    path = root / case_id

    def make() -> GroupBuilt:
        g = zarr.open_group(str(path), mode="w", zarr_format=zarr_format,
                            attributes={"title": "root", "n": [1, 2], "nested": {"k": "v"}})
        sub = g.create_group("sub", attributes={"level": 1})
        deeper = sub.create_group("deeper", attributes={"level": 2})
        g.create_group("empty_group")
        a = sub.create_array("arr", shape=(5, 7), chunks=(2, 3), dtype="int32", fill_value=-1,
                             attributes={"units": "m"})
        a[:3] = np.arange(21, dtype="int32").reshape(3, 7)
        b = deeper.create_array("b", shape=(4,), chunks=(3,), dtype="float32", fill_value=0.5)
        b[:2] = [1.0, 2.0]
        c = g.create_array("top", shape=(3, 3), chunks=(3, 3), dtype="uint8", fill_value=9)
        c[0, 0] = 1
        if consolidated:
            zarr.consolidate_metadata(str(path))
        arrays = {name: np.asarray(zarr.open_array(str(path / name), mode="r")[...])
                  for name in ("sub/arr", "sub/deeper/b", "top")}
        return GroupBuilt(case_id, path, zarr_format, {"title": "root", "n": [1, 2], "nested": {"k": "v"}},
                          {"sub": {"level": 1}, "sub/deeper": {"level": 2}, "empty_group": {}},
                          arrays, consolidated)

    return _quiet(make)


GROUP_CASES = {
    "zp3-group": (3, False),
    "zp3-group-consolidated": (3, True),
    "zp2-group": (2, False),
    "zp2-group-consolidated": (2, True),
}


# --------------------------------------------------------------------------------------------
# Lazy, cached construction (used by the session fixture) and a CLI to dump the corpus
# --------------------------------------------------------------------------------------------


class Corpus:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[str, Built] = {}
        self._groups: dict[str, GroupBuilt] = {}

    def get(self, case_id: str) -> Built:
        if case_id not in self._built:
            self._built[case_id] = CASES_BY_ID[case_id].build(self.root)
        return self._built[case_id]

    def group(self, case_id: str) -> GroupBuilt:
        if case_id not in self._groups:
            zf, cons = GROUP_CASES[case_id]
            self._groups[case_id] = build_group(self.root, case_id, zf, cons)
        return self._groups[case_id]


def main(argv: list[str]) -> int:
    """python tests/corpus.py OUTDIR  -- writes every case (for benchmarks / manual inspection)."""
    out = Path(argv[1] if len(argv) > 1 else "corpus_out")
    out.mkdir(parents=True, exist_ok=True)
    c = Corpus(out)
    for cid in CASE_IDS:
        b = c.get(cid)
        print(f"{cid:55s} {str(b.meta.shape):16s} {b.meta.dtype}")
    for gid in GROUP_CASES:
        c.group(gid)
        print(gid)
    print(f"{len(CASE_IDS)} array cases, {len(GROUP_CASES)} group cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
