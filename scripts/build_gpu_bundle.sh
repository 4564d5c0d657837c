#!/usr/bin/env bash
# Builds zarrflow here for the GPU host's Python (3.12 by default) and packs it, with the shared
# libraries the GPU image lacks, into .gpu/ (git-ignored), which goes to the GPU host with the
# repository:
#   .gpu/site/zarrflow/   the package with _core*.so     .gpu/lib/   libblosc, libisal, ...
#   .gpu/bin/             the GoogleTest binaries
# On the GPU host: export PYTHONPATH=$PWD/.gpu/site LD_LIBRARY_PATH=$PWD/.gpu/lib
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${GPU_PYTHON:-/tmp/py312/bin/python}"
BUILD=build/gpu-bundle
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZARRFLOW_BUILD_PYTHON=ON \
  -DZARRFLOW_BUILD_TESTS=ON -DPython_EXECUTABLE="$PY" \
  -DZARRFLOW_KEEP_SYMBOLS="$([ "${KEEP_SYMBOLS:-0}" = 1 ] && echo ON || echo OFF)" >/dev/null
ninja -C "$BUILD"
rm -rf .gpu && mkdir -p .gpu/site/zarrflow .gpu/lib .gpu/bin
(cd python && find zarrflow -name "*.py" -exec cp --parents {} ../.gpu/site/ \;)  # subpackages too
cp "$BUILD"/python/_core*.so .gpu/site/zarrflow/
# A minimal dist-info so that entry points (the xarray backend) are found on PYTHONPATH.
mkdir -p .gpu/site/zarrflow-0.1.0.dist-info
printf 'Metadata-Version: 2.1\nName: zarrflow\nVersion: 0.1.0\n' > .gpu/site/zarrflow-0.1.0.dist-info/METADATA
sed -n '/entry-points."xarray.backends"/,/^$/p' pyproject.toml | sed 's/\[project.entry-points."xarray.backends"\]/[xarray.backends]/' \
  | tr -d '"' > .gpu/site/zarrflow-0.1.0.dist-info/entry_points.txt
cp "$BUILD"/cpp/zarrflow_*_tests .gpu/bin/
strip --strip-unneeded .gpu/bin/*
# KEEP_SYMBOLS=1 keeps the extension's symbol table, for profiling it (py-spy --native, perf).
[ "${KEEP_SYMBOLS:-0}" = 1 ] || strip --strip-unneeded .gpu/site/zarrflow/_core*.so
for lib in libblosc.so.1 libisal.so.2 libdeflate.so.0 liblz4.so.1 libzstd.so.1 libsnappy.so.1; do
  src=$(ldconfig -p | awk -v l="$lib" '$1 == l && !n++ {print $NF}')
  [ -n "$src" ] && cp -L "$src" .gpu/lib/
done
# libcurl and its dependencies, for a GPU image without them: packed (the carry is size-limited);
# scripts/gpu_run.sh links in only those the image lacks, never shadowing its own.
mkdir -p build/libopt && rm -f build/libopt/*
for src in $(ldd "$BUILD"/python/_core*.so | awk '$3 ~ /^\// {print $3}'); do
  case "$(basename "$src")" in
    libc.so*|libm.so*|libgcc_s*|libstdc++*|ld-linux*|libresolv*|libpthread*|libdl*|librt*) ;;
    libblosc*|libisal*|libdeflate*|liblz4*|libzstd*|libsnappy*) ;;
    *) cp -L "$src" build/libopt/ ;;
  esac
done
tar -C build/libopt -cJf .gpu/libopt.tar.xz .
# nvCOMP: only its main library, xz-packed (the wheel also carries tools and headers).
NVCOMP_WHL=$(ls .whl/nvidia_libnvcomp_cu13-*.whl build/whl-aside/nvidia_libnvcomp_cu13-*.whl 2>/dev/null | head -1 || true)
if [ -n "$NVCOMP_WHL" ]; then
  rm -rf build/nvcomp && mkdir -p build/nvcomp
  unzip -q -o "$NVCOMP_WHL" 'nvidia/libnvcomp/lib64/libnvcomp.so.*' -d build/nvcomp
  xz -T0 -6 -c build/nvcomp/nvidia/libnvcomp/lib64/libnvcomp.so.[0-9] > .gpu/libnvcomp.so.xz
fi
du -sh .gpu
