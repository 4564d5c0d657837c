#!/usr/bin/env bash
# The C++ GoogleTest suites and the Python test suite on a build with AddressSanitizer and
# UndefinedBehaviorSanitizer (CPU build, no CUDA: the GPU code is checked by compute-sanitizer in
# scripts/gpu_run.sh). The Python suite imports the instrumented extension from build/asan-site
# (Python itself is not instrumented, so libasan and libstdc++ are preloaded; leaks are not
# checked there, as the interpreter keeps memory at exit). Any report fails the run.
# Needs what scripts/setup.sh installs (.venv); ~6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SAN="-fsanitize=address,undefined"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZARRFLOW_CUDA=OFF \
  -DZARRFLOW_BUILD_TESTS=ON -DZARRFLOW_BUILD_PYTHON=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python" \
  -DCMAKE_CXX_FLAGS="$SAN -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
  -DCMAKE_EXE_LINKER_FLAGS="$SAN" -DCMAKE_SHARED_LINKER_FLAGS="$SAN" >/dev/null
ninja -C build/asan
echo "==> C++ tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)"
echo "==> Python tests on the instrumented extension"
rm -rf build/asan-site && mkdir -p build/asan-site/zarrflow
cp python/zarrflow/*.py build/asan-site/zarrflow/
cp build/asan/python/_core*.so build/asan-site/zarrflow/
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  PYTHONPATH="$PWD/build/asan-site" .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
