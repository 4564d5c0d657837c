"""The zarrflow command line: ``zarrflow inspect``, ``synth``, ``rechunk``, ``bench`` and
``doctor``."""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from typing import TextIO

from .. import errors
from . import bench, doctor, rechunk, synth
from .._api import Array, Group, _store_and_path, open as zf_open
from ._progress import human_bytes
from .._remote import add_storage_arguments, is_remote, storage_options_from


def _shape(t: tuple | None) -> str:
    if t is None:
        return "—"
    return "(" + ", ".join(str(x) for x in t) + ("," if len(t) == 1 else "") + ")"


def _array_lines(arr: Array, deep: bool) -> list[str]:
    dims = ("—" if arr.dims is None
            else "(" + ", ".join(d if d is not None else "·" for d in arr.dims) + ")")
    lines = [
        f"shape {_shape(arr.shape)}  dtype {arr.dtype}  chunks {_shape(arr.chunks)}"
        f"  shards {_shape(arr.shards)}  dims {dims}",
        f"codecs: {arr.codecs_description}",
    ]
    if deep:
        try:
            info = arr.info()
        except errors.UnsupportedError as e:  # plain HTTP cannot list chunks
            lines.append(f"stored sizes unknown: {e}")
            deep = False
    if deep:
        stored = info["stored_bytes"]
        total = info["chunks_total"]
        present = info["chunks_present"]
        unit = "shards" if arr.shards else "chunks"
        # Decoded bytes of the chunks that exist (full-size, as stored), for a fair ratio.
        chunk_elems = 1
        for c in (arr.shards or arr.chunks):
            chunk_elems *= c
        decoded = present * chunk_elems * arr.dtype.itemsize
        ratio = f"{decoded / stored:.2f}x" if stored else "—"
        lines.append(
            f"stored {human_bytes(stored)} for {human_bytes(decoded)} decoded (ratio {ratio}); "
            f"{unit} {present}/{total} present, {total - present} missing"
        )
    fill = arr.fill_value
    lines.append(f"fill_value {fill}  zarr v{arr.zarr_format}")
    return lines


def _repository_line(store: object) -> str | None:
    """One line on the Icechunk snapshot a store reads, or None for other stores."""
    from .. import _core

    if not isinstance(store, _core.IcechunkStore):
        return None
    when = datetime.datetime.fromtimestamp(store.flushed_at_us / 1e6, tz=datetime.timezone.utc)
    return (f"icechunk repository (spec {store.spec_version}): {store.ref_kind} "
            f"{store.ref_name} → snapshot {store.snapshot_id} "
            f"({when:%Y-%m-%d %H:%M:%S} UTC, {store.message!r})")


class _Walk:
    """Prints a hierarchy and collects the members it could not read instead of stopping."""

    def __init__(self, out: TextIO, deep: bool, store: object = None):
        self.out = out
        self.deep = deep
        self.store = store  # an IcechunkStore: chunk reference counts per array
        self.failed: list[tuple[str, str]] = []  # (path, error)

    def node(self, node: Array | Group, name: str, prefix: str, last: bool,
             top: bool = False) -> None:
        branch = "" if top else ("└── " if last else "├── ")
        cont = "" if top else ("    " if last else "│   ")
        if isinstance(node, Array):
            try:
                lines = _array_lines(node, self.deep)
                if self.store is not None and self.deep:
                    c = self.store.chunk_counts(node.path)
                    lines.append(f"chunk references: {c['native']} native, {c['inline']} inline, "
                                 f"{c['virtual']} virtual")
            except errors.ZarrflowError as e:
                self.unreadable(node.path or name, name, prefix + branch, prefix + cont, e)
                return
            self.out.write(f"{prefix}{branch}{name}  [array]\n")
            for line in lines:
                self.out.write(f"{prefix}{cont}    {line}\n")
            return
        tag = "group, consolidated" if node.consolidated else "group"
        self.out.write(f"{prefix}{branch}{name}  [{tag}, zarr v{node.zarr_format}]\n")
        attrs = node.attrs
        if attrs:
            keys = ", ".join(list(attrs)[:8]) + (" …" if len(attrs) > 8 else "")
            self.out.write(f"{prefix}{cont}    attrs: {keys}\n")
        names = node.keys()
        for i, key in enumerate(names):
            last_child = i == len(names) - 1
            sub = prefix + cont
            try:
                child = node[key]
            except (errors.ZarrflowError, KeyError) as e:
                err = e.__cause__ if isinstance(e, KeyError) and e.__cause__ else e
                path = f"{node.path}/{key}" if node.path else key
                self.unreadable(path, key, sub + ("└── " if last_child else "├── "),
                                sub + ("    " if last_child else "│   "), err)
                continue
            self.node(child, key, sub, last_child)

    def unreadable(self, path: str, name: str, head: str, body: str, e: BaseException) -> None:
        message = f"{type(e).__name__}: {e}"
        self.out.write(f"{head}{name}  [unreadable]\n{body}    {message}\n")
        self.failed.append((path, message))


