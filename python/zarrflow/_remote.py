"""URLs to stores: s3://, gs://, http(s):// and file:// resolved into a core store.

Credentials and endpoints are resolved here, the way the AWS CLI and boto3 resolve them, so a user
who can `aws s3 ls` a bucket can open it with zarrflow unchanged:

* S3: explicit ``storage_options`` (``key``/``secret``/``token`` or ``anon=True``), then
  ``AWS_NO_SIGN_REQUEST``, then ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
  ``AWS_SESSION_TOKEN``, then the shared credentials and config files
  (``AWS_SHARED_CREDENTIALS_FILE``, ``AWS_CONFIG_FILE``, profile from ``profile=`` or
  ``AWS_PROFILE``). With none, requests go
  unsigned (public buckets); a 403 then says so. Region: ``region=``, ``AWS_REGION``,
  ``AWS_DEFAULT_REGION``, the profile's ``region``, else us-east-1. Endpoint: ``endpoint_url=``,
  ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, the profile's ``endpoint_url``, else AWS.
  TLS roots: ``ca_bundle=`` or ``AWS_CA_BUNDLE``.
* GCS (XML API): ``token=`` or ``GCS_OAUTH_TOKEN`` (a bearer token), or HMAC keys
  (``key``/``secret`` or ``GCS_HMAC_KEY_ID``/``GCS_HMAC_SECRET``, signed like S3), else anonymous.
* HTTP(S): range GETs below the URL; nothing to list, so groups need consolidated metadata.

Transport options (any scheme): ``max_in_flight`` (default 64, or ``ZARRFLOW_MAX_IN_FLIGHT``);
``connect_timeout`` (10 s), ``request_timeout`` (120 s, one attempt), ``stall_timeout`` (20 s:
an attempt slower than ``min_bytes_per_second``, default 1024, for that long is retried),
``total_timeout`` (300 s: one read, every attempt and backoff delay included); ``max_attempts``
(8), ``backoff_base``, ``backoff_max`` (seconds); ``max_object_bytes`` (1 GiB: the most a
whole-value GET accepts, and the most of a value read through when a server ignores a suffix
range); ``coalesce_gap``, ``coalesce_max`` (bytes); ``verify_tls``, ``ca_bundle``.
"""

from __future__ import annotations

import configparser
import json
import os
from typing import Any
from urllib.parse import urlsplit

from . import _core
from .errors import InvalidArgumentError

_TRANSPORT = {"max_in_flight": int, "connect_timeout": float, "request_timeout": float,
              "stall_timeout": float, "min_bytes_per_second": int, "total_timeout": float,
              "max_object_bytes": int, "max_attempts": int, "backoff_base": float,
              "backoff_max": float, "coalesce_gap": int, "coalesce_max": int,
              "verify_tls": bool, "ca_bundle": str}
_S3_KEYS = {"anon", "key", "secret", "token", "profile", "region", "endpoint_url",
            "addressing_style"}
_GCS_KEYS = {"anon", "token", "key", "secret", "endpoint_url"}
REMOTE_SCHEMES = ("s3", "gs", "gcs", "http", "https")


def is_remote(path: Any) -> bool:
    return isinstance(path, str) and path.split("://", 1)[0].lower() in REMOTE_SCHEMES \
        and "://" in path


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _read_ini(path: str) -> configparser.RawConfigParser:
    cp = configparser.RawConfigParser()
    try:
        cp.read(os.path.expanduser(path))
    except configparser.Error as e:
        raise InvalidArgumentError(f"cannot parse AWS configuration file {path}: {e}") from None
    return cp


