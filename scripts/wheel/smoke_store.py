"""Writes the wheel smoke test's store and expected values (run with zarr-python and numcodecs).

    python scripts/wheel/smoke_store.py DIR

DIR/store.zarr (Zarr v2) and DIR/v3.zarr get one array per codec a wheel links statically (Blosc
with each inner codec and shuffle, zstd, LZ4, gzip, zlib, bz2, lzma; v3 zstd + crc32c, sharding);
DIR/expected.npz the values, keyed "STORE__ARRAY".
"""

import sys
from pathlib import Path

import numpy as np
import zarr
from numcodecs import BZ2, LZMA, GZip, LZ4, Zlib, Zstd, Blosc


def main() -> None:
    out = Path(sys.argv[1])
    rng = np.random.default_rng(0)
    # Smooth fields with noise compress like weather data; 3 x 2 chunks, the last ones partial.
    base = np.cumsum(rng.normal(size=(50, 70)), axis=1).astype("float32")
    expected = {}
    root = zarr.open_group(out / "store.zarr", mode="w", zarr_format=2)
    v2 = {
        "blosc_lz4": Blosc("lz4", 5, Blosc.SHUFFLE),
        "blosc_zstd": Blosc("zstd", 3, Blosc.BITSHUFFLE),
        "blosc_zlib": Blosc("zlib", 4, Blosc.NOSHUFFLE),
        "blosc_blosclz": Blosc("blosclz", 5, Blosc.SHUFFLE),
        "zstd": Zstd(3),
        "lz4": LZ4(1),
        "gzip": GZip(5),
        "zlib": Zlib(5),
        "bz2": BZ2(5),
        "lzma": LZMA(),
    }
    for name, codec in v2.items():
        a = root.create_array(name, shape=base.shape, chunks=(20, 40), dtype="float32",
                              compressors=codec)
        a[...] = base
        expected[f"store.zarr/{name}"] = base
    v3 = zarr.open_group(out / "v3.zarr", mode="w", zarr_format=3)
    a = v3.create_array("zstd_crc32c", shape=base.shape, chunks=(20, 40), dtype="float32",
                        compressors=(zarr.codecs.ZstdCodec(level=3), zarr.codecs.Crc32cCodec()))
    a[...] = base
    expected["v3.zarr/zstd_crc32c"] = base
    a = v3.create_array("sharded", shape=base.shape, chunks=(10, 35), shards=(20, 70),
                        dtype="float32", compressors=zarr.codecs.ZstdCodec(level=1))
    a[...] = base
    expected["v3.zarr/sharded"] = base
    np.savez(out / "expected.npz", **{k.replace("/", "__"): v for k, v in expected.items()})


if __name__ == "__main__":
    main()
