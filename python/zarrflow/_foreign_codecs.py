"""Codecs without a native zarrflow decoder, decoded by numcodecs (the foreign-codec fallback).

zarrflow decodes the codecs zarr-python writes natively in C++. For any other codec name in a
store — ``numcodecs.pcodec`` (Earthmover's ERA5 Icechunk data), ``numcodecs.zfpy``, or any codec
id numcodecs knows — the C++ codec layer asks the binding (python/bindings/python_codec.cc), which
calls :func:`make_decoder` here once per array and the returned ``decode`` once per chunk, on
zarrflow's threads with the GIL held: chunks of a codec that releases the GIL while it decodes
are decoded in parallel, the others one at a time.

A codec whose package is missing raises :class:`CodecUnavailable` (an ``ImportError``): zarrflow
reports it as an UnsupportedError naming the codec and the ``pip install`` that provides it.
"""

from __future__ import annotations

import json

import numpy as np

# The pip package behind numcodecs codecs that need one besides numcodecs itself.
PACKAGES = {
    "pcodec": "pcodec",
    "zfpy": "zfpy",
    "crc32c": "google-crc32c",
    "msgpack2": "msgpack",
}


class CodecUnavailable(ImportError):
    """The Python package that implements a codec is not installed."""


def _numpy_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _get_codec(name: str, config: dict):
    try:
        import numcodecs
    except ImportError as e:
        raise CodecUnavailable(
            f"codec '{name}' needs the Python package 'numcodecs': pip install numcodecs"
        ) from e
    from numcodecs.errors import UnknownCodecError

    try:
        return numcodecs.get_codec(dict(config))
    except UnknownCodecError:  # not registered, or its package did not import
        codec_id = config["id"]
        package = PACKAGES.get(codec_id)
        if package is not None:
            raise CodecUnavailable(
                f"codec '{name}' needs the Python package '{package}': pip install {package}"
            ) from None
        raise CodecUnavailable(
            f"codec '{name}' is not supported: zarrflow has no native decoder and numcodecs "
            f"{numcodecs.__version__} has no codec '{codec_id}'"
        ) from None


def _as_buffer(out) -> object:
    """A C-contiguous buffer of the decoded bytes (bytes, or an ndarray of numbers)."""
    if isinstance(out, (bytes, bytearray)):
        return out
    a = np.asarray(out)
    if a.dtype.hasobject:
        raise TypeError("the codec returned Python objects, not numbers")
    return np.ascontiguousarray(a)


def make_decoder(name: str, config_json: str, kind: str, dtype: str, shape: tuple[int, ...]):
    """``(decode, description)`` for codec ``name`` with numcodecs configuration ``config_json``.

    ``kind`` is ``"bytes_to_bytes"`` (``decode(memoryview) -> bytes-like``) or ``"array_to_bytes"``
    (decodes a chunk of ``shape`` and ``dtype``: the result is its elements in C order, cast to
    ``dtype`` as zarr-python's assignment into the output array casts).
    """
    config = json.loads(config_json)
    codec = _get_codec(name, config)
    options = ", ".join(f"{k}={v!r}" for k, v in config.items() if k != "id")
    description = f"{name}({options}) [numcodecs]"
    if kind == "bytes_to_bytes":

        def decode(buf: memoryview):
            return _as_buffer(codec.decode(buf))

        return decode, description

    want = _numpy_dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))

    def decode_array(buf: memoryview):
        a = np.asarray(codec.decode(buf))
        if a.dtype.hasobject:
            raise TypeError("the codec returned Python objects, not numbers")
        if a.size != count:
            raise ValueError(
                f"decoded {a.size} elements, the chunk {tuple(shape)} has {count}"
            )
        if a.dtype != want:
            a = a.astype(want)
        return np.ascontiguousarray(a).reshape(-1)

    return decode_array, description
