# Sourced by scripts/build_wheels.sh: the toolchain (GCC 12 against a glibc 2.27 sysroot) and
# the static libraries the wheel links, built from Debian's upstream source tarballs.
#
# Every download is pinned by SHA-256 and cached in $WHEEL_CACHE ($WHEEL_HOME/cache; put files
# there by hand on a machine without network). Adding a static dependency: one line in
# WHEEL_SOURCES and one build_<name> function below; CMake finds it in $DEPS (CMAKE_PREFIX_PATH,
# pkg-config) without further change.

DEBIAN=http://deb.debian.org/debian/pool/main
UBUNTU=http://archive.ubuntu.com/ubuntu/pool/main
# nvidia-cuda-toolkit-12 (only for the cu12 wheel): Ubuntu 25.10's package of NVIDIA's CUDA 12.4
# compiler binaries; PyPI's nvidia-cuda-nvcc-cu12 carries ptxas and libnvvm but no nvcc driver.

# name  url  sha256
# The codec libraries, OpenSSL and libcurl are the upstream release tarballs of the versions Debian
# 13 (trixie) ships; Debian's own patches are not applied. FlatBuffers stays at Debian 12's 2.0.8:
# its headers must match the build machine's flatc, which generates the Icechunk readers' code.
WHEEL_SOURCES="
libc6 $UBUNTU/g/glibc/libc6_2.27-3ubuntu1.6_amd64.deb 5b813d4512491cd8fb30b2eb9192349ee75ffe3c9f21ae136cc7b2429f70c3b2
libc6-dev $UBUNTU/g/glibc/libc6-dev_2.27-3ubuntu1.6_amd64.deb 96ae7d2cf38f0547ca3cccb3344c8802fdf5bcd71c4b6d9aed09558ac8cc87db
linux-libc-dev $UBUNTU/l/linux/linux-libc-dev_4.15.0-213.224_amd64.deb 06d9f16644d3a1b2ab7dd01730e833d516b6f575d975855f496eea6463fef2f6
linux-headers $UBUNTU/l/linux/linux-libc-dev_5.15.0-25.25_amd64.deb 1b2a93020593c9e94a25f750ce442da5a6e8ff48a20f52cec92dfc3fa35336d8
zlib $DEBIAN/z/zlib/zlib_1.3.dfsg%2breally1.3.1.orig.tar.gz 60dd315c07f616887caa029408308a018ace66e3d142726a97db164b3b8f69fb
bzip2 $DEBIAN/b/bzip2/bzip2_1.0.8.orig.tar.gz ab5a03176ee106d3f0fa90e381da478ddae405918153cca248e682cd0c4a2269
xz $DEBIAN/x/xz-utils/xz-utils_5.8.1.orig.tar.xz 0b54f79df85912504de0b14aec7971e3f964491af1812d83447005807513cd9e
zstd $DEBIAN/libz/libzstd/libzstd_1.5.7%2bdfsg.orig.tar.xz 0c092ef267edce57ba7f3f2645c861f72eaf5e76273c6c3632869423464b90a5
lz4 $DEBIAN/l/lz4/lz4_1.10.0.orig.tar.gz 537512904744b35e232912055ccf8ec66d768639ff3abe5788d90d792ec5f48b
deflate $DEBIAN/libd/libdeflate/libdeflate_1.23.orig.tar.gz 1ab18349b9fb0ce8a0ca4116bded725be7dcbfa709e19f6f983d99df1fb8b25f
isal $DEBIAN/libi/libisal/libisal_2.31.1.orig.tar.gz e1d5573a4019738243b568ab1e1422e6ab7557c5cae33cc8686944d327ad6bb4
blosc $DEBIAN/c/c-blosc/c-blosc_1.21.5%2bds.orig.tar.xz c4e616db0dc234e92e79eb07eb51f1940fda251576f17d5e6afe618244a992cb
openssl $DEBIAN/o/openssl/openssl_3.5.7.orig.tar.gz a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8
json $DEBIAN/n/nlohmann-json3/nlohmann-json3_3.11.3.orig.tar.gz 0d8ef5af7f9794e3263480193c491549b2ba6cc74bb018906202ada498a79406
curl $DEBIAN/c/curl/curl_8.14.1.orig.tar.gz 6766ada7101d292b42b8b15681120acd68effa4a9660935853cf6d61f0d984d4
flatbuffers $DEBIAN/f/flatbuffers/flatbuffers_2.0.8%2bdfsg1.orig.tar.xz 424b8c76568e718a1a05c3fbc6b2070c83b5e55d9b48568fa4f744e9bcd1163a
nvidia-cuda-toolkit-12 http://archive.ubuntu.com/ubuntu/pool/multiverse/n/nvidia-cuda-toolkit/nvidia-cuda-toolkit_12.4.131~12.4.1-4build1_amd64.deb 332ae8634f59304e9ad8e10a2780d592d71c0f3a4a1e1f755f0c462a54756612
"
# Build order (each after what it links).
WHEEL_DEPS="zlib bzip2 xz zstd lz4 deflate isal blosc openssl curl json flatbuffers"

