#!/usr/bin/env bash
# Runs on a GPU host from the repository root. Writes logs and results under $OUT (or ./gpu_out).
# zarrflow comes from the CUDA wheel (scripts/build_wheels.sh cu13; ZARRFLOW_WHEEL names one, by
# default the release build in dist/), installed offline into a virtual environment that also sees
# the host's packages (torch, cupy), with the peer wheels of .whl/ (zarr, numcodecs,
# nvidia-libnvcomp-cu13) and .whl-*/; without a wheel, from a development build in .gpu/site
# (scripts/build_gpu_bundle.sh, which also builds the C++ test binaries .gpu/bin that `test` runs).
#   scripts/gpu_run.sh py SCRIPT [ARGS...]   runs one Python program with the same set-up
#   scripts/gpu_run.sh [test|quicktest|bench|loader|rechunk|train|all]   (default all; `loader` =
#          the loader benchmark; `rechunk` = synth/rechunk tests + benchmarks/bench_rechunk.py on
#          this host's cores; `train` = benchmarks/train_bench.py runs: synthetic, zarrflow GPU/CPU,
#          baseline loaders; TRAIN_PLAN names a file of runs, one per line:
#          CHANNELS LAYOUT NGPU NTIME CODEC TAG [train_bench.py arguments...]; CODEC '-' = default)
#   test:  C++ tests (CPU + GPU), compute-sanitizer memcheck of the GPU tests, the Python GPU,
#          DLPack and conformance suites, and the documentation's GPU and torch examples
#   bench: benchmarks/bench_read.py (CPU, 16 threads) and benchmarks/bench_gpu.py
set -uo pipefail
WHAT="${1:-all}"
# WHAT may list several modes: test,bench
want() { [ "$WHAT" = all ] && [ "$1" != train ] && [ "$1" != loader ] && [ "$1" != rechunk ] && return 0; [[ ",$WHAT," == *",$1,"* ]]; }
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
SITE=/tmp/zarrflow_site
# Wheels: .whl/ (common) and .whl-*/ (per job: .whl-bench peers, .whl-train torchvision).
WHEELS=$(ls .whl/*.whl .whl-*/*.whl 2>/dev/null | grep -v '/zarrflow')
ZARRFLOW_WHEEL="${ZARRFLOW_WHEEL:-$(ls -t dist/zarrflow_cu13-*.whl dist/zarrflow_cu12-*.whl 2>/dev/null \
  | grep -v -- '+' | head -1)}"
if [ -n "$ZARRFLOW_WHEEL" ]; then
  # A fresh environment per wheel; the host's site directories through a .pth file, since the
  # host's Python may itself be a virtual environment (--system-site-packages would skip it).
  VENV=/tmp/zarrflow_venv
  if [ "$(cat "$VENV/.wheel" 2>/dev/null)" != "$(ls -l "$ZARRFLOW_WHEEL")" ]; then
    rm -rf "$VENV" && python3 -m venv --system-site-packages "$VENV"
    python3 -c 'import site, sys; print("\n".join(p for p in sys.path if "-packages" in p))' \
      >"$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_host.pth"
    find_links=$(for d in .whl .whl-*; do [ -d "$d" ] && printf -- '--find-links %s ' "$d"; done)
    # shellcheck disable=SC2086  # lists
    { "$VENV/bin/python" -m pip install -q --no-index $find_links --no-cache-dir \
        "$ZARRFLOW_WHEEL[nvcomp]" &&
      { [ -z "$WHEELS" ] || "$VENV/bin/python" -m pip install -q --no-index --no-deps \
          --no-cache-dir $WHEELS; } && ls -l "$ZARRFLOW_WHEEL" >"$VENV/.wheel"; } >/tmp/pip.log 2>&1 \
      || { echo "installing $ZARRFLOW_WHEEL failed:"; tail /tmp/pip.log; exit 1; }
  fi
  export PATH="$VENV/bin:$PATH"  # python3 is the environment's from here on
