"""tests/servers/s3_nginx_server.py: nginx answers object reads, the stdlib server the rest, and
zarrflow reads a store through it as from disk. Skipped where nginx is not installed (NGINX may
name its binary)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import numpy as np
import pytest

from servers.s3_nginx_server import S3NginxServer, find_nginx

import zarrflow

pytestmark = pytest.mark.skipif(find_nginx() is None, reason="nginx is not installed")


@pytest.fixture
def srv(tmp_path):
    bucket = tmp_path / "bkt"
    (bucket / "dir").mkdir(parents=True)
    (bucket / "dir" / "obj").write_bytes(bytes(range(256)) * 4)
    with S3NginxServer(tmp_path, workers=2) as s:
        yield s


def request(srv, method: str, path: str, headers: dict | None = None):
    conn = http.client.HTTPConnection(*urlsplit(srv.endpoint).netloc.split(":"), timeout=10)
    conn.request(method, path, headers=headers or {})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r, body


def test_object_reads_with_ranges_and_conditions(srv):
    r, body = request(srv, "GET", "/bkt/dir/obj")
    assert r.status == 200 and body == bytes(range(256)) * 4
    r, body = request(srv, "GET", "/bkt/dir/obj", {"Range": "bytes=10-19"})
    assert r.status == 206 and body == bytes(range(10, 20))
    assert r.getheader("Content-Range") == "bytes 10-19/1024"
    r, body = request(srv, "GET", "/bkt/dir/obj", {"Range": "bytes=-4"})
    assert r.status == 206 and body == bytes(range(252, 256))
    r, _ = request(srv, "GET", "/bkt/dir/obj", {"Range": "bytes=5000-"})
    assert r.status == 416
    r, body = request(srv, "HEAD", "/bkt/dir/obj")
    assert r.status == 200 and r.getheader("Content-Length") == "1024" and body == b""
    etag = r.getheader("ETag")
    r, _ = request(srv, "GET", "/bkt/dir/obj", {"If-None-Match": etag})
    assert r.status == 304
    r, _ = request(srv, "GET", "/bkt/dir/obj", {"If-Match": '"other"'})
    assert r.status == 412
    r, _ = request(srv, "GET", "/bkt/dir/missing")
    assert r.status == 404


def test_lists_and_writes_go_to_the_stdlib_server(srv):
    r, body = request(srv, "GET", "/bkt?list-type=2&prefix=dir/")
    assert r.status == 200 and b"<Key>dir/obj</Key>" in body
    r, _ = request(srv, "HEAD", "/bkt")
    assert r.status == 200
    r, body = request(srv, "PUT", "/bkt/dir/new")
    assert r.status == 403 and b"AccessDenied" in body
    assert not (srv.root / "bkt" / "dir" / "new").exists()


def test_zarrflow_reads_a_store_through_it_as_from_disk(tmp_path):
    data = np.arange(6 * 40 * 30, dtype="float32").reshape(6, 40, 30)
    store = tmp_path / "bkt" / "a.zarr"
    zarr = pytest.importorskip("zarr")
    zarr.create_array(store=str(store), data=data, chunks=(1, 20, 30))
    with S3NginxServer(tmp_path, workers=2) as srv:
        opts = dict(endpoint_url=srv.endpoint, key="any", secret="any")
        remote = zarrflow.open("s3://bkt/a.zarr", storage_options=opts)
        assert remote[...].tobytes() == data.tobytes()