# The zig toolchain (ZARRFLOW_WHEEL_TOOLCHAIN=zig, the CPU wheel only): PyPI's ziglang wheel, pinned
# by SHA-256 like the sources above. Its clang and lld target glibc $ZIG_GLIBC through zig's own
# glibc headers and link stubs, and it links LLVM's libc++ statically.
ZIG_VERSION=0.17.1
ZIG_WHEEL_SHA256=ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54
ZIG_GLIBC=2.17

# Downloads (or finds in the cache) the pinned ziglang wheel, as fetch_source does a source;
# prints the cached path.
fetch_zig_wheel() {
  local whl
  whl=$(ls "$WHEEL_CACHE"/ziglang-"$ZIG_VERSION"-*x86_64*.whl 2>/dev/null | head -1 || true)
  if [ -z "$whl" ] || ! echo "$ZIG_WHEEL_SHA256  $whl" | sha256sum -c --quiet 2>/dev/null; then
    rm -rf "$WORK/ziglang" && mkdir -p "$WORK/ziglang" "$WHEEL_CACHE"
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$WORK/ziglang" \
      "ziglang==$ZIG_VERSION" >&2 || { echo "download failed: ziglang==$ZIG_VERSION" >&2; return 1; }
    whl=$(ls "$WORK"/ziglang/ziglang-"$ZIG_VERSION"-*x86_64*.whl)
    echo "$ZIG_WHEEL_SHA256  $whl" | sha256sum -c --quiet ||
      { echo "checksum mismatch: $whl" >&2; return 1; }
    mv "$whl" "$WHEEL_CACHE/" && whl="$WHEEL_CACHE/$(basename "$whl")"
  fi
  echo "$whl"
}

