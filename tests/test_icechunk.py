"""Icechunk repositories written by the icechunk package, read by zarrflow: every read bit-exact
against zarr-python + icechunk on the same snapshot; refs, tags, snapshot ids, split manifests,
inline / native / virtual chunks, local and on moto S3; and one test per kind of bad input."""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow import errors

icechunk = pytest.importorskip("icechunk")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

from icechunk_repos import make_repository, zarr_python_arrays  # noqa: E402

ARRAYS = ("zstd", "blosc", "sharded", "coord", "split", "virt")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> dict:
    os.environ.setdefault("RUST_LOG", "error")
    return make_repository(tmp_path_factory.mktemp("icechunk"))


def _open(repo: dict, **kwargs):
    kwargs.setdefault("virtual_chunk_containers", {repo["prefix"]: None})
    return zarrflow.open(repo["path"], **kwargs)


def _assert_same(group, expected: dict, where: str) -> None:
    assert sorted(group.keys()) == sorted(expected)
    for name, want in expected.items():
        got = group[name][...]
        assert got.dtype == want.dtype, (where, name)
        assert got.tobytes() == want.tobytes(), f"{where}: {name} differs"


@pytest.mark.parametrize("ref, icechunk_ref", [
    (None, {"branch": "main"}),
    ("main", {"branch": "main"}),
    ("dev", {"branch": "dev"}),
    ("v1", {"tag": "v1"}),
])
def test_refs_read_as_zarr_python_reads_them(repo, ref, icechunk_ref) -> None:
    g = _open(repo, ref=ref)
    _assert_same(g, zarr_python_arrays(repo["path"], repo["prefix"], **icechunk_ref), str(ref))
    assert g.attrs["title"] == "icechunk test repository"
    assert g["zstd"].dims == ("y", "x")


def test_an_older_snapshot_by_id_returns_the_older_values(repo) -> None:
    old = _open(repo, ref=repo["first"])
    new = _open(repo, ref="main")
    _assert_same(old, zarr_python_arrays(repo["path"], repo["prefix"], snapshot_id=repo["first"]),
                 "first")
    assert (new["zstd"][0:16] == -1).all()
    assert not (old["zstd"][0:16] == -1).any()
    assert (_open(repo, ref="dev")["blosc"][...] == 7).all()
    # Snapshot ids are Crockford base 32: lowercase works too.
    assert _open(repo, ref=repo["first"].lower())["zstd"][0, 0] == old["zstd"][0, 0]


def test_partial_and_strided_reads(repo) -> None:
    g = _open(repo)
    want = zarr_python_arrays(repo["path"], repo["prefix"], branch="main")
    for name in ("zstd", "sharded", "blosc"):
        np.testing.assert_array_equal(g[name][5:50:3, 7:290:11], want[name][5:50:3, 7:290:11])
    np.testing.assert_array_equal(g["split"][3:7, ::5], want["split"][3:7, ::5])
    np.testing.assert_array_equal(g["virt"][1:3, 2:9], want["virt"][1:3, 2:9])


def test_store_facts_and_chunk_counts(repo) -> None:
    from zarrflow import _core

    store = zarrflow._api._store_and_path(
        str(repo["path"]), virtual_chunk_containers={repo["prefix"]: None})[0]
    assert isinstance(store, _core.IcechunkStore)
    assert store.snapshot_id == repo["second"]
    assert (store.ref_kind, store.ref_name, store.spec_version) == ("branch", "main", 1)
    assert store.message == "second"
    counts = {name: store.chunk_counts(name) for name in ARRAYS}
    assert counts["virt"] == {"native": 0, "inline": 0, "virtual": 4}
    assert counts["coord"] == {"native": 0, "inline": 1, "virtual": 0}
    # zstd[0:16] = -1 compresses below icechunk's inline threshold: 3 inline, 9 native.
    assert counts["zstd"] == {"native": 9, "inline": 3, "virtual": 0}
    assert counts["split"]["native"] + counts["split"]["inline"] == 8
    assert counts["sharded"]["native"] == 2


