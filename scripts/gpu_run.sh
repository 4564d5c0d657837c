#!/usr/bin/env bash
# Runs on the GPU host (through the `device` tool) from the repository root, with .gpu/ (built by
# scripts/build_gpu_bundle.sh) and .whl/ (peer wheels: zarr, numcodecs, nvidia-libnvcomp-cu13)
# carried along. Writes logs and results under $OUT (or ./gpu_out).
#   scripts/gpu_run.sh [test|bench|loader|rechunk|all]   (default all; `loader` = tests + loader
#          bench; `rechunk` = synth/rechunk tests + benchmarks/bench_rechunk.py on this host's cores;
#          `train` = examples/train_unet.py runs: synthetic, zarrflow GPU/CPU, baseline loaders)
#   test:  C++ tests (CPU + GPU), compute-sanitizer memcheck of the GPU tests, the Python GPU,
#          DLPack and conformance suites
#   bench: benchmarks/bench_read.py (CPU, 16 threads) and benchmarks/bench_gpu.py
set -uo pipefail
WHAT="${1:-all}"
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
SITE=/tmp/zarrflow_site
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl >/tmp/pip.log 2>&1 || { echo "wheel install failed:"; tail /tmp/pip.log; }
fi
export PYTHONPATH="$PWD/.gpu/site:$SITE" LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
NVCOMP=$(ls "$SITE"/nvidia/libnvcomp/lib64/libnvcomp.so.* 2>/dev/null | head -1)
[ -n "$NVCOMP" ] && export ZARRFLOW_NVCOMP_LIBRARY="$NVCOMP"
{
  echo "== host"; date -u; nproc; free -g | head -2; nvidia-smi -L 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv 2>/dev/null
  python3 -c "import platform, numpy; print(platform.python_version(), numpy.__version__)"
  python3 -c "import zarrflow; print('cuda:', repr(zarrflow.cuda_status()), 'nvcomp:', repr(zarrflow.nvcomp_status()))"
  ls /proc/driver/nvidia-fs 2>&1 | head -1; df -h /tmp | tail -1
} 2>&1 | tee "$OUT/tests.log"

if [ "$WHAT" = test ] || [ "$WHAT" = all ] || [ "$WHAT" = loader ]; then
  echo "== C++ tests" | tee -a "$OUT/tests.log"
  for t in .gpu/bin/zarrflow_*_tests; do echo "-- $t"; "$t" --gtest_brief=1 2>&1 | tail -4; done | tee -a "$OUT/tests.log"
  echo "== compute-sanitizer memcheck (GPU tests)" | tee -a "$OUT/tests.log"
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 .gpu/bin/zarrflow_gpu_tests \
    --gtest_brief=1 >/tmp/memcheck.log 2>&1; echo "memcheck rc=$?" | tee -a "$OUT/tests.log"
  grep -v "^Running main" /tmp/memcheck.log | tail -12 | tee -a "$OUT/tests.log"
  echo "== Python tests (GPU, DLPack, real data, conformance)" | tee -a "$OUT/tests.log"
  timeout 420 python3 -m pytest -q -p no:cacheprovider -rA --tb=short tests/test_gpu.py \
    tests/test_dlpack.py tests/test_real_data.py tests/test_loader.py tests/test_loader_gpu.py \
    tests/test_xarray_backend.py \
    >"$OUT/pytest.log" 2>&1
  grep -E "passed|failed|^FAILED|^ERROR|decoded without error" "$OUT/pytest.log" | tail -30 | tee -a "$OUT/tests.log"
fi
if [ "$WHAT" = loader ]; then
  echo "== loader benchmark"
  python3 benchmarks/bench_loader.py --data /tmp/zarrflow_bench --out "$OUT" \
    2>/tmp/bench_loader_stderr.log | tee -a "$OUT/tests.log"
  tail -5 /tmp/bench_loader_stderr.log
fi
if [ "$WHAT" = rechunk ]; then
  echo "== synth / rechunk tests and benchmark" | tee -a "$OUT/tests.log"
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_synth.py tests/test_rechunk.py \
    2>&1 | tail -3 | tee -a "$OUT/tests.log"
  python3 benchmarks/bench_rechunk.py --ntime "${RECHUNK_NTIME:-48}" --work /tmp/zarrflow_rechunk \
    --tag "gpuhost_$(nproc)c" --out "$OUT" 2>/tmp/bench_rechunk_stderr.log | tee -a "$OUT/tests.log"
  tail -3 /tmp/bench_rechunk_stderr.log
fi
if [ "$WHAT" = train ]; then
  echo "== U-Net training: synthetic vs zarrflow vs baseline (6 channels, 721x1440)" | tee -a "$OUT/tests.log"
  timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_loader_gpu.py 2>&1 | tail -2 | tee -a "$OUT/tests.log"
  python3 -m zarrflow synth /tmp/zf_train.zarr --layout wb2 --ntime "${TRAIN_NTIME:-160}" --quiet \
    2>&1 | tail -2 | tee -a "$OUT/tests.log"
  python3 examples/train_unet.py --store /tmp/zf_train.zarr --bf16 --channels-last \
    --epochs "${TRAIN_EPOCHS:-3}" --runs "${TRAIN_RUNS:-synthetic,zarrflow-gpu,zarrflow-cpu,baseline-tensorstore}" \
    --out "$OUT" 2>&1 | tee -a "$OUT/train.log"
  if [ "${TRAIN_LOADER_ONLY:-1}" = 1 ]; then
    python3 examples/train_unet.py --store /tmp/zf_train.zarr --bf16 --epochs 2 --no-train \
      --runs zarrflow-gpu,zarrflow-cpu,baseline-tensorstore,baseline-xarray --out "$OUT" 2>&1 | tee -a "$OUT/train.log"
  fi
fi
if [ "$WHAT" = bench ] || [ "$WHAT" = all ]; then
  echo "== GPU benchmark"
  python3 benchmarks/bench_gpu.py --size-gb "${BENCH_GB:-2}" --data /tmp/zarrflow_bench \
    --out "$OUT" 2>/tmp/bench_gpu_stderr.log | tee -a "$OUT/tests.log"
  tail -3 /tmp/bench_gpu_stderr.log
fi
