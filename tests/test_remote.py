"""Remote stores against real servers on 127.0.0.1: an HTTP range server and moto's S3 server.

* Every corpus store (written by zarr-python 3 and tensorstore) read over HTTP equals the local
  read bit for bit; a cross-section of them over S3 with SigV4, with signature checking on, and
  anonymously from a public bucket; hierarchies found by S3 listing or consolidated metadata.
* Faults from the range server's schedule (500/503/429, stalls past the timeout, connection
  resets, truncated bodies) are retried until the data is right; exhausted retries, 403 and
  missing buckets are errors naming the URL and chunk key; only a 404 is a missing chunk.
* Bounded requests in flight, connection reuse, range coalescing of sharded reads, the loader
  streaming from S3, the CLI and the xarray engine over URLs, and credential resolution.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import corpus as C
import zarrflow
from servers.range_server import RangeServer
from zarrflow import errors
from zarrflow._remote import remote_config

zarr = pytest.importorskip("zarr")

S3_CASES = [
    "zp3-blosc-lz4-shuffle-int64", "zp3-zstd-crc32c-uint64", "zp3-transpose-1302-blosc-uint32",
    "zp3-shard-end-zstd-int32", "zp3-shard-start-zstd-float64", "zp3-shard-sparse-inner-uint16",
    "zp3-shard-nested-end-gzip-float32", "zp3-fill-nan-float32", "zp3-keys-v2-dot-int32",
    "zp3-0d-float64", "zp3-unwritten-float32", "zp3-empty-shape0-int32",
    "zp2-blosc-lz4-shuffle1-bei4", "zp2-lz4-uint16", "zp2-filter-delta-shuffle-blosc-uint16",
    "zp2-order-F-float64", "zp2-sep-slash-int16", "zp2-unwritten-int32",
    "ts3-bfloat16-shard-blosc", "ts3-shard-nested", "ts3-shard-sparse-inner-fill",
    "ts3-gzip-crc32c-fill-neginf-float64", "ts2-blosc-zstd-shuffle-float64", "ts2-raw-bool-order-F",
    "hand-r24-gzip-2d",
]
FAST = dict(max_attempts=4, backoff_base=0.01, backoff_max=0.2, stall_timeout=1,
            request_timeout=10, connect_timeout=2)


def _partial_region(shape: tuple) -> tuple:
    return tuple(slice(s // 3, max(s // 3 + 1, (2 * s) // 3)) for s in shape)


# --------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def http_corpus(corpus):
    with RangeServer(corpus.root) as srv:
        yield srv


class _S3:
    """One moto server for the session, with the corpus uploaded case by case on demand."""

    BUCKET = "zarrflow-corpus"
    PUBLIC = "zarrflow-public"

    def __init__(self, server, corpus):
        self.server, self.corpus, self.uploaded = server, corpus, set()
        server.create_bucket(self.BUCKET)
        server.create_bucket(self.PUBLIC, public=True)

    def options(self, **extra):
        return dict(endpoint_url=self.server.endpoint, key=self.server.access_key,
                    secret=self.server.secret_key, **extra)

    def upload(self, path: Path, bucket: str | None = None) -> str:
        """s3:// URL of a local store below the corpus root (or any dir), uploaded once."""
        bucket = bucket or self.BUCKET
        root = self.corpus.root
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        if (bucket, rel) not in self.uploaded:
            self.server.upload_dir(path, bucket, rel)
            self.uploaded.add((bucket, rel))
        return f"s3://{bucket}/{rel}"


@pytest.fixture(scope="session")
def s3(corpus):
    pytest.importorskip("moto")
    pytest.importorskip("boto3")
    from servers.s3_server import MotoS3Server

    with MotoS3Server() as srv:
        yield _S3(srv, corpus)


@pytest.fixture
def small_store(tmp_path) -> tuple[Path, np.ndarray]:
    """64 zstd chunks of a (64, 16, 16) float32 array."""
    rng = np.random.default_rng(1)
    data = rng.standard_normal((64, 16, 16)).astype("float32")
    path = tmp_path / "small.zarr"
    a = zarr.create_array(str(path), shape=data.shape, chunks=(1, 16, 16), dtype="float32",
                          compressors=[zarr.codecs.ZstdCodec(level=1)], fill_value=np.nan)
    a[...] = data
    return path, data