def test_virtual_chunks_need_an_authorised_container(repo) -> None:
    g = zarrflow.open(repo["path"])  # no virtual_chunk_containers
    np.testing.assert_array_equal(g["zstd"][0:16], -1)  # native chunks need none
    with pytest.raises(errors.PathEscapeError) as e:
        g["virt"][...]
    msg = str(e.value)
    # The chunk the threads report first is named (whichever it is).
    assert re.search(r"c/\d+/\d+", msg), msg
    assert repo["prefix"] + "raw.bin" in msg and "virtual_chunk_containers" in msg


def test_unknown_ref_lists_branches_and_tags(repo) -> None:
    with pytest.raises(errors.NodeNotFoundError, match="no branch, tag or snapshot 'mian'") as e:
        _open(repo, ref="mian")
    assert "dev" in str(e.value) and "v1" in str(e.value)
    with pytest.raises(errors.NodeNotFoundError):
        _open(repo, ref="0" * 20)


def test_ref_on_a_plain_zarr_store_is_an_error(tmp_path) -> None:
    import zarr

    zarr.create_array(str(tmp_path / "plain.zarr"), shape=(2,), chunks=(2,), dtype="i1")
    with pytest.raises(errors.NodeNotFoundError, match="not an Icechunk repository"):
        zarrflow.open(tmp_path / "plain.zarr", ref="main")


# ------------------------------------------------------------------------------------------
# object storage
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def s3_repo(repo):
    pytest.importorskip("moto")
    from servers.s3_server import MotoS3Server

    with MotoS3Server() as srv:
        srv.create_bucket("icechunk-repos")
        srv.upload_dir(repo["path"], "icechunk-repos", "repo")
        srv.upload_dir(repo["data"], "icechunk-repos", "nc")
        yield srv


def test_repository_on_s3_reads_as_local(repo, s3_repo) -> None:
    opts = dict(endpoint_url=s3_repo.endpoint, key=s3_repo.access_key, secret=s3_repo.secret_key)
    local = _open(repo, ref="v1")
    remote = zarrflow.open("s3://icechunk-repos/repo", storage_options=opts, ref="v1")
    for name in ("zstd", "blosc", "sharded", "coord", "split"):
        assert remote[name][...].tobytes() == local[name][...].tobytes(), name
    # Without ref=: found by its layout.
    found = zarrflow.open("s3://icechunk-repos/repo", storage_options=opts)
    assert (found["zstd"][0:16] == -1).all()


def test_repository_served_by_the_s3_files_server(repo) -> None:
    """The read-only S3 endpoint the benchmark uses (tests/servers/s3_files_server.py) serves a
    repository's directory as written: zarrflow reads it as it reads the local copy."""
    from servers.s3_files_server import S3FilesServer

    with S3FilesServer(repo["root"]) as srv:  # bucket "repo" is the repository's directory
        opts = dict(endpoint_url=srv.endpoint, key="any", secret="any")
        remote = zarrflow.open("s3://repo", storage_options=opts)
        local = _open(repo)
        for name in ("zstd", "blosc", "sharded", "coord", "split"):
            assert remote[name][...].tobytes() == local[name][...].tobytes(), name


def test_virtual_chunks_from_s3_and_missing_credentials(repo, s3_repo, tmp_path,
                                                        monkeypatch) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    prefix = "s3://icechunk-repos/nc/"
    cfg = icechunk.RepositoryConfig.default()
    cfg.set_virtual_chunk_container(icechunk.VirtualChunkContainer(
        prefix, icechunk.s3_store(region="us-east-1", endpoint_url=s3_repo.endpoint,
                                  allow_http=True, s3_compatible=True)))
    path = tmp_path / "s3virt"
    r = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)), config=cfg)
    import zarr

    s = r.writable_session("main")
    zarr.create_array(store=s.store, name="v", shape=(2, 16), chunks=(1, 16), dtype="float32",
                      compressors=None)
    for i in range(2):
        s.store.set_virtual_ref(f"v/c/{i}/0", f"{prefix}raw.bin", offset=i * 64, length=64)
    s.commit("virtual on s3")
    creds = dict(key=s3_repo.access_key, secret=s3_repo.secret_key)
    a = zarrflow.open(path, virtual_chunk_containers={prefix: creds})["v"]
    np.testing.assert_array_equal(a[...], (np.arange(32, dtype="f4") * 0.5).reshape(2, 16))
    # The endpoint came from the repository's configuration; without credentials the private
    # bucket refuses the unsigned request, and the error names the chunk and the location.
    unsigned = zarrflow.open(path, virtual_chunk_containers={prefix: None})["v"]
    with pytest.raises(errors.StoreIOError, match="403") as e:
        unsigned[0]
    assert "chunk 'c/0/0'" in str(e.value) and "nc/raw.bin" in str(e.value)


