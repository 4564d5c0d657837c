"""Icechunk test repositories, written by the `icechunk` package (spec 1 with icechunk 1.x).

`make_repository(root)` writes, under `root`:
  data/raw.bin              a raw float32 file the virtual chunks point into
  repo/                     the repository (local file system storage)
with, on branch main: arrays
  zstd      (64, 300) float32, zstd, native chunks
  blosc     (64, 300) int16, blosc lz4 + shuffle, native chunks
  sharded   (64, 300) float32, shards (32, 300) of (16, 100) zstd chunks
  coord     (64,) int64, small enough to be inline
  split     (8, 256) float64, one row per chunk, manifests split every 2 rows
  virt      (4, 16) float32, uncompressed virtual chunks in data/raw.bin
three commits (first, then zstd[0:16] = -1 on main, and blosc = 7 on branch "dev" made at the
first commit), and tag "v1" at the first commit. Returns a dict of paths and snapshot ids.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np


def make_repository(root: Path, data_dir: Path | None = None) -> dict:
    """``data_dir``: where raw.bin goes (default root/data); virtual chunk locations are
    absolute file:// URLs into it."""
    import icechunk as ic
    import zarr

    data_dir = data_dir or root / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    raw = np.arange(64, dtype="<f4") * 0.5
    (data_dir / "raw.bin").write_bytes(raw.tobytes())
    path = root / "repo"
    if path.exists():
        shutil.rmtree(path)
    cfg = ic.RepositoryConfig.default()
    cfg.manifest = ic.ManifestConfig(splitting=ic.ManifestSplittingConfig.from_dict(
        {ic.ManifestSplitCondition.name_matches("split"): {ic.ManifestSplitDimCondition.Any(): 2}}))
    prefix = f"file://{data_dir}/"
    cfg.set_virtual_chunk_container(ic.VirtualChunkContainer(prefix,
                                                             ic.local_filesystem_store(str(data_dir))))
    repo = ic.Repository.create(ic.local_filesystem_storage(str(path)), config=cfg,
                                authorize_virtual_chunk_access={prefix: None})
    rng = np.random.default_rng(0)
    session = repo.writable_session("main")
    g = zarr.group(store=session.store)
    g.attrs["title"] = "icechunk test repository"
    zstd = g.create_array("zstd", shape=(64, 300), chunks=(16, 100), dtype="float32",
                          compressors=zarr.codecs.ZstdCodec(level=3), fill_value=np.nan,
                          dimension_names=("y", "x"))
    zstd[...] = rng.standard_normal((64, 300)).astype("float32")
    blosc = g.create_array("blosc", shape=(64, 300), chunks=(16, 100), dtype="int16",
                           compressors=zarr.codecs.BloscCodec(cname="lz4", shuffle="shuffle"))
    blosc[...] = rng.integers(-3000, 3000, (64, 300), dtype="int16")
    sharded = g.create_array("sharded", shape=(64, 300), shards=(32, 300), chunks=(16, 100),
                             dtype="float32", compressors=zarr.codecs.ZstdCodec())
    sharded[...] = rng.standard_normal((64, 300)).astype("float32")
    coord = g.create_array("coord", shape=(64,), chunks=(64,), dtype="int64")
    coord[...] = np.arange(64) * 10
    split = g.create_array("split", shape=(8, 256), chunks=(1, 256), dtype="float64",
                           compressors=zarr.codecs.ZstdCodec())
    split[...] = rng.random((8, 256))
    g.create_array("virt", shape=(4, 16), chunks=(1, 16), dtype="float32", compressors=None,
                   fill_value=0)
    for i in range(4):
        session.store.set_virtual_ref(f"virt/c/{i}/0", f"{prefix}raw.bin", offset=i * 64,
                                      length=64)
    first = session.commit("first")
    repo.create_tag("v1", first)
    repo.create_branch("dev", first)
    session = repo.writable_session("main")
    zarr.open_group(store=session.store)["zstd"][0:16] = -1
    second = session.commit("second")
    session = repo.writable_session("dev")
    zarr.open_group(store=session.store)["blosc"][...] = 7
    third = session.commit("third on dev")
    return {"root": root, "path": path, "data": data_dir, "prefix": prefix, "first": first,
            "second": second, "third": third}


def zarr_python_arrays(repo_path: Path, prefix: str, **ref) -> dict:
    """Every array of the snapshot `ref` (branch=, tag= or snapshot_id=) read by zarr-python
    over icechunk."""
    import icechunk as ic
    import zarr

    repo = ic.Repository.open(ic.local_filesystem_storage(str(repo_path)),
                              authorize_virtual_chunk_access={prefix: None})
    g = zarr.open_group(store=repo.readonly_session(**ref).store, mode="r")
    return {name: a[...] for name, a in g.arrays()}
