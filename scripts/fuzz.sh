#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (AddressSanitizer and
# UBSan) and runs each for a bounded time on a copy of its seed corpus
# (fuzz/corpus/<target>/).  Installs clang with apt-get when it is missing.
#
#   scripts/fuzz.sh [seconds per target, default 20] [build dir, default build-fuzz]
#
# Exits non-zero if a target fails to build or finds a crash; the crashing
# input is left in the build dir (crash-*).
set -euo pipefail
secs="${1:-20}"
out="${2:-build-fuzz}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if ! command -v clang >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends clang
fi
uv_cflags="$(pkg-config --cflags libuv 2>/dev/null || true)"
mkdir -p "$out"
for src in "$root"/fuzz/fuzz_*.c; do
  name="$(basename "$src" .c)"
  target="${name#fuzz_}"
  echo "== $name: building"
  # shellcheck disable=SC2086
  clang -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" -I"$root/src/base" -I"$root/src" $uv_cflags \
    "$src" "$root/src/transport/tcp/wire.c" -o "$out/$name"
  corpus="$out/corpus-$target"
  mkdir -p "$corpus"
  cp -n "$root/fuzz/corpus/$target"/* "$corpus"/ 2>/dev/null || true
  echo "== $name: running ${secs}s"
  (cd "$out" && "./$name" -max_total_time="$secs" -print_final_stats=1 "corpus-$target" \
     2>&1 | tail -n 12)
  test "${PIPESTATUS[0]}" -eq 0
done
echo "fuzz: all targets ran ${secs}s without a finding"
