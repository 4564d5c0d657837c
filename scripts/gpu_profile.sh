#!/usr/bin/env bash
# Runs on the GPU host (through the `device` tool): where the host time of GPU reads goes.
# Reads the probe_frames stores (written once under $DATA) with benchmarks/probe_frames.py, first
# plainly (per-batch host stage times in the JSON lines), then under py-spy (--native; the wheel
# comes in .whl-prof/) and perf where the image has it. Build the bundle with KEEP_SYMBOLS=1 so
# that native frames have names.
#   scripts/gpu_profile.sh [RUNS] [STORES]     (defaults: whole,cache1 and whole,rows;
#   SPY_STORES: the stores profiled, default STORES)
set -uo pipefail
OUT="${OUT:-$PWD/gpu_out}"; DATA="${DATA:-/tmp/zarrflow_bench}"
RUNS="${1:-whole,cache1}"; STORES="${2:-whole,rows}"
bash scripts/gpu_run.sh none >/dev/null 2>&1  # wheels, libraries, nvCOMP
export PYTHONPATH="$PWD/.gpu/site:/tmp/zarrflow_site" PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/tmp/zarrflow_libextra"
export ZARRFLOW_NVCOMP_LIBRARY=$(ls /tmp/zarrflow_nvcomp/libnvcomp.so.* /tmp/zarrflow_site/nvidia/libnvcomp/lib64/libnvcomp.so.* 2>/dev/null | head -1)
mkdir -p "$OUT"
python3 benchmarks/probe_frames.py --data "$DATA" --out "$OUT" --runs "$RUNS" --stores "$STORES" \
  2>&1 | tee "$OUT/probe.log"
SPY=/tmp/zarrflow_site/bin/py-spy
SPY_STORES="${SPY_STORES:-$STORES}"
for store in ${SPY_STORES//,/ }; do
  if [ -x "$SPY" ]; then
    "$SPY" record --native --rate 200 --format raw -o "$OUT/spy_${store}_cache1.txt" -- \
      python3 benchmarks/probe_frames.py --data "$DATA" --out "$OUT/spy" --runs cache1 \
      --stores "$store" --epochs 4 >"$OUT/spy_${store}.log" 2>&1
    echo "py-spy $store rc=$?"; tail -3 "$OUT/spy_${store}.log"
  fi
  if command -v perf >/dev/null; then
    perf record -F 499 -g -o /tmp/perf.data -- python3 benchmarks/probe_frames.py --data "$DATA" \
      --out "$OUT/perf" --runs cache1 --stores "$store" --epochs 4 >"$OUT/perf_${store}.log" 2>&1
    perf report -i /tmp/perf.data --stdio --no-children --percent-limit 0.5 \
      >"$OUT/perf_${store}.txt" 2>&1
    echo "perf $store rc=$?"
  fi
done
