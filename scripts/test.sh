#!/usr/bin/env bash
# Runs every test: the C++ GoogleTest suites (ctest) and the Python suite (pytest), after
# installing what is missing (see scripts/setup.sh), then builds the documentation (docs/ and the
# API reference, warnings as errors) into build/docs. GPU tests skip cleanly without a GPU.
# With arguments, they go to pytest and the documentation is not built.
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
fi
