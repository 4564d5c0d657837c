#!/usr/bin/env bash
# The stage ceilings and the decode cost to a model, in one run on a GPU host (about 6 minutes on
# one H200 with 16 cores; the stores are written on the first run and reused):
#   1. benchmarks/bench_gpu.py, zarrflow-gpu only, raw / zstd-3 / blosc-lz4-shuffle /
#      sharded-zstd-3 (2 GB decoded each): per codec the staging rate of the stored bytes into
#      pinned memory, pinned H2D x ratio, the GPU decode stage and the warm end-to-end read, with
#      end to end / the smallest of them                        -> bench_ceilings.json, .md, .png
#      then the same reads again (host staging varies between rounds) -> bench_ceilings_run2.json
#   2. benchmarks/bench_loader.py --ceilings: the Loader (default and two workers) on the 6- and
#      71-channel stores next to the same ceilings of those stores -> bench_loader_ceilings.json, .md
#   3. benchmarks/bench_sm_cost.py: SM-seconds per decoded GB each GPU codec takes from a matmul
#      job beside the reads, and with host decoding              -> bench_sm_cost.json, .md, .png
# then prints the three tables. Needs zarrflow (with CUDA), torch, tensorstore, zarr 3 and
# numcodecs in $PYTHON (default python3); matplotlib for the plots (optional).
#
#   OUT=/path/to/results benchmarks/bench_ceilings.sh
#
# DATA (default /tmp/zarrflow_bench) holds the stores; CEILINGS_GB sets the size of step 1's and
# step 3's stores (default 2). Logs: $OUT/ceilings.log (everything) and one .log per step.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
OUT="${OUT:-$PWD/gpu_out}"
DATA="${DATA:-/tmp/zarrflow_bench}"
GB="${CEILINGS_GB:-2}"
mkdir -p "$OUT" "$DATA"
LOG="$OUT/ceilings.log"
export PYTHONUNBUFFERED=1

"$PY" - <<'EOF' 2>&1 | tee "$LOG" || exit 2
import importlib, sys
missing = []
for name in ("zarrflow", "torch", "tensorstore", "zarr", "numcodecs"):
    try:
        importlib.import_module(name)
    except ImportError as e:
        missing.append(f"{name} ({e})")
if missing:
    sys.exit("cannot run, not importable: " + "; ".join(missing))
import zarrflow, torch
if not zarrflow.cuda_available():
    sys.exit(f"zarrflow sees no usable GPU: {zarrflow.cuda_status()}")
print("zarrflow", zarrflow.__version__, "| nvCOMP:", zarrflow.nvcomp_status() or "loaded",
      "| torch", torch.__version__, "|", torch.cuda.get_device_name())
EOF
{
  echo "== host"; date -u; echo "cores: $(nproc)"; free -g | head -2
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current,clocks.max.sm \
    --format=csv 2>/dev/null
} 2>&1 | tee -a "$LOG"

step() {  # step NAME COMMAND...: runs it, its output in $OUT/NAME.log and the main log
  local name=$1 t0=$SECONDS; shift
  echo "== $name: $*" | tee -a "$LOG"
  "$@" 2>&1 | tee "$OUT/$name.log" | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$LOG"
}

for name in bench_ceilings bench_ceilings_run2; do
  step "${name#bench_}" "$PY" benchmarks/bench_gpu.py --name "$name" --readers zarrflow-gpu \
    --codecs raw,zstd-3,blosc-lz4-shuffle,sharded-zstd-3 --size-gb "$GB" --runs 5 --cold-runs 1 \
    --budget-s 150 --data "$DATA" --out "$OUT"
done
step loader_ceilings "$PY" benchmarks/bench_loader.py --ceilings --data "$DATA" --out "$OUT"
step sm_cost "$PY" benchmarks/bench_sm_cost.py --size-gb "$GB" --budget-s 200 --data "$DATA" \
  --out "$OUT"

{
  echo; echo "== summary ($(date -u))"
  "$PY" benchmarks/ceilings.py "$OUT/bench_ceilings.json" "$OUT/bench_ceilings_run2.json" \
    "$OUT/bench_loader_ceilings.json"
  echo "bench_sm_cost.md:"
  cat "$OUT/bench_sm_cost.md" 2>/dev/null || echo "not written (see $OUT/sm_cost.log)"
  echo "Results: $OUT (copy bench_ceilings.json, bench_ceilings_run2.json,"
  echo "bench_loader_ceilings.json, bench_sm_cost.json and"
  echo "the .png files into docs/results/, then run python benchmarks/make_performance_page.py)"
} 2>&1 | tee -a "$LOG"