def test_repository_over_plain_http_with_virtual_chunks_from_http(repo) -> None:
    """A repository on a web server, found by its layout (plain HTTP cannot list); an http://
    container does not authorise the repository's file:// virtual chunk locations."""
    from servers.range_server import RangeServer

    with RangeServer(repo["root"]) as srv:
        prefix = f"{srv.url}/data/"
        g = zarrflow.open(f"{srv.url}/repo", ref="v1", virtual_chunk_containers={prefix: {}})
        local = _open(repo, ref="v1")
        for name in ("zstd", "coord", "split"):
            assert g[name][...].tobytes() == local[name][...].tobytes(), name
        # The repository's virtual chunks name file:// locations: not the http:// container.
        with pytest.raises(errors.PathEscapeError, match="file://"):
            g["virt"][...]


def test_manifests_are_fetched_when_their_chunks_are_read_not_at_open(repo) -> None:
    """Opening a repository, its group and an array's metadata fetches the ref and the snapshot
    and no manifest; a chunk read fetches only the manifest covering it (the split array has
    one manifest per two rows), and each manifest once. Counted from the server's log."""
    from servers.range_server import RangeServer

    def manifests(srv) -> list[str]:
        return [r.path for r in srv.requests if "/manifests/" in r.path]

    with RangeServer(repo["root"]) as srv:
        a = zarrflow.open(f"{srv.url}/repo", ref="main")["split"]
        assert a.shape == (8, 256)
        assert any("/snapshots/" in r.path for r in srv.requests)
        assert manifests(srv) == []
        a[0]
        assert len(manifests(srv)) == 1
        a[1]  # rows 0-1: the same manifest, already read
        assert len(manifests(srv)) == 1
        a[2:4]  # rows 2-3: the next one
        assert len(manifests(srv)) == 2
        assert len(set(manifests(srv))) == 2


def test_metadata_file_sizes_are_capped_by_open_limits(repo) -> None:
    """limits={"max_metadata_bytes": ...} bounds the snapshot and config.yaml,
    {"max_manifest_bytes": ...} each manifest; the error names the file and the limit."""
    path = repo["path"]
    with pytest.raises(errors.CorruptChunkError, match="max_metadata_bytes") as e:
        zarrflow.open(path, limits={"max_metadata_bytes": 200})
    assert "snapshots/" in str(e.value)
    # config.yaml is read for the settings of object-store containers ...
    remote = {repo["prefix"]: None, "s3://another-bucket/": {"anon": True}}
    with pytest.raises(errors.CorruptChunkError, match="max_metadata_bytes") as e:
        _open(repo, virtual_chunk_containers=remote, limits={"max_metadata_bytes": 64})
    assert "config.yaml" in str(e.value)
    # ... and not for local ones, which take none: the snapshot is the first file over the limit.
    with pytest.raises(errors.CorruptChunkError, match="max_metadata_bytes") as e:
        _open(repo, limits={"max_metadata_bytes": 64})
    assert "snapshots/" in str(e.value)
    g = zarrflow.open(path, limits={"max_manifest_bytes": 64})
    assert g["zstd"].shape == (64, 300)  # metadata comes from the snapshot: no manifest read
    with pytest.raises(errors.CorruptChunkError, match="max_manifest_bytes") as e:
        g["zstd"][...]
    assert "manifests/" in str(e.value)
    ample = zarrflow.open(path, limits={"max_manifest_bytes": 1 << 20, "max_metadata_bytes": 1 << 20})
    assert ample["zstd"][...].tobytes() == _open(repo)["zstd"][...].tobytes()