def _aws_profile(profile: str) -> dict[str, str]:
    """Settings of `profile` from the shared credentials and config files (credentials win)."""
    out: dict[str, str] = {}
    config = _read_ini(os.environ.get("AWS_CONFIG_FILE", "~/.aws/config"))
    section = "default" if profile == "default" else f"profile {profile}"
    for sec in (section, profile):
        if config.has_section(sec):
            out.update(config.items(sec))
            break
    creds = _read_ini(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"))
    if creds.has_section(profile):
        out.update(creds.items(profile))
    return out


def _transport(options: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    env = os.environ.get("ZARRFLOW_MAX_IN_FLIGHT")
    if env:
        out["max_in_flight"] = int(env)
    for name, kind in _TRANSPORT.items():
        if name in options:
            value = options[name]
            out[name] = bool(value) if kind is bool else kind(value)
    return out


def _check_keys(options: dict[str, Any], allowed: set[str], scheme: str) -> None:
    unknown = set(options) - allowed - set(_TRANSPORT)
    if unknown:
        raise InvalidArgumentError(f"unknown storage option(s) for {scheme}://: "
                                   f"{', '.join(sorted(unknown))}"
                         f" (known: {', '.join(sorted(allowed | set(_TRANSPORT)))})")


def _s3_config(bucket: str, prefix: str, options: dict[str, Any]) -> dict[str, Any]:
    _check_keys(options, _S3_KEYS, "s3")
    profile_name = options.get("profile") or os.environ.get("AWS_PROFILE") or "default"
    profile = _aws_profile(profile_name)
    if options.get("profile") and not profile:
        raise InvalidArgumentError(
            f"AWS profile '{profile_name}' not found in the shared config files")
    cfg: dict[str, Any] = {"kind": "s3", "bucket": bucket, "prefix": prefix}
    if options.get("anon") or (_truthy(os.environ.get("AWS_NO_SIGN_REQUEST"))
                               and "key" not in options):
        pass
    elif options.get("key"):
        cfg.update(access_key=options["key"], secret_key=options.get("secret", ""),
                   session_token=options.get("token", ""))
    elif os.environ.get("AWS_ACCESS_KEY_ID") and not options.get("profile"):
        cfg.update(access_key=os.environ["AWS_ACCESS_KEY_ID"],
                   secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY", ""),
                   session_token=os.environ.get("AWS_SESSION_TOKEN", ""))
    elif profile.get("aws_access_key_id"):
        cfg.update(access_key=profile["aws_access_key_id"],
                   secret_key=profile.get("aws_secret_access_key", ""),
                   session_token=profile.get("aws_session_token", ""))
    if cfg.get("access_key") and not cfg.get("secret_key"):
        raise InvalidArgumentError("an AWS access key was given without its secret key")
    region = (options.get("region") or os.environ.get("AWS_REGION")
              or os.environ.get("AWS_DEFAULT_REGION") or profile.get("region") or "us-east-1")
    endpoint = (options.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL_S3")
                or os.environ.get("AWS_ENDPOINT_URL") or profile.get("endpoint_url"))
    style = options.get("addressing_style", "auto")
    if style not in ("auto", "path", "virtual"):
        raise InvalidArgumentError(
            f"addressing_style must be 'auto', 'path' or 'virtual', not {style!r}")
    if endpoint is None:
        endpoint = f"https://s3.{region}.amazonaws.com"
        # Virtual-hosted style is AWS's default; dotted names break its TLS wildcard.
        virtual = style == "virtual" or (style == "auto" and "." not in bucket)
    else:
        virtual = style == "virtual"  # custom endpoints (MinIO, moto, Ceph) expect path style
    cfg.update(endpoint=endpoint.rstrip("/"), region=region, virtual_host=virtual)
    if os.environ.get("AWS_CA_BUNDLE") and "ca_bundle" not in options:
        cfg["ca_bundle"] = os.environ["AWS_CA_BUNDLE"]
    return cfg


def _gcs_config(bucket: str, prefix: str, options: dict[str, Any]) -> dict[str, Any]:
    _check_keys(options, _GCS_KEYS, "gs")
    cfg: dict[str, Any] = {"kind": "gcs", "bucket": bucket, "prefix": prefix, "region": "auto",
                           "endpoint": (options.get("endpoint_url")
                                        or "https://storage.googleapis.com").rstrip("/")}
    if options.get("anon"):
        return cfg
    # Explicit options first, then the environment; a bearer token before HMAC keys.
    if options.get("token"):
        cfg["bearer_token"] = options["token"]
    elif options.get("key"):
        if not options.get("secret"):
            raise InvalidArgumentError("a GCS HMAC key id was given without its secret")
        cfg.update(access_key=options["key"], secret_key=options["secret"])
    elif os.environ.get("GCS_OAUTH_TOKEN"):
        cfg["bearer_token"] = os.environ["GCS_OAUTH_TOKEN"]
    elif os.environ.get("GCS_HMAC_KEY_ID"):
        if not os.environ.get("GCS_HMAC_SECRET"):
            raise InvalidArgumentError("GCS_HMAC_KEY_ID is set without GCS_HMAC_SECRET")
        cfg.update(access_key=os.environ["GCS_HMAC_KEY_ID"],
                   secret_key=os.environ["GCS_HMAC_SECRET"])
    return cfg


def remote_config(url: str, storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The core store configuration (JSON-able dict) for a remote URL."""
    options = dict(storage_options or {})
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("s3", "gs", "gcs"):
        bucket = parts.netloc
        if not bucket:
            raise InvalidArgumentError(f"'{url}' names no bucket")
        prefix = parts.path.strip("/")
        cfg = (_s3_config if scheme == "s3" else _gcs_config)(bucket, prefix, options)
        cfg["display"] = f"{scheme}://{bucket}" + (f"/{prefix}" if prefix else "")
    elif scheme in ("http", "https"):
        _check_keys(options, set(), scheme)
        if parts.query or parts.fragment:
            raise InvalidArgumentError(
                f"'{url}': query strings and fragments are not supported in store URLs")
        base = url.rstrip("/")
        cfg = {"kind": "http", "endpoint": base, "display": base}
    else:
        raise InvalidArgumentError(f"unsupported URL scheme '{scheme}://' in '{url}'")
    cfg.update(_transport(options))
    return cfg


def add_storage_arguments(parser: Any) -> None:
    """`--storage-option KEY=VALUE` (repeatable) and `--anon` for commands that read URLs."""
    parser.add_argument("--storage-option", "-S", action="append", default=[], metavar="KEY=VALUE",
                        help="remote store setting, e.g. endpoint_url=http://127.0.0.1:9000, "
                             "region=eu-west-1, profile=era5, max_in_flight=128 (repeatable)")
    parser.add_argument("--anon", action="store_true",
                        help="unsigned requests (public buckets), ignoring any credentials")


def storage_options_from(args: Any) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for item in getattr(args, "storage_option", None) or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(f"--storage-option wants KEY=VALUE, not {item!r}")
        kind = _TRANSPORT.get(key)
        out[key] = _truthy(value) if kind is bool else value
    if getattr(args, "anon", False):
        out["anon"] = True
    return out or None


def open_remote(url: str, storage_options: dict[str, Any] | None = None) -> Any:
    return _core.open_remote_store(json.dumps(remote_config(url, storage_options)))