@pytest.fixture
def served(small_store):
    path, data = small_store
    with RangeServer(path.parent) as srv:
        yield srv, f"{srv.url}/{path.name}", data


# --------------------------------------------------------------------------------------------
# bit-exact reads over HTTP and S3
# --------------------------------------------------------------------------------------------

def test_http_reads_every_corpus_case(built: C.Built, http_corpus, corpus) -> None:
    url = f"{http_corpus.url}/{built.path.relative_to(corpus.root).as_posix()}"
    a = zarrflow.open(url)
    assert isinstance(a, zarrflow.Array)
    C.assert_bitwise_equal(a[...], built.expected, f"{built.case_id} over HTTP")
    if built.expected.ndim:
        region = _partial_region(built.expected.shape)
        C.assert_bitwise_equal(a[region], built.expected[region], f"{built.case_id} region")


@pytest.mark.parametrize("case_id", S3_CASES)
def test_s3_reads_match_local(case_id: str, corpus, s3) -> None:
    built = corpus.get(case_id)
    a = zarrflow.open(s3.upload(built.path), storage_options=s3.options())
    C.assert_bitwise_equal(a[...], built.expected, f"{case_id} over S3")
    if built.expected.ndim:
        region = _partial_region(built.expected.shape)
        C.assert_bitwise_equal(a[region], built.expected[region], f"{case_id} region over S3")
    stats = a.remote_stats()
    assert stats["requests"] > 0 and stats["retries"] == 0


def test_groups_over_s3_listing_and_http_consolidated(group_built, s3, corpus, http_corpus):
    def check(g):
        for name, exp in group_built.arrays.items():
            C.assert_bitwise_equal(g[name][...], exp, f"{group_built.case_id}/{name}")
        assert dict(g.attrs) == group_built.attrs

    check(zarrflow.open(s3.upload(group_built.path), storage_options=s3.options()))
    url = f"{http_corpus.url}/{group_built.path.relative_to(corpus.root).as_posix()}"
    if "consolidated" in group_built.case_id:
        check(zarrflow.open(url))
    else:  # nothing to list over plain HTTP: a clear error, not an empty group
        with pytest.raises(errors.UnsupportedError, match="consolidate"):
            list(zarrflow.open(url).keys())


# --------------------------------------------------------------------------------------------
# credentials and S3 errors
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def s3_auth(corpus):
    """A second moto server that checks SigV4 signatures against IAM users."""
    pytest.importorskip("moto")
    from servers.s3_server import MotoS3Server

    with MotoS3Server(auth=True) as srv:
        srv.create_bucket("signed")
        built = corpus.get("zp3-shard-end-zstd-int32")
        srv.upload_dir(built.path, "signed", "a.zarr")
        yield srv, built


def test_sigv4_signatures_are_verified(s3_auth) -> None:
    srv, built = s3_auth
    key, secret = srv.create_user_keys()
    opts = dict(endpoint_url=srv.endpoint, key=key, secret=secret)
    C.assert_bitwise_equal(zarrflow.open("s3://signed/a.zarr", storage_options=opts)[...],
                           built.expected, "signed read")
    with pytest.raises(errors.StoreIOError, match="403.*SignatureDoesNotMatch") as e:
        zarrflow.open("s3://signed/a.zarr", storage_options={**opts, "secret": secret + "x"})
    assert "s3://signed/a.zarr/zarr.json" in str(e.value)
    with pytest.raises(errors.StoreIOError, match="InvalidAccessKeyId"):
        zarrflow.open("s3://signed/a.zarr",
                      storage_options={**opts, "key": "AKIANOSUCHKEY0000000"})


