"""A read-only S3 endpoint over a local directory, stdlib only: each subdirectory of ROOT is a
bucket, each file below it an object.

For benchmarks that read gigabytes over the S3 REST API on loopback: objects are served from
disk with sendfile (no upload, no copy in server memory), connections are kept alive, and it
runs where only the standard library is installed. What it answers, path-style
(``http://host:port/<bucket>/<key>``):

* GET object, with ``Range: bytes=a-b | a- | -n`` (206 + Content-Range; 416 when the first byte is
  past the end); HEAD object; ``If-Match`` / ``If-None-Match`` (412 / 304);
* ListObjectsV2 (``list-type=2``: prefix, delimiter, max-keys, continuation-token, start-after);
  ``?location``; HEAD bucket;
* every write (PUT, POST, DELETE) is 403 AccessDenied: the store is read-only.

Signatures are not checked (any credentials, or none, are accepted). The ETag of an object is
derived from its size and modification time, not its MD5 (S3's ETags of multipart uploads are not
MD5s either; clients treat them as opaque).

    python tests/servers/s3_files_server.py ROOT [--host 127.0.0.1] [--port N] [--processes P]

prints the endpoint URL on one line and serves until killed. In Python: ``with
S3FilesServer(root) as srv: srv.endpoint``. With P > 1, P processes share the listening socket
(forked after it is bound, as pre-fork servers do), so that one Python process's GIL does not
bound what the endpoint serves; each connection is served by one of them.
"""

from __future__ import annotations

import argparse
import email.utils
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

__all__ = ["S3FilesServer"]

_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


def _etag(st: os.stat_result) -> str:
    return f'"{st.st_size:x}-{st.st_mtime_ns:x}"'


