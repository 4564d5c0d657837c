"""Exceptions raised by zarrflow.

Every error subclasses :class:`ZarrflowError` and also the built-in exception a Python user would
expect, so ``except ValueError`` keeps working. Messages name the array path and, for chunk
problems, the chunk key, e.g. ``array 'era5/t2m': chunk 'c/12/0/0': zstd: frame truncated``.
"""


class ZarrflowError(Exception):
    """Base class of every zarrflow error."""


class InvalidArgumentError(ZarrflowError, ValueError):
    """The caller passed something unusable (wrong destination shape, bad step)."""


class MetadataError(ZarrflowError, ValueError):
    """zarr.json / .zarray / .zattrs / codec configuration is malformed or invalid."""


class UnsupportedError(ZarrflowError, NotImplementedError):
    """Valid Zarr that zarrflow cannot read (codec, data type, must-understand extension)."""


class CorruptChunkError(ZarrflowError, ValueError):
    """Stored bytes cannot be decoded, decode to the wrong size, or a shard index is invalid."""


class ChecksumError(CorruptChunkError):
    """A crc32c (or a codec's own) checksum does not match."""


class NodeNotFoundError(ZarrflowError, FileNotFoundError):
    """No Zarr array or group exists at the given path."""


class StoreIOError(ZarrflowError, OSError):
    """The operating system or a server reported an I/O error."""


class PathEscapeError(ZarrflowError, PermissionError):
    """A key or path would leave the store root ('..', absolute, symlink out of the root)."""


class ZarrflowIndexError(ZarrflowError, IndexError):
    """A region lies outside the array, or a size overflows 64 bits."""


class ZarrflowMemoryError(ZarrflowError, MemoryError):
    """Memory ran out while reading (the message names the array and chunk being read)."""


__all__ = [name for name in dir() if name.endswith("Error")]