def inspect(path: str, out: TextIO | None = None, deep: bool = True,
            storage_options: dict | None = None, ref: str | None = None,
            virtual_chunk_containers: object = None) -> list[tuple[str, str]]:
    """Print the hierarchy at ``path``, as ``zarrflow inspect`` does.

    Per array: shape, dtype, chunks, shards, dimension names, codecs, fill value and stored
    size. A member that cannot be read is marked on its line, with the reason, and the walk
    goes on. For an Icechunk repository the first line names the ref, the snapshot id and its
    commit, and each array counts its native, inline and virtual chunks.

    Parameters
    ----------
    path : str
        The store, group or array: a local path or a URL.
    out : file, optional
        Where to print (default: standard output).
    deep : bool, default True
        List each array's stored chunks and bytes (False is faster on huge stores).
    storage_options : dict, optional
        As for :func:`zarrflow.open`.
    ref : str, optional
        Icechunk repositories: the branch, tag or snapshot id.
    virtual_chunk_containers : dict or list of str, optional
        As for :func:`zarrflow.open`.

    Returns
    -------
    list of (str, str)
        The members that could not be read: (path, error) pairs.
    """
    out = out or sys.stdout  # looked up per call: sys.stdout may be replaced after import
    node = zf_open(path, storage_options=storage_options, ref=ref,
                   virtual_chunk_containers=virtual_chunk_containers)
    store = None
    if ref is not None or not is_remote(path) or virtual_chunk_containers:
        store = _store_and_path(path, storage_options, ref=ref,
                                virtual_chunk_containers=virtual_chunk_containers)[0]
    line = _repository_line(store) if store is not None else None
    if line:
        out.write(line + "\n")
    walk = _Walk(out, deep, store if line else None)
    walk.node(node, path, "", True, top=True)
    return walk.failed


_RST = [(re.compile(r"``([^`]+)``"), r"\1"),                   # ``literal``
        (re.compile(r":[a-z]+:`~?([^`]+)`"), r"\1"),           # :class:`x`
        (re.compile(r"(?<![\w*])\*(\w[^*\n]*?)\*(?![\w*])"), r"\1")]  # *emphasis*


def _plain(text: str | None) -> str | None:
    """Help text without the reStructuredText markup of docstrings."""
    if not text:
        return text
    for pattern, repl in _RST:
        text = pattern.sub(repl, text)
    return text


def _plain_help(parser: argparse.ArgumentParser) -> None:
    parser.description = _plain(parser.description)
    parser.epilog = _plain(parser.epilog)
    for action in parser._actions:
        if isinstance(action.help, str):
            action.help = _plain(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = _plain(choice.help)
            for sub in action.choices.values():
                _plain_help(sub)


def version_text() -> str:
    """``zarrflow --version``: the version, the build (distribution or 'source') and its CUDA."""
    from .. import __version__, _core, _gpu

    runtime = _core.cuda_build_info().get("runtime", 0)
    cuda = f"CUDA {runtime // 1000}.{runtime % 1000 // 10}" if runtime else "no CUDA"
    return f"zarrflow {__version__} ({_gpu._this_distribution() or 'source'}, {cuda})"


def main(argv: list[str] | None = None) -> int:
    """Run the ``zarrflow`` command line (the ``zarrflow`` script and ``python -m zarrflow``).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after the program name. Default: ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0, or 1 when a zarrflow error was reported (or ``inspect`` found
        members it could not read).
    """
    parser = argparse.ArgumentParser(
        prog="zarrflow",
        description="Inspect, synthesise, rechunk and benchmark Zarr stores with zarrflow; "
                    "`zarrflow doctor` says what this installation can use.")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser(
        "inspect", help="print a store's arrays, codecs and stored sizes",
        description="Print the groups and arrays of a Zarr store (v2 or v3): per array its "
                    "shape, dtype, chunks, shards, dimension names, codecs, fill value and "
                    "stored size. An array that cannot be read is marked with the reason and "
                    "the listing goes on; the exit status is then 1.")
    p_inspect.add_argument("path", help="store, group or array: a local path or a URL "
                                        "(file://, s3://, gs://, http(s)://)")
    p_inspect.add_argument("--no-storage", action="store_true",
                           help="skip listing chunks (faster on huge stores)")
    p_inspect.add_argument("--ref", help="Icechunk repositories: branch, tag or snapshot id "
                                         "(default: main)")
    p_inspect.add_argument("--virtual-container", action="append", default=[], metavar="PREFIX",
                           help="authorise virtual chunks under this URL prefix (repeatable)")
    add_storage_arguments(p_inspect)
    synth.add_parser(sub)
    rechunk.add_parser(sub)
    bench.add_parser(sub)
    doctor.add_parser(sub)
    _plain_help(parser)
    args = parser.parse_args(argv)
    try:
        if args.command == "inspect":
            failed = inspect(args.path, deep=not args.no_storage,
                             storage_options=storage_options_from(args), ref=args.ref,
                             virtual_chunk_containers=args.virtual_container or None)
            if failed:
                names = ", ".join(p for p, _ in failed[:10]) + (" …" if len(failed) > 10 else "")
                print(f"zarrflow: {len(failed)} member(s) could not be read: {names}",
                      file=sys.stderr)
                return 1
        elif args.command == "synth":
            synth.run(args)
        elif args.command == "rechunk":
            rechunk.run(args)
        elif args.command == "bench":
            bench.run(args)
        elif args.command == "doctor":
            doctor.run(args)
    except errors.ZarrflowError as e:
        print(f"zarrflow: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `zarrflow inspect big.zarr | head`
        sys.stderr.close()
        return 0
    return 0