def _xml(body: str) -> bytes:
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "S3FilesServer"
    root: Path

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib's name)
        pass

    # ---- helpers -----------------------------------------------------------------------------

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              content_type: str = "application/xml") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amz-request-id", "0")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str, resource: str = "") -> None:
        self._send(status, _xml(f"<Error><Code>{code}</Code><Message>{escape(message)}</Message>"
                                f"<Resource>{escape(resource)}</Resource></Error>"))

    def _split(self) -> tuple[str, str, dict[str, list[str]]]:
        url = urlsplit(self.path)
        path = unquote(url.path).lstrip("/")
        bucket, _, key = path.partition("/")
        return bucket, key, parse_qs(url.query, keep_blank_values=True)

    def _bucket_dir(self, bucket: str) -> Path | None:
        if not bucket or bucket in (".", "..") or "/" in bucket:
            return None
        d = self.root / bucket
        return d if d.is_dir() else None

    def _object_path(self, bucket_dir: Path, key: str) -> Path | None:
        parts = key.split("/")
        if not key or any(p in ("", ".", "..") for p in parts):
            return None
        p = bucket_dir.joinpath(*parts)
        return p if p.is_file() else None

    # ---- requests ----------------------------------------------------------------------------

    def do_HEAD(self) -> None:  # noqa: N802 (stdlib's name)
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        bucket, key, query = self._split()
        bucket_dir = self._bucket_dir(bucket)
        if bucket_dir is None:
            return self._error(404, "NoSuchBucket", "The specified bucket does not exist", bucket)
        if not key:
            if "location" in query:
                return self._send(200, _xml("<LocationConstraint/>"))
            if self.command == "HEAD":
                return self._send(200)
            return self._list(bucket, bucket_dir, query)
        path = self._object_path(bucket_dir, key)
        if path is None:
            if self.command == "HEAD":
                return self._send(404)
            return self._error(404, "NoSuchKey", "The specified key does not exist.", key)
        self._object(path)

    def _object(self, path: Path) -> None:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            etag, size = _etag(st), st.st_size
            headers = {"ETag": etag, "Accept-Ranges": "bytes",
                       "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True)}
            if_match = self.headers.get("If-Match")
            if if_match and if_match.strip() not in ("*", etag):
                return self._error(412, "PreconditionFailed", "If-Match does not match")
            if_none = self.headers.get("If-None-Match")
            if if_none and if_none.strip() in ("*", etag):
                return self._send(304, headers=headers)
            start, length, status = 0, size, 200
            rng = self.headers.get("Range")
            m = _RANGE.match(rng.strip()) if rng else None
            if m and (m.group(1) or m.group(2)):
                if m.group(1):
                    start = int(m.group(1))
                    last = int(m.group(2)) if m.group(2) else size - 1
                    if start >= size or last < start:
                        return self._error(416, "InvalidRange",
                                           "The requested range is not satisfiable")
                    length = min(last, size - 1) - start + 1
                else:
                    length = min(int(m.group(2)), size)
                    start = size - length
                    if length == 0:
                        return self._error(416, "InvalidRange",
                                           "The requested range is not satisfiable")
                status = 206
                headers["Content-Range"] = f"bytes {start}-{start + length - 1}/{size}"
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(length))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            if self.command == "HEAD" or length == 0:
                return
            self.wfile.flush()
            self.connection.sendfile(f, start, length)

    def _list(self, bucket: str, bucket_dir: Path, query: dict[str, list[str]]) -> None:
        q = {k: v[0] for k, v in query.items()}
        prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
        max_keys = max(0, min(int(q.get("max-keys", "1000") or 1000), 1000))
        after = q.get("continuation-token") or q.get("start-after", "")
        keys: list[tuple[str, os.stat_result]] = []
        for dirpath, dirnames, filenames in os.walk(bucket_dir):
            dirnames.sort()
            rel = os.path.relpath(dirpath, bucket_dir)
            base = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in filenames:
                k = base + name
                if k.startswith(prefix):
                    keys.append((k, os.stat(os.path.join(dirpath, name))))
        keys.sort(key=lambda kv: kv[0])
        contents, prefixes, seen, truncated, last = [], [], set(), False, ""
        for k, st in keys:
            if k <= after:
                continue
            if delimiter:
                cut = k.find(delimiter, len(prefix))
                if cut >= 0:
                    p = k[:cut + len(delimiter)]
                    if p in seen or p <= after:
                        continue
                    if len(contents) + len(prefixes) == max_keys:
                        truncated = True
                        break
                    seen.add(p)
                    prefixes.append(p)
                    last = k[:cut] + "\U0010ffff"  # after every key below this prefix
                    continue
            if len(contents) + len(prefixes) == max_keys:
                truncated = True
                break
            contents.append((k, st))
            last = k
        items = "".join(
            f"<Contents><Key>{escape(k)}</Key><LastModified>"
            f"{time.strftime('%Y-%m-%dT%H:%M:%S.000Z', time.gmtime(st.st_mtime))}</LastModified>"
            f"<ETag>{escape(_etag(st))}</ETag><Size>{st.st_size}</Size>"
            f"<StorageClass>STANDARD</StorageClass></Contents>" for k, st in contents)
        items += "".join(f"<CommonPrefixes><Prefix>{escape(p)}</Prefix></CommonPrefixes>"
                         for p in prefixes)
        token = (f"<NextContinuationToken>{escape(last)}</NextContinuationToken>"
                 if truncated else "")
        self._send(200, _xml(
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix>"
            f"<KeyCount>{len(contents) + len(prefixes)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>"
            + (f"<Delimiter>{escape(delimiter)}</Delimiter>" if delimiter else "")
            + f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>{token}{items}"
            "</ListBucketResult>"))

    def _read_only(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        while length > 0:  # drain the body so the connection stays usable
            chunk = self.rfile.read(min(length, 1 << 20))
            if not chunk:
                break
            length -= len(chunk)
        self._error(403, "AccessDenied", "This endpoint is read-only")

    do_PUT = do_POST = do_DELETE = _read_only  # noqa: N815


class S3FilesServer:
    """Serves ROOT on loopback in a child process (the client under test keeps its cores and
    its GIL to itself). ``endpoint``: the URL to give S3 clients (``host``, ``port``);
    ``url(bucket, key)``."""

    def __init__(self, root: str | Path, *, host: str = "127.0.0.1", timeout: float = 30,
                 processes: int = 1):
        self.root = Path(root).resolve()
        # Its own session: stop() ends the server's processes together.
        self._proc = subprocess.Popen(
            [sys.executable, "-u", __file__, str(self.root), "--host", host,
             "--processes", str(processes)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        line = self._proc.stdout.readline().decode().strip() if self._proc.stdout else ""
        if not line.startswith("http://"):
            self.stop()
            raise RuntimeError(f"s3_files_server did not start (printed {line!r})")
        self.endpoint = line
        self.host, port = urlsplit(line).netloc.rsplit(":", 1)
        self.port = int(port)
        self.pid = self._proc.pid

    def url(self, bucket: str, key: str = "") -> str:
        return f"{self.endpoint}/{bucket}/{quote(key)}"

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._proc.wait()

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self._proc.pid, sig)  # the forked processes too
        except ProcessLookupError:
            pass

    def __enter__(self) -> S3FilesServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(root: Path, host: str, port: int, processes: int = 1) -> None:
    handler = type("Handler", (_Handler,), {"root": root.resolve()})

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256

        def server_bind(self) -> None:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            super().server_bind()

    srv = Server((host, port), handler)
    # Forked before any thread starts (forking a threaded process is not safe); every process
    # accepts on the one listening socket. The endpoint is printed once all of them exist.
    forked = False
    for _ in range(processes - 1):
        if os.fork() == 0:
            forked = True
            break
    if not forked:
        print(f"http://{host}:{srv.server_address[1]}", flush=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--processes", type=int, default=1, help="processes serving the endpoint")
    a = ap.parse_args()
    serve(a.root, a.host, a.port, max(1, a.processes))
