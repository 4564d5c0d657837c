"""Virtual chunk containers: where virtual chunk references may be read from, and with what.

A container is a URL prefix ending in ``/`` (``file:///data/nc/``, ``s3://bucket/era5/``,
``gs://bucket/x/``, ``https://host/files/``) and the store its locations are read through, built
from that container's own storage options (credentials, region, endpoint, ...: the options
:func:`zarrflow.open` takes for such a URL). A virtual chunk whose location is under no authorised
container is an error naming the chunk and the location; nothing is fetched from anywhere the
user did not name.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping
from urllib.parse import unquote, urlsplit

from . import _core
from ._remote import open_remote
from .errors import InvalidArgumentError, NodeNotFoundError

_SCHEMES = ("file", "s3", "gs", "gcs", "http", "https")


def normalize_prefix(prefix: str) -> str:
    """``/data/nc`` → ``file:///data/nc/``; every prefix ends in ``/``."""
    if not isinstance(prefix, str) or not prefix:
        raise InvalidArgumentError(
            f"a virtual chunk container prefix must be a URL, not {prefix!r}")
    if prefix.startswith("/"):
        prefix = "file://" + prefix
    scheme = prefix.split("://", 1)[0].lower() if "://" in prefix else ""
    if scheme not in _SCHEMES:
        raise InvalidArgumentError(f"virtual chunk container '{prefix}': the URL prefix must start "
                                   f"with file://, s3://, gs://, http:// or https://")
    if scheme == "gcs":
        prefix = "gs://" + prefix.split("://", 1)[1]
    return prefix if prefix.endswith("/") else prefix + "/"


def open_container_store(prefix: str, options: Mapping[str, Any] | None) -> Any:
    """The store reading keys below ``prefix`` with ``options`` (storage options)."""
    options = dict(options or {})
    if prefix.startswith("file://"):
        if options:
            raise InvalidArgumentError(
                f"virtual chunk container '{prefix}': local directories take no storage options "
                f"(got {', '.join(sorted(options))})")
        root = unquote(urlsplit(prefix).path)
        if not os.path.isdir(root):
            raise NodeNotFoundError(f"virtual chunk container '{prefix}': no directory {root}")
        return _core.open_file_store(root)
    return open_remote(prefix.rstrip("/"), options)


def build_containers(authorised: Mapping[str, Mapping[str, Any] | None] | None,
                     defaults: Mapping[str, Mapping[str, Any]] | None = None) -> list:
    """(prefix, store) pairs for the core: one per authorised prefix, with the container's own
    default settings (``defaults[prefix]``, from a repository's configuration) under the options
    the user gave (the user's win)."""
    out = []
    for prefix, options in (authorised or {}).items():
        p = normalize_prefix(prefix)
        merged = dict((defaults or {}).get(p, {}))
        merged.update(options or {})
        out.append((p, open_container_store(p, merged)))
    return out


def check_containers_argument(value: Any) -> dict:
    if value is None:
        return {}
    if isinstance(value, (list, tuple, set)):
        return {p: None for p in value}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(
            "virtual_chunk_containers is a dict {url_prefix: storage_options} or a list of URL "
            "prefixes")
    return dict(value)


def prefixes_of(urls: Iterable[str], protocol: str) -> list[str]:
    """The containers that hold ``urls`` of ``protocol``: a bucket (s3, gs), a host (http) or
    a directory (local files)."""
    protocol = "gs" if protocol == "gcs" else protocol
    out: set[str] = set()
    for url in urls:
        if url.startswith("/"):
            url = "file://" + url
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        scheme = "gs" if scheme == "gcs" else scheme
        if scheme != protocol:
            continue
        parts = urlsplit(url)
        if scheme == "file":
            out.add("file://" + os.path.dirname(parts.path).rstrip("/") + "/")
        elif parts.netloc:
            out.add(f"{scheme}://{parts.netloc}/")
    return sorted(out)
