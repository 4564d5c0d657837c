#!/usr/bin/env bash
# The Icechunk benchmark on a GPU host: a >= 2 GB repository written there by icechunk 2.x, read
# from local disk and from the loopback S3 endpoint by zarrflow (CPU, and into GPU memory) and by
# zarr-python + icechunk at the host's core count, plus the 1M-chunk open (bench_icechunk.py).
#
#   benchmarks/bench_icechunk_gpu.sh wheels    (on a machine with PyPI) fills .whl-bench/ with
#        the cp312 wheels the benchmark needs beyond .whl/ (zarr, numcodecs and their deps):
#        icechunk 2.x, repacked with LZMA (the same files, 11 MB instead of 17), PyYAML and
#        packaging. Carry .whl-bench/ instead of any other directory holding icechunk: pip
#        refuses two wheels of one version.
#   OUT=/path benchmarks/bench_icechunk_gpu.sh [bench_icechunk.py arguments]   (on the GPU host,
#        with .gpu/ and .whl/ as for scripts/gpu_run.sh) runs the benchmark; results in $OUT:
#        bench_icechunk.json, .md (.png when matplotlib is there), tests.log.
# ICECHUNK_GB sets the size (default 2.2 GB decoded), S3_PROCESSES the loopback S3 server's
# processes (default 4); the repositories go to /tmp/zarrflow_icechunk and are reused by a second
# run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [ "${1:-}" = wheels ]; then
  PY="${PYTHON:-python3}"
  rm -rf .whl-bench && mkdir -p .whl-bench
  "$PY" -m pip download -q -d .whl-bench --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 "icechunk>=2,<3" "pyyaml>=6" "packaging>=22"
  "$PY" - .whl-bench/icechunk-*.whl <<'EOF'
import os, sys, zipfile
src = sys.argv[1]
tmp = src + ".lzma"
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_LZMA) as zout:
    for info in zin.infolist():
        data = zin.read(info)
        copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
        copy.external_attr = info.external_attr
        zout.writestr(copy, data, compress_type=zipfile.ZIP_LZMA)
os.replace(tmp, src)
EOF
  du -ch .whl-bench/*.whl
  exit 0
fi

# pip refuses two wheels of one icechunk version, and scripts/gpu_run.sh installs every .whl-*/.
others=""
for w in .whl/icechunk-*.whl .whl-*/icechunk-*.whl; do
  [ -f "$w" ] && [ "${w#.whl-bench/}" = "$w" ] && others="$others $w"
done
if compgen -G ".whl-bench/icechunk-*.whl" >/dev/null && [ -n "$others" ]; then
  echo "icechunk wheels besides .whl-bench/: $others; carry only one" >&2
  exit 2
fi
OUT="${OUT:-$PWD/gpu_out}"
export OUT
mkdir -p "$OUT"
exec scripts/gpu_run.sh py benchmarks/bench_icechunk.py --gb "${ICECHUNK_GB:-2.2}" \
  --threads "$(nproc)" --repeat 3 --s3 --s3-processes "${S3_PROCESSES:-4}" --gpu \
  --work /tmp/zarrflow_icechunk --out "$OUT" "$@"
