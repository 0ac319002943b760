#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang (AddressSanitizer and
# UBSan) and runs each for a bounded time on a copy of its seed corpus
# (fuzz/corpus/<target>/): the TCP frame header, the connection set-up, the
# address and host-list parsers, the push transport's message header, and
# the tuning-file parser.  Installs clang with apt-get when it is missing.
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
# What each target is linked with besides its own file.
sources() {
  local tcp="$root/src/transport/tcp"
  case "$1" in
    addr) echo "$tcp/wire.c $tcp/addr.c $tcp/config.c $root/src/base/log.c $root/src/base/env.c" ;;
    push) echo "$root/src/transport/push/frame.c" ;;
    tuning) echo "$root/src/core/select/tuning.c $root/src/base/log.c $root/src/base/env.c" ;;
    *) echo "$tcp/wire.c" ;;
  esac
}
libs() {
  case "$1" in
    addr) pkg-config --libs libuv 2>/dev/null || echo -luv ;;
  esac
}
mkdir -p "$out"
for src in "$root"/fuzz/fuzz_*.c; do
  name="$(basename "$src" .c)"
  target="${name#fuzz_}"
  echo "== $name: building"
  # shellcheck disable=SC2086
  clang -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$root/include" -I"$root/src/base" -I"$root/src" -I"$root/src/core" $uv_cflags \
    "$src" $(sources "$target") -o "$out/$name" $(libs "$target")
  corpus="$out/corpus-$target"
  mkdir -p "$corpus"
  cp -n "$root/fuzz/corpus/$target"/* "$corpus"/ 2>/dev/null || true
  echo "== $name: running ${secs}s"
  (cd "$out" && "./$name" -max_total_time="$secs" -print_final_stats=1 "corpus-$target" \
     2>&1 | tail -n 12)
  test "${PIPESTATUS[0]}" -eq 0
done
echo "fuzz: all targets ran ${secs}s without a finding"