elif [ -n "$WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" $WHEELS >/tmp/pip.log 2>&1 || { echo "wheel install failed:"; tail /tmp/pip.log; }
fi
# Shared libraries zarrflow links that this image may lack (libcurl and its dependencies):
# linked in one by one, only where the image has none of its own.
EXTRA=/tmp/zarrflow_libextra
mkdir -p "$EXTRA" /tmp/zarrflow_libopt
if [ -f .gpu/libopt.tar.xz ]; then
  tar -C /tmp/zarrflow_libopt -xJf .gpu/libopt.tar.xz
  for f in /tmp/zarrflow_libopt/*.so*; do
    ldconfig -p | grep -q " $(basename "$f") " || ln -sf "$f" "$EXTRA/"
  done
fi
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}:$EXTRA"  # the C++ test binaries
[ -n "$ZARRFLOW_WHEEL" ] || export PYTHONPATH="$PWD/.gpu/site:$SITE"
export PYTHONUNBUFFERED=1
NVCOMP=$(ls "$SITE"/nvidia/libnvcomp/lib64/libnvcomp.so.* \
  "${VENV:-/nonexistent}"/lib/python3*/site-packages/nvidia/libnvcomp/lib64/libnvcomp.so.* 2>/dev/null | head -1)
if [ -z "$NVCOMP" ] && [ -f .gpu/libnvcomp.so.xz ]; then
  NVCOMP=/tmp/zarrflow_nvcomp/libnvcomp.so.6
  mkdir -p /tmp/zarrflow_nvcomp && xz -dc .gpu/libnvcomp.so.xz > "$NVCOMP" 2>/dev/null \
    || python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
       .gpu/libnvcomp.so.xz "$NVCOMP"
fi
[ -n "$NVCOMP" ] && export ZARRFLOW_NVCOMP_LIBRARY="$NVCOMP"
{
  echo "== host"; date -u; nproc; free -g | head -2; nvidia-smi -L 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv 2>/dev/null
  python3 -c "import platform, numpy; print(platform.python_version(), numpy.__version__)"
  python3 -c "import zarrflow; print('zarrflow', zarrflow.build_info().get('distribution', ''), 'from', zarrflow.__file__); print('cuda:', repr(zarrflow.cuda_status()), 'nvcomp:', repr(zarrflow.nvcomp_status()))"
  ls /proc/driver/nvidia-fs 2>&1 | head -1; df -h /tmp | tail -1
  echo "libraries linked in from the bundle: $(ls "$EXTRA" | tr '\n' ' ')"
} 2>&1 | tee -a "$OUT/tests.log"

if [ "$WHAT" = py ]; then  # scripts/gpu_run.sh py SCRIPT ARGS...: one Python program, same set-up
  shift
  python3 "$@" 2>&1 | tee -a "$OUT/tests.log"
  exit "${PIPESTATUS[0]}"
fi
if want test; then
  echo "== C++ tests" | tee -a "$OUT/tests.log"
  for t in .gpu/bin/zarrflow_*_tests; do echo "-- $t"; "$t" --gtest_brief=1 2>&1 | tail -4; done | tee -a "$OUT/tests.log"
  if [ "${SKIP_MEMCHECK:-0}" != 1 ]; then
  echo "== compute-sanitizer memcheck (GPU tests)" | tee -a "$OUT/tests.log"
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 .gpu/bin/zarrflow_gpu_tests \
    --gtest_brief=1 >/tmp/memcheck.log 2>&1; echo "memcheck rc=$?" | tee -a "$OUT/tests.log"
  grep -v "^Running main" /tmp/memcheck.log | tail -12 | tee -a "$OUT/tests.log"
  fi
  echo "== Python tests (GPU, DLPack, real data, conformance)" | tee -a "$OUT/tests.log"
  timeout 420 python3 -m pytest -q -p no:cacheprovider -rA --tb=short tests/test_gpu.py \
    tests/test_dlpack.py tests/test_real_data.py tests/test_loader.py tests/test_loader_gpu.py \
    tests/test_xarray_backend.py tests/test_remote.py tests/test_remote_gpu.py \
    tests/test_bench_cli.py tests/test_docs_examples.py >"$OUT/pytest.log" 2>&1
  grep -E "passed|failed|^FAILED|^ERROR|decoded without error" "$OUT/pytest.log" | tail -30 | tee -a "$OUT/tests.log"
