"""A faster read-only S3 endpoint over a local directory: nginx serves object GETs and HEADs from
disk, and everything else goes to s3_files_server.py behind it.

The stdlib server tops out at a few GB/s of GETs on loopback, below what a GPU reader takes in.
nginx, given the same directory (each subdirectory of ROOT a bucket, each file below it an
object, path-style URLs), answers plain object reads itself: ``GET``/``HEAD
/<bucket>/<key>`` with ``Range`` (single and multiple ranges, 206 / 416), ``If-Match`` /
``If-None-Match``, kept-alive connections and sendfile, in ``workers`` processes. Requests
with a query string (ListObjectsV2, ``?location``), bucket-level requests and writes go to
the stdlib server, which answers them as it documents (writes are refused there).

Differences from s3_files_server.py alone: GETs carry nginx's ETag (modification time and size,
hex) rather than the stdlib server's, and a missing key is nginx's 404 without S3's XML body
(clients go by the status).

    with S3NginxServer(root, workers=8) as srv:
        srv.endpoint   # http://127.0.0.1:PORT

nginx is found as ``$NGINX`` or on ``PATH`` (the Debian package's binary is enough; it runs
unprivileged, with its configuration, logs and temporary files in a directory of its own).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .s3_files_server import S3FilesServer

__all__ = ["S3NginxServer", "find_nginx"]


def find_nginx() -> str | None:
    """The nginx binary: ``$NGINX``, else on PATH (or /usr/sbin), else None."""
    env = os.environ.get("NGINX")
    if env:
        return env if os.access(env, os.X_OK) else None
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _config(root: Path, work: Path, host: str, port: int, backend: str, workers: int) -> str:
    temp = "\n".join(f"    {name}_temp_path {work / name};"
                     for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    # As root, nginx's workers would drop to "nobody", who cannot enter a private temporary
    # directory: they stay the user that started them.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""{user}worker_processes {workers};
daemon off;
pid {work / "nginx.pid"};
error_log {work / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp}
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    default_type application/octet-stream;
    server {{
        listen {host}:{port} reuseport backlog=4096;
        root {root};
        # The bucket itself (HEAD bucket, lists without a trailing key): the stdlib server.
        location ~ ^/[^/]+/?$ {{
            proxy_pass {backend};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
        location / {{
            # Lists and other sub-resources (?list-type=2, ?location) and writes: the stdlib
            # server (it refuses writes).
            if ($args) {{ proxy_pass {backend}; }}
            if ($request_method !~ ^(GET|HEAD)$) {{ proxy_pass {backend}; }}
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class S3NginxServer:
    """nginx in front of s3_files_server.py, both on loopback, serving ROOT. ``endpoint``,
    ``host``, ``port`` as S3FilesServer's; ``stop()`` ends both."""

    def __init__(self, root: str | Path, *, workers: int = 4, host: str = "127.0.0.1",
                 nginx: str | None = None, timeout: float = 15):
        binary = nginx or find_nginx()
        if binary is None:
            raise RuntimeError("nginx not found (set NGINX to its path, or install it)")
        self.root = Path(root).resolve()
        self.workers = workers
        self._backend = S3FilesServer(self.root, host=host)
        self._work = Path(tempfile.mkdtemp(prefix="zarrflow-s3-nginx-"))
        self.host, self.port = host, _free_port(host)
        self.endpoint = f"http://{host}:{self.port}"
        conf = self._work / "nginx.conf"
        conf.write_text(_config(self.root, self._work, host, self.port, self._backend.endpoint,
                                workers))
        self._proc = subprocess.Popen([binary, "-p", str(self._work), "-c", str(conf),
                                       "-e", str(self._work / "error.log")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      start_new_session=True)
        self.pid = self._proc.pid
        deadline = time.monotonic() + timeout
        while not self._accepting():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                log = self._work / "error.log"
                err += log.read_text(errors="replace") if log.exists() else ""
                self.stop()
                raise RuntimeError(f"nginx did not start: {err.strip()[-2000:]}")
            time.sleep(0.02)

    def _accepting(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def url(self, bucket: str, key: str = "") -> str:
        return self._backend.url(bucket, key).replace(self._backend.endpoint, self.endpoint, 1)

    def stop(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()  # nginx: fast shutdown of the master and its workers
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        self._backend.stop()
        shutil.rmtree(getattr(self, "_work", ""), ignore_errors=True)

    def __enter__(self) -> S3NginxServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
