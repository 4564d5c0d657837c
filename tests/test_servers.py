"""Tests of the loopback test servers themselves (tests/servers), with plain stdlib/boto3 clients.

The remote-store tests trust these servers to produce exactly the responses and failures they
claim (206/416/404, keep-alive, stalls, resets, truncated bodies, throttling on a schedule, SigV4
rejection); if a server silently did something else, a store test could pass for the wrong reason.
No zarrflow here.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from servers.range_server import RangeServer, Unsatisfiable, parse_range

DATA = bytes((i * 7 + 3) % 256 for i in range(1000))
SUB = b"hello from a file with a space in its name\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("servers")
    (base / "secret.txt").write_bytes(b"outside the root\n")
    www = base / "www"
    (www / "dir").mkdir(parents=True)
    (www / "data.bin").write_bytes(DATA)
    (www / "dir" / "sub file.bin").write_bytes(SUB)
    (www / "empty.bin").write_bytes(b"")
    return www


@pytest.fixture
def srv(root: Path):
    with RangeServer(root) as server:
        yield server
        assert not server.errors, server.errors[0]


def fetch(srv: RangeServer, path: str, headers: dict[str, str] | None = None,
          method: str = "GET", timeout: float = 5) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def status_of(conn: http.client.HTTPConnection, path: str = "/data.bin") -> int:
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    return resp.status


# --- plain serving -----------------------------------------------------------------------------


def record_sleeps(srv: RangeServer) -> list[float]:
    """The seconds the server is asked to wait (delays, drip pacing), recorded as it waits them:
    what timing faults do, checked without a clock."""
    slept: list[float] = []
    wait = srv._sleep

    def recorded(seconds: float) -> None:
        slept.append(seconds)
        wait(seconds)

    srv._sleep = recorded
    return slept


def test_full_get_and_head(srv: RangeServer) -> None:
    status, headers, body = fetch(srv, "/data.bin")
    assert (status, body) == (200, DATA)
    assert headers["Content-Length"] == "1000"
    assert headers["Accept-Ranges"] == "bytes"
    assert "Content-Range" not in headers

    status, headers, body = fetch(srv, "/data.bin", method="HEAD")
    assert (status, body, headers["Content-Length"]) == (200, b"", "1000")


@pytest.mark.parametrize(("header", "first", "last"), [
    ("bytes=10-19", 10, 19),
    ("bytes=0-0", 0, 0),
    ("bytes=990-", 990, 999),
    ("bytes=-5", 995, 999),
    ("bytes=995-5000", 995, 999),
    ("bytes=-5000", 0, 999),
    ("Bytes = 3 - 4", 3, 4),
])
def test_range_forms(srv: RangeServer, header: str, first: int, last: int) -> None:
    status, headers, body = fetch(srv, "/data.bin", {"Range": header})
    assert status == 206
    assert body == DATA[first:last + 1]
    assert headers["Content-Range"] == f"bytes {first}-{last}/1000"
    assert headers["Content-Length"] == str(last - first + 1)


def test_head_with_range(srv: RangeServer) -> None:
    status, headers, body = fetch(srv, "/data.bin", {"Range": "bytes=10-19"}, method="HEAD")
    assert (status, body) == (206, b"")
    assert headers["Content-Length"] == "10"
    assert headers["Content-Range"] == "bytes 10-19/1000"


@pytest.mark.parametrize(("path", "header", "total"), [
    ("/data.bin", "bytes=1000-", 1000),
    ("/data.bin", "bytes=1000-2000", 1000),
    ("/data.bin", "bytes=-0", 1000),
    ("/empty.bin", "bytes=0-", 0),
    ("/empty.bin", "bytes=-10", 0),
])
def test_unsatisfiable(srv: RangeServer, path: str, header: str, total: int) -> None:
    status, headers, body = fetch(srv, path, {"Range": header})
    assert status == 416
    assert headers["Content-Range"] == f"bytes */{total}"
    assert headers["Content-Length"] == str(len(body))


@pytest.mark.parametrize("header",
                         ["bytes=5-2", "bytes=0-1,5-6", "items=0-5", "bytes=x-", "bytes=-"])
def test_ignored_range_serves_whole_file(srv: RangeServer, header: str) -> None:
    status, headers, body = fetch(srv, "/data.bin", {"Range": header})
    assert (status, body) == (200, DATA)
    assert "Content-Range" not in headers


def test_parse_range_edges() -> None:
    assert parse_range(None, 10) is None
    assert parse_range("bytes=2-", 10) == (2, 9)
    with pytest.raises(Unsatisfiable):
        parse_range("bytes=10-", 10)


def test_url_decoding(srv: RangeServer) -> None:
    assert fetch(srv, "/dir/sub%20file.bin")[2] == SUB
    assert srv.url_for("dir/sub file.bin") == f"{srv.url}/dir/sub%20file.bin"
    assert fetch(srv, "/data.bin?x=1&y=2")[2] == DATA


@pytest.mark.parametrize(("path", "expected"), [
    ("/missing.bin", 404),
    ("/dir", 404),
    ("/dir/", 404),
    ("/", 404),
    ("/../secret.txt", 404),
    ("/dir/../../secret.txt", 404),
    ("/%2e%2e/secret.txt", 404),
    ("/dir/..%2f..%2fsecret.txt", 404),
    ("/bad%ff", 400),
    ("/nul%00.bin", 400),
    ("relative.bin", 400),
])
def test_not_found_and_escapes(srv: RangeServer, path: str, expected: int) -> None:
    status, headers, body = fetch(srv, path)
    assert status == expected
    assert body and headers["Content-Length"] == str(len(body))
    assert b"outside" not in body


# --- connections and the request log ---------------------------------------------------------


def test_keep_alive_reuses_one_connection(srv: RangeServer) -> None:
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    conn.request("GET", "/data.bin", headers={"Range": "bytes=0-9"})
    first = conn.getresponse()
    assert first.read() == DATA[:10]
    conn.request("HEAD", "/dir/sub%20file.bin")
    second = conn.getresponse()
    second.read()
    conn.close()
    assert srv.connections == 1
    assert [tuple(r) for r in srv.requests] == [
        ("GET", "/data.bin", "bytes=0-9", 206, 10, None),
        ("HEAD", "/dir/sub%20file.bin", None, 200, 0, None),
    ]
    srv.clear_log()
    assert (srv.requests, srv.connections, srv.max_in_flight) == ([], 0, 0)


def test_client_connection_close_is_honoured(srv: RangeServer) -> None:
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        sock.sendall(b"GET /data.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-3\r\n"
                     b"Connection: close\r\n\r\n")
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 206")
    assert b"\r\nConnection: close" in head
    assert body == DATA[:4]
    fetch(srv, "/data.bin")
    assert srv.connections == 2


def test_max_in_flight_with_delay(srv: RangeServer) -> None:
    srv.delay = 0.3
    barrier = threading.Barrier(6)

    def one(_: int) -> int:
        barrier.wait()
        return fetch(srv, "/data.bin")[0]

    slept = record_sleeps(srv)
    with ThreadPoolExecutor(6) as pool:
        statuses = list(pool.map(one, range(6)))
    assert statuses == [200] * 6
    assert srv.max_in_flight == 6  # all six held by the delay at once
    assert srv.connections == 6
    assert slept == [0.3] * 6
    assert srv.in_flight == 0
    srv.delay = 0
    srv.clear_log()
    fetch(srv, "/data.bin")
    assert srv.max_in_flight == 1


def test_stop_closes_kept_alive_connections(root: Path) -> None:
    server = RangeServer(root)
    conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
    assert status_of(conn) == 200
    server.stop()
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        status_of(conn)
    conn.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((server.host, server.port), timeout=2).close()
    server.stop()


def test_script_mode(root: Path) -> None:
    script = Path(__file__).parent / "servers" / "range_server.py"
    proc = subprocess.Popen([sys.executable, str(script), str(root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", "/data.bin", headers={"Range": "bytes=-3"})
        assert conn.getresponse().read() == DATA[-3:]
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert proc.stderr.read() == ""


def test_script_mode_ignoring_ranges(root: Path) -> None:
    script = Path(__file__).parent / "servers" / "range_server.py"
    proc = subprocess.Popen([sys.executable, str(script), str(root), "--ignore-range"],
                            stdout=subprocess.PIPE, text=True)
    try:
        host, port = proc.stdout.readline().strip().removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", "/data.bin", headers={"Range": "bytes=-3"})
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, DATA)
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=5)


# --- faults ------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [500, 503, 429, 403])
def test_status_fault(srv: RangeServer, code: int) -> None:
    srv.add_fault("status", code=code, retry_after=2)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    conn.request("GET", "/data.bin")
    resp = conn.getresponse()
    body = resp.read()
    assert resp.status == code
    assert resp.headers["Retry-After"] == "2"
    assert resp.headers["Content-Length"] == str(len(body)) and body
    assert status_of(conn) == 200
    conn.close()
    assert srv.connections == 1
    assert srv.faults_fired == {"status": 1}
    assert [(r.status, r.fault) for r in srv.requests] == [(code, "status"), (200, None)]


def test_stall_times_the_client_out(srv: RangeServer) -> None:
    srv.add_fault("stall", seconds=3)
    with pytest.raises(TimeoutError):  # the client gave up: the server sends nothing for 3 s
        fetch(srv, "/data.bin", timeout=0.3)
    assert srv.faults_fired["stall"] == 1
    assert fetch(srv, "/data.bin")[2] == DATA


def test_stall_after_stall_ends_closes_without_response(srv: RangeServer) -> None:
    srv.add_fault("stall", seconds=0.2)
    with pytest.raises(http.client.RemoteDisconnected):
        fetch(srv, "/data.bin", timeout=5)
    assert srv.requests[-1][3:] == (0, 0, "stall")


def test_stall_body_sends_headers_and_part_of_the_body(srv: RangeServer) -> None:
    srv.add_fault("stall_body", seconds=3, fraction=0.5)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=0.5)
    conn.request("GET", "/data.bin")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.headers["Content-Length"] == "1000"
    assert resp.read(500) == DATA[:500]
    with pytest.raises(TimeoutError):
        resp.read(1)
    conn.close()
    assert srv.faults_fired["stall_body"] == 1


def test_reset(srv: RangeServer) -> None:
    srv.add_fault("reset")
    with pytest.raises(ConnectionResetError):
        fetch(srv, "/data.bin")
    assert srv.faults_fired["reset"] == 1
    assert fetch(srv, "/data.bin")[0] == 200
    assert [(r.status, r.bytes_sent, r.fault) for r in srv.requests] == [(0, 0, "reset"),
                                                                        (200, 1000, None)]


@pytest.mark.parametrize(("fraction", "header", "full"), [
    (0.25, None, 1000), (0.5, "bytes=100-299", 200), (0.0, None, 1000)])
def test_truncate(srv: RangeServer, fraction: float, header: str | None, full: int) -> None:
    srv.add_fault("truncate", fraction=fraction)
    with pytest.raises(http.client.IncompleteRead) as info:
        fetch(srv, "/data.bin", {"Range": header} if header else None)
    sent = int(full * fraction)
    assert len(info.value.partial) == sent
    assert info.value.expected == full - sent
    assert srv.requests[-1].bytes_sent == sent
    assert srv.faults_fired["truncate"] == 1


def test_count_schedule(srv: RangeServer) -> None:
    srv.add_fault("status", code=500, count=2)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    assert [status_of(conn) for _ in range(4)] == [500, 500, 200, 200]
    assert srv.pending_faults == 0


def test_every_schedule(srv: RangeServer) -> None:
    srv.add_fault("status", code=503, every=3)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    assert [status_of(conn) for _ in range(7)] == [200, 200, 503, 200, 200, 503, 200]
    srv.clear_faults()
    srv.add_fault("status", code=503, every=2, count=1)
    assert [status_of(conn) for _ in range(5)] == [200, 503, 200, 200, 200]
    assert srv.faults_fired == {"status": 1}


def test_forever_and_clear(srv: RangeServer) -> None:
    srv.add_fault("status", code=500, count=None)
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    assert [status_of(conn) for _ in range(3)] == [500, 500, 500]
    assert srv.faults_fired["status"] == 3
    srv.clear_faults()
    assert srv.faults_fired == {}
    assert status_of(conn) == 200


def test_faults_apply_in_order_with_path_filter(srv: RangeServer) -> None:
    srv.add_fault("status", code=500, path=r"sub%20file")
    srv.add_fault("status", code=429)
    srv.add_fault("truncate")
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    assert status_of(conn, "/data.bin") == 429
    assert status_of(conn, "/dir/sub%20file.bin") == 500
    conn.close()
    with pytest.raises(http.client.IncompleteRead):
        fetch(srv, "/dir/sub%20file.bin")
    assert fetch(srv, "/dir/sub%20file.bin")[2] == SUB
    assert srv.pending_faults == 0
    assert srv.faults_fired == {"status": 2, "truncate": 1}


def test_fault_on_head_and_404(srv: RangeServer) -> None:
    srv.add_fault("status", code=503, count=2)
    assert fetch(srv, "/data.bin", method="HEAD")[0] == 503
    assert fetch(srv, "/missing.bin")[0] == 503
    assert fetch(srv, "/missing.bin")[0] == 404


def test_add_fault_validation(srv: RangeServer) -> None:
    with pytest.raises(ValueError):
        srv.add_fault("explode")
    with pytest.raises(TypeError):
        srv.add_fault("status")
    with pytest.raises(TypeError):
        srv.add_fault("reset", seconds=1)
    with pytest.raises(ValueError):
        srv.add_fault("truncate", fraction=1.0)
    with pytest.raises(ValueError):
        srv.add_fault("reset", every=0)
    with pytest.raises(ValueError):
        srv.add_fault("drip", bytes_per_second=0)
    with pytest.raises(TypeError):
        srv.add_fault("endless", seconds=1)
    assert srv.pending_faults == 0


def test_concurrent_requests_consume_each_fault_once(srv: RangeServer) -> None:
    srv.add_fault("status", code=503, count=5)
    barrier = threading.Barrier(10)

    def one(_: int) -> int:
        barrier.wait()
        return fetch(srv, "/data.bin")[0]

    with ThreadPoolExecutor(10) as pool:
        statuses = sorted(pool.map(one, range(10)))
    assert statuses == [200] * 5 + [503] * 5
    assert srv.faults_fired["status"] == 5


# --- misbehaving servers -----------------------------------------------------------------------


@pytest.mark.parametrize("header", ["bytes=10-19", "bytes=-5", "bytes=1000-", None])
def test_ignore_range_answers_200_with_the_whole_file(srv: RangeServer, header: str | None) -> None:
    srv.ignore_range = True
    status, headers, body = fetch(srv, "/data.bin", {"Range": header} if header else None)
    assert (status, body, headers["Content-Length"]) == (200, DATA, "1000")
    assert "Content-Range" not in headers


def test_omit_length_ends_the_body_by_closing(srv: RangeServer) -> None:
    srv.omit_length = True
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    conn.request("GET", "/data.bin", headers={"Range": "bytes=10-19"})
    resp = conn.getresponse()
    assert resp.status == 206 and "Content-Length" not in resp.headers
    assert resp.headers["Content-Range"] == "bytes 10-19/1000"
    assert resp.read() == DATA[10:20]
    conn.close()
    assert fetch(srv, "/data.bin")[2] == DATA
    assert srv.connections == 2


def test_drip_sends_the_body_slowly(srv: RangeServer) -> None:
    srv.add_fault("drip", bytes_per_second=4000)
    slept = record_sleeps(srv)
    status, headers, body = fetch(srv, "/data.bin")
    assert (status, body, headers["Content-Length"]) == (200, DATA, "1000")
    # 1000 bytes at 4000 B/s: pieces of 200, each followed by its 0.05 s (the body was whole
    # after the fourth wait; the client may be done before the fifth begins)
    assert slept[:4] == pytest.approx([0.05] * 4) and len(slept) <= 5
    assert srv.requests[-1][3:] == (200, 1000, "drip")


@pytest.mark.parametrize("content_length", [None, 10**15])
def test_endless_body(srv: RangeServer, content_length: int | None) -> None:
    srv.add_fault("endless", **({} if content_length is None else
                                {"content_length": content_length}))
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        sock.sendall(b"GET /data.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-99\r\n\r\n")
        raw = b""
        while len(raw) < 3 << 20:
            raw += sock.recv(1 << 20)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 206") and b"Content-Range: bytes 0-99/1000" in head
    if content_length is None:
        assert b"Content-Length" not in head
    else:
        assert b"Content-Length: 1000000000000000" in head
    assert body[:100] == DATA[:100] and body[100:] == bytes(len(body) - 100)
    assert srv.requests[0].fault == "endless"


def test_garbage_is_not_http(srv: RangeServer) -> None:
    srv.add_fault("garbage", data=b"SSH-2.0-nope\r\n")
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        sock.sendall(b"GET /data.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    assert raw == b"SSH-2.0-nope\r\n"
    srv.add_fault("garbage")
    with pytest.raises(http.client.HTTPException):
        fetch(srv, "/data.bin")


def test_shifted_range(srv: RangeServer) -> None:
    srv.add_fault("shifted_range", shift=5)
    status, headers, body = fetch(srv, "/data.bin", {"Range": "bytes=10-19"})
    assert (status, body, headers["Content-Range"]) == (206, DATA[15:25], "bytes 15-24/1000")


def test_redirect_loop(srv: RangeServer) -> None:
    srv.add_fault("redirect", count=None)
    for _ in range(2):
        status, headers, _ = fetch(srv, "/data.bin?x=1")
        assert (status, headers["Location"]) == (302, "/data.bin?x=1")
    srv.clear_faults()
    srv.add_fault("redirect", location="/dir/sub%20file.bin")
    assert fetch(srv, "/data.bin")[1]["Location"] == "/dir/sub%20file.bin"


# --- moto S3 -----------------------------------------------------------------------------------


def _need_moto() -> None:
    pytest.importorskip("boto3")
    pytest.importorskip("moto.server", reason="moto[server] is not installed")


@pytest.fixture(scope="module")
def moto():
    _need_moto()
    from servers.s3_server import MotoS3Server

    with MotoS3Server() as server:
        yield server


@pytest.fixture(scope="module")
def moto_auth():
    _need_moto()
    from servers.s3_server import MotoS3Server

    with MotoS3Server(auth=True) as server:
        yield server


def _error(exc: pytest.ExceptionInfo) -> tuple[int, str]:
    resp = exc.value.response
    return resp["ResponseMetadata"]["HTTPStatusCode"], resp["Error"]["Code"]


def _raw_get(server, path: str, headers: dict[str, str] | None = None,
             ) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def test_moto_bucket_upload_list_range(moto, root: Path) -> None:
    from botocore.exceptions import ClientError

    assert moto.endpoint == f"http://127.0.0.1:{moto.port}" and moto.region == "us-east-1"
    moto.create_bucket("zarr-data")
    keys = moto.upload_dir(root, "zarr-data", "store.zarr/")
    assert keys == ["store.zarr/data.bin", "store.zarr/dir/sub file.bin", "store.zarr/empty.bin"]
    moto.create_bucket("zarr-flat")
    assert moto.upload_dir(root / "dir", "zarr-flat") == ["sub file.bin"]
    s3 = moto.client()
    listing = s3.list_objects_v2(Bucket="zarr-data", Prefix="store.zarr/", Delimiter="/")
    assert [o["Key"] for o in listing["Contents"]] == ["store.zarr/data.bin",
                                                       "store.zarr/empty.bin"]
    assert [p["Prefix"] for p in listing["CommonPrefixes"]] == ["store.zarr/dir/"]
    page = s3.list_objects_v2(Bucket="zarr-data", MaxKeys=2)
    assert page["IsTruncated"] and page["KeyCount"] == 2
    rest = s3.list_objects_v2(Bucket="zarr-data", ContinuationToken=page["NextContinuationToken"])
    assert [o["Key"] for o in rest["Contents"]] == ["store.zarr/empty.bin"]

    got = s3.get_object(Bucket="zarr-data", Key="store.zarr/data.bin", Range="bytes=10-19")
    assert got["Body"].read() == DATA[10:20]
    assert got["ContentRange"] == "bytes 10-19/1000"
    got = s3.get_object(Bucket="zarr-data", Key="store.zarr/data.bin", Range="bytes=-5")
    assert got["Body"].read() == DATA[-5:]
    sub = s3.get_object(Bucket="zarr-data", Key="store.zarr/dir/sub file.bin")
    assert sub["Body"].read() == SUB
    with pytest.raises(ClientError) as info:
        s3.get_object(Bucket="zarr-data", Key="store.zarr/data.bin", Range="bytes=1000-")
    assert _error(info) == (416, "InvalidRange")
    with pytest.raises(ClientError) as info:
        s3.get_object(Bucket="zarr-data", Key="store.zarr/nope")
    assert _error(info) == (404, "NoSuchKey")


def test_moto_anonymous_public_and_private(moto) -> None:
    from botocore.exceptions import ClientError

    moto.create_bucket("open-bucket", public=True)
    moto.create_bucket("closed-bucket")
    for bucket in ("open-bucket", "closed-bucket"):
        moto.client().put_object(Bucket=bucket, Key="a/b c.bin", Body=DATA)

    status, headers, body = _raw_get(moto, "/open-bucket/a/b%20c.bin", {"Range": "bytes=0-9"})
    assert (status, body, headers["Content-Range"]) == (206, DATA[:10], "bytes 0-9/1000")
    assert _raw_get(moto, "/open-bucket/a/missing")[0] == 404
    anon = moto.client(anonymous=True)
    assert anon.get_object(Bucket="open-bucket", Key="a/b c.bin")["Body"].read() == DATA
    assert anon.list_objects_v2(Bucket="open-bucket")["KeyCount"] == 1

    assert _raw_get(moto, "/closed-bucket/a/b%20c.bin")[0] == 403
    with pytest.raises(ClientError) as info:
        anon.get_object(Bucket="closed-bucket", Key="a/b c.bin")
    assert _error(info)[0] == 403
    assert moto.client(secret_key="anything").get_object(
        Bucket="closed-bucket", Key="a/b c.bin")["Body"].read() == DATA


def test_moto_verifies_sigv4_when_auth_is_on(moto_auth) -> None:
    import botocore.auth
    import botocore.awsrequest
    import botocore.credentials
    from botocore.exceptions import ClientError

    moto_auth.create_bucket("signed-bucket")
    moto_auth.client().put_object(Bucket="signed-bucket", Key="k/v.bin", Body=DATA)
    access, secret = moto_auth.create_user_keys(actions=["s3:GetObject", "s3:ListBucket"])
    assert access.startswith("AKIA") and len(secret) == 40

    good = moto_auth.client(access_key=access, secret_key=secret)
    assert good.get_object(Bucket="signed-bucket", Key="k/v.bin",
                           Range="bytes=5-9")["Body"].read() == DATA[5:10]
    assert good.list_objects_v2(Bucket="signed-bucket")["KeyCount"] == 1
    other_region = moto_auth.client(access_key=access, secret_key=secret, region="eu-west-1")
    assert other_region.head_object(Bucket="signed-bucket", Key="k/v.bin")["ContentLength"] == 1000

    cases = [
        ((access, secret[:-1] + ("A" if secret[-1] != "A" else "B")), "SignatureDoesNotMatch"),
        (("AKIAIOSFODNN7EXAMPLE", secret), "InvalidAccessKeyId"),
        (("testing", "testing"), "InvalidAccessKeyId"),
        (moto_auth.create_user_keys(actions=None), "AccessDenied"),
    ]
    for (key_id, key_secret), code in cases:
        bad = moto_auth.client(access_key=key_id, secret_key=key_secret)
        with pytest.raises(ClientError) as info:
            bad.get_object(Bucket="signed-bucket", Key="k/v.bin")
        assert _error(info) == (403, code), (key_id, code)

    def signed(range_after_signing: str) -> int:
        req = botocore.awsrequest.AWSRequest(method="GET",
                                             url=f"{moto_auth.endpoint}/signed-bucket/k/v.bin",
                                             headers={"Range": "bytes=0-3"})
        botocore.auth.S3SigV4Auth(botocore.credentials.Credentials(access, secret), "s3",
                                  moto_auth.region).add_auth(req)
        headers = dict(req.headers.items())
        headers["Range"] = range_after_signing
        return _raw_get(moto_auth, "/signed-bucket/k/v.bin", headers)[0]

    assert signed("bytes=0-3") == 206
    assert signed("bytes=0-9") == 403


def test_moto_in_process() -> None:
    _need_moto()
    from servers.s3_server import MotoS3Server

    from botocore.exceptions import ClientError
    from moto import settings

    with MotoS3Server(in_process=True) as server:
        server.create_bucket("inproc-bucket")
        s3 = server.client()
        s3.put_object(Bucket="inproc-bucket", Key="x", Body=b"0123456789")
        got = s3.get_object(Bucket="inproc-bucket", Key="x", Range="bytes=2-4")
        assert got["Body"].read() == b"234"
        server.set_auth(True)
        assert server.client().get_object(Bucket="inproc-bucket", Key="x")["Body"].read()
        with pytest.raises(ClientError) as info:
            server.client(access_key="testing", secret_key="testing").list_buckets()
        assert _error(info) == (403, "InvalidAccessKeyId")
    assert settings.INITIAL_NO_AUTH_ACTION_COUNT == float("inf")


def test_moto_ignores_the_users_aws_config(moto, monkeypatch: pytest.MonkeyPatch) -> None:
    from servers.s3_server import _server_env

    for name, value in {"AWS_PROFILE": "no-such-profile", "AWS_CONFIG_FILE": "/nonexistent",
                        "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_SESSION_TOKEN": "tok",
                        "AWS_ACCESS_KEY_ID": "AKIAREALKEY"}.items():
        monkeypatch.setenv(name, value)
    env = _server_env()
    assert "AWS_PROFILE" not in env and "AWS_SESSION_TOKEN" not in env
    assert env["AWS_ACCESS_KEY_ID"] == env["AWS_SECRET_ACCESS_KEY"] == "testing"
    assert env["AWS_CONFIG_FILE"] == env["AWS_SHARED_CREDENTIALS_FILE"] == os.devnull
    moto._session = None
    assert moto.client().list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200


# ------------------------------------------------------------------------------------------
# s3_files_server: a read-only S3 endpoint over a directory
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def s3files(root: Path):
    from servers.s3_files_server import S3FilesServer

    with S3FilesServer(root.parent) as server:  # the bucket "www" is the root fixture
        yield server


def _raw(server, method: str, path: str, headers: dict[str, str] | None = None,
         body: bytes | None = None) -> tuple[int, http.client.HTTPMessage, bytes]:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


@pytest.mark.parametrize("header, status, first, last", [
    (None, 200, 0, 999), ("bytes=10-19", 206, 10, 19), ("bytes=990-", 206, 990, 999),
    ("bytes=-5", 206, 995, 999), ("bytes=995-5000", 206, 995, 999),
])
def test_s3files_get_and_ranges(s3files, header: str | None, status: int, first: int,
                                last: int) -> None:
    code, headers, body = _raw(s3files, "GET", "/www/data.bin",
                               {"Range": header} if header else None)
    assert (code, body) == (status, DATA[first:last + 1])
    if status == 206:
        assert headers["Content-Range"] == f"bytes {first}-{last}/1000"
    assert headers["ETag"].startswith('"') and headers["Last-Modified"]
    assert _raw(s3files, "GET", "/www/dir/sub%20file.bin")[2] == SUB


def test_s3files_head_conditions_and_errors(s3files) -> None:
    code, headers, body = _raw(s3files, "HEAD", "/www/data.bin")
    assert (code, headers["Content-Length"], body) == (200, "1000", b"")
    etag = headers["ETag"]
    assert _raw(s3files, "GET", "/www/data.bin", {"If-None-Match": etag})[0] == 304
    assert _raw(s3files, "GET", "/www/data.bin", {"If-Match": '"other"'})[0] == 412
    assert _raw(s3files, "GET", "/www/data.bin", {"If-Match": etag})[0] == 200
    code, _, body = _raw(s3files, "GET", "/www/data.bin", {"Range": "bytes=1000-"})
    assert code == 416 and b"InvalidRange" in body
    code, _, body = _raw(s3files, "GET", "/www/nope.bin")
    assert code == 404 and b"NoSuchKey" in body
    assert _raw(s3files, "HEAD", "/www/nope.bin")[0] == 404
    code, _, body = _raw(s3files, "GET", "/nobucket/data.bin")
    assert code == 404 and b"NoSuchBucket" in body
    # Nothing outside the bucket's directory: secret.txt sits beside it.
    for path in ("/www/../secret.txt", "/www/%2E%2E/secret.txt", "/secret.txt"):
        assert _raw(s3files, "GET", path)[0] == 404, path
    # Read-only: writes are refused, the body is drained and the connection stays usable.
    conn = http.client.HTTPConnection(s3files.host, s3files.port, timeout=10)
    conn.request("PUT", "/www/new.bin", body=b"x" * 100_000)
    resp = conn.getresponse()
    assert resp.status == 403 and b"AccessDenied" in resp.read()
    conn.request("GET", "/www/data.bin", headers={"Range": "bytes=0-3"})
    assert conn.getresponse().read() == DATA[:4]  # same connection, kept alive
    conn.close()


def test_s3files_processes_share_the_endpoint_and_stop_together(root: Path) -> None:
    """With processes=3 several processes accept on one socket: concurrent connections are
    served (by whichever takes them), and stop() ends every one of them."""
    from servers.s3_files_server import S3FilesServer

    with S3FilesServer(root.parent, processes=3) as server:
        pids = _group(os.getpgid(server.pid))
        assert len(pids) == 3, pids
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda _: _raw(server, "GET", "/www/data.bin")[2], range(32)))
        assert got == [DATA] * 32
    for pid in pids:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), pid


def _group(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A process that has exited but not been reaped (our own children) counts as ended.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][:1] != "Z"


def test_s3files_list_objects_v2_with_boto3(s3files) -> None:
    boto3 = pytest.importorskip("boto3")
    s3 = boto3.client("s3", endpoint_url=s3files.endpoint, region_name="us-east-1",
                      aws_access_key_id="any", aws_secret_access_key="any")
    top = s3.list_objects_v2(Bucket="www", Delimiter="/")
    assert [o["Key"] for o in top["Contents"]] == ["data.bin", "empty.bin"]
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["dir/"]
    assert [o["Size"] for o in top["Contents"]] == [1000, 0]
    keys = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket="www", PaginationConfig={"PageSize": 1}) for o in page.get("Contents", [])]
    assert keys == ["data.bin", "dir/sub file.bin", "empty.bin"]
    pages = list(s3.get_paginator("list_objects_v2").paginate(
        Bucket="www", Delimiter="/", PaginationConfig={"PageSize": 1}))
    assert [([o["Key"] for o in p.get("Contents", [])],
             [c["Prefix"] for c in p.get("CommonPrefixes", [])]) for p in pages] == [
        (["data.bin"], []), ([], ["dir/"]), (["empty.bin"], [])]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="www", Prefix="dir/")["Contents"]] == [
        "dir/sub file.bin"]
    got = s3.get_object(Bucket="www", Key="data.bin", Range="bytes=-3")
    assert got["Body"].read() == DATA[-3:]
    assert s3.head_object(Bucket="www", Key="empty.bin")["ContentLength"] == 0
