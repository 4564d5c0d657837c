#!/usr/bin/env bash
# Shared set-up for scripts/demo.sh and scripts/test.sh (sourced, not run). Idempotent:
#  1. Debian packages the C++ build needs (installed only when missing; sudo when not root);
#  2. a project-local virtual environment in .venv with the Python build and test dependencies;
#  3. zarrflow built and installed into it (incremental: the CMake build lives in build/venv),
#     together with the GoogleTest binaries.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(build-essential cmake ninja-build pkg-config python3-venv
  libzstd-dev liblz4-dev libblosc-dev libdeflate-dev libisal-dev libbz2-dev liblzma-dev nlohmann-json3-dev libgtest-dev libcurl4-openssl-dev libssl-dev
  flatbuffers-compiler libflatbuffers-dev
  clang libclang-rt-dev llvm  # clang + libFuzzer/sanitizer runtimes + llvm-symbolizer: scripts/fuzz.sh
  nasm)  # ISA-L's assembly, for the wheels' static build of it (scripts/build_wheels.sh)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
stamp=.venv/.deps-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  echo "==> installing Python dependencies into .venv"
  "$VPY" -m pip install -q --upgrade pip
  # Build requirements (we build without isolation so the CMake build dir is reused), the
  # extras the tests and the demo use (zarr-python, numcodecs and tensorstore as peers) and the
  # documentation's (the `docs` extra: Sphinx, numpydoc, MyST, the furo theme).
  "$VPY" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" "numpy>=1.24" "ml_dtypes>=0.4" \
    "pytest>=7" "zarr>=3.1" "numcodecs>=0.15" "tensorstore>=0.1.70" "xarray>=2024.10" \
    "moto[server]>=5" "boto3>=1.36" "netCDF4>=1.6" "cftime>=1.6" "dask>=2024.1" "pcodec>=0.3" \
    "icechunk>=1.1,<2" "kerchunk>=0.2.7" "h5py>=3.10" "pyarrow>=14" "pyyaml>=6" \
    "scipy>=1.10" "fastparquet>=2024.2" "virtualizarr[hdf]>=2.4" "ruff>=0.6" \
    "clang-format==14.0.6" "sphinx>=7.2" "numpydoc>=1.8" "myst-parser>=3" "furo>=2024.1"
  touch "$stamp"
fi

echo "==> building zarrflow (C++ library, Python extension, GoogleTest suites)"
"$VPY" -m pip install -q --no-build-isolation --no-deps . \
  -Cbuild-dir=build/venv -Ccmake.define.ZARRFLOW_BUILD_TESTS=ON -Cbuild.verbose=false
export PATH="$ROOT/.venv/bin:$PATH"