# Downloads (or finds in the cache) source $1; prints the cached path.
fetch_source() {
  local name=$1 url sha file
  read -r _ url sha <<<"$(awk -v n="$name" '$1 == n' <<<"$WHEEL_SOURCES")"
  [ -n "$url" ] || { echo "no source named $name" >&2; return 1; }
  file="$WHEEL_CACHE/$(basename "${url//%2b/+}")"
  if [ ! -f "$file" ] || ! echo "$sha  $file" | sha256sum -c --quiet 2>/dev/null; then
    mkdir -p "$WHEEL_CACHE"
    curl -fsSL --retry 3 -o "$file.part" "$url" ||
      { echo "download failed: $url (place the file in $WHEEL_CACHE)" >&2; return 1; }
    echo "$sha  $file.part" | sha256sum -c --quiet ||
      { echo "checksum mismatch: $url" >&2; return 1; }
    mv "$file.part" "$file"
  fi
  echo "$file"
}

# Unpacks source $1 into a fresh $WORK/$1 and enters it.
enter_source() {
  local file
  file=$(fetch_source "$1")
  rm -rf "${WORK:?}/$1" && mkdir -p "$WORK/$1"
  tar -xf "$file" -C "$WORK/$1" --strip-components=1
  cd "$WORK/$1"
}

# The glibc 2.27 sysroot (Ubuntu 18.04's libc6-dev), C/C++ compiler wrappers that build against
# it, and the CMake toolchain file for the wheel.
build_toolchain() {
  local tc=$TOOLCHAIN
  rm -rf "$tc" && mkdir -p "$tc/sysroot" "$tc/bin" "$tc/include/bits" "$tc/lib"
  for pkg in libc6 libc6-dev linux-libc-dev; do dpkg-deb -x "$(fetch_source $pkg)" "$tc/sysroot"; done
  # GCC 12's libstdc++ configuration was probed against glibc 2.36: turn off what 2.27 lacks.
  sed -E 's@^#define (_GLIBCXX_HAVE_ARC4RANDOM|_GLIBCXX_USE_PTHREAD_COND_CLOCKWAIT|_GLIBCXX_USE_PTHREAD_MUTEX_CLOCKLOCK|_GLIBCXX_USE_PTHREAD_RWLOCK_CLOCKLOCK) 1$@/* \1: not in glibc 2.27 */@' \
    "/usr/include/x86_64-linux-gnu/c++/$GCC_MAJOR/bits/c++config.h" >"$tc/include/bits/c++config.h"
  local libdirs="-L$tc/sysroot/usr/lib/x86_64-linux-gnu -L$tc/sysroot/lib/x86_64-linux-gnu"
  # gcc searches its own library directories (the host's /usr/lib/x86_64-linux-gnu among them)
  # before the sysroot's: the explicit -L puts glibc 2.27 first.
  cat >"$tc/bin/cc" <<EOF
#!/bin/sh
unset LIBRARY_PATH CPATH C_INCLUDE_PATH
exec /usr/bin/gcc-$GCC_MAJOR --sysroot=$tc/sysroot $libdirs "\$@"
EOF
  cat >"$tc/bin/c++" <<EOF
#!/bin/sh
unset LIBRARY_PATH CPATH CPLUS_INCLUDE_PATH
exec /usr/bin/g++-$GCC_MAJOR --sysroot=$tc/sysroot -isystem $tc/include $libdirs "\$@"
EOF
  chmod +x "$tc/bin/cc" "$tc/bin/c++"
  ln -sf cc "$tc/bin/gcc" && ln -sf c++ "$tc/bin/g++"
  "$tc/bin/cc" -O2 -fPIC -c "$ROOT/scripts/wheel/glibc_compat.c" -o "$tc/lib/glibc_compat.o"
  cat >"$tc/toolchain.cmake" <<EOF
# Generated by scripts/build_wheels.sh: compilers against the glibc 2.27 sysroot.
set(CMAKE_C_COMPILER $tc/bin/cc)
set(CMAKE_CXX_COMPILER $tc/bin/c++)
set(CMAKE_CUDA_HOST_COMPILER $tc/bin/c++)
set(CMAKE_SYSROOT $tc/sysroot)
# CMAKE_FIND_ROOT_PATH (the static libraries' prefix) comes from the command line.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
# libstdc++ and libgcc's helpers go inside the module; glibc_compat.o: see that file.
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libstdc++ $tc/lib/glibc_compat.o")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static-libstdc++ $tc/lib/glibc_compat.o")
EOF
}

