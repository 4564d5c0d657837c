#!/usr/bin/env bash
# Installs a wheel as a user would and checks it: a fresh virtual environment holding only the
# wheel and its dependencies from PyPI, run from outside the source tree with a bare environment
# (no LD_LIBRARY_PATH, no PYTHONPATH); the extension may need only glibc and libgcc_s.
#   scripts/wheel/smoke.sh PYTHON WHEEL
# The expected values come from zarr-python in the development environment (.venv).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY=$1 WHEEL=$(realpath "$2")
DIR=$(mktemp -d /tmp/zarrflow-smoke.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$ROOT/.venv/bin/python" "$ROOT/scripts/wheel/smoke_store.py" "$DIR"
"$PY" -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip install -q "$WHEEL"
cp "$ROOT/scripts/wheel/smoke.py" "$DIR/"
so=$(ls "$DIR"/venv/lib/python3*/site-packages/zarrflow/_core*.so)
echo "    ldd $(basename "$so"): $(env -i ldd "$so" | awk '{print $1}' | tr '\n' ' ')"
if env -i ldd "$so" | grep -Ev 'linux-vdso|ld-linux|lib(c|m|pthread|dl|rt|gcc_s)\.so' | grep -q .; then
  echo "the extension needs libraries beyond glibc and libgcc_s" >&2; exit 1
fi
(cd "$DIR" && env -i PATH=/usr/bin:/bin HOME="$DIR" "$DIR/venv/bin/python" smoke.py "$DIR") |
  sed 's/^/    /'