# ------------------------------------------------------------------------------------------
# bad input: one test each
# ------------------------------------------------------------------------------------------

@pytest.fixture
def copy(repo, tmp_path) -> dict:
    out = dict(repo)
    out["path"] = tmp_path / "repo"
    shutil.copytree(repo["path"], out["path"])
    return out


def _snapshot_file(r: dict, snap: str) -> Path:
    return r["path"] / "snapshots" / snap


def _manifest_of_zstd(r: dict) -> Path:
    # The manifests the second snapshot adds: the newest files in manifests/.
    files = sorted((r["path"] / "manifests").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    return files[-1]


def test_truncated_snapshot_is_an_error_naming_the_file(copy) -> None:
    f = _snapshot_file(copy, copy["second"])
    f.write_bytes(f.read_bytes()[:60])
    with pytest.raises(errors.CorruptChunkError, match="zstd|truncated") as e:
        _open(copy)
    assert f"snapshots/{copy['second']}" in str(e.value)


def _rewrite_payload(f: Path, change) -> None:
    """Decompresses the FlatBuffers payload of an Icechunk file, applies `change`, recompresses."""
    from numcodecs import Zstd

    data = f.read_bytes()
    payload = bytes(Zstd().decode(data[39:]))
    f.write_bytes(data[:39] + bytes(Zstd(level=1).encode(change(payload))))


def test_corrupt_flatbuffer_is_refused_by_the_verifier(copy) -> None:
    f = _snapshot_file(copy, copy["second"])
    _rewrite_payload(f, lambda p: p[: len(p) // 2])  # offsets now point past the end
    with pytest.raises(errors.CorruptChunkError, match="FlatBuffers verification failed") as e:
        _open(copy)
    assert f"snapshots/{copy['second']}" in str(e.value)
    _rewrite_payload(f, lambda p: b"\xff\xff\xff\x7f" + p[4:])  # root offset out of bounds
    with pytest.raises(errors.CorruptChunkError, match="FlatBuffers verification failed"):
        _open(copy)


def test_a_deleted_tag_is_not_a_ref(copy) -> None:
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(copy["path"])))
    repo.create_tag("gone", copy["first"])
    assert _open(copy, ref="gone")["coord"].shape == (64,)
    repo.delete_tag("gone")
    with pytest.raises(errors.NodeNotFoundError, match="no branch, tag or snapshot 'gone'") as e:
        _open(copy, ref="gone")
    assert "v1" in str(e.value) and "gone" not in str(e.value).split("(", 1)[1]


def test_wrong_magic(copy) -> None:
    f = _snapshot_file(copy, copy["second"])
    data = bytearray(f.read_bytes())
    data[0:3] = b"XXX"
    f.write_bytes(bytes(data))
    with pytest.raises(errors.CorruptChunkError, match="wrong magic"):
        _open(copy)


def test_unknown_spec_version(copy) -> None:
    f = _snapshot_file(copy, copy["second"])
    data = bytearray(f.read_bytes())
    data[36] = 9
    f.write_bytes(bytes(data))
    with pytest.raises(errors.UnsupportedError, match="spec version 9"):
        _open(copy)


def test_missing_snapshot(copy) -> None:
    _snapshot_file(copy, copy["second"]).unlink()
    with pytest.raises(errors.NodeNotFoundError, match=f"snapshots/{copy['second']}"):
        _open(copy)


def test_corrupt_manifest_is_an_error_when_its_chunks_are_read(copy) -> None:
    for f in (copy["path"] / "manifests").iterdir():
        data = f.read_bytes()
        f.write_bytes(data[:39] + bytes(len(data) - 39))  # valid header, garbage payload
    g = _open(copy)
    with pytest.raises(errors.CorruptChunkError) as e:
        g["zstd"][...]
    assert "manifests/" in str(e.value)


def _virtual_repo(tmp_path: Path, data: Path, refs) -> Path:
    """A repository with one virtual array 'v' (2 chunks of 16 float32) from `refs`:
    (location, offset, length, checksum) per chunk."""
    import zarr

    prefix = f"file://{data}/"
    cfg = icechunk.RepositoryConfig.default()
    cfg.set_virtual_chunk_container(icechunk.VirtualChunkContainer(
        prefix, icechunk.local_filesystem_store(str(data))))
    path = tmp_path / "virtual"
    r = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)), config=cfg,
                                   authorize_virtual_chunk_access={prefix: None})
    s = r.writable_session("main")
    zarr.create_array(store=s.store, name="v", shape=(2, 16), chunks=(1, 16), dtype="float32",
                      compressors=None)
    for i, (loc, offset, length, checksum) in enumerate(refs):
        s.store.set_virtual_ref(f"v/c/{i}/0", loc, offset=offset, length=length,
                                checksum=checksum, validate_container=False)
    s.commit("virtual")
    return path


