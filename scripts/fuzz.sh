#!/usr/bin/env bash
# The libFuzzer targets of cpp/zarrflow/fuzz/ (see docs/fuzzing.md): built with clang into
# build/fuzz, the whole library instrumented with ASan + UBSan (a build for fuzzing only).
#
#   scripts/fuzz.sh build                    configure (once) and build the targets
#   scripts/fuzz.sh list                     the target names
#   scripts/fuzz.sh replay [TARGET...]       run each target once over its committed corpus and
#                                            regression inputs (all targets by default; what
#                                            ./scripts/test.sh runs)
#   scripts/fuzz.sh run TARGET SECONDS [ARGS...]
#                                            fuzz one target for SECONDS on one core, starting from
#                                            its committed corpus; new inputs go to a work corpus,
#                                            crashes to the findings folder (both under $FUZZ_WORK)
#   scripts/fuzz.sh merge TARGET             minimise the work corpus into the committed one
#   scripts/fuzz.sh seed                     regenerate the seed inputs (make_seeds.py) and merge
#                                            them into the committed corpora
#
# Environment: FUZZ_BUILD (build directory, default build/fuzz), FUZZ_WORK (work corpora,
# findings and logs, default $FUZZ_BUILD/work), SEED_PYTHON (the Python with numcodecs and zarr
# for `seed`, default .venv/bin/python). Needs clang and libclang-rt-dev (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD=${FUZZ_BUILD:-build/fuzz}
WORK=${FUZZ_WORK:-$BUILD/work}
FUZZ_DIR=cpp/zarrflow/fuzz
CORPUS=$FUZZ_DIR/corpus            # minimised by merge: inputs that add coverage
REGRESSIONS=$FUZZ_DIR/regressions  # inputs that once failed: replayed, never merged away
# Every report is fatal; leaks are reported too (LeakSanitizer runs at exit of each input batch).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

build() {
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
      -DZARRFLOW_CUDA=OFF -DZARRFLOW_BUILD_FUZZERS=ON >/dev/null
  fi
  cmake --build "$BUILD" -j "$(nproc)" >/dev/null
}

targets() {
  for f in "$FUZZ_DIR"/*_fuzzer.cc; do basename "$f" .cc; done
}

# libFuzzer options per target: the JSON or protocol token dictionary, and the largest input.
options() {
  case "$1" in
    metadata_*|consolidated_*|codec_chain_*) echo "-dict=$FUZZ_DIR/zarr_json.dict -max_len=8192" ;;
    s3_xml_*) echo "-dict=$FUZZ_DIR/s3_xml.dict -max_len=4096" ;;
    http_headers_*) echo "-dict=$FUZZ_DIR/http_headers.dict -max_len=1024" ;;
    *) echo "-max_len=8192" ;;
  esac
}

replay() {
  local failed=0 t n start
  start=$(date +%s)
  for t in ${@:-$(targets)}; do
    local dirs=("$CORPUS/$t")
    [ -d "$REGRESSIONS/$t" ] && dirs+=("$REGRESSIONS/$t")
    n=$(find "${dirs[@]}" -type f | wc -l)
    # -runs=0: execute every input once, then stop.
    if "$BUILD/fuzzers/$t" -runs=0 $(options "$t") "${dirs[@]}" >"$WORK/replay-$t.log" 2>&1; then
      echo "  $t: $n inputs ok"
    else
      echo "  $t: FAILED (log: $WORK/replay-$t.log)"
      tail -40 "$WORK/replay-$t.log"
      failed=1
    fi
  done
  echo "replayed in $(($(date +%s) - start)) s"
  return $failed
}

run() {
  local t=$1 seconds=$2
  shift 2
  mkdir -p "$WORK/corpus/$t" "$WORK/findings/$t"
  "$BUILD/fuzzers/$t" $(options "$t") -max_total_time="$seconds" -timeout=30 \
    -artifact_prefix="$WORK/findings/$t/" -print_final_stats=1 "$@" \
    "$WORK/corpus/$t" "$CORPUS/$t"
}

merge() {
  local t=$1 tmp
  tmp=$(mktemp -d)
  # Edges only (-use_counters=0): every branch stays covered with about half the inputs of a
  # merge that also keeps hit-count variety.
  "$BUILD/fuzzers/$t" $(options "$t") -merge=1 -use_counters=0 "$tmp" "$CORPUS/$t" \
    "$WORK/corpus/$t"
  rm -rf "${CORPUS:?}/$t" && mv "$tmp" "$CORPUS/$t"
}

seed() {
  local tmp t
  tmp=$(mktemp -d)
  "${SEED_PYTHON:-$ROOT/.venv/bin/python}" "$FUZZ_DIR/make_seeds.py" "$tmp"
  for t in $(targets); do
    mkdir -p "$CORPUS/$t" "$WORK/corpus/$t"
    cp "$tmp/$t"/* "$WORK/corpus/$t/" 2>/dev/null || true
    merge "$t"
  done
  rm -rf "$tmp"
}

mkdir -p "$WORK"
case "${1:-}" in
  build) build ;;
  list) targets ;;
  replay) shift; build; echo "==> fuzz corpora replay (ASan + UBSan)"; replay "$@" ;;
  run) [ $# -ge 3 ] || { echo "usage: $0 run TARGET SECONDS [libFuzzer args]" >&2; exit 2; }
       shift; build; run "$@" ;;
  merge) [ $# -eq 2 ] || { echo "usage: $0 merge TARGET" >&2; exit 2; }; build; merge "$2" ;;
  seed) build; seed ;;
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
