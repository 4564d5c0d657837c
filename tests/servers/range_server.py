"""A loopback HTTP/1.1 byte-range file server with a request log and scheduled fault injection.

The HTTP store under test must be proven against the things real object stores and CDNs do: serve
single byte ranges, keep connections alive, answer 416/404, throttle (429/503 + Retry-After), hang
before or in the middle of a body, reset connections and cut bodies short — and against servers
that misbehave: ignore Range (200 with the whole file, as ``python -m http.server`` does), send no
Content-Length, drip bytes, stream endless bodies, announce absurd lengths, answer a different
range than asked, redirect in a loop, or send something that is not HTTP. Doing that against a real
service is neither reproducible nor offline, so this server does it on demand, deterministically,
and records what the client actually asked for (ranges, concurrency, connection reuse) so tests can
assert on the client's behaviour rather than only on the bytes it returns.

Stdlib only, so it also runs as a script for the benchmark:

    python tests/servers/range_server.py ROOT [--host 127.0.0.1] [--port N] [--delay S]
                                              [--ignore-range]

prints the base URL on one line and serves ROOT until killed.
"""

from __future__ import annotations

import argparse
import collections
import email.utils
import re
import socket
import struct
import sys
import threading
import traceback
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

__all__ = ["FAULT_KINDS", "RangeServer", "RequestRecord", "parse_range", "Unsatisfiable"]

# Fault kinds and their parameters:
#   status(code, retry_after?)  an error answer         stall(seconds)   no answer, then close
#   stall_body(seconds, fraction?)  part of the body, then silence   reset  RST, no answer
#   truncate(fraction?)  part of the body, then close   drip(bytes_per_second)  a slow body
#   endless(content_length?)  the body, then zero bytes forever; Content-Length replaced or dropped
#   garbage(data?)  bytes that are not HTTP, then close
#   shifted_range(shift?)  a 206 for the range `shift` bytes later than asked
#   redirect(location?)  302 to `location`, by default the request's own path (a loop)
FAULT_KINDS = ("status", "stall", "stall_body", "reset", "truncate", "drip", "endless",
               "garbage", "shifted_range", "redirect")
_REQUIRED = {"status": {"code"}, "stall": {"seconds"}, "stall_body": {"seconds"}, "reset": set(),
             "truncate": set(), "drip": {"bytes_per_second"}, "endless": set(),
             "garbage": set(), "shifted_range": set(), "redirect": set()}
_OPTIONAL = {"status": {"retry_after"}, "stall": set(), "stall_body": {"fraction"}, "reset": set(),
             "truncate": {"fraction"}, "drip": set(), "endless": {"content_length"},
             "garbage": {"data"}, "shifted_range": {"shift"}, "redirect": {"location"}}