fi
if want quicktest; then  # the GPU suites (C++ under memcheck unless SKIP_MEMCHECK=1), no CPU conformance
  echo "== GPU tests (quick)" | tee -a "$OUT/tests.log"
  .gpu/bin/zarrflow_gpu_tests --gtest_brief=1 >/tmp/gpu_tests.log 2>&1
  grep -E -A12 "Failure|FAILED  \]" /tmp/gpu_tests.log | head -60 | tee -a "$OUT/tests.log"
  tail -2 /tmp/gpu_tests.log | tee -a "$OUT/tests.log"
  if [ "${SKIP_MEMCHECK:-0}" != 1 ]; then
    timeout 240 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
      .gpu/bin/zarrflow_gpu_tests --gtest_brief=1 >/tmp/memcheck.log 2>&1
    echo "memcheck rc=$?" | tee -a "$OUT/tests.log"; tail -4 /tmp/memcheck.log | tee -a "$OUT/tests.log"
  fi
  timeout 360 python3 -m pytest -q -p no:cacheprovider --tb=short tests/test_gpu.py tests/test_loader_gpu.py \
    tests/test_loader.py tests/test_batch_engine.py tests/test_balance.py tests/test_remote_gpu.py \
    tests/test_dlpack.py tests/test_bench_cli.py >"$OUT/pytest.log" 2>&1
  grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest.log" | tail -12 | tee -a "$OUT/tests.log"
fi
if want loader; then
  echo "== loader benchmark"
  python3 benchmarks/bench_loader.py --data /tmp/zarrflow_bench --out "$OUT" ${LOADER_ARGS:-} \
    2>"$OUT/bench_loader_stderr.log" | tee -a "$OUT/tests.log"
  tail -5 "$OUT/bench_loader_stderr.log"
fi
if want rechunk; then
  echo "== synth / rechunk tests and benchmark" | tee -a "$OUT/tests.log"
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_synth.py tests/test_rechunk.py \
    2>&1 | tail -3 | tee -a "$OUT/tests.log"
  python3 benchmarks/bench_rechunk.py --ntime "${RECHUNK_NTIME:-48}" --work /tmp/zarrflow_rechunk \
    --tag "gpuhost_$(nproc)c" --out "$OUT" 2>/tmp/bench_rechunk_stderr.log | tee -a "$OUT/tests.log"
  tail -3 /tmp/bench_rechunk_stderr.log