def test_signing_from_environment_and_profile_files(s3_auth, tmp_path, monkeypatch) -> None:
    srv, built = s3_auth
    key, secret = srv.create_user_keys()
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_NO_SIGN_REQUEST", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", srv.endpoint)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    C.assert_bitwise_equal(zarrflow.open("s3://signed/a.zarr")[...], built.expected, "env keys")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    (tmp_path / "credentials").write_text(
        f"[era5]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n")
    (tmp_path / "config").write_text("[profile era5]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_PROFILE", "era5")
    C.assert_bitwise_equal(zarrflow.open("s3://signed/a.zarr")[...], built.expected, "profile")


def test_anonymous_public_bucket_and_unsigned_private(s3, corpus) -> None:
    built = corpus.get("zp3-blosc-lz4-shuffle-int64")
    url = s3.upload(built.path, bucket=s3.PUBLIC)
    a = zarrflow.open(url, storage_options=dict(endpoint_url=s3.server.endpoint, anon=True))
    C.assert_bitwise_equal(a[...], built.expected, "anonymous")
    private = s3.upload(built.path)
    with pytest.raises(errors.StoreIOError, match="403.*unsigned"):
        zarrflow.open(private, storage_options=dict(endpoint_url=s3.server.endpoint, anon=True))


def test_missing_bucket_is_an_error_not_a_missing_node(s3) -> None:
    with pytest.raises(errors.StoreIOError, match="NoSuchBucket") as e:
        zarrflow.open("s3://no-such-bucket/x.zarr", storage_options=s3.options())
    assert "s3://no-such-bucket/x.zarr/zarr.json" in str(e.value)


def test_missing_chunk_on_s3_is_the_fill_value(s3, small_store) -> None:
    path, data = small_store
    url = s3.upload(path)
    client = s3.server.client()
    client.delete_object(Bucket=s3.BUCKET, Key=url.split("/", 3)[3] + "/c/5/0/0")
    got = zarrflow.open(url, storage_options=s3.options())[...]
    assert np.isnan(got[5]).all()
    np.testing.assert_array_equal(np.delete(got, 5, 0), np.delete(data, 5, 0))


# --------------------------------------------------------------------------------------------
# faults, retries and errors
# --------------------------------------------------------------------------------------------

FAULTS = [
    ("status", dict(code=500)),
    ("status", dict(code=503)),
    ("status", dict(code=429, retry_after=0)),
    ("reset", {}),
    ("truncate", dict(fraction=0.3)),
    ("stall", dict(seconds=3)),
    ("stall_body", dict(seconds=3)),
]


@pytest.mark.parametrize("kind,params", FAULTS, ids=[f"{k}-{p.get('code', '')}" for k, p in FAULTS])
def test_faults_are_retried_until_the_data_is_right(served, kind, params) -> None:
    srv, url, data = served
    a = zarrflow.open(url, storage_options=FAST)
    srv.add_fault(kind, path=r"/c/\d+/0/0$", count=3, **params)
    got = a[...]
    np.testing.assert_array_equal(got, data)
    assert srv.faults_fired[kind] == 3
    # libcurl itself reconnects once when a reused connection dies before any response byte.
    assert a.remote_stats()["retries"] >= (1 if kind == "reset" else 3)


def test_retry_after_is_honoured(served) -> None:
    """A 503's Retry-After sets the wait before the next attempt. Asked to wait 60 s where a read
    may take 5 s in all, the client gives up at once (its own backoff would have retried after
    at most 10 ms, and the second attempt would have read the chunk); asked for 0 s, it retries
    and reads the chunk."""
    srv, url, data = served
    a = zarrflow.open(url, storage_options={**FAST, "backoff_max": 120, "total_timeout": 5})
    srv.add_fault("status", path=r"/c/7/0/0$", count=1, code=503, retry_after=60)
    with pytest.raises(errors.StoreIOError, match=r"HTTP 503 .*gave up after 1 attempts: "
                                                  r"total_timeout of 5 s reached"):
        a[7]
    assert [r.status for r in srv.requests if r.path.endswith("/c/7/0/0")] == [503]
    srv.add_fault("status", path=r"/c/7/0/0$", count=1, code=503, retry_after=0)
    np.testing.assert_array_equal(a[7], data[7])
    assert [r.status for r in srv.requests if r.path.endswith("/c/7/0/0")] == [503, 503, 200]