# The zig toolchain: the ziglang wheel (pip download, checked against ZIG_WHEEL_SHA256) unpacked
# into $TOOLCHAIN/zig, cc/c++ wrappers that compile and link for x86_64 Linux with glibc
# $ZIG_GLIBC, and the CMake toolchain file. zig's global cache (libc++, libunwind, compiler-rt and
# glibc's stubs, built once for the target) stays inside the toolchain directory; its local cache
# (every object it compiles, which ccache keeps where wanted) is a temporary directory per call.
build_zig_toolchain() {
  local tc=$TOOLCHAIN whl
  rm -rf "$tc" && mkdir -p "$tc/bin"
  whl=$(fetch_zig_wheel) || return 1
  python3 -m zipfile -e "$whl" "$tc/wheel" && mv "$tc/wheel/ziglang" "$tc/zig" && rm -rf "$tc/wheel"
  chmod +x "$tc/zig/zig"
  # Without an optimisation flag zig cc compiles with UBSan traps (its Debug mode): configure
  # checks and the like are compiled without them, as any other compiler would.
  local tool
  for tool in cc c++; do
    cat >"$tc/bin/$tool" <<EOF
#!/bin/sh
unset LIBRARY_PATH CPATH C_INCLUDE_PATH CPLUS_INCLUDE_PATH
ZIG_GLOBAL_CACHE_DIR=$tc/cache
ZIG_LOCAL_CACHE_DIR=\$(mktemp -d "\${TMPDIR:-/tmp}/zarrflow-zig.XXXXXX") || exit 1
export ZIG_GLOBAL_CACHE_DIR ZIG_LOCAL_CACHE_DIR
$tc/zig/zig $tool -target x86_64-linux-gnu.$ZIG_GLIBC -fno-sanitize=undefined "\$@"
status=\$?
rm -rf "\$ZIG_LOCAL_CACHE_DIR"
exit \$status
EOF
    chmod +x "$tc/bin/$tool"
  done
  ln -sf cc "$tc/bin/gcc" && ln -sf c++ "$tc/bin/g++"
  cat >"$tc/toolchain.cmake" <<EOF
# Generated by scripts/build_wheels.sh: zig's clang for x86_64 Linux with glibc $ZIG_GLIBC.
set(CMAKE_C_COMPILER $tc/bin/cc)
set(CMAKE_CXX_COMPILER $tc/bin/c++)
# No sysroot: zig brings glibc's headers and link stubs. The host's headers and libraries (a newer
# glibc's) must not be found; CMAKE_FIND_ROOT_PATH (the static libraries) comes from the command line.
set(CMAKE_IGNORE_PATH /usr/include /usr/local/include /usr/lib /usr/lib/x86_64-linux-gnu /usr/lib64
    /usr/local/lib /lib /lib/x86_64-linux-gnu /lib64)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
EOF
}

# libc6-dev's development links are absolute (libdl.so -> /lib/x86_64-linux-gnu/libdl.so.2): inside
# the sysroot they would reach the host's glibc. Points them into the sysroot (idempotent).
fix_sysroot_links() {
  local link target
  while IFS= read -r link; do
    target=$(readlink "$link")
    ln -sfn "$TOOLCHAIN/sysroot$target" "$link"
  done < <(find "$TOOLCHAIN/sysroot" -type l -lname '/*' ! -lname "$TOOLCHAIN/*")
}

# Linux 5.15's user-space API headers over the sysroot's 4.15 ones: the store layer uses openat2
# (Linux 5.6) when the running kernel has it and falls back when it does not. Kernel headers only
# declare constants and structures, so the libraries built before them stay valid.
install_kernel_headers() {
  local stamp="$TOOLCHAIN/.kernel-headers-$(awk '$1 == "linux-headers" {print $3}' <<<"$WHEEL_SOURCES" | cut -c1-12)"
  [ -f "$stamp" ] && return 0
  rm -rf "$WORK/linux-headers" && dpkg-deb -x "$(fetch_source linux-headers)" "$WORK/linux-headers"
  cp -a "$WORK"/linux-headers/usr/include/. "$TOOLCHAIN/sysroot/usr/include/"
  rm -f "$TOOLCHAIN"/.kernel-headers-* && touch "$stamp"
}

