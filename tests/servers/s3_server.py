"""moto's S3 emulator on loopback, for the S3 store tests and benchmark.

The server runs in its own process by default (`python -m moto.server`): the client under test
drives GIL-free C++ threads, and the benchmark wants the server on its own cores (`cpus=`), so it
must not share an interpreter with the client. `in_process=True` runs moto's ThreadedMotoServer
in this process instead (moto's state and auth switch are then process globals). The server
process gets a scrubbed environment (no AWS_*/MOTO_* from the user, test keys, no config files);
clients from `client()` never read the user's ~/.aws either.

What moto checks about credentials (observed with moto 5.2.5; the accept/reject cases are
asserted in tests/test_servers.py):

* By default (INITIAL_NO_AUTH_ACTION_COUNT = inf) nothing: any access key, any secret, any or no
  signature is accepted. The one exception is an *anonymous* request (no Authorization header, no
  presigned X-Amz-Signature) for an object that exists: 403 with an empty text/html body unless
  the bucket policy allows the action to Principal "*" (what `create_bucket(public=True)` sets)
  or the object ACL is public-read. Anonymous ListObjects on a private bucket still succeeds, and
  an anonymous GET of a missing key is 404 NoSuchKey (real S3 says 403 without s3:ListBucket).

* With IAM authentication on, every request is checked:
    1. the access key id must be an IAM access key (iam:CreateAccessKey), else
       403 InvalidAccessKeyId -- the "testing"/"testing" keys stop working;
    2. the SigV4 signature is recomputed with botocore's S3SigV4Auth from the request as it arrived
       (method, raw path, query, the SignedHeaders' values, X-Amz-Date, the x-amz-content-sha256
       header's value) and the user's secret, else 403 SignatureDoesNotMatch (a wrong secret, or
       a Range header altered after signing, is caught);
    3. the user's IAM policies must allow the action, else 403 AccessDenied.
  Not checked: X-Amz-Date freshness (a year-2001 signature passes), the region in the credential
  scope (any region verifies; it is only used to recompute), the payload hash against the body,
  and S3's canonical-URI encoding rules (the path is signed exactly as sent, so "+" and "%2B"
  both pass). Always send x-amz-content-sha256: without it moto hashes a body of its own making
  and the signature never matches. Requests with no Authorization header (anonymous, presigned
  URLs) and SigV2 get 500 (moto raises KeyError/IndexError), except the anonymous-object 403
  above, so public-bucket tests need auth off.
  Turn it on with `MotoS3Server(auth=True)` or `srv.set_auth(True)`. Underneath: the env var
  INITIAL_NO_AUTH_ACTION_COUNT=N for the server process (the first N requests pass unchecked,
  later ones are checked), or at run time `POST /moto-api/reset-auth` with body "0" (not
  form-encoded: moto reads the raw body; "inf" turns it off), or in-process
  `moto.core.set_initial_no_auth_action_count(0)` (decorator) /
  `moto.core.authorization.enable_iam_authentication()` (context manager). Because IAM calls are
  checked too, the admin user has to be made before switching on; `set_auth(True)` does that and
  then `client()` signs with the admin keys (`access_key`/`secret_key`).

Other moto quirks worth knowing:

* Werkzeug's dev server answers every request with `Connection: close`: no keep-alive, one TCP
  connection per request. Connection reuse can only be tested against RangeServer.
* Range: `bytes=a-b`, `bytes=a-`, `bytes=-n` give 206 with Content-Range (the end is clamped to
  the size); first byte >= size or `bytes=-0` give 416 InvalidRange (XML body, no Content-Range);
  a multi-range or `first > last` is ignored (200, whole object); a Range without "=" is a 500.
* ListObjectsV2 supports prefix, delimiter (CommonPrefixes, KeyCount counts them),
  max-keys/continuation-token (opaque token) and encoding-type=url (keys percent-encoded).
* Missing key: 404 NoSuchKey for GET (XML) and a bare 404 for HEAD, also for a signed user
  allowed only s3:GetObject (real S3 gives 403 there); missing bucket: 404 NoSuchBucket.
* Anonymous 403s have an empty body (Content-Type text/html, Content-Length 0), not S3's XML.
* Some response header names are lower case (content-range, content-type, last-modified).
* Bucket names are validated (3-63 chars, so "b" is refused with InvalidBucketName).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["MotoS3Server", "REGION", "TEST_ACCESS_KEY", "TEST_SECRET_KEY", "free_port"]

REGION = "us-east-1"
TEST_ACCESS_KEY = "testing"
TEST_SECRET_KEY = "testing"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "MOTO_")) and k != "INITIAL_NO_AUTH_ACTION_COUNT"}
    env.update(AWS_ACCESS_KEY_ID=TEST_ACCESS_KEY, AWS_SECRET_ACCESS_KEY=TEST_SECRET_KEY,
               AWS_DEFAULT_REGION=REGION, AWS_REGION=REGION, AWS_CONFIG_FILE=os.devnull,
               AWS_SHARED_CREDENTIALS_FILE=os.devnull, AWS_EC2_METADATA_DISABLED="true")
    return env


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class MotoS3Server:
    """moto S3 (and IAM) on http://127.0.0.1:PORT, started at construction; a context manager.

    `auth=True` switches IAM authentication on after creating an admin user (see module doc).
    `cpus` pins the server process (not with in_process) to those CPU ids."""

    region = REGION

    def __init__(self, *, in_process: bool = False, auth: bool = False, host: str = "127.0.0.1",
                 cpus: Iterable[int] | None = None, startup_timeout: float = 30.0) -> None:
        self.host = host
        self.port = 0
        self.endpoint = ""
        self.in_process = in_process
        self.access_key = TEST_ACCESS_KEY
        self.secret_key = TEST_SECRET_KEY
        self.auth = False
        self._admin: tuple[str, str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._threaded: Any = None
        self._werkzeug_level: int | None = None
        self._stopped = False
        self._session_lock = threading.Lock()
        self._session: Any = None
        self._tmp = Path(tempfile.mkdtemp(prefix="moto-s3-"))
        (self._tmp / "aws-config").write_text(f"[profile moto-tests]\nregion = {REGION}\n")
        self.log_path = self._tmp / "moto.log"
        try:
            if in_process:
                self._start_in_process()
            else:
                self._start_process(None if cpus is None else set(cpus), startup_timeout)
            self.endpoint = f"http://{self.host}:{self.port}"
            if auth:
                self.set_auth(True)
        except BaseException:
            self.stop()
            raise

    def _start_process(self, cpus: set[int] | None, timeout: float) -> None:
        env = _server_env()
        for _ in range(3):
            port = free_port(self.host)
            with open(self.log_path, "wb") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "moto.server", "-H", self.host, "-p", str(port)],
                    env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True)
            self._proc = proc
            self._finalizer = weakref.finalize(self, _kill, proc)
            if cpus:
                os.sched_setaffinity(proc.pid, cpus)
            if self._wait_ready(port, proc, timeout):
                self.port = port
                return
            _kill(proc)
        tail = self.log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"moto server did not start on {self.host}:\n{tail}")

    def _wait_ready(self, port: int, proc: subprocess.Popen[bytes], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            conn = http.client.HTTPConnection(self.host, port, timeout=2)
            try:
                conn.request("GET", "/")
                conn.getresponse().read()
                return True
            except OSError:
                time.sleep(0.05)
            finally:
                conn.close()
        return False

    def _start_in_process(self) -> None:
        from moto.server import ThreadedMotoServer

        logger = logging.getLogger("werkzeug")
        self._werkzeug_level = logger.level
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
        self._threaded = ThreadedMotoServer(ip_address=self.host, port=0, verbose=False)
        self._threaded.start()
        self.port = self._threaded.get_host_and_port()[1]

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._threaded is not None and self.port:
            try:
                self._moto_api("/moto-api/reset-auth", b"inf")
                self._moto_api("/moto-api/reset", b"")
            finally:
                self._threaded.stop()
        if self._werkzeug_level is not None:
            logging.getLogger("werkzeug").setLevel(self._werkzeug_level)
        if self._proc is not None:
            self._finalizer()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> MotoS3Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        mode = "in-process" if self.in_process else f"pid {self._proc.pid if self._proc else None}"
        return f"MotoS3Server({self.endpoint!r}, {mode}, auth={self.auth})"

    def _moto_api(self, path: str, body: bytes) -> bytes:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request("POST", path, body=body, headers={"Content-Type": "text/plain"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"POST {path} -> {resp.status}: {data[:200]!r}")
            return data
        finally:
            conn.close()

    def set_auth(self, enabled: bool) -> None:
        """Switch moto's IAM authentication on or off at run time (state is kept)."""
        if enabled:
            if self._admin is None:
                if self.auth:
                    raise RuntimeError("auth is on but no admin user exists")
                self._admin = self.create_user_keys("moto-admin", actions="*")
            self.access_key, self.secret_key = self._admin
            self._moto_api("/moto-api/reset-auth", b"0")
        else:
            self._moto_api("/moto-api/reset-auth", b"inf")
        self.auth = enabled

    def reset(self) -> None:
        """Wipe every bucket, object and IAM user; auth stays as it was (with a fresh admin)."""
        was_on = self.auth
        self.set_auth(False)
        self._moto_api("/moto-api/reset", b"")
        self._admin = None
        self.access_key, self.secret_key = TEST_ACCESS_KEY, TEST_SECRET_KEY
        if was_on:
            self.set_auth(True)

    def _boto_session(self) -> Any:
        import boto3
        import botocore.session

        with self._session_lock:
            if self._session is None:
                core = botocore.session.Session()
                core.set_config_variable("config_file", str(self._tmp / "aws-config"))
                core.set_config_variable("credentials_file", os.devnull)
                core.set_config_variable("profile", "moto-tests")
                self._session = boto3.session.Session(botocore_session=core, region_name=REGION)
            return self._session

    def client(self, service: str = "s3", *, access_key: str | None = None,
               secret_key: str | None = None, anonymous: bool = False,
               region: str | None = None, **config: Any) -> Any:
        """A boto3 client for this server: path-style, SigV4, the server's current keys unless
        given (`anonymous=True` sends unsigned requests). Extra kwargs go to botocore Config."""
        from botocore import UNSIGNED
        from botocore.config import Config

        options: dict[str, Any] = {
            "s3": {"addressing_style": "path"},
            "signature_version": UNSIGNED if anonymous else "s3v4",
            "retries": {"max_attempts": 2, "mode": "standard"},
            "request_checksum_calculation": "when_required",
            "response_checksum_validation": "when_required",
        }
        options.update(config)
        return self._boto_session().client(
            service, endpoint_url=self.endpoint, region_name=region or REGION,
            aws_access_key_id=access_key or self.access_key,
            aws_secret_access_key=secret_key or self.secret_key,
            config=Config(**options))

    def create_bucket(self, name: str, *, public: bool = False) -> str:
        """Create `name`; `public=True` lets anonymous callers s3:GetObject and s3:ListBucket."""
        s3 = self.client()
        s3.create_bucket(Bucket=name)
        if public:
            policy = {"Version": "2012-10-17", "Statement": [
                {"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
                 "Action": ["s3:GetObject"], "Resource": [f"arn:aws:s3:::{name}/*"]},
                {"Sid": "PublicList", "Effect": "Allow", "Principal": "*",
                 "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{name}"]},
            ]}
            s3.put_bucket_policy(Bucket=name, Policy=json.dumps(policy))
        return name

    def upload_dir(self, local_dir: str | Path, bucket: str, prefix: str = "", *,
                   workers: int = 8) -> list[str]:
        """Upload every file below `local_dir` as `prefix/relative/path` ('/'-separated; no
        leading '/' when prefix is empty). Returns the keys, sorted."""
        root = Path(local_dir)
        if not root.is_dir():
            raise NotADirectoryError(str(root))
        base = prefix.strip("/")
        files = sorted(p for p in root.rglob("*") if p.is_file())
        jobs = [(f"{base}/{p.relative_to(root).as_posix()}" if base
                 else p.relative_to(root).as_posix(), p) for p in files]
        s3 = self.client()

        def put(job: tuple[str, Path]) -> None:
            s3.put_object(Bucket=bucket, Key=job[0], Body=job[1].read_bytes())

        with ThreadPoolExecutor(max(1, workers)) as pool:
            list(pool.map(put, jobs))
        return sorted(key for key, _ in jobs)

    def create_user_keys(self, user: str | None = None, *,
                         actions: str | Sequence[str] | None = "s3:*",
                         resource: str = "*") -> tuple[str, str]:
        """Create an IAM user allowed `actions` on `resource` (None/() = no policy at all) and
        return a fresh (access_key_id, secret_access_key). With auth on, these are exactly the
        keys moto accepts; any other secret for the key id gets 403 SignatureDoesNotMatch."""
        iam = self.client("iam")
        name = user or f"user-{uuid.uuid4().hex[:12]}"
        iam.create_user(UserName=name)
        if actions:
            statement = {"Effect": "Allow", "Action": actions if isinstance(actions, str)
                         else list(actions), "Resource": resource}
            iam.put_user_policy(UserName=name, PolicyName="access", PolicyDocument=json.dumps(
                {"Version": "2012-10-17", "Statement": [statement]}))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]
