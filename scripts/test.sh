#!/usr/bin/env bash
# Runs every test: the C++ GoogleTest suites (ctest) and the Python suite (pytest), after
# installing what is missing (see scripts/setup.sh). GPU tests skip cleanly without a GPU.
# Without pytest arguments (the whole suite, as CI runs it), it then builds the documentation
# (docs/ and the API reference, warnings as errors) into build/docs and replays the fuzz corpora
# under ASan + UBSan (scripts/fuzz.sh replay; docs/fuzzing.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "==> C++ tests"
ctest --test-dir build/venv --output-on-failure -j "$(nproc)"
echo "==> Python tests"
.venv/bin/python -m pytest -q "$@"
if [ $# -eq 0 ]; then
  echo "==> documentation (build/docs/index.html)"
  started=$SECONDS
  .venv/bin/python -m sphinx -E -W --keep-going -q -b html docs build/docs
  echo "    built in $((SECONDS - started)) s"
  ./scripts/fuzz.sh replay
fi
