"""Kerchunk reference sets made by kerchunk from generated HDF5 / netCDF3 files and from the real
netCDF files in shared/data/real, read by zarrflow and compared bit for bit with zarr-python
reading the same references through fsspec's ReferenceFileSystem."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import zarrflow
from zarrflow import errors

pytest.importorskip("kerchunk")
fsspec = pytest.importorskip("fsspec")
h5py = pytest.importorskip("h5py")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

REAL = Path(os.environ.get("ZARRFLOW_REAL_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"))


def _reference_arrays(fo, **options) -> dict:
    """Every array of a reference set as zarr-python reads it through fsspec."""
    import zarr

    fs = fsspec.filesystem("reference", fo=fo, remote_protocol="file", **options)
    g = zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True, path=""), mode="r",
                        zarr_format=2)
    return {name: a[...] for name, a in g.arrays()}


def _assert_same(group, expected: dict) -> None:
    assert sorted(group.keys()) == sorted(expected)
    for name, want in expected.items():
        got = group[name][...]
        assert got.dtype == want.dtype.newbyteorder("=") or got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.astype(want.dtype).tobytes() == want.tobytes(), name


def _assert_reads_every_variable(group, expected: dict) -> None:
    """Every variable, character arrays (|S1) included, reads as zarr-python reads it: the same
    bytes for numbers, equal values for the rest."""
    assert expected
    for name, want in expected.items():
        got = group[name][...]
        if want.dtype.kind in "biufc":
            assert got.astype(want.dtype).tobytes() == want.tobytes(), name
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.fixture(scope="module")
def hdf5(tmp_path_factory) -> Path:
    """An HDF5 file: contiguous float32, chunked big-endian float64, chunked shuffle + deflate."""
    path = tmp_path_factory.mktemp("hdf5") / "gen.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=rng.standard_normal((20, 30)).astype("f4"))
        f.create_dataset("chunked_be", data=rng.standard_normal((20, 30)).astype(">f8"),
                         chunks=(5, 10))
        f.create_dataset("deflate", data=rng.integers(0, 1000, (20, 30)).astype("i4"),
                         chunks=(5, 10), shuffle=True, compression="gzip")
    return path


def _translate(path: Path, out: Path, **kw) -> Path:
    from kerchunk.hdf import SingleHdf5ToZarr

    refs = SingleHdf5ToZarr(str(path), **kw).translate()
    out.write_text(json.dumps(refs))
    return out


def test_hdf5_references_read_as_fsspec_reads_them(hdf5, tmp_path) -> None:
    fo = _translate(hdf5, tmp_path / "refs.json", inline_threshold=0)
    want = _reference_arrays(str(fo))
    g = zarrflow.open("reference://", storage_options={"fo": str(fo), "remote_protocol": "file"})
    _assert_reads_every_variable(g, want)


def test_inline_base64_chunks(hdf5, tmp_path) -> None:
    fo = _translate(hdf5, tmp_path / "inline.json", inline_threshold=100_000)
    doc = json.loads(fo.read_text())
    assert any(isinstance(v, str) and v.startswith("base64:") for v in doc["refs"].values())
    g = zarrflow.open("reference://", storage_options={"fo": str(fo)})  # all inline
    _assert_same(g, _reference_arrays(str(fo)))


def test_a_local_reference_file_opens_by_path(hdf5, tmp_path) -> None:
    # References next to the file they point at: the file's directory is authorised.
    fo = _translate(hdf5, hdf5.parent / "next_to.json", inline_threshold=0)
    _assert_same(zarrflow.open(fo), _reference_arrays(str(fo)))


def test_unauthorised_locations_name_key_and_location(hdf5, tmp_path) -> None:
    fo = _translate(hdf5, tmp_path / "refs.json", inline_threshold=0)
    g = zarrflow.open("reference://", storage_options={"fo": str(fo)})  # no remote_protocol
    with pytest.raises(errors.PathEscapeError) as e:
        g["plain"][...]
    assert "refs.json#plain/0.0" in str(e.value) and str(hdf5) in str(e.value)
    # Authorising the file's directory explicitly works too.
    ok = zarrflow.open("reference://", storage_options={"fo": str(fo)},
                       virtual_chunk_containers=[str(hdf5.parent)])
    assert ok["plain"].shape == (20, 30)


def test_templates(hdf5, tmp_path) -> None:
    fo = _translate(hdf5, tmp_path / "refs.json", inline_threshold=0)
    doc = json.loads(fo.read_text())
    url = doc["refs"]["plain/0.0"][0]
    doc["templates"] = {"u": url}
    for k, v in doc["refs"].items():
        if isinstance(v, list):
            doc["refs"][k] = ["{{u}}", *v[1:]]
    out = tmp_path / "templated.json"
    out.write_text(json.dumps(doc))
    g = zarrflow.open("reference://", storage_options={"fo": str(out), "remote_protocol": "file"})
    _assert_same(g, _reference_arrays(str(out)))


def test_gen_ranges(tmp_path) -> None:
    """A (20, 30) big-endian float64 array in 4 × 3 chunks, each in its own file at an offset
    computed by a Jinja expression."""
    data = (np.arange(600).reshape(20, 30) / 7).astype(">f8")
    for i in range(4):
        blob = b"".join(data[i * 5:(i + 1) * 5, j * 10:(j + 1) * 10].tobytes() for j in range(3))
        (tmp_path / f"part{i}.bin").write_bytes(b"H" * 100 + blob)
    zarray = {"shape": [20, 30], "chunks": [5, 10], "dtype": ">f8", "fill_value": None,
              "order": "C", "filters": None, "compressor": None, "zarr_format": 2}
    doc = {"version": 1, "templates": {"d": str(tmp_path)},
           "refs": {".zgroup": '{"zarr_format":2}', "x/.zarray": json.dumps(zarray)},
           "gen": [{"key": "x/{{i}}.{{j}}", "url": "{{d}}/part{{i}}.bin",
                    "offset": "{{100 + j * 400}}", "length": "400",
                    "dimensions": {"i": {"stop": 4}, "j": [0, 1, 2]}}]}
    fo = tmp_path / "gen.json"
    fo.write_text(json.dumps(doc))
    g = zarrflow.open("reference://", storage_options={"fo": str(fo), "remote_protocol": "file"})
    # fsspec renders "gen" only with simple_templates=False; zarrflow always does.
    _assert_same(g, _reference_arrays(str(fo), simple_templates=False))
    np.testing.assert_array_equal(g["x"][...], data)


def test_netcdf3_big_endian_variables(tmp_path) -> None:
    netCDF4 = pytest.importorskip("netCDF4")
    from kerchunk.netCDF3 import NetCDF3ToZarr

    path = tmp_path / "classic.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("t", 6)
        ds.createDimension("x", 7)
        v = ds.createVariable("temp", "f4", ("t", "x"))
        v[:] = np.arange(42, dtype="f4").reshape(6, 7) / 3
        s = ds.createVariable("count", "i2", ("x",))
        s[:] = np.arange(7, dtype="i2") - 3
    refs = NetCDF3ToZarr(str(path), inline_threshold=0).translate()
    fo = tmp_path / "nc3.json"
    fo.write_text(json.dumps(refs))
    g = zarrflow.open("reference://", storage_options={"fo": str(fo), "remote_protocol": "file"})
    _assert_same(g, _reference_arrays(str(fo)))
    np.testing.assert_array_equal(g["temp"][...], np.arange(42, dtype="f4").reshape(6, 7) / 3)


def test_parquet_references(hdf5, tmp_path) -> None:
    pytest.importorskip("pyarrow")
    from kerchunk.df import refs_to_dataframe

    fo = _translate(hdf5, tmp_path / "refs.json", inline_threshold=0)
    refs_to_dataframe(json.loads(fo.read_text()), str(tmp_path / "refs.parq"), record_size=5)
    g = zarrflow.open("reference://", storage_options={"fo": str(tmp_path / "refs.parq"),
                                                         "remote_protocol": "file"})
    _assert_same(g, _reference_arrays(str(fo)))


def test_parquet_without_pyarrow_says_what_to_install(hdf5, tmp_path, monkeypatch) -> None:
    import builtins

    parq = tmp_path / "refs.parq"
    parq.mkdir()
    (parq / ".zmetadata").write_text(json.dumps({"metadata": {".zgroup": '{"zarr_format":2}'},
                                                 "record_size": 10}))
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(errors.UnsupportedError, match="pip install pyarrow"):
        zarrflow.open("reference://", storage_options={"fo": str(parq)})


def test_bad_reference_files(tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "refs": {"a/0": ["s3://b/x", -1, 2]}}')
    with pytest.raises(errors.MetadataError, match="bad.json.*'a/0'.*negative"):
        zarrflow.open("reference://", storage_options={"fo": str(bad)})
    with pytest.raises(errors.InvalidArgumentError, match="unknown storage option"):
        zarrflow.open("reference://", storage_options={"fo": str(bad), "remote_protcol": "s3"})
    with pytest.raises(errors.NodeNotFoundError, match="does not exist"):
        zarrflow.open("reference://", storage_options={"fo": str(tmp_path / "none.json")})


def _real_hdf5_files() -> list[Path]:
    if not REAL.is_dir():
        return []
    out = []
    for p in sorted(REAL.rglob("*.nc")):
        try:
            with open(p, "rb") as f:
                if f.read(8) == b"\x89HDF\r\n\x1a\n" and p.stat().st_size < 64 << 20:
                    out.append(p)
        except OSError:
            continue
    return out[:6]


@pytest.mark.parametrize("path", _real_hdf5_files() or [None], ids=lambda p: p.name if p else "none")
def test_real_netcdf4_files(path, tmp_path) -> None:
    if path is None:
        pytest.skip(f"no netCDF4 files under {REAL} (set ZARRFLOW_REAL_DATA)")
    try:
        fo = _translate(path, tmp_path / "real.json", inline_threshold=0)
        want = _reference_arrays(str(fo))
    except Exception as e:  # what kerchunk or zarr-python cannot read is not a zarrflow test
        pytest.skip(f"kerchunk / zarr-python cannot read {path.name}: {type(e).__name__}: {e}")
    g = zarrflow.open("reference://", storage_options={"fo": str(fo), "remote_protocol": "file"})
    _assert_reads_every_variable(g, want)


def test_references_and_chunks_on_s3(hdf5, tmp_path) -> None:
    """fo on S3 (target_options) and chunks on S3 (remote_protocol / remote_options), as with
    fsspec; the bucket's other objects stay unreadable through the references."""
    pytest.importorskip("moto")
    from servers.s3_server import MotoS3Server

    fo = _translate(hdf5, tmp_path / "refs.json", inline_threshold=0)
    want = _reference_arrays(str(fo))
    doc = json.loads(fo.read_text())
    for k, v in doc["refs"].items():
        if isinstance(v, list):
            doc["refs"][k] = ["s3://kerchunk-data/files/gen.h5", *v[1:]]
    (tmp_path / "s3refs.json").write_text(json.dumps(doc))
    with MotoS3Server() as srv:
        srv.create_bucket("kerchunk-data")
        files = tmp_path / "upload"
        files.mkdir()
        (files / "gen.h5").write_bytes(hdf5.read_bytes())
        srv.upload_dir(files, "kerchunk-data", "files")
        refs_dir = tmp_path / "refs_upload"
        refs_dir.mkdir()
        (refs_dir / "refs.json").write_text(json.dumps(doc))
        srv.upload_dir(refs_dir, "kerchunk-data", "refs")
        opts = dict(endpoint_url=srv.endpoint, key=srv.access_key, secret=srv.secret_key)
        g = zarrflow.open("reference://", storage_options={
            "fo": "s3://kerchunk-data/refs/refs.json", "target_options": opts,
            "remote_protocol": "s3", "remote_options": opts})
        _assert_same(g, want)
        # Without remote_protocol the S3 locations are not authorised.
        g = zarrflow.open("reference://", storage_options={
            "fo": "s3://kerchunk-data/refs/refs.json", "target_options": opts})
        with pytest.raises(errors.PathEscapeError, match="s3://kerchunk-data/files/gen.h5"):
            g["plain"][...]