def test_virtual_chunk_whose_file_changed_etag_and_mtime(repo, tmp_path) -> None:
    raw = repo["data"] / "raw.bin"
    loc = f"{repo['prefix']}raw.bin"
    past = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
    path = _virtual_repo(tmp_path, repo["data"], [(loc, 0, 64, "not-the-etag"),
                                                  (loc, 64, 64, past)])
    a = zarrflow.open(path, virtual_chunk_containers={repo["prefix"]: None})["v"]
    with pytest.raises(errors.ChecksumError, match="ETag") as e:
        a[0]
    assert "c/0/0" in str(e.value) and "raw.bin" in str(e.value)
    with pytest.raises(errors.ChecksumError, match="modified") as e:
        a[1]
    assert "c/1/0" in str(e.value) and "raw.bin" in str(e.value)
    # The file as it is now passes both checks.
    now = datetime.datetime.fromtimestamp(raw.stat().st_mtime + 1, tz=datetime.timezone.utc)
    ok = _virtual_repo(tmp_path / "ok", repo["data"], [(loc, 0, 64, now), (loc, 64, 64, None)])
    np.testing.assert_array_equal(
        zarrflow.open(ok, virtual_chunk_containers={repo["prefix"]: None})["v"][...],
        (np.arange(32, dtype="f4") * 0.5).reshape(2, 16))


def test_virtual_offsets_past_the_end_of_the_file(repo, tmp_path) -> None:
    loc = f"{repo['prefix']}raw.bin"
    path = _virtual_repo(tmp_path, repo["data"], [(loc, 0, 64, None), (loc, 250, 64, None)])
    a = zarrflow.open(path, virtual_chunk_containers={repo["prefix"]: None})["v"]
    np.testing.assert_array_equal(a[0], np.arange(16, dtype="f4") * 0.5)
    with pytest.raises(errors.CorruptChunkError) as e:
        a[1]
    assert "c/1/0" in str(e.value) and "raw.bin" in str(e.value)


def test_virtual_location_escaping_its_container(repo, tmp_path) -> None:
    secret = repo["root"] / "secret.bin"
    secret.write_bytes(bytes(64))
    loc = f"{repo['prefix']}../secret.bin"
    path = _virtual_repo(tmp_path, repo["data"], [(loc, 0, 64, None)])
    a = zarrflow.open(path, virtual_chunk_containers={repo["prefix"]: None})["v"]
    with pytest.raises(errors.PathEscapeError) as e:
        a[0]
    assert "c/0/0" in str(e.value) and "secret.bin" in str(e.value)


# ------------------------------------------------------------------------------------------
# virtual chunks made by VirtualiZarr from HDF5 / netCDF4 files
# ------------------------------------------------------------------------------------------

REAL = Path(os.environ.get("ZARRFLOW_REAL_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"))


def _virtualize(files: list[Path], tmp_path: Path) -> tuple[Path, str]:
    """A repository with one group per file, its variables virtual chunks made by VirtualiZarr's
    HDF parser; returns (repository path, authorised prefix)."""
    vz = pytest.importorskip("virtualizarr")
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr.parsers import HDFParser

    prefix = f"file://{files[0].parent}/"
    cfg = icechunk.RepositoryConfig.default()
    cfg.set_virtual_chunk_container(icechunk.VirtualChunkContainer(
        prefix, icechunk.local_filesystem_store(str(files[0].parent))))
    path = tmp_path / "virtualized"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)), config=cfg,
                                      authorize_virtual_chunk_access={prefix: None})
    session = repo.writable_session("main")
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    for f in files:
        vds = vz.open_virtual_dataset(f"file://{f}", parser=HDFParser(), registry=registry)
        vds.vz.to_icechunk(session.store, group=f.stem)
    session.commit("virtualized")
    return path, prefix


