#!/usr/bin/env bash
# Runs on the GPU host (through the `device` tool) from the repository root, with .gpu/ built by
# scripts/build_gpu_bundle.sh carried along. Writes logs and results under $OUT (or ./gpu_out).
#   1. the C++ GoogleTest binaries;   2. the Python real-data tests;
#   3. benchmarks/bench_read.py on a 2 GB ERA5-like store per codec, all cores.
set -uo pipefail
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/.gpu/site" LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
{
  echo "== host"; date -u; nproc; free -g | head -2; nvidia-smi -L 2>/dev/null
  python3 -c "import platform, numpy; print(platform.python_version(), numpy.__version__)"
  df -h /tmp | tail -1
} 2>&1 | tee "$OUT/host.txt"
echo "== C++ tests" | tee "$OUT/tests.log"
for t in .gpu/bin/zarrflow_*_tests; do "$t" --gtest_brief=1 2>&1 | tail -3; done | tee -a "$OUT/tests.log"
echo "== Python real-data test" | tee -a "$OUT/tests.log"
python3 -m pytest -q -p no:cacheprovider tests/test_real_data.py 2>&1 | tail -3 | tee -a "$OUT/tests.log"
echo "== read benchmark"
python3 benchmarks/bench_read.py --size-gb "${BENCH_GB:-2}" --threads "$(nproc)" \
  --data /tmp/zarrflow_bench --out "$OUT" 2>"$OUT/bench_stderr.log" | tee "$OUT/bench.log"
