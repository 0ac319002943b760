#!/usr/bin/env bash
# redcoll-run --bind: rank r runs on exactly the (r mod n)-th CPU that
# redcoll-run itself may use; without --bind every rank keeps them all.
set -u
run=$1
fail=0
die() { echo "FAIL: $*"; fail=1; }
# The CPUs this script may use, in order (expanding ranges like 0-3,6).
cpus=()
for part in $(grep '^Cpus_allowed_list' /proc/self/status | cut -f2 | tr ',' ' '); do
  if [[ $part == *-* ]]; then cpus+=($(seq "${part%-*}" "${part#*-}")); else cpus+=("$part"); fi
done
n=${#cpus[@]}
[ "$n" -ge 1 ] || die "no CPUs in /proc/self/status"
p=$((n + 3))
out=$("$run" -n "$p" --bind -- bash -c 'echo "$(grep ^Cpus_allowed_list /proc/self/status | cut -f2)"') ||
  die "redcoll-run --bind exited with $?"
for ((r = 0; r < p; r++)); do
  want=${cpus[$((r % n))]}
  got=$(grep "^\[$r\] " <<<"$out" | cut -d' ' -f2)
  [ "$got" = "$want" ] || die "rank $r on CPUs '$got', expected '$want'"
done
all=$(grep '^Cpus_allowed_list' /proc/self/status | cut -f2)
out=$("$run" -n 2 -- bash -c 'echo "$(grep ^Cpus_allowed_list /proc/self/status | cut -f2)"') ||
  die "redcoll-run exited with $?"
[ "$(grep -c " $all\$" <<<"$out")" -eq 2 ] || die "without --bind: '$out', expected '$all' twice"
[ $fail -eq 0 ] && echo "ok: $p ranks bound round-robin over $n CPUs"
exit $fail
