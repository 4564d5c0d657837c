"""Does `zarrflow synth` data compress like real reanalysis data?

Takes real fields from ../shared/data/real (or --real DIR): ERA-Interim z/u/v at 200/500/850 hPa
(0.75°, 16-bit packed) and an ERA5 10 m wind-gust field (0.25°, 16-bit packed), unpacks them to
float32 as a training store holds them, and compresses each with the codecs the stores use
(Blosc-LZ4 byte shuffle as in WeatherBench2, zstd level 3 as in the stacked layout, Blosc-zstd).
The synthetic generator makes the same variable on the same grid; the table shows both ratios
(decoded bytes / compressed bytes). Needs scipy (netCDF-3 reader) and numcodecs.

    python benchmarks/compression_realism.py --out docs/results
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from zarrflow.tools.synthetic import FieldMaker  # noqa: E402

DEFAULT_REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"


def codecs():
    import numcodecs

    return {
        "blosc-lz4 shuffle": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        "zstd 3": numcodecs.Zstd(level=3),
        "blosc-zstd shuffle": numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.SHUFFLE),
    }


def real_fields(root: Path) -> list[tuple[str, str, int | None, np.ndarray]]:
    """(label, synthetic variable to compare with, level, float32 field)."""
    from scipy.io import netcdf_file

    def unpack(var) -> np.ndarray:
        x = var[...].astype(np.float64)
        return (x * getattr(var, "scale_factor", 1.0) + getattr(var, "add_offset", 0.0)).astype(np.float32)

    out = []
    nc = netcdf_file(root / "pydata_xarray-data" / "eraint_uvz.nc", "r", mmap=False)
    levels = list(nc.variables["level"][...])
    for short, name in (("z", "geopotential"), ("u", "u_component_of_wind"), ("v", "v_component_of_wind")):
        field = unpack(nc.variables[short])
        for lev in (500, 850):
            out.append((f"ERA-Interim {short}@{lev} 0.75°", name, lev, field[0, levels.index(lev)]))
    nc = netcdf_file(root / "ecmwf_metview-python" / "wgust_era5.nc", "r", mmap=False)
    out.append(("ERA5 i10fg 0.25°", "10m_u_component_of_wind", None, unpack(nc.variables["i10fg"])[0]))
    return out


def ratio(codec, field: np.ndarray) -> float:
    buf = np.ascontiguousarray(field)
    return buf.nbytes / len(codec.encode(buf))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", type=Path, default=DEFAULT_REAL)
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    args = ap.parse_args()
    cs = codecs()
    rows = []
    for label, name, lev, real in real_fields(args.real):
        synth = FieldMaker(name, *real.shape, seed=7, level=lev).at(0)
        row = {"field": label, "synthetic": name + (f"@{lev}" if lev else ""), "grid": list(real.shape)}
        for cname, c in cs.items():
            row[cname] = {"real": ratio(c, real), "synth": ratio(c, synth)}
        rows.append(row)
    lines = ["| real field | synthetic stand-in | " + " | ".join(f"{c} real / synth" for c in cs) + " |",
             "|---|---|" + "---:|" * len(cs)]
    for r in rows:
        lines.append(f"| {r['field']} | {r['synthetic']} | "
                     + " | ".join(f"{r[c]['real']:.2f} / {r[c]['synth']:.2f}" for c in cs) + " |")
    for c in cs:
        re_ = np.exp(np.mean([np.log(r[c]["real"]) for r in rows]))
        sy = np.exp(np.mean([np.log(r[c]["synth"]) for r in rows]))
        rows_note = f"geometric mean {c}: real {re_:.2f}, synthetic {sy:.2f}"
        lines.append("") if c == next(iter(cs)) else None
        lines.append(rows_note + "  ")
    table = "\n".join(lines)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compression_realism.json").write_text(json.dumps(rows, indent=2))
    (args.out / "compression_realism.md").write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