# Each build_<name> runs inside the unpacked source with CC/CXX/CFLAGS set, installing into $DEPS.
build_zlib() {
  ./configure --static --prefix="$DEPS" >/dev/null
  make -j"$JOBS" libz.a >/dev/null && make install >/dev/null
}
build_bzip2() {
  make -j"$JOBS" libbz2.a CC="$CC" CFLAGS="$CFLAGS -D_FILE_OFFSET_BITS=64" >/dev/null
  install -m644 libbz2.a "$DEPS/lib/" && install -m644 bzlib.h "$DEPS/include/"
}
build_xz() {
  ./configure --prefix="$DEPS" --disable-shared --enable-static --disable-xz --disable-xzdec \
    --disable-lzmadec --disable-lzmainfo --disable-lzma-links --disable-scripts --disable-doc \
    --disable-nls >/dev/null
  make -j"$JOBS" >/dev/null && make install >/dev/null
}
build_zstd() {
  make -C lib -j"$JOBS" libzstd.a-mt >/dev/null
  make -C lib install-static install-includes install-pc PREFIX="$DEPS" >/dev/null
}
build_lz4() {
  make -C lib -j"$JOBS" liblz4.a >/dev/null
  make -C lib install PREFIX="$DEPS" BUILD_SHARED=no >/dev/null
}
build_deflate() {
  # zig's clang 22 has no evex512 target feature, which libdeflate 1.23 adds to its AVX-512
  # functions' target attributes for clang >= 18 unless __EVEX512__ is defined.
  [ "$WHEEL_TOOLCHAIN" != zig ] || CFLAGS="$CFLAGS -D__EVEX512__"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$DEPS" \
    -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DLIBDEFLATE_BUILD_SHARED_LIB=OFF -DLIBDEFLATE_BUILD_GZIP=OFF >/dev/null
  cmake --build build -j"$JOBS" >/dev/null && cmake --install build >/dev/null
}
build_isal() {
  make -f Makefile.unx -j"$JOBS" lib CC="$CC" >/dev/null
  mkdir -p "$DEPS/include/isa-l"
  install -m644 bin/isa-l.a "$DEPS/lib/libisal.a"
  install -m644 include/*.h "$DEPS/include/isa-l/"
  install -m644 isa-l.h "$DEPS/include/" 2>/dev/null || true
  cat >"$DEPS/lib/pkgconfig/libisal.pc" <<EOF
prefix=$DEPS
Name: libisal
Description: Intel(R) ISA-L
Version: 2.31.1
Libs: -L\${prefix}/lib -lisal
Cflags: -I\${prefix}/include
EOF
}
build_blosc() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$DEPS" \
    -DCMAKE_PREFIX_PATH="$DEPS" -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED=OFF \
    -DBUILD_STATIC=ON -DBUILD_TESTS=OFF -DBUILD_FUZZERS=OFF -DBUILD_BENCHMARKS=OFF \
    -DDEACTIVATE_SNAPPY=ON -DPREFER_EXTERNAL_LZ4=ON -DPREFER_EXTERNAL_ZSTD=ON \
    -DPREFER_EXTERNAL_ZLIB=ON >/dev/null
  cmake --build build -j"$JOBS" >/dev/null && cmake --install build >/dev/null
  # blosc.pc names only -lblosc: its codecs (external here) are needed by a static link too.
  sed -i 's/^Requires.private:.*//; s/^Libs: .*/& -lzstd -llz4 -lz -lpthread/' "$DEPS/lib/pkgconfig/blosc.pc"
}
build_openssl() {
  # libcrypto and libssl only (no apps, no engines or loadable modules); OPENSSLDIR /etc/ssl is
  # where Debian, Ubuntu and SUSE keep their CA certificates (RHEL's are found at run time, see
  # the store's HTTP client).
  ./Configure linux-x86_64 --prefix="$DEPS" --libdir=lib --openssldir=/etc/ssl no-shared \
    no-module no-engine no-tests no-legacy no-comp no-ssl3 no-dtls no-srp no-idea no-rc5 \
    no-md2 no-mdc2 no-whirlpool no-seed no-camellia no-aria no-sm2 no-sm3 no-sm4 no-gost \
    no-afalgeng no-ui-console no-quic no-docs >/dev/null
  make -j"$JOBS" build_libs >/dev/null && make install_dev >/dev/null
}
build_curl() {
  # HTTP(S) only: S3, GCS and plain HTTPS stores need nothing else.
  ./configure --prefix="$DEPS" --disable-shared --enable-static --with-openssl="$DEPS" \
    --with-zlib="$DEPS" --with-ca-fallback --without-ca-bundle --without-ca-path \
    --without-libpsl --without-libidn2 --without-nghttp2 --without-nghttp3 --without-ngtcp2 \
    --without-brotli --without-zstd --without-libssh2 --without-libssh --without-librtmp \
    --without-gssapi --without-libgsasl --disable-ldap --disable-ldaps \
    --disable-rtsp --disable-dict --disable-telnet --disable-tftp --disable-pop3 \
    --disable-imap --disable-smb --disable-smtp --disable-gopher --disable-mqtt --disable-ftp \
    --disable-manual --disable-docs --disable-ntlm --disable-alt-svc --disable-hsts \
    --disable-websockets --enable-threaded-resolver >/dev/null
  make -j"$JOBS" -C lib >/dev/null && make -C lib install >/dev/null
  make -C include install >/dev/null && install -m644 libcurl.pc "$DEPS/lib/pkgconfig/"
}

