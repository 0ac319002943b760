#!/usr/bin/env bash
# A longer soak than the test suite's: tests/test_soak under AddressSanitizer
# and UndefinedBehaviorSanitizer (build-soak-asan, or $BUILD) for several
# seeds.  Stops at the first failing seed and prints how to rerun it.
#
#   scripts/soak.sh                 # 5 random seeds, default iteration counts
#   scripts/soak.sh 1 2 0x5eed2026  # these seeds
#   ITERS=20000 TCP_ITERS=500 scripts/soak.sh
#   BUILD=build scripts/soak.sh     # an existing build, no sanitizers
#
# The TCP part needs a build with -DREDCOLL_TEST_TCP (set up here when the
# directory is new).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD:-build-soak-asan}
if [ ! -d "$dir" ]; then
  meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dexamples=false -Dbench=false -Dc_args=-DREDCOLL_TEST_TCP || exit 2
fi
ninja -C "$dir" tests/test_soak || exit 2
seeds=("$@")
if [ ${#seeds[@]} -eq 0 ]; then
  for _ in 1 2 3 4 5; do seeds+=("$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')"); done
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for s in "${seeds[@]}"; do
  echo "== seed $s"
  if ! REDCOLL_SOAK_SEED=$s REDCOLL_SOAK_ITERS=${ITERS:-4000} REDCOLL_SOAK_TCP_ITERS=${TCP_ITERS:-150} \
      "$dir/tests/test_soak"; then
    echo "soak.sh: seed $s FAILED; rerun: REDCOLL_SOAK_SEED=$s REDCOLL_SOAK_ITERS=${ITERS:-4000}" \
      "REDCOLL_SOAK_TCP_ITERS=${TCP_ITERS:-150} $dir/tests/test_soak" >&2
    exit 1
  fi
done
echo "soak.sh: ${#seeds[@]} seed(s) passed"