@pytest.mark.parametrize("kind,params,message", [
    ("status", dict(code=503), "HTTP 503"),
    ("truncate", dict(fraction=0.5), "curl|short body"),
    ("reset", {}, "curl"),
    ("stall", dict(seconds=2), "curl"),
])
def test_exhausted_retries_are_errors_naming_url_and_chunk(served, kind, params, message) -> None:
    srv, url, data = served
    a = zarrflow.open(url, storage_options={**FAST, "max_attempts": 2})
    srv.add_fault(kind, path=r"/c/9/0/0$", count=None, **params)
    with pytest.raises(errors.StoreIOError, match=message) as e:
        a[...]
    text = str(e.value)
    assert f"{url}/c/9/0/0" in text and "chunk 'c/9/0/0'" in text and "2 attempts" in text
    srv.clear_faults()
    np.testing.assert_array_equal(a[8:10], data[8:10])  # the store is still usable


@pytest.mark.parametrize("code", [403, 400])
def test_client_errors_are_not_retried_and_not_filled(served, code) -> None:
    srv, url, _ = served
    a = zarrflow.open(url, storage_options=FAST)
    srv.add_fault("status", path=r"/c/3/0/0$", count=None, code=code)
    srv.clear_log()
    with pytest.raises(errors.StoreIOError, match=f"HTTP {code}") as e:
        a[3]
    assert "chunk 'c/3/0/0'" in str(e.value)
    assert sum(r.path.endswith("/c/3/0/0") for r in srv.requests) == 1


def test_missing_chunk_over_http_is_fill_and_truncated_chunk_file_is_an_error(served,
                                                                               small_store):
    srv, url, data = served
    path, _ = small_store
    (path / "c" / "2" / "0" / "0").unlink()
    a = zarrflow.open(url, storage_options=FAST)
    assert np.isnan(a[2]).all()
    chunk = path / "c" / "4" / "0" / "0"
    chunk.write_bytes(chunk.read_bytes()[:-10])  # stored truncated: the codec must refuse it
    with pytest.raises(errors.CorruptChunkError, match="c/4/0/0"):
        a[4]


def test_unreachable_server_fails_fast_and_clearly() -> None:
    with pytest.raises(errors.StoreIOError, match="127.0.0.1:9/x.zarr/zarr.json"):
        zarrflow.open("http://127.0.0.1:9/x.zarr", storage_options={**FAST, "max_attempts": 2})


