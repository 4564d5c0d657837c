"""The GPU decode stage of LZ4, blosclz, Blosc's un-shuffles and zstd, for comparing two builds
(or, for zstd, the two decoders).

One Zarr v2 store per codec, of the same ERA5-like float32 fields (bench_read.make_fields), one
field (721 x 1440, 4.15 MB) per chunk, written with numcodecs once and reused:
  lz4                    numcodecs LZ4: each chunk one LZ4 block, decoded by one warp
  blosc-lz4-shuffle      Blosc lz4, byte shuffle: many small LZ4 streams per chunk
  blosc-blosclz-shuffle  Blosc blosclz, byte shuffle
  blosc-lz4-bitshuffle   Blosc lz4, bit shuffle: against blosc-lz4-shuffle, the bit un-shuffle
  blosc-zstd-bitshuffle  Blosc zstd, bit shuffle (zstd blocks by nvCOMP where it is loaded)
  zstd-3                 numcodecs Zstd(level=3): each chunk one zstd frame, decoded by nvCOMP or
                         zarrflow's kernels as ZARRFLOW_GPU_ZSTD chooses (run once under each)
Each store is read whole with device="cuda", gpu_decode="on" (every chunk decoded on the GPU),
checked once against the CPU read, then read --runs times. Printed and written to --json per
codec: the median read GB/s and the median decode-stage GB/s (decoded bytes / the read report's
decode_ms, the GPU time of the decode kernels), decoded GB = 1e9 bytes. Run it with each build on
the same machine, one after the other, and compare the decode-stage figures.

    python3 benchmarks/bench_gpu_decode.py --fields 48 --runs 7 --json after.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_read as br  # noqa: E402

import zarrflow  # noqa: E402

CODECS = ("lz4", "blosc-lz4-shuffle", "blosc-blosclz-shuffle", "blosc-lz4-bitshuffle",
          "blosc-zstd-bitshuffle", "zstd-3")


def compressor(codec: str):
    import numcodecs

    if codec == "lz4":
        return numcodecs.LZ4()
    if codec == "zstd-3":
        return numcodecs.Zstd(level=3)
    _, cname, shuffle = codec.split("-")
    return numcodecs.Blosc(cname=cname, clevel=5, shuffle=numcodecs.Blosc.SHUFFLE
                           if shuffle == "shuffle" else numcodecs.Blosc.BITSHUFFLE)


def write_once(path: Path, codec: str, fields: int, data: dict) -> None:
    """The store at `path`, unless a complete one of `fields` fields is there already.
    `data` caches the fields for the next store."""
    done = path / ".complete"
    if done.exists() and done.read_text() == str(fields):
        return
    import zarr

    if "fields" not in data:
        data["fields"] = br.make_fields(fields)
    x = data["fields"]
    a = zarr.create_array(str(path), shape=x.shape, chunks=(1,) + x.shape[1:], dtype="float32",
                          compressors=compressor(codec), zarr_format=2, fill_value=0.0,
                          overwrite=True)
    for i in range(0, fields, 16):
        a[i:i + 16] = x[i:i + 16]
    done.write_text(str(fields))


def measure(path: Path, runs: int, torch) -> dict:
    arr = zarrflow.open_array(str(path))
    nbytes = int(np.prod(arr.shape)) * 4
    expect = arr.read()
    got = torch.from_dlpack(arr.read(device="cuda", gpu_decode="on")).cpu().numpy()
    if not np.array_equal(got.view(np.uint32), expect.view(np.uint32)):
        raise SystemExit(f"{path}: the GPU read differs from the CPU read")
    del got, expect
    walls, decode = [], []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        t = arr.read(device="cuda", gpu_decode="on")
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
        del t
        rep = arr.last_read_report
        if rep["cpu_decoded"]:
            raise SystemExit(f"{path}: {rep['cpu_decoded']} chunks decoded on the CPU: {rep['notes']}")
        decode.append(rep["decode_ms"] / 1e3)
    return {"decoded_bytes": nbytes, "chunks": int(arr.shape[0]),
            "read_GBps": nbytes / 1e9 / statistics.median(walls),
            "decode_stage_GBps": nbytes / 1e9 / statistics.median(decode),
            "read_s": walls, "decode_s": decode}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/zarrflow_bench_decode", help="where the stores are kept")
    ap.add_argument("--fields", type=int, default=48, help="fields (chunks) per store (default 48)")
    ap.add_argument("--runs", type=int, default=7, help="timed reads per store (default 7)")
    ap.add_argument("--codecs", default=",".join(CODECS), help="comma list (default all)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    codecs = [c for c in args.codecs.split(",") if c]
    bad = [c for c in codecs if c not in CODECS]
    if bad:
        ap.error(f"unknown codec {', '.join(bad)} (known: {', '.join(CODECS)})")
    data = Path(args.data)
    fields: dict = {}
    for codec in codecs:
        write_once(data / f"{codec}.zarr", codec, args.fields, fields)
    del fields
    if not zarrflow.cuda_available():
        print(f"stores written under {data}; no GPU to read them with: {zarrflow.cuda_status()}")
        return 1
    import torch

    results = {"gpu": torch.cuda.get_device_name(), "fields": args.fields, "runs": args.runs,
               "codecs": {}}
    for codec in codecs:
        r = measure(data / f"{codec}.zarr", args.runs, torch)
        results["codecs"][codec] = r
        print(f"{codec:<24} read {r['read_GBps']:7.2f} GB/s   decode stage "
              f"{r['decode_stage_GBps']:7.2f} GB/s   ({r['chunks']} chunks, "
              f"{r['decoded_bytes'] / 1e9:.2f} GB, median of {args.runs}, {results['gpu']})",
              flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