build_json() {
  # Header-only; its CMake package, for find_package(nlohmann_json) (the host's /usr/include is
  # not seen through the sysroot).
  cmake -S . -B build -G Ninja -DCMAKE_INSTALL_PREFIX="$DEPS" -DJSON_BuildTests=OFF \
    -DJSON_Install=ON >/dev/null
  cmake --install build >/dev/null
}

build_flatbuffers() {
  # Header-only: the Icechunk readers only verify and read buffers (no libflatbuffers).
  rm -rf "$DEPS/include/flatbuffers" && cp -a include/flatbuffers "$DEPS/include/"
}

# A hash of what makes library $1: its source line and its build function.
recipe_hash() {
  { awk -v n="$1" '$1 == n' <<<"$WHEEL_SOURCES"; declare -f "build_$1"; } | sha1sum | cut -c1-12
}

# The toolchain's hash: the sysroot's packages, build_toolchain and glibc_compat.c (GCC); the
# ziglang wheel and build_zig_toolchain (zig).
toolchain_hash() {
  if [ "$WHEEL_TOOLCHAIN" = zig ]; then
    { echo "$ZIG_VERSION $ZIG_WHEEL_SHA256 $ZIG_GLIBC"; declare -f build_zig_toolchain; } |
      sha1sum | cut -c1-12
    return
  fi
  { for p in libc6 libc6-dev linux-libc-dev; do awk -v n="$p" '$1 == n' <<<"$WHEEL_SOURCES"; done
    declare -f build_toolchain; cat "$ROOT/scripts/wheel/glibc_compat.c"; } | sha1sum | cut -c1-12
}

# The static libraries' hash: the toolchain's, every library's recipe, the kernel headers and
# build_deps. Checkouts with other recipes build into another directory instead of over this one.
deps_hash() {
  { toolchain_hash; for name in $WHEEL_DEPS; do recipe_hash "$name"; done
    awk '$1 == "linux-headers"' <<<"$WHEEL_SOURCES"; declare -f build_deps; } | sha1sum | cut -c1-12
}

# Builds every dependency missing from $DEPS (a stamp per library: an interrupted build resumes).
build_deps() {
  mkdir -p "$DEPS/lib/pkgconfig" "$DEPS/include" "$WORK"
  local name t0 stamp
  for name in $WHEEL_DEPS; do
    stamp="$DEPS/.built-$name-$(recipe_hash "$name")"
    [ -f "$stamp" ] && continue
    t0=$(date +%s)
    (
      set -e
      export CC="$TOOLCHAIN/bin/cc" CXX="$TOOLCHAIN/bin/c++" CFLAGS="-O2 -fPIC" \
        CXXFLAGS="-O2 -fPIC" PKG_CONFIG_LIBDIR="$DEPS/lib/pkgconfig" PKG_CONFIG_PATH=
      enter_source "$name"
      "build_$name"
    ) >"$WORK/$name.log" 2>&1 || { echo "building $name failed: see $WORK/$name.log" >&2; tail -20 "$WORK/$name.log" >&2; return 1; }
    rm -f "$DEPS/.built-$name"-* && touch "$stamp"
    echo "  $name: $(( $(date +%s) - t0 )) s"
  done
}