# --------------------------------------------------------------------------------------------
# misbehaving servers: bounded bodies, servers that ignore Range, drips, garbage
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A (8, 32, 32) int32 array of one shard per time step with its index at the end, and one
    with the index at the start; raw inner chunks of (1, 8, 8)."""
    tmp_path = tmp_path_factory.mktemp("sharded")
    data = np.arange(8 * 32 * 32, dtype="int32").reshape(8, 32, 32)
    for name, location in (("end.zarr", "end"), ("start.zarr", "start")):
        a = zarr.create_array(str(tmp_path / name), shape=data.shape, chunks=(1, 8, 8),
                              shards=(1, 32, 32), dtype="int32", compressors=None, fill_value=0,
                              serializer=zarr.codecs.ShardingCodec(
                                  chunk_shape=(1, 8, 8), index_location=location))
        a[...] = data
    return tmp_path, data


@pytest.mark.parametrize("omit_length", [False, True])
def test_sharded_reads_from_a_server_that_ignores_range(sharded, omit_length) -> None:
    """200 with the whole shard to every ranged GET (python -m http.server): the asked windows
    and the index at the end are cut from the streamed value."""
    path, data = sharded
    region = (slice(2, 5), slice(3, 20), slice(8, 30))
    with RangeServer(path) as srv:
        srv.ignore_range, srv.omit_length = True, omit_length
        for name in ("end.zarr", "start.zarr"):
            a = zarrflow.open(f"{srv.url}/{name}", storage_options=FAST)
            np.testing.assert_array_equal(a[region], data[region])
            np.testing.assert_array_equal(a[...], data)
        assert all(r.status == 200 for r in srv.requests)


def test_ignored_suffix_range_beyond_max_object_bytes_is_refused(sharded) -> None:
    path, _ = sharded
    with RangeServer(path) as srv:
        srv.ignore_range = True
        a = zarrflow.open(f"{srv.url}/end.zarr", storage_options={**FAST,
                                                                  "max_object_bytes": 4000})
        with pytest.raises(errors.StoreIOError, match="ignored the Range header") as e:
            a[0, :8, :8]
        assert f"{srv.url}/end.zarr/c/0/0/0" in str(e.value) and "max_object_bytes" in str(e.value)


MISBEHAVIOUR = [
    # (fault, its parameters, path it fires on, storage options, message)
    ("endless", {}, r"/zarr\.json$", {}, "longer than the 100000 bytes allowed"),
    # A chunk's own bound (its largest encoded size) is tighter than max_object_bytes here.
    ("endless", {}, r"/c/3/0/0$", {}, r"longer than the \d+ bytes this value can have"),
    ("endless", dict(content_length=10**15), r"/c/3/0/0$", {}, "announces 1000000000000000 bytes"),
    ("garbage", {}, r"/c/3/0/0$", {}, "curl"),
    ("redirect", {}, r"/c/3/0/0$", {}, "redirects"),
    ("drip", dict(bytes_per_second=50), r"/c/3/0/0$", dict(max_attempts=1), "too slow"),
    ("drip", dict(bytes_per_second=50), r"/c/3/0/0$", dict(total_timeout=1.5),
     "total_timeout of 1.5 s reached"),
    ("status", dict(code=503), r"/c/3/0/0$", dict(total_timeout=0.5),
     "HTTP 503.*total_timeout of 0.5 s reached"),
]


@pytest.mark.parametrize(
    "kind,params,where,options,message", MISBEHAVIOUR,
    ids=[f"{k}-{w.split('/')[-1][:-1]}-{'-'.join(o)}" for k, _, w, o, _ in MISBEHAVIOUR])
def test_misbehaving_servers_end_in_clear_errors(served, kind, params, where, options,
                                                 message) -> None:
    """Each within the configured limits: 100 kB for a whole value, at least 1 KiB/s over any
    second, and (where set) a total time for every attempt of one read."""
    srv, url, data = served
    opts = {**FAST, "max_attempts": 50, "backoff_base": 0.05, "backoff_max": 0.1,
            "max_object_bytes": 100000, **options}
    srv.add_fault(kind, path=where, count=None, **params)
    with pytest.raises(errors.StoreIOError, match=message) as e:
        zarrflow.open(url, storage_options=opts)[3]
    key = "zarr.json" if "json" in where else "c/3/0/0"
    assert f"{url}/{key}" in str(e.value)
    if key != "zarr.json":
        assert f"chunk '{key}'" in str(e.value)
    srv.clear_faults()
    np.testing.assert_array_equal(zarrflow.open(url, storage_options=opts)[3], data[3])


@pytest.mark.parametrize("kind,params", [("endless", {}), ("shifted_range", dict(shift=4))])
def test_shard_index_from_a_misbehaving_server(sharded, kind, params) -> None:
    """An endless body for the suffix range of a shard index, a 206 for another range (one
    inner chunk is read: the index's suffix range, then that chunk's range)."""
    path, _ = sharded
    with RangeServer(path) as srv:
        a = zarrflow.open(f"{srv.url}/end.zarr", storage_options=FAST)
        srv.add_fault(kind, path=r"/c/1/0/0$", count=None, **params)
        with pytest.raises(errors.StoreIOError,
                           match="more than the 260 bytes|different range") as e:
            a[1, :8, :8]
        assert f"{srv.url}/end.zarr/c/1/0/0" in str(e.value)


# --------------------------------------------------------------------------------------------
# concurrency, connection reuse, coalescing
# --------------------------------------------------------------------------------------------

def test_requests_in_flight_are_bounded_and_default_to_64(served) -> None:
    srv, url, data = served
    srv.delay = 0.05
    a = zarrflow.open(url)
    assert a.remote_stats()["io_threads"] == 0  # metadata only: no I/O thread started yet
    srv.clear_log()
    np.testing.assert_array_equal(a[...], data)
    assert srv.max_in_flight >= 32, srv.max_in_flight  # 64 chunks, 64 allowed at once
    assert a.remote_stats()["io_threads"] == 64
    b = zarrflow.open(url, storage_options={"max_in_flight": 4})
    srv.clear_log()
    np.testing.assert_array_equal(b[...], data)
    assert 2 <= srv.max_in_flight <= 4
    assert b.remote_stats()["max_in_flight"] <= 4


def test_connections_are_reused(served) -> None:
    srv, url, data = served
    a = zarrflow.open(url, storage_options={"max_in_flight": 4})
    a[...]
    srv.clear_log()
    for _ in range(3):
        np.testing.assert_array_equal(a[...], data)
    assert len(srv.requests) == 3 * 64
    assert srv.connections == 0  # every request of the later reads used a kept-alive connection


def test_sharded_reads_coalesce_ranges(tmp_path) -> None:
    data = np.arange(8 * 32 * 32, dtype="int32").reshape(8, 32, 32)
    path = tmp_path / "sharded.zarr"
    a = zarr.create_array(str(path), shape=data.shape, chunks=(1, 8, 8), shards=(8, 32, 32),
                          dtype="int32", compressors=None, fill_value=0)
    a[...] = data
    region = (slice(0, 8), slice(0, 16), slice(0, 32))  # 8 of the 16 inner chunks per time step
    with RangeServer(tmp_path) as srv:
        counts = {}
        for gap in (0, 1 << 20):
            arr = zarrflow.open(f"{srv.url}/sharded.zarr", storage_options={"coalesce_gap": gap})
            srv.clear_log()
            np.testing.assert_array_equal(arr[region], data[region])
            counts[gap] = sum(r.range is not None for r in srv.requests)
            # the index comes with a suffix range: no size query (HEAD) before it
            assert not any(r.method == "HEAD" for r in srv.requests)
        assert counts[1 << 20] < counts[0]
        whole = zarrflow.open(f"{srv.url}/sharded.zarr")
        srv.clear_log()
        np.testing.assert_array_equal(whole[...], data)
        assert len(srv.requests) == 1 and srv.requests[0].range is None  # a whole shard: one GET


# --------------------------------------------------------------------------------------------
# loader, CLI and xarray over URLs
# --------------------------------------------------------------------------------------------

def test_loader_streams_batches_from_s3(s3, tmp_path) -> None:
    path = tmp_path / "era5.zarr"
    root = zarr.open_group(str(path), mode="w", zarr_format=3)
    rng = np.random.default_rng(2)
    for name in ("t2m", "z500"):
        arr = root.create_array(name, shape=(12, 8, 16), chunks=(1, 8, 16), dtype="float32",
                                dimension_names=["time", "latitude", "longitude"])
        arr[...] = rng.standard_normal((12, 8, 16)).astype("float32")
    tm = root.create_array("time", shape=(12,), chunks=(12,), dtype="int64",
                           dimension_names=["time"])
    tm[...] = np.arange(12)
    url = s3.upload(path)
    kw = dict(batch_size=3, device="cpu", output="numpy", shuffle=True, seed=4)
    local = list(zarrflow.Loader(path, ["t2m", "z500"], **kw))
    remote = list(zarrflow.Loader(url, ["t2m", "z500"], storage_options=s3.options(), **kw))
    assert len(remote) == len(local) > 0
    for a, b in zip(local, remote):
        np.testing.assert_array_equal(a["x"], b["x"])
        np.testing.assert_array_equal(a["y"], b["y"])


def test_cli_inspect_over_s3_and_http(s3, corpus, http_corpus) -> None:
    g = corpus.group("zp3-group-consolidated")
    url = s3.upload(g.path)
    env = {**os.environ, "AWS_ENDPOINT_URL": s3.server.endpoint,
           "AWS_ACCESS_KEY_ID": s3.server.access_key,
           "AWS_SECRET_ACCESS_KEY": s3.server.secret_key}
    res = subprocess.run([sys.executable, "-m", "zarrflow", "inspect", url], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "present" in res.stdout and "group" in res.stdout
    http_url = f"{http_corpus.url}/{g.path.relative_to(corpus.root).as_posix()}"
    res = subprocess.run([sys.executable, "-m", "zarrflow", "inspect", http_url],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "stored sizes unknown" in res.stdout
    res = subprocess.run([sys.executable, "-m", "zarrflow", "inspect", url, "-S", "bogus=1"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "unknown storage option" in res.stderr


def test_xarray_engine_over_http(corpus, http_corpus) -> None:
    xr = pytest.importorskip("xarray")
    g = corpus.group("zp2-group-consolidated")
    url = f"{http_corpus.url}/{g.path.relative_to(corpus.root).as_posix()}"
    ds = xr.open_dataset(url, engine="zarrflow", mask_and_scale=False, decode_times=False)
    ref = xr.open_dataset(g.path, engine="zarrflow", mask_and_scale=False, decode_times=False)
    assert set(ds.data_vars) == set(ref.data_vars)
    for name in ds.data_vars:
        np.testing.assert_array_equal(ds[name].values, ref[name].values)


# --------------------------------------------------------------------------------------------
# URL and credential resolution (no server)
# --------------------------------------------------------------------------------------------

@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for var in list(os.environ):
        if var.startswith(("AWS_", "GCS_", "ZARRFLOW_MAX_IN_FLIGHT")):
            monkeypatch.delenv(var)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return tmp_path


def test_s3_defaults_are_aws_virtual_host_and_anonymous(clean_env) -> None:
    c = remote_config("s3://era5-bucket/arco/era5.zarr/")
    assert c["endpoint"] == "https://s3.us-east-1.amazonaws.com" and c["virtual_host"]
    assert c["prefix"] == "arco/era5.zarr" and "access_key" not in c
    assert c["display"] == "s3://era5-bucket/arco/era5.zarr"
    assert not remote_config("s3://dotted.bucket.name/x")["virtual_host"]
    assert remote_config("s3://b/x", {"addressing_style": "path"})["virtual_host"] is False


def test_s3_credential_precedence(clean_env, monkeypatch) -> None:
    (clean_env / "credentials").write_text(
        "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"
        "[other]\naws_access_key_id = OTHERKEY\naws_secret_access_key = othersecret\n"
        "aws_session_token = othertoken\n")
    (clean_env / "config").write_text(
        "[default]\nregion = eu-west-1\n[profile other]\nregion = ap-south-1\n"
        "endpoint_url = http://minio:9000\n")
    c = remote_config("s3://b/p")
    assert (c["access_key"], c["region"]) == ("FILEKEY", "eu-west-1")
    assert c["endpoint"] == "https://s3.eu-west-1.amazonaws.com"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    c = remote_config("s3://b/p")
    assert (c["access_key"], c["secret_key"], c["region"]) == ("ENVKEY", "envsecret", "us-west-2")
    c = remote_config("s3://b/p", {"profile": "other"})  # an explicit profile beats the env keys
    assert (c["access_key"], c["session_token"]) == ("OTHERKEY", "othertoken")
    assert c["endpoint"] == "http://minio:9000" and not c["virtual_host"]
    c = remote_config("s3://b/p", {"key": "K", "secret": "S", "token": "T", "region": "r"})
    assert (c["access_key"], c["secret_key"], c["session_token"], c["region"]) == ("K", "S", "T", "r")
    monkeypatch.setenv("AWS_NO_SIGN_REQUEST", "yes")
    assert "access_key" not in remote_config("s3://b/p")
    assert "access_key" not in remote_config("s3://b/p", {"anon": True})
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1/")
    assert remote_config("s3://b/p")["endpoint"] == "http://127.0.0.1:1"
    monkeypatch.setenv("AWS_CA_BUNDLE", "/etc/corp-ca.pem")
    assert remote_config("s3://b/p")["ca_bundle"] == "/etc/corp-ca.pem"
    assert remote_config("s3://b/p", {"ca_bundle": "x.pem"})["ca_bundle"] == "x.pem"


def test_gcs_and_http_configs(clean_env, monkeypatch) -> None:
    c = remote_config("gs://wb2/era5.zarr")
    assert c["kind"] == "gcs" and c["endpoint"] == "https://storage.googleapis.com"
    assert "bearer_token" not in c and "access_key" not in c
    monkeypatch.setenv("GCS_OAUTH_TOKEN", "ya29.token")
    assert remote_config("gs://wb2/x")["bearer_token"] == "ya29.token"
    c = remote_config("gs://wb2/x", {"key": "GOOG1", "secret": "s", "anon": False, "token": None})
    assert c["access_key"] == "GOOG1" and c["region"] == "auto"
    c = remote_config("https://data.example.org/era5.zarr/", {"max_in_flight": "128"})
    assert c == {"kind": "http", "endpoint": "https://data.example.org/era5.zarr",
                 "display": "https://data.example.org/era5.zarr", "max_in_flight": 128}


@pytest.mark.parametrize("url,options,match", [
    ("s3:///prefix", None, "names no bucket"),
    ("s3://b/p", {"colour": "red"}, "unknown storage option"),
    ("s3://b/p", {"key": "K"}, "without its secret"),
    ("s3://b/p", {"profile": "nope"}, "profile 'nope' not found"),
    ("s3://b/p", {"addressing_style": "sideways"}, "addressing_style"),
    ("gs://b/p", {"key": "K"}, "without its secret"),
    ("https://h/x.zarr?sig=1", None, "query strings"),
    ("https://h/x.zarr", {"anon": True}, "unknown storage option"),
])
def test_bad_urls_and_options(clean_env, url, options, match) -> None:
    with pytest.raises(errors.InvalidArgumentError, match=match):
        remote_config(url, options)


def test_bad_transport_settings_and_local_paths(tmp_path) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="max_in_flight"):
        zarrflow.open("http://127.0.0.1:9/x.zarr", storage_options={"max_in_flight": 0})
    with pytest.raises(ValueError, match="storage_options apply to remote URLs"):
        zarrflow.open(tmp_path, storage_options={"anon": True})
    with pytest.raises(NotImplementedError, match="ftp://"):
        zarrflow.open("ftp://h/x.zarr")
    with pytest.raises(errors.PathEscapeError):
        zarrflow.open("s3://b/a/../../etc", storage_options={"anon": True,
                                                             "endpoint_url": "http://127.0.0.1:9"})


def test_gcs_requests_carry_the_bearer_token(small_store, monkeypatch) -> None:
    """gs:// against a loopback server standing in for storage.googleapis.com (XML API paths
    /bucket/key); the server records what authorisation each request carried."""
    import http.server
    import threading

    path, data = small_store
    seen: list[str | None] = []
    root = path.parent.parent

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            super().do_GET()

        def log_message(self, *a):
            pass

    class Server(http.server.ThreadingHTTPServer):
        # socketserver's default listen backlog of 5 drops most of 64 simultaneous connects:
        # the client then waits for SYN retransmits (1 s, 3 s, 7 s, ...) and retries.
        request_queue_size = 128
        daemon_threads = True

    httpd = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("GCS_OAUTH_TOKEN", raising=False)
        url = f"gs://{path.parent.name}/{path.name}"
        opts = dict(endpoint_url=f"http://127.0.0.1:{httpd.server_address[1]}", token="ya29.abc")
        np.testing.assert_array_equal(zarrflow.open(url, storage_options=opts)[...], data)
        assert seen and all(h == "Bearer ya29.abc" for h in seen)
        seen.clear()
        zarrflow.open(url, storage_options={**opts, "token": None, "anon": True})[0]
        assert seen and all(h is None for h in seen)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_virtual_host_addressing(s3, corpus) -> None:
    """bucket.localhost:port — curl resolves *.localhost to loopback, moto takes the bucket from
    the Host header: reads and listings with virtual-hosted-style URLs."""
    g = corpus.group("zp3-group")
    url = s3.upload(g.path)
    opts = s3.options(addressing_style="virtual")
    opts["endpoint_url"] = s3.server.endpoint.replace("127.0.0.1", "localhost")
    root = zarrflow.open(url, storage_options=opts)
    for name, exp in g.arrays.items():  # found by listing (no consolidated metadata)
        C.assert_bitwise_equal(root[name][...], exp, f"virtual host {name}")
