"""The compression choices the writing tools (synth, rechunk) offer, as one short string.

``none``, ``zstd[:level]``, ``gzip[:level]`` or ``blosc-<cname>[:level]`` (Blosc with byte
shuffle). Each turns into the JSON both formats store: numcodecs' ``compressor`` object for Zarr
v2 and the ``codecs`` entries for Zarr v3, which zarr-python and tensorstore accept alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgumentError

BLOSC_CNAMES = ("lz4", "lz4hc", "blosclz", "zstd", "zlib")
DEFAULT_LEVEL = {"zstd": 3, "gzip": 6, "blosc": 5}


@dataclass(frozen=True)
class CodecChoice:
    kind: str  # "none", "zstd", "gzip", "blosc"
    cname: str | None = None
    level: int | None = None

    @classmethod
    def parse(cls, text: str, who: str = "codec") -> "CodecChoice":
        name, _, level_s = text.partition(":")
        try:
            level = int(level_s) if level_s else None
        except ValueError:
            raise InvalidArgumentError(
                f"{who}: codec level must be an integer in {text!r}") from None
        kind, _, cname = name.partition("-")
        if kind == "blosc":
            if cname not in BLOSC_CNAMES:
                raise InvalidArgumentError(f"{who}: unknown blosc compressor in {text!r} "
                                           f"(one of {', '.join(BLOSC_CNAMES)})")
        elif kind not in ("none", "zstd", "gzip") or cname:
            raise InvalidArgumentError(f"{who}: unknown codec {text!r}; use none, zstd[:level], "
                                       "gzip[:level] or blosc-<cname>[:level]")
        if kind == "none" and level is not None:
            raise InvalidArgumentError(f"{who}: codec 'none' takes no level ({text!r})")
        if level is not None and not (0 <= level <= (22 if kind == "zstd" else 9)):
            raise InvalidArgumentError(
                f"{who}: level {level} is out of range for {kind} ({text!r})")
        return cls(kind, cname or None, level if level is not None else DEFAULT_LEVEL.get(kind))

    def v2_compressor(self) -> dict | None:
        """numcodecs JSON (``.zarray`` ``compressor``)."""
        if self.kind == "none":
            return None
        if self.kind == "blosc":
            return {"id": "blosc", "cname": self.cname, "clevel": self.level, "shuffle": 1,
                    "blocksize": 0}
        return {"id": self.kind, "level": self.level}

    def v3_codecs(self, itemsize: int) -> list[dict]:
        """bytes→bytes codec entries of a v3 chain (after ``bytes``)."""
        if self.kind == "none":
            return []
        if self.kind == "blosc":
            return [{"name": "blosc", "configuration": {
                "cname": self.cname, "clevel": self.level, "shuffle": "shuffle",
                "typesize": itemsize, "blocksize": 0}}]
        if self.kind == "zstd":
            return [{"name": "zstd", "configuration": {"level": self.level, "checksum": False}}]
        return [{"name": "gzip", "configuration": {"level": self.level}}]

    def __str__(self) -> str:
        if self.kind == "none":
            return "none"
        return f"{self.kind}{'-' + self.cname if self.cname else ''}:{self.level}"
