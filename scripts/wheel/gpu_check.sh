#!/usr/bin/env bash
# Checks a zarrflow wheel on a GPU host as a user installs it: the wheel (and the peer wheels the
# tests compare against, from .whl/) installed with `pip install --no-deps --no-index` into a
# fresh directory, the tests run from outside the source tree so that they import that install.
#   scripts/wheel/gpu_check.sh gpu WHEEL        the GPU suites must pass on the GPU path
#   scripts/wheel/gpu_check.sh noimage WHEEL    WHEEL lacks a kernel image for this GPU (e.g. the
#        sm_80-only build on an H100): cuda_status() must say so, a device="cuda" read must raise
#        that message, the GPU suites skip, and the host-path suites pass
# Logs go to $OUT (or ./gpu_out).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MODE=$1 WHEEL=$(realpath "$2")
OUT="${OUT:-$ROOT/gpu_out}"
mkdir -p "$OUT"
SITE=$(mktemp -d /tmp/zarrflow-wheel-site.XXXXXX)
peers=$(ls "$ROOT"/.whl/*.whl 2>/dev/null | grep -v '/zarrflow' || true)
# shellcheck disable=SC2086  # peers: a list of files
python3 -m pip install -q --no-deps --no-index --no-compile --target "$SITE" "$WHEEL" $peers \
  >"$OUT/wheel_install.log" 2>&1 || { echo "install failed:"; tail "$OUT/wheel_install.log"; exit 1; }
WORKDIR=$(mktemp -d /tmp/zarrflow-wheel-run.XXXXXX)
cp -r "$ROOT/tests" "$WORKDIR/"
cd "$WORKDIR" || exit 1
export PYTHONPATH="$SITE" PYTHONUNBUFFERED=1
unset LD_LIBRARY_PATH ZARRFLOW_NVCOMP_LIBRARY
{
  echo "== $(basename "$WHEEL") ($MODE)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
  python3 - <<'EOF'
import zarrflow
print("zarrflow from", zarrflow.__file__)
print("build_info:", zarrflow.build_info())
print("nvcomp_status:", (zarrflow.nvcomp_status() or "ok").splitlines()[0])
EOF
  echo "ldd: $(ldd "$SITE"/zarrflow/_core*.so | awk '{print $1}' | tr '\n' ' ')"
} 2>&1 | tee "$OUT/wheel_check.log"

GPU_SUITES="tests/test_gpu.py tests/test_dlpack.py tests/test_loader_gpu.py tests/test_remote_gpu.py
  tests/test_xarray_backend.py tests/test_bench_cli.py"
HOST_SUITES="tests/test_conformance.py tests/test_corpus.py tests/test_loader.py tests/test_indexing.py"
rc=0
case "$MODE" in
  gpu)
    python3 -c "import zarrflow, sys; s = zarrflow.cuda_status(); print('cuda_status:', s or 'ok'); sys.exit(1 if s else 0)" \
      2>&1 | tee -a "$OUT/wheel_check.log" || rc=1
    # shellcheck disable=SC2086
    timeout 480 python3 -m pytest -q -p no:cacheprovider -rfE --tb=short $GPU_SUITES \
      >"$OUT/wheel_pytest.log" 2>&1 || rc=1
    ;;
  noimage)
    python3 - <<'EOF' 2>&1 | tee -a "$OUT/wheel_check.log" || rc=1
import numpy as np, zarrflow, tempfile, pathlib, json
s = zarrflow.cuda_status()
print("cuda_status:", s)
assert "cannot run zarrflow's GPU kernels" in s, "expected the missing-kernel-image message"
assert not zarrflow.cuda_available()
d = pathlib.Path(tempfile.mkdtemp()) / "a"
d.mkdir()
(d / ".zarray").write_text(json.dumps({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f4",
    "compressor": None, "fill_value": 0, "order": "C", "filters": None}))
(d / "0").write_bytes(np.arange(4, dtype="<f4").tobytes())
a = zarrflow.open(d)
try:
    a.read(device="cuda")
    raise SystemExit("a device='cuda' read did not refuse")
except zarrflow.UnsupportedError as e:
    assert s in str(e), e
    print("device='cuda' read refused:", str(e)[:160])
np.testing.assert_array_equal(a[...], np.arange(4, dtype="f4"))
print("host read ok")
EOF
    # shellcheck disable=SC2086
    timeout 480 python3 -m pytest -q -p no:cacheprovider -rfE --tb=short $GPU_SUITES $HOST_SUITES \
      >"$OUT/wheel_pytest.log" 2>&1 || rc=1
    ;;
  *) echo "mode: gpu or noimage" >&2; exit 2 ;;
esac
grep -E "passed|failed|^FAILED|^ERROR|skipped" "$OUT/wheel_pytest.log" | tail -15 | tee -a "$OUT/wheel_check.log"
echo "rc=$rc" | tee -a "$OUT/wheel_check.log"
exit $rc