def _compare_virtualized(path: Path, prefix: str) -> int:
    """Every numeric array of every group, zarrflow against zarr-python + icechunk; returns
    how many were compared."""
    import zarr

    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)),
                                    authorize_virtual_chunk_access={prefix: None})
    want = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    got = zarrflow.open(path, virtual_chunk_containers={prefix: None})
    n = 0
    for gname, group in want.groups():
        for name, arr in group.arrays():
            expected = arr[...]
            if expected.dtype.kind not in "biufc":
                continue
            a = got[gname][name]
            assert a[...].astype(expected.dtype).tobytes() == expected.tobytes(), (gname, name)
            n += 1
    return n


def test_virtualizarr_hdf5_with_shuffle_and_deflate(tmp_path) -> None:
    h5py = pytest.importorskip("h5py")
    data = tmp_path / "files"
    data.mkdir()
    rng = np.random.default_rng(3)
    with h5py.File(data / "gen.h5", "w") as f:
        f.create_dataset("plain", data=rng.standard_normal((20, 30)).astype("f4"))
        f.create_dataset("deflate", data=rng.integers(0, 1000, (20, 30)).astype("i4"),
                         chunks=(5, 10), shuffle=True, compression="gzip")
        f.create_dataset("big_endian", data=rng.standard_normal((20, 30)).astype(">f8"),
                         chunks=(10, 15))
    path, prefix = _virtualize([data / "gen.h5"], tmp_path)
    assert _compare_virtualized(path, prefix) == 3


def test_virtualizarr_real_netcdf4_files(tmp_path) -> None:
    files = []
    if REAL.is_dir():
        for p in sorted(REAL.rglob("*.nc")):
            with open(p, "rb") as f:
                if f.read(8) == b"\x89HDF\r\n\x1a\n" and p.stat().st_size < 64 << 20:
                    files.append(p)
    if not files:
        pytest.skip(f"no netCDF4 files under {REAL} (set ZARRFLOW_REAL_DATA)")
    # One container per directory: repositories here hold one directory's files.
    by_dir: dict[Path, list[Path]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f)
    compared = 0
    for i, (directory, group) in enumerate(sorted(by_dir.items())):
        try:
            path, prefix = _virtualize(group[:3], tmp_path / str(i))
        except Exception as e:  # what VirtualiZarr cannot parse is not a zarrflow test
            print(f"VirtualiZarr cannot virtualize {directory}: {type(e).__name__}: {e}")
            continue
        compared += _compare_virtualized(path, prefix)
    assert compared > 0


# ------------------------------------------------------------------------------------------
# everything on top: the Loader (snapshot pinning), inspect, the xarray engine, rechunk
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def weather(tmp_path_factory) -> dict:
    """A (time, lat, lon) float32 repository with two commits on main."""
    import zarr

    path = tmp_path_factory.mktemp("weather") / "repo"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    session = repo.writable_session("main")
    g = zarr.group(store=session.store)
    t = g.create_array("time", shape=(12,), chunks=(12,), dtype="int64", dimension_names=("time",))
    t[...] = np.arange(12)
    a = g.create_array("t2m", shape=(12, 8, 16), chunks=(1, 8, 16), dtype="float32",
                       compressors=zarr.codecs.ZstdCodec(), dimension_names=("time", "lat", "lon"))
    a[...] = np.random.default_rng(5).standard_normal((12, 8, 16)).astype("float32")
    first = session.commit("first")
    session = repo.writable_session("main")
    zarr.open_group(store=session.store)["t2m"][0] = 0
    second = session.commit("second")
    return {"path": path, "first": first, "second": second}