_BLOCK = 1 << 20
_DEFAULT_COUNT: Any = object()
_RANGE_RE = re.compile(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", re.IGNORECASE)


class RequestRecord(NamedTuple):
    """One handled request. `status` is 0 when no status line went out (stall, reset) and
    `bytes_sent` counts body bytes only; `fault` is the kind that fired on it, if any."""

    method: str
    path: str
    range: str | None
    status: int
    bytes_sent: int
    fault: str | None = None


class _Entry:
    """A log entry, updated *before* each byte it describes is written, so that whatever a client
    has observed is already in the log when it looks."""

    __slots__ = ("method", "path", "range", "status", "bytes_sent", "fault", "finished")

    def __init__(self, method: str, path: str, range_header: str | None) -> None:
        self.method, self.path, self.range = method, path, range_header
        self.status = self.bytes_sent = 0
        self.fault: str | None = None
        self.finished = False

    def record(self) -> RequestRecord:
        return RequestRecord(self.method, self.path, self.range, self.status, self.bytes_sent,
                             self.fault)


class Unsatisfiable(Exception):
    """The Range header is well-formed but selects no byte of the representation (→ 416)."""


def parse_range(header: str | None, total: int) -> tuple[int, int] | None:
    """Inclusive (first, last) for a single `bytes=` range, None where RFC 9110 says to ignore the
    header (absent, malformed, multi-range, first > last), Unsatisfiable for a 416."""
    if header is None:
        return None
    m = _RANGE_RE.fullmatch(header)
    if m is None or (not m[1] and not m[2]):
        return None
    if m[1]:
        first = int(m[1])
        last = int(m[2]) if m[2] else total - 1
        if m[2] and first > last:
            return None
        if first >= total:
            raise Unsatisfiable(header)
        return first, min(last, total - 1)
    suffix = int(m[2])
    if suffix == 0 or total == 0:
        raise Unsatisfiable(header)
    return max(0, total - suffix), total - 1


@dataclass
class _Fault:
    kind: str
    pattern: re.Pattern[str] | None
    count: int | None
    every: int | None
    params: dict[str, Any]
    seen: int = 0
    fired: int = 0

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.fired >= self.count

    def take(self, path: str) -> bool:
        if self.exhausted or (self.pattern is not None and not self.pattern.search(path)):
            return False
        self.seen += 1
        if self.every is not None and self.seen % self.every:
            return False
        self.fired += 1
        return True


@dataclass
class _Response:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    file: Path | None = None
    offset: int = 0
    length: int = -1

    def __post_init__(self) -> None:
        if self.length < 0:
            self.length = len(self.body)


def _text(status: int, message: str, extra: list[tuple[str, str]] | None = None) -> _Response:
    body = (message + "\n").encode()
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    return _Response(status, headers + (extra or []), body)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def _serve(self, head: bool) -> None:
        owner = self.server.owner
        self._client_close = self.close_connection
        self._discard_request_body()
        self._entry = _Entry(self.command, self.path, self.headers.get("Range"))
        owner._begin(self._entry)
        try:
            if owner.delay > 0:
                owner._sleep(owner.delay)
            fault = owner._take_fault(self.path)
            if fault:
                self._entry.fault = fault[0]
            self._transmit(self._prepare(self._entry.range), head, fault)
        finally:
            owner._finish(self._entry)

    def _discard_request_body(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        while length > 0:
            chunk = self.rfile.read(min(length, _BLOCK))
            if not chunk:
                break
            length -= len(chunk)

    def _target(self) -> str | None:
        raw = self.path
        if raw.startswith(("http://", "https://")):
            raw = urlsplit(raw).path or "/"
        raw = raw.split("?", 1)[0].split("#", 1)[0]
        if not raw.startswith("/"):
            return None
        decoded = unquote(raw, errors="strict") if "%" in raw else raw
        return None if "\x00" in decoded else decoded

    def _prepare(self, range_header: str | None) -> _Response:
        root = self.server.owner.root
        try:
            target = self._target()
        except UnicodeDecodeError:
            target = None
        if target is None:
            return _text(400, "bad request")
        file = (root / target.lstrip("/")).resolve()
        if not file.is_relative_to(root) or not file.is_file():
            return _text(404, "not found")
        st = file.stat()
        total = st.st_size
        headers = [("Content-Type", "application/octet-stream"), ("Accept-Ranges", "bytes"),
                   ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                   ("ETag", f'"{total:x}-{st.st_mtime_ns:x}"')]
        try:
            rng = None if self.server.owner.ignore_range else parse_range(range_header, total)
        except Unsatisfiable:
            return _text(416, "range not satisfiable", [("Content-Range", f"bytes */{total}")])
        if rng is None:
            headers.append(("Content-Length", str(total)))
            return _Response(200, headers, file=file, length=total)
        first, last = rng
        length = last - first + 1
        headers += [("Content-Range", f"bytes {first}-{last}/{total}"),
                    ("Content-Length", str(length))]
        return _Response(206, headers, file=file, offset=first, length=length)

    def _transmit(self, resp: _Response, head: bool,
                  fault: tuple[str, dict[str, Any]] | None) -> None:
        kind, params = fault if fault else (None, {})
        owner = self.server.owner
        if kind == "reset":
            owner._finish(self._entry)
            self._reset()
            return
        if kind == "stall":
            owner._sleep(params["seconds"])
            self.close_connection = True
            return
        if kind == "garbage":
            self.close_connection = True
            owner._finish(self._entry)
            self.wfile.write(params.get("data", b"\x00\x01 this is not HTTP\r\n\r\n"))
            return
        if kind == "status":
            extra = []
            if params.get("retry_after") is not None:
                extra.append(("Retry-After", str(params["retry_after"])))
            resp = _text(params["code"], f"injected {params['code']}", extra)
        elif kind == "redirect":
            resp = _text(302, "moved", [("Location", params.get("location", self.path))])
        elif kind == "shifted_range":
            resp = _shifted(resp, params.get("shift", 1))
        elif kind == "endless":
            self._send_endless(resp, head, params.get("content_length"))
            return
        elif self.server.owner.omit_length and resp.file is not None:
            resp = _without_length(resp)
        if resp.status and not any(name == "Content-Length" for name, _ in resp.headers):
            self.close_connection = True  # the body ends where the connection does
        limit = 0 if head else resp.length
        if kind == "drip":
            self._send_head(resp, last=limit == 0)
            self._drip(resp, limit, params["bytes_per_second"])
            return
        if kind in ("truncate", "stall_body"):
            limit = int(limit * params.get("fraction", 0.5))
            self.close_connection = True
        last = kind != "stall_body"
        self._send_head(resp, last=last and limit == 0)
        self._send_body(resp, limit, last=last)
        if kind == "stall_body":
            owner._sleep(params["seconds"])

    def _send_head(self, resp: _Response, *, last: bool) -> None:
        self.send_response(resp.status)
        for name, value in resp.headers:
            self.send_header(name, value)
        if self._client_close:
            self.send_header("Connection", "close")
        self._entry.status = resp.status
        if last:
            self.server.owner._finish(self._entry)
        self.end_headers()

    def _send_body(self, resp: _Response, limit: int, *, last: bool) -> None:
        if limit <= 0:
            return
        owner = self.server.owner
        if resp.file is None:
            block = resp.body[:limit]
            self._entry.bytes_sent = len(block)
            if last:
                owner._finish(self._entry)
            self.wfile.write(block)
            return
        with open(resp.file, "rb") as f:
            f.seek(resp.offset)
            remaining = limit
            while remaining > 0:
                block = f.read(min(_BLOCK, remaining))
                if not block:
                    break
                remaining -= len(block)
                self._entry.bytes_sent += len(block)
                if last and remaining == 0:
                    owner._finish(self._entry)
                self.wfile.write(block)

    def _send_endless(self, resp: _Response, head: bool, content_length: int | None) -> None:
        """The response's status and headers, Content-Length replaced by `content_length` (or
        dropped), then its body followed by zero bytes until the client hangs up."""
        headers = [(n, v) for n, v in resp.headers if n != "Content-Length"]
        if content_length is not None:
            headers.append(("Content-Length", str(content_length)))
        self.close_connection = True
        self._send_head(_Response(resp.status, headers), last=head)
        if head:
            return
        self._send_body(resp, resp.length, last=False)
        zeros = bytes(1 << 16)
        while not self.server.owner._stopping.is_set():
            self._entry.bytes_sent += len(zeros)
            self.wfile.write(zeros)

    def _drip(self, resp: _Response, limit: int, bytes_per_second: float) -> None:
        """The body at `bytes_per_second`, in pieces of at least one byte."""
        owner = self.server.owner
        piece = max(1, int(bytes_per_second * 0.05))
        data = resp.body[:limit] if resp.file is None else _read(resp.file, resp.offset, limit)
        for at in range(0, len(data), piece):
            if owner._stopping.is_set():
                return
            block = data[at:at + piece]
            self._entry.bytes_sent += len(block)
            if at + piece >= len(data):
                owner._finish(self._entry)
            self.wfile.write(block)
            self.wfile.flush()
            owner._sleep(len(block) / bytes_per_second)

    def _reset(self) -> None:
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()
        self.connection.close()


def _read(file: Path, offset: int, length: int) -> bytes:
    with open(file, "rb") as f:
        f.seek(offset)
        return f.read(length)


def _without_length(resp: _Response) -> _Response:
    headers = [(n, v) for n, v in resp.headers if n != "Content-Length"]
    return _Response(resp.status, headers, resp.body, resp.file, resp.offset, resp.length)


def _shifted(resp: _Response, shift: int) -> _Response:
    """A 206 for the range `shift` bytes later than asked (as far as the file allows)."""
    if resp.status != 206 or resp.file is None:
        return resp
    total = resp.file.stat().st_size
    first = min(resp.offset + shift, total - 1)
    length = min(resp.length, total - first)
    headers = [(n, v) for n, v in resp.headers if n not in ("Content-Range", "Content-Length")]
    headers += [("Content-Range", f"bytes {first}-{first + length - 1}/{total}"),
                ("Content-Length", str(length))]
    return _Response(206, headers, file=resp.file, offset=first, length=length)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: RangeServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._connected(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.owner._disconnected(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            self.owner._error(traceback.format_exc())


class RangeServer:
    """Serve `root` over HTTP/1.1 on host:port (0 = ephemeral) from a daemon thread, started at
    construction. `with RangeServer(root) as srv:` stops it on exit; `stop()` also closes any
    kept-alive client connections so a stopped server really is gone.

    `delay` (seconds, settable any time) is slept at the start of every request, inside the
    in-flight window. `ignore_range` (settable) answers every GET with 200 and the whole file, as
    ``python -m http.server`` does; `omit_length` (settable) sends file bodies without
    Content-Length, delimited by closing the connection. A request counts as finished when its last byte is handed to the socket, so
    a client that has read a whole response always finds it logged and no longer in flight.
    Log paths and fault patterns both use the raw request target (percent-encoded, with query)."""

    def __init__(self, root: str | Path, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(str(self.root))
        self.delay = 0.0
        self.ignore_range = False
        self.omit_length = False
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._requests: list[_Entry] = []
        self._faults: list[_Fault] = []
        self._fired: collections.Counter[str] = collections.Counter()
        self._errors: list[str] = []
        self._live: set[socket.socket] = set()
        self._in_flight = 0
        self._max_in_flight = 0
        self._connections = 0
        self._httpd = _Server((host, port), self)
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name=f"RangeServer:{self.port}", daemon=True)
        self._thread.start()

    def __enter__(self) -> RangeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"RangeServer({str(self.root)!r}, url={self.url!r})"

    def url_for(self, relpath: str) -> str:
        return f"{self.url}/{quote(relpath.lstrip('/'))}"

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            live = list(self._live)
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return [entry.record() for entry in self._requests]

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def connections(self) -> int:
        with self._lock:
            return self._connections

    @property
    def errors(self) -> list[str]:
        """Tracebacks of unexpected handler exceptions (client disconnects are not errors)."""
        with self._lock:
            return list(self._errors)

    def clear_log(self) -> None:
        with self._lock:
            self._requests.clear()
            self._max_in_flight = self._in_flight
            self._connections = 0
            self._errors.clear()

    def add_fault(self, kind: str, *, path: str | re.Pattern[str] | None = None,
                  count: int | None = _DEFAULT_COUNT, every: int | None = None,
                  **params: Any) -> None:
        """Schedule a fault for requests whose raw request target matches `path` (re.search; None
        matches all). It fires on the first `count` matching requests (default 1), or with
        `every=k` on the k-th, 2k-th, ... matching request (then `count` caps the firings and
        defaults to no limit). `count=None` never runs out. Faults are consulted in the order
        added and a request takes at most one; a request that a fault fired on is not seen by the
        faults after it."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        if kind == "drip" and not params.get("bytes_per_second", 1) > 0:
            raise ValueError("bytes_per_second must be positive")
        missing = _REQUIRED[kind] - params.keys()
        unknown = params.keys() - _REQUIRED[kind] - _OPTIONAL[kind]
        if missing or unknown:
            raise TypeError(f"fault {kind!r}: missing {sorted(missing)}, "
                            f"unexpected {sorted(unknown)}")
        if "fraction" in params and not 0 <= params["fraction"] < 1:
            raise ValueError("fraction must be in [0, 1)")
        if count is _DEFAULT_COUNT:
            count = None if every is not None else 1
        if count is not None and count < 1:
            raise ValueError("count must be >= 1 or None")
        if every is not None and every < 1:
            raise ValueError("every must be >= 1")
        pattern = re.compile(path) if isinstance(path, str) else path
        with self._lock:
            self._faults.append(_Fault(kind, pattern, count, every, dict(params)))

    def clear_faults(self) -> None:
        """Drop all scheduled faults and reset `faults_fired`."""
        with self._lock:
            self._faults.clear()
            self._fired.clear()

    @property
    def faults_fired(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self._fired)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return sum(not f.exhausted for f in self._faults)

    def _take_fault(self, path: str) -> tuple[str, dict[str, Any]] | None:
        with self._lock:
            for fault in self._faults:
                if fault.take(path):
                    self._fired[fault.kind] += 1
                    return fault.kind, fault.params
        return None

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    def _begin(self, entry: _Entry) -> None:
        with self._lock:
            self._requests.append(entry)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _finish(self, entry: _Entry) -> None:
        with self._lock:
            if not entry.finished:
                entry.finished = True
                self._in_flight -= 1

    def _connected(self, sock: socket.socket) -> None:
        with self._lock:
            self._connections += 1
            self._live.add(sock)

    def _disconnected(self, sock: socket.socket) -> None:
        with self._lock:
            self._live.discard(sock)

    def _error(self, text: str) -> None:
        with self._lock:
            self._errors.append(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a directory with HTTP byte ranges.")
    parser.add_argument("root", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds added to every request")
    parser.add_argument("--ignore-range", action="store_true",
                        help="answer ranged GETs with 200 and the whole file")
    args = parser.parse_args(argv)
    srv = RangeServer(args.root, host=args.host, port=args.port)
    srv.delay = args.delay
    srv.ignore_range = args.ignore_range
    print(srv.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
