"""Icechunk repositories (spec versions 1 and 2), read by zarrflow's own C++ reader.

``zarrflow.open(path_or_url, ref="main")`` opens one snapshot of a repository: ``ref`` is a
branch, else a tag, else a snapshot id. A repository is recognised by its layout — a ``repo``
file (spec 2) or ``refs/branch.main/ref.json`` (spec 1) — so the URL a user gives icechunk's
own storage functions opens here unchanged, with no extra scheme to learn; the store it yields is
a plain Zarr v3 store to every layer above (arrays, the Loader, the xarray engine).

Virtual chunks are read only from the containers the user authorises, as in icechunk
(``authorize_virtual_chunk_access``): ``virtual_chunk_containers={"s3://bucket/nc/":
{"anon": True}, "file:///data/nc/": None}``. Each key is a URL prefix; its value the storage
options (credentials, region, endpoint, ...) for that container, on top of the settings the
repository's configuration gives it (region, endpoint, anonymous access).
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from . import _core
from ._remote import is_remote, open_remote
from ._virtual import build_containers, normalize_prefix
from .errors import CorruptChunkError, MetadataError, UnsupportedError


def local_repository(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "repo")) or \
        os.path.isfile(os.path.join(path, "refs", "branch.main", "ref.json"))


def _store_options(kind: str, settings: Any) -> dict[str, Any]:
    """zarrflow storage options for an icechunk object-store configuration."""
    if not isinstance(settings, Mapping):
        return {}
    kind = kind.lower().replace("_", "").replace("-", "")
    out: dict[str, Any] = {}
    if kind in ("s3", "s3compatible", "tigris"):
        if settings.get("region"):
            out["region"] = settings["region"]
        if settings.get("endpoint_url"):
            out["endpoint_url"] = settings["endpoint_url"]
        if settings.get("anonymous"):
            out["anon"] = True
        if settings.get("force_path_style"):
            out["addressing_style"] = "path"
    return out


def _yaml_containers(text: bytes) -> dict[str, dict[str, Any]]:
    """Container defaults from a spec-1 config.yaml (tags such as ``!s3_compatible`` name the
    kind of store)."""
    try:
        import yaml
    except ImportError:
        raise UnsupportedError("reading a spec-1 Icechunk configuration needs PyYAML: "
                               "pip install pyyaml") from None

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser when built
        pass

    def tagged(loader: Any, suffix: str, node: Any) -> dict:
        if isinstance(node, yaml.MappingNode):
            value = loader.construct_mapping(node, deep=True)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_scalar(node)
        return {"__kind__": suffix, "value": value}

    Loader.add_multi_constructor("!", tagged)
    try:
        doc = yaml.load(text, Loader=Loader) or {}
    except yaml.YAMLError as e:
        raise MetadataError(f"config.yaml: {e}") from None
    out = {}
    for prefix, container in (doc.get("virtual_chunk_containers") or {}).items():
        store = (container or {}).get("store") or {}
        if isinstance(store, Mapping) and "__kind__" in store:
            out[normalize_prefix(container.get("url_prefix") or prefix)] = \
                _store_options(store["__kind__"], store["value"])
    return out


def _json_containers(config: Any) -> dict[str, dict[str, Any]]:
    """Container defaults from a spec-2 repository configuration (the repo info's config)."""
    out: dict[str, dict[str, Any]] = {}
    containers = (config.get("virtual_chunk_containers") if isinstance(config, Mapping)
                  else None)
    if isinstance(containers, Mapping):
        containers = list(containers.values())
    for container in containers or []:
        if not isinstance(container, Mapping) or not container.get("url_prefix"):
            continue
        store = container.get("store")
        options: dict[str, Any] = {}
        if isinstance(store, Mapping) and len(store) == 1:
            (kind, settings), = store.items()
            options = _store_options(kind, settings)
        out[normalize_prefix(container["url_prefix"])] = options
    return out


#: The ``open(limits=...)`` entries that bound a repository's metadata files: snapshots, the repo
#: info file and config.yaml (``max_metadata_bytes``), manifests (``max_manifest_bytes``).
LIMITS = ("max_metadata_bytes", "max_manifest_bytes")
_DEFAULT_METADATA_BYTES = 64 << 20


def container_defaults(repo: Any, storage: Any,
                       max_bytes: int = _DEFAULT_METADATA_BYTES) -> dict[str, dict[str, Any]]:
    if repo.spec_version >= 2:
        return _json_containers(json.loads(repo.config_json))
    try:
        text = storage.get("config.yaml", max_size=max_bytes)
    except CorruptChunkError as e:
        raise CorruptChunkError(f"{e} (the max_metadata_bytes limit)") from None
    return _yaml_containers(text) if text else {}


def open_repository(path: str, storage: Any, ref: str | None,
                    virtual_chunk_containers: Mapping[str, Any],
                    limits: Mapping[str, int] | None = None) -> Any:
    """The IcechunkStore of snapshot ``ref`` (default: branch main) of the repository in
    ``storage``; raises NodeNotFoundError when ``storage`` holds no repository. ``limits``: the
    entries of ``LIMITS`` given to ``open``."""
    caps = {k: v for k, v in (limits or {}).items() if k in LIMITS}
    repo = _core.open_icechunk_repository(storage, **caps)
    max_bytes = caps.get("max_metadata_bytes", _DEFAULT_METADATA_BYTES)
    # Only object-store containers take settings from the configuration (a region, an endpoint,
    # anonymous access); with local ones alone it is not read (nor, for spec 1, PyYAML imported).
    remote = any(is_remote(normalize_prefix(p)) for p in virtual_chunk_containers)
    defaults = container_defaults(repo, storage, max_bytes) if remote else {}
    containers = build_containers(virtual_chunk_containers, defaults)
    display = path if is_remote(path) else os.path.abspath(path)
    return _core.open_icechunk_store(repo, ref or "main", containers, f"icechunk:{display}")


def open_remote_repository(url: str, storage_options: Mapping[str, Any] | None, ref: str | None,
                           virtual_chunk_containers: Mapping[str, Any],
                           limits: Mapping[str, int] | None = None) -> Any:
    return open_repository(url, open_remote(url, storage_options), ref, virtual_chunk_containers,
                           limits)
