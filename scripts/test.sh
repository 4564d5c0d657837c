#!/usr/bin/env bash
# Runs every test: the C++ GoogleTest suites (ctest) and the Python suite (pytest), after
# installing what is missing (see scripts/setup.sh). GPU tests skip cleanly without a GPU.
# Without pytest arguments (the whole suite, as CI runs it), the fuzz corpora are then replayed
# under ASan + UBSan (scripts/fuzz.sh replay; docs/fuzzing.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "==> C++ tests"
ctest --test-dir build/venv --output-on-failure -j "$(nproc)"
echo "==> Python tests"
.venv/bin/python -m pytest -q "$@"
if [ $# -eq 0 ]; then
  ./scripts/fuzz.sh replay
fi
