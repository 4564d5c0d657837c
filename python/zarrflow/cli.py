"""The zarrflow command line: ``zarrflow inspect``, ``synth``, ``rechunk`` and ``bench``."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from . import bench, errors, rechunk, synth
from ._api import Array, Group, open as zf_open
from ._progress import human_bytes
from ._remote import add_storage_arguments, storage_options_from


def _shape(t: tuple | None) -> str:
    if t is None:
        return "—"
    return "(" + ", ".join(str(x) for x in t) + ("," if len(t) == 1 else "") + ")"


def _array_lines(arr: Array, deep: bool) -> list[str]:
    dims = "—" if arr.dims is None else "(" + ", ".join(d if d is not None else "·" for d in arr.dims) + ")"
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


def _walk(node: Array | Group, name: str, prefix: str, last: bool, out: TextIO, deep: bool,
          top: bool = False) -> None:
    branch = "" if top else ("└── " if last else "├── ")
    cont = "" if top else ("    " if last else "│   ")
    if isinstance(node, Array):
        out.write(f"{prefix}{branch}{name}  [array]\n")
        for line in _array_lines(node, deep):
            out.write(f"{prefix}{cont}    {line}\n")
        return
    tag = "group, consolidated" if node.consolidated else "group"
    out.write(f"{prefix}{branch}{name}  [{tag}, zarr v{node.zarr_format}]\n")
    attrs = node.attrs
    if attrs:
        keys = ", ".join(list(attrs)[:8]) + (" …" if len(attrs) > 8 else "")
        out.write(f"{prefix}{cont}    attrs: {keys}\n")
    names = node.keys()
    for i, key in enumerate(names):
        _walk(node[key], key, prefix + cont, i == len(names) - 1, out, deep)


def inspect(path: str, out: TextIO = sys.stdout, deep: bool = True,
            storage_options: dict | None = None) -> None:
    """Print the hierarchy at ``path`` like zarrdump."""
    node = zf_open(path, storage_options=storage_options)
    _walk(node, path, "", True, out, deep, top=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="zarrflow", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="print a store's arrays, codecs and stored sizes")
    p_inspect.add_argument("path")
    p_inspect.add_argument("--no-storage", action="store_true",
                           help="skip listing chunks (faster on huge stores)")
    add_storage_arguments(p_inspect)
    synth.add_parser(sub)
    rechunk.add_parser(sub)
    bench.add_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "inspect":
            inspect(args.path, deep=not args.no_storage,
                    storage_options=storage_options_from(args))
        elif args.command == "synth":
            synth.run(args)
        elif args.command == "rechunk":
            rechunk.run(args)
        elif args.command == "bench":
            bench.run(args)
    except errors.ZarrflowError as e:
        print(f"zarrflow: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `zarrflow inspect big.zarr | head`
        sys.stderr.close()
        return 0
    return 0
