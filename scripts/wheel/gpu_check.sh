#!/usr/bin/env bash
# Checks a zarrflow wheel on a GPU host as a user installs it, without network, apt or compiler.
#
#   scripts/wheel/gpu_check.sh [--expect gpu|nokernels] WHEEL [WHEEL_DIR ...]
#
#   WHEEL      the zarrflow-cu12 / zarrflow-cu13 wheel (cp312-abi3 for the host's Python 3.12)
#   WHEEL_DIR  directories of wheels pip may take the rest from (--no-index --find-links):
#              nvidia-libnvcomp-cu12/-cu13 for the wheel's [nvcomp] extra, ml_dtypes when the host
#              lacks it, and the test peers zarr, numcodecs (+ donfig, google_crc32c,
#              typing_extensions), pcodec, pytest
#   --expect gpu        (default) the GPU path must be on: cuda_status() == ''
#   --expect nokernels  the wheel has no kernel image for this GPU (the sm_80-only build on an
#                       H100): cuda_status() must say so, device="cuda" reads decode on the host
#                       and copy up, and the tests of GPU decoding skip with that reason
#
# What it does, logging each step under $OUT/<wheel name>/ (OUT defaults to ./gpu_out):
#  1. a fresh virtual environment with --system-site-packages: the host's torch, cupy, numpy,
#     xarray and pytest are used as installed (gigabytes, and there is no package index here),
#     while zarrflow comes only from WHEEL (the script stops if the host has a zarrflow of its
#     own, and checks that the one imported is the venv's);
#  2. pip install --no-index "WHEEL[nvcomp]" plus the test peers from the WHEEL_DIRs;
#  3. `import zarrflow` time (best of 5 fresh processes), build_info(), `zarrflow --version`,
#     `zarrflow doctor`, the extension's shared libraries (glibc and libgcc_s only);
#  4. README's quickstart as written (zarrflow synth / inspect, then its Python block), and
#     again with device="cuda", output="torch" where the GPU path is on;
#  5. (--expect gpu) `zarrflow bench` of the quickstart's store with --device cuda;
#  6. the GPU suites and the host-path suites on a copy of tests/ outside the source tree, run
#     from a directory where only the installed zarrflow can be imported.
# Exit status 0 when every step passed. SUITES (file names in tests/), PYTEST_ARGS and
# SUITE_TIMEOUT (seconds, default 330) narrow or bound step 6; PYTHON names the host's Python
# (default python3); EXTRAS the wheel's extras (default [nvcomp]; EXTRAS= installs none, which a
# --expect nokernels check does not need).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EXPECT=gpu
if [ "${1:-}" = --expect ]; then EXPECT=$2; shift 2; fi
case "$EXPECT" in gpu|nokernels) ;; *) echo "--expect gpu or nokernels, got $EXPECT" >&2; exit 2 ;; esac
[ $# -ge 1 ] && [ -f "$1" ] || { sed -n '2,14p' "$0" >&2; exit 2; }
WHEEL=$(realpath "$1"); shift
FIND_LINKS=()
for d in "$@"; do FIND_LINKS+=(--find-links "$(realpath "$d")"); done
NAME=$(basename "$WHEEL" .whl)
OUT="${OUT:-$PWD/gpu_out}/${NAME//+/_}"  # no "+" (local versions) in a directory name
mkdir -p "$OUT"
LOG="$OUT/check.log"
: >"$LOG"
HOST_PYTHONPATH="${PYTHONPATH:-}"  # the host's own packages may come from it (host_packages_pth)
unset PYTHONPATH LD_LIBRARY_PATH ZARRFLOW_NVCOMP_LIBRARY ZARRFLOW_NUM_THREADS ZARRFLOW_GPU_MEMORY_LIMIT
WORK=$(mktemp -d /tmp/zarrflow-gpu-check.XXXXXX)
VENV=$WORK/venv
PY=$VENV/bin/python
failed=()
say() { echo "$*" | tee -a "$LOG"; }
step() {  # step NAME COMMAND...: runs it, its output to $OUT/NAME.log and the summary log
  local name=$1; shift
  say "== $name"
  if "$@" >"$OUT/$name.log" 2>&1; then say "   ok"; else say "   FAILED (rc=$?): $OUT/$name.log"; failed+=("$name"); fi
  tail -n "${TAIL:-25}" "$OUT/$name.log" | sed 's/^/   | /' | tee -a "$LOG"
}

say "wheel: $NAME ($(du -h "$WHEEL" | cut -f1)), expect: $EXPECT"
HOST_PY=$(command -v "${PYTHON:-python3}")
say "host: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | tr '\n' ';') $("$HOST_PY" -V 2>&1)"
if (cd / && env -i PATH=/usr/bin:/bin "$HOST_PY" -c 'import zarrflow' 2>/dev/null); then
  say "this host's Python already has a zarrflow ($(cd / && "$HOST_PY" -c 'import zarrflow; print(zarrflow.__file__)')): remove it first"
  exit 1
fi

# The host's packages (torch, cupy, ...) for the check venv. --system-site-packages gives only the
# base interpreter's, so where the host's Python is itself a virtual environment (as on images
# that ship torch in one) its site directories are added to the check venv through a .pth file.
host_packages_pth() {
  PYTHONPATH="$HOST_PYTHONPATH" "$HOST_PY" -c 'import site, sys
print("\n".join(p for p in sys.path if p.startswith("/") and ("-packages" in p or p in sys.argv[1:])))' \
    ${HOST_PYTHONPATH//:/ } >"$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_host_packages.pth"
}

install() {
  "$HOST_PY" -m venv --system-site-packages "$VENV" && host_packages_pth &&
    "$PY" -m pip install --no-index "${FIND_LINKS[@]}" --no-cache-dir "$WHEEL${EXTRAS-[nvcomp]}" &&
    { "$PY" -c 'import pytest' 2>/dev/null || "$PY" -m pip install --no-index "${FIND_LINKS[@]}" pytest; } &&
    "$PY" -m pip install --no-index "${FIND_LINKS[@]}" --no-cache-dir zarr numcodecs &&
    { "$PY" -m pip install --no-index "${FIND_LINKS[@]}" --no-cache-dir pcodec || echo "(no pcodec wheel: its tests skip)"; } &&
    "$PY" -m pip list 2>/dev/null | grep -Ei '^(zarrflow|nvidia-libnvcomp|zarr |numcodecs|numpy |ml.dtypes|torch |cupy|pytest )'
}
step install install
[ ${#failed[@]} -eq 0 ] || { say "FAILED: the wheel did not install ($NAME)"; exit 1; }

# From an empty directory, with PYTHONPATH and LD_LIBRARY_PATH unset (above): nothing but the
# venv can provide zarrflow or a library it loads.
mkdir -p "$WORK/run"
run_py() { (cd "$WORK/run" && env PATH="$VENV/bin:$PATH" "$PY" "$@"); }
run_bin() { (cd "$WORK/run" && env PATH="$VENV/bin:$PATH" "$@"); }

describe() {
  run_py - "$VENV" <<'EOF'
import os, subprocess, sys, time
venv = sys.argv[1]
times = []
for _ in range(5):
    out = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); import zarrflow; "
                          "print((time.perf_counter() - t) * 1e3)"], capture_output=True, text=True, check=True)
    times.append(float(out.stdout))
import zarrflow
where = os.path.realpath(zarrflow.__file__)
assert where.startswith(os.path.realpath(venv)), f"zarrflow imported from {where}, not the venv"
print(f"import zarrflow: best {min(times):.0f} ms, median {sorted(times)[2]:.0f} ms of 5 fresh processes")
print("zarrflow from", os.path.dirname(where))
print("build_info:", zarrflow.build_info())
print("nvcomp_status:", (zarrflow.nvcomp_status() or "ok").splitlines()[0])
EOF
  run_bin zarrflow --version && run_bin zarrflow doctor &&
    echo "ldd: $(ldd "$(ls "$VENV"/lib/python3*/site-packages/zarrflow/_core*.so)" | awk '{print $1}' | tr '\n' ' ')"
}
TAIL=40 step describe describe

