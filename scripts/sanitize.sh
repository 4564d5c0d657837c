#!/usr/bin/env bash
# The C++ GoogleTest suites built with AddressSanitizer and UndefinedBehaviorSanitizer (CPU build,
# no CUDA: the GPU code is checked by compute-sanitizer in scripts/gpu_run.sh), in build/asan.
# Any report fails the run. Needs what scripts/setup.sh installs; ~6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZARRFLOW_CUDA=OFF \
  -DZARRFLOW_BUILD_TESTS=ON -DCMAKE_CXX_FLAGS="$FLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
ninja -C build/asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)"