fi
if want train; then
  # One training process: CHANNELS LAYOUT NGPU NTIME CODEC TAG [train_bench.py arguments...]
  # (6 channels: WeatherBench2-style v2 store; 71: the stacked v3 store of 71 channels; LAYOUT
  # pool: the loader benchmark's 71-channel store; CODEC '-' = synth's default). The store is
  # synthesised once per (channels, layout, steps, codec); NGPU > 1 runs DDP through torchrun.
  # Sets STORE and CHARG (used by the loader-only run below).
  train_line() {
    local CH=$1 LAYOUT=$2 NGPU=$3 NT=$4 CODEC=$5 TAG=$6; shift 6
    local CARG="" LAUNCH="python3" ROWS="" t0
    [ "$CODEC" != - ] && CARG="--codec $CODEC"
    # LAYOUT+rowsN: the store rechunked (zarrflow rechunk) into one shard per 721x1440 field with
    # inner chunks of N rows, i.e. zstd frames of N rows.
    if [[ "$LAYOUT" == *+rows* ]]; then ROWS=${LAYOUT#*+rows}; LAYOUT=${LAYOUT%%+rows*}; fi
    STORE=/tmp/zf_train_${CH}_${LAYOUT}_${NT}_${CODEC//[:]/-}.zarr
    if [ "$LAYOUT" = pool ]; then
      # bench_loader's 71-channel zstd store (tensorstore writes it in ~1 min at 160 steps, synth
      # takes ~5 min at 80), written once.
      # CODEC none: the same fields uncompressed.
      local LEVEL=3
      STORE=/tmp/zarrflow_bench/stack71_${NT}.zarr
      [ "$CODEC" = none ] && LEVEL=None && STORE=/tmp/zarrflow_bench/stack71_${NT}_none.zarr
      python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path
from bench_loader import field_pool, write_once, write_stack
p = Path('$STORE'); write_once(p, lambda: write_stack(p, $NT, field_pool(), zstd_level=$LEVEL))" 2>&1 | tee -a "$OUT/train.log"
    elif [ ! -d "$STORE" ]; then
      t0=$(date +%s)
      python3 -m zarrflow synth "$STORE" --layout "$LAYOUT" --channels "$CH" --ntime "$NT" $CARG \
        --quiet </dev/null 2>&1 | tail -2 | tee -a "$OUT/train.log"
      echo "synth $STORE: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/train.log"
    fi
    if [ -n "$ROWS" ]; then
      local BANDS=${STORE%.zarr}_rows$ROWS.zarr
      if [ ! -d "$BANDS" ]; then
        t0=$(date +%s)
        local RCODEC=$CODEC; [ "$RCODEC" = - ] && RCODEC=zstd:3
        python3 -m zarrflow rechunk "$STORE" "$BANDS" --chunks "latitude=$ROWS" \
          --shards latitude=721 --codec "$RCODEC" --quiet </dev/null 2>&1 | tail -2 \
          | tee -a "$OUT/train.log"
        echo "rechunk $BANDS: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/train.log"
      fi
      STORE=$BANDS
    fi
    CHARG=$CH; [ "$LAYOUT" = stacked ] || [ "$LAYOUT" = pool ] && CHARG=stacked$CH
    [ "$NGPU" -gt 1 ] && LAUNCH="torchrun --standalone --nproc-per-node $NGPU"
    echo "-- ${TAG:-run}: $CH channels, $LAYOUT $CODEC, $NGPU GPU(s), $NT steps, $*" | tee -a "$OUT/train.log"
    $LAUNCH benchmarks/train_bench.py --store "$STORE" --channels "$CHARG" --bf16 --channels-last \
      --out "$OUT" --tag "$TAG" "$@" </dev/null 2>&1 | grep -v "^W1\|OMP_NUM_THREADS" | tee -a "$OUT/train.log"
  }
  echo "== U-Net training: synthetic vs zarrflow vs baseline" | tee -a "$OUT/tests.log"
  if [ -n "${TRAIN_PLAN:-}" ]; then  # a file of train_line arguments, one process per line
    while read -r CH LAYOUT NGPU NT CODEC TAG ARGS; do
      [ -z "$CH" ] || [ "${CH#\#}" != "$CH" ] && continue
      # shellcheck disable=SC2086  # ARGS is a list of arguments
      train_line "$CH" "$LAYOUT" "$NGPU" "$NT" "$CODEC" "$TAG" $ARGS
    done <"$TRAIN_PLAN"
  fi
  # TRAIN_CONFIGS: space-separated CHANNELS:LAYOUT:NGPU:NTIME, e.g. "6:wb2:1:160 71:stacked:2:64"
  for cfg in ${TRAIN_CONFIGS:-$([ -n "${TRAIN_PLAN:-}" ] || echo 6:wb2:1:160)}; do
    IFS=: read -r CH LAYOUT NGPU NT <<<"$cfg"
    train_line "$CH" "$LAYOUT" "$NGPU" "$NT" - "" --epochs "${TRAIN_EPOCHS:-3}" \
      --runs "${TRAIN_RUNS:-synthetic,zarrflow-gpu,baseline-tensorstore}"
  done
  if [ "${TRAIN_LOADER_ONLY:-0}" = 1 ]; then
    python3 benchmarks/train_bench.py --store "$STORE" --channels "$CHARG" --bf16 --epochs 2 --no-train \
      --runs zarrflow-gpu,zarrflow-cpu,baseline-tensorstore,baseline-xarray --out "$OUT" 2>&1 | tee -a "$OUT/train.log"
  fi
fi
if want bench; then
  echo "== GPU benchmark"
  # shellcheck disable=SC2086  # BENCH_ARGS: more arguments, e.g. "--codecs lz4 --readers ..."
  python3 benchmarks/bench_gpu.py --size-gb "${BENCH_GB:-2}" --budget-s "${BENCH_BUDGET:-420}" --data /tmp/zarrflow_bench \
    --out "$OUT" ${BENCH_ARGS:-} 2>/tmp/bench_gpu_stderr.log | tee -a "$OUT/tests.log"
  tail -3 /tmp/bench_gpu_stderr.log
fi