expectation() {
  run_py - "$EXPECT" <<'EOF'
import sys
import numpy as np, zarrflow
expect = sys.argv[1]
status = zarrflow.cuda_status()
print("cuda_status:", status or "'' (GPU path on)")
if expect == "gpu":
    assert status == "", f"the GPU path is off: {status}"
else:
    assert "cannot run zarrflow's GPU kernels" in status, f"expected the missing-kernel-image message, got {status!r}"
    import warnings
    a = np.arange(24, dtype="f4").reshape(4, 6)
    import tempfile, zarr
    d = tempfile.mkdtemp()
    z = zarr.create_array(d + "/a.zarr", shape=a.shape, chunks=(2, 3), dtype="f4")
    z[...] = a
    arr = zarrflow.open(d + "/a.zarr")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        t = arr.read(device="cuda")
        arr.read(device="cuda")
    notes = [str(w.message) for w in said if "cannot run zarrflow's GPU kernels" in str(w.message)]
    assert len(notes) == 1, notes
    print("said once:", notes[0][:200])
    import torch
    assert np.array_equal(torch.from_dlpack(t).cpu().numpy(), a)
    print("device='cuda' read decoded on the host and copied up: equal")
    try:
        arr.read(device="cuda", gpu_decode="on")
        raise SystemExit("gpu_decode='on' did not refuse")
    except zarrflow.UnsupportedError as e:
        assert status in str(e)
        print("gpu_decode='on' refused with the message")
EOF
}
step expectation expectation

