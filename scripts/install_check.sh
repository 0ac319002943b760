#!/usr/bin/env bash
# Checks redcoll as another project sees it:
#  1. installed to a temporary prefix: pkg-config alone (with only redcoll's
#     .pc visible, so that libuv's and libsodium's are not needed) builds
#     the threads example (and, with a C++ compiler, the C++ word count
#     through the installed redcoll.hpp), which then runs without
#     LD_LIBRARY_PATH; the
#     installed redcoll-bench runs too (it finds the library by its rpath);
#  2. as a Meson subproject of a small parent project with the tests,
#     examples, benchmarks and tools off: the parent builds and runs, and
#     installing the parent installs nothing of redcoll.
# Exits non-zero on the first failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
step() { echo "== install_check: $*"; }

step "install to a temporary prefix"
meson setup "$tmp/build" "$root" --prefix "$tmp/prefix" -Dtests=false -Dexamples=false \
  -Dbench=false > "$tmp/setup.log"
ninja -C "$tmp/build" > "$tmp/ninja.log"
meson install -C "$tmp/build" --quiet
pc="$(find "$tmp/prefix" -name redcoll.pc)"
[ -n "$pc" ] || { echo "no redcoll.pc installed"; exit 1; }

step "build an example with pkg-config alone"
# PKG_CONFIG_LIBDIR hides every other .pc file: redcoll's must stand alone.
export PKG_CONFIG_LIBDIR="$(dirname "$pc")"
cflags="$(pkg-config --cflags redcoll)"
libs="$(pkg-config --libs redcoll)"
libdir="$(pkg-config --variable=libdir redcoll)"
pkg-config --static --libs redcoll > /dev/null
# shellcheck disable=SC2086
cc -std=c11 $cflags "$root/examples/threads_allreduce.c" -o "$tmp/app" $libs -Wl,-rpath,"$libdir"
unset PKG_CONFIG_LIBDIR
env -u LD_LIBRARY_PATH "$tmp/app" > "$tmp/app.out"
grep -q verified "$tmp/app.out" || { cat "$tmp/app.out"; exit 1; }

if command -v c++ > /dev/null; then
  step "build the C++ example with pkg-config alone"
  export PKG_CONFIG_LIBDIR="$(dirname "$pc")"
  # shellcheck disable=SC2086
  c++ -std=c++17 $cflags "$root/examples/wordcount.cpp" -o "$tmp/wc" $libs -Wl,-rpath,"$libdir"
  unset PKG_CONFIG_LIBDIR
  env -u LD_LIBRARY_PATH "$tmp/wc" > "$tmp/wc.out" || { cat "$tmp/wc.out"; exit 1; }
fi

step "run the installed redcoll-bench"
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/redcoll-bench" --np 3 --sizes 8:64 --iters 2 \
  --warmup 1 > "$tmp/bench.out"
grep -q '^redcoll,allreduce,3,' "$tmp/bench.out" || { cat "$tmp/bench.out"; exit 1; }

step "use it as a Meson subproject"
mkdir -p "$tmp/parent/subprojects"
ln -s "$root" "$tmp/parent/subprojects/redcoll"
cp "$root/examples/threads_allreduce.c" "$tmp/parent/app.c"
cat > "$tmp/parent/meson.build" <<'EOF'
project('parent', 'c', default_options: ['c_std=c11'])
redcoll_dep = dependency('redcoll', fallback: ['redcoll', 'redcoll_dep'])
executable('app', 'app.c', dependencies: redcoll_dep, install: true)
EOF
meson setup "$tmp/parent/build" "$tmp/parent" --prefix /usr -Dredcoll:tests=false \
  -Dredcoll:examples=false -Dredcoll:bench=false -Dredcoll:tools=false > "$tmp/psetup.log"
ninja -C "$tmp/parent/build" > "$tmp/pninja.log"
if [ -e "$tmp/parent/build/subprojects/redcoll/tools/redcoll-sim" ]; then
  echo "tools were built with -Dredcoll:tools=false"
  exit 1
fi
"$tmp/parent/build/app" | grep -q verified
DESTDIR="$tmp/dest" meson install -C "$tmp/parent/build" --quiet
extra="$(cd "$tmp/dest" && find . -type f ! -path './usr/bin/app')"
if [ -n "$extra" ]; then
  echo "installing the parent also installed: $extra"
  exit 1
fi
step "all good"
