#!/usr/bin/env bash
# Runs every test: the C++ GoogleTest suites (ctest) and the Python suite (pytest), after
# installing what is missing (see scripts/setup.sh). GPU tests skip cleanly without a GPU.
# Without pytest arguments (the whole suite, as CI runs it), it then builds the documentation
# (docs/ and the API reference, warnings as errors) into build/docs and replays the fuzz corpora
# under ASan + UBSan (scripts/fuzz.sh replay; docs/fuzzing.md).
#
# In CI (CI=true), or with ZARRFLOW_TEST_WHEEL=1, the Python suite runs against the CPU wheel as a
# user installs it: scripts/build_wheels.sh builds it (static dependencies, glibc 2.27 floor),
# scripts/wheel/smoke.sh installs it into a fresh environment and reads every codec there, and
# pytest then imports zarrflow from a fresh virtual environment holding that wheel and the test
# and docs extras, not from the development build. Where the pinned sources of that build cannot
# be downloaded (a network that reaches only PyPI and the distribution's mirror), the wheel of the
# development build (linked against this machine's libraries) is tested that way instead, and
# the log says so; a build that fails for any other reason fails the run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "==> C++ tests"
ctest --test-dir build/venv --output-on-failure -j "$(nproc)"
PYTEST_PY=.venv/bin/python
if [ "${CI:-}" = true ] || [ "${ZARRFLOW_TEST_WHEEL:-0}" = 1 ]; then
  echo "==> CPU wheel"
  rm -f dist/zarrflow-*-cp311-*.whl
  if PYTHONS=python3 ./scripts/build_wheels.sh cpu --fetch-only; then
    PYTHONS=python3 ./scripts/build_wheels.sh cpu --smoke
  else
    echo "==> the self-contained wheel's sources could not be downloaded (above): testing the"
    echo "    wheel of the development build instead, linked against this machine's libraries"
    .venv/bin/python -m pip wheel -q --no-build-isolation --no-deps -w dist . \
      -Cbuild-dir=build/venv -Ccmake.define.ZARRFLOW_BUILD_TESTS=ON -Cbuild.verbose=false
  fi
  wheel=$(ls dist/zarrflow-*-cp311-*.whl)
  venv=build/wheel/test-venv
  rm -rf "$venv" && python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q "$wheel[test,docs]"  # docs: the docstring checks
  PYTEST_PY=$venv/bin/python
fi
echo "==> Python tests"
"$PYTEST_PY" -m pytest -q "$@"
if [ $# -eq 0 ]; then
  echo "==> documentation (build/docs/index.html)"
  started=$SECONDS
  .venv/bin/python -m sphinx -E -W --keep-going -q -b html docs build/docs
  echo "    built in $((SECONDS - started)) s"
  ./scripts/fuzz.sh replay
fi