quickstart() {
  local dir=$WORK/quickstart code
  mkdir -p "$dir"
  code=$(awk '/^## Quickstart/ {q = 1} q && /<!-- test: cpu -->/ {t = 1; next}
              t && /^```python/ {p = 1; next} p && /^```/ {exit} p {print}' "$ROOT/README.md")
  [ -n "$code" ] || { echo "no quickstart block in README.md"; return 1; }
  (cd "$dir" && env PATH="$VENV/bin:$PATH" bash -c \
     'zarrflow synth era5.zarr && zarrflow inspect era5.zarr') || return 1
  echo "--- README quickstart (as written)"
  (cd "$dir" && env PATH="$VENV/bin:$PATH" "$PY" -c "$code") || return 1
  if [ "$EXPECT" = gpu ]; then
    echo "--- the same with device=\"cuda\", output=\"torch\""
    code=${code//device=\"cpu\", output=\"numpy\"/device=\"cuda\", output=\"torch\"}
    (cd "$dir" && env PATH="$VENV/bin:$PATH" "$PY" -c "$code
assert x.is_cuda, x.device
print('batches on', x.device)") || return 1
  fi
}
step quickstart quickstart

# The GPU read benchmark on the quickstart's store (decoded GB/s per run; the same command with
# another build of zarrflow, on the same machine, is the comparison).
if [ "$EXPECT" = gpu ]; then
  bench() { run_bin zarrflow bench "$WORK/quickstart/era5.zarr" --device cuda --runs 5 --quiet; }
  step bench bench
fi

# The suites, from a copy of tests/ (and the pages test_docs_examples reads) outside the source.
GPU_SUITES="test_gpu.py test_dlpack.py test_loader_gpu.py test_remote_gpu.py test_icechunk_gpu.py
  test_xarray_backend.py test_numcodecs.py test_bench_cli.py test_build_info.py test_doctor.py"
HOST_SUITES="test_conformance.py test_corpus.py test_loader.py test_indexing.py test_bad_input.py"
suites() {
  mkdir -p "$WORK/src"
  cp -r "$ROOT/tests" "$WORK/src/"
  cp "$ROOT/pyproject.toml" "$WORK/src/"  # pytest's settings (the gpu marker); no code
  # shellcheck disable=SC2086  # lists of files
  (cd "$WORK/src/tests" &&
    env PATH="$VENV/bin:$PATH" timeout "${SUITE_TIMEOUT:-330}" \
      "$PY" -m pytest -q -p no:cacheprovider -rfEs --tb=short --rootdir "$WORK/src" \
      ${SUITES:-$GPU_SUITES $HOST_SUITES} ${PYTEST_ARGS:-})
}
TAIL=60 step suites suites

if [ ${#failed[@]} -eq 0 ]; then say "PASSED: $NAME ($EXPECT)"; rm -rf "$WORK"; exit 0; fi
say "FAILED steps: ${failed[*]} ($NAME, $EXPECT); work directory kept: $WORK"
exit 1