def test_loader_pins_a_snapshot_and_refuses_another_on_resume(weather) -> None:
    kw = dict(batch_size=2, device="cpu", output="numpy", shuffle=True, seed=1)
    ld = zarrflow.Loader(weather["path"], ["t2m"], **kw)
    state = ld.state_dict()
    assert state["snapshot_id"] == weather["second"]
    old = zarrflow.Loader(zarrflow.open(weather["path"], ref=weather["first"]), ["t2m"], **kw)
    with pytest.raises(zarrflow.LoaderError, match=weather["second"]):
        old.load_state_dict(state)
    old.load_state_dict(state, allow_snapshot_change=True)
    same = zarrflow.Loader(zarrflow.open(weather["path"], ref=state["snapshot_id"]), ["t2m"], **kw)
    same.load_state_dict(json.loads(json.dumps(state)))
    batch = next(iter(same))
    want = zarrflow.open(weather["path"], ref=weather["second"])["t2m"]
    for row, t in zip(batch["x"], batch["time"]):
        np.testing.assert_array_equal(row[0], want[int(t)])


def test_inspect_names_snapshot_and_counts_chunk_kinds(repo, capsys) -> None:
    from zarrflow.tools import cli

    assert cli.main(["inspect", str(repo["path"]), "--ref", "v1",
                     "--virtual-container", repo["prefix"]]) == 0
    out = capsys.readouterr().out
    assert f"tag v1 → snapshot {repo['first']}" in out and "'first'" in out
    assert "chunk references: 0 native, 0 inline, 4 virtual" in out
    assert "chunk references: 12 native, 0 inline, 0 virtual" in out  # zstd at v1
    assert "chunks 12/12 present" in out


def test_xarray_engine_reads_a_snapshot(weather) -> None:
    xr = pytest.importorskip("xarray")
    ds = xr.open_dataset(weather["path"], engine="zarrflow", ref=weather["first"])
    ds2 = xr.open_dataset(weather["path"], engine="zarrflow")
    assert float(abs(ds2["t2m"][0]).max()) == 0.0
    assert float(abs(ds["t2m"][0]).max()) > 0.0
    np.testing.assert_array_equal(ds["t2m"].values[1:], ds2["t2m"].values[1:])


def test_rechunk_reads_from_a_repository(weather, tmp_path) -> None:
    pytest.importorskip("tensorstore")
    from zarrflow.tools import rechunk

    out = tmp_path / "out.zarr"
    rechunk.rechunk(weather["path"], out, rechunk.Options(chunks={"time": 4}), progress=False)
    src = zarrflow.open(weather["path"])["t2m"][...]
    dst = zarrflow.open(out)["t2m"]
    assert dst.chunks[0] == 4
    assert dst[...].tobytes() == src.tobytes()


# ------------------------------------------------------------------------------------------
# spec 2: golden repositories written by icechunk 2.x (tests/data/make_icechunk_v2.py)
# ------------------------------------------------------------------------------------------

GOLDEN = Path(__file__).resolve().parent / "data" / "icechunk_v2"


def test_spec2_golden_repositories() -> None:
    if not (GOLDEN / "repo").is_dir():
        pytest.skip("no spec-2 golden repository: run tests/data/make_icechunk_v2.py with "
                    "icechunk 2.x (Python >= 3.12) and commit tests/data/icechunk_v2")
    meta = json.loads((GOLDEN / "snapshots.json").read_text())
    data_dir = Path(meta["prefix"][len("file://"):])
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "raw.bin").write_bytes((np.arange(64, dtype="<f4") * 0.5).tobytes())
    expected = np.load(GOLDEN / "expected.npz")
    for label in ("main", "v1", "dev"):
        g = zarrflow.open(GOLDEN / "repo", ref=label,
                          virtual_chunk_containers={meta["prefix"]: None})
        names = sorted(k.split("/", 1)[1] for k in expected.files if k.startswith(label + "/"))
        assert sorted(g.keys()) == names
        for name in names:
            want = expected[f"{label}/{name}"]
            assert g[name][...].tobytes() == want.tobytes(), (label, name)
    store = zarrflow._api._store_and_path(str(GOLDEN / "repo"), ref=meta["first"])[0]
    assert (store.spec_version, store.snapshot_id) == (2, meta["first"])
    first = zarrflow.open(GOLDEN / "repo", ref=meta["first"])
    assert first["zstd"][...].tobytes() == expected["v1/zstd"].tobytes()
