#!/usr/bin/env bash
# redcoll-tune's tuning file: without hosts an entry of three numbers; with
# hosts (threads pretending hosts of 2, --ranks-per-host) five, the path
# between hosts and the one inside; a second run replaces its transport's
# line and keeps the others.  test_select test_tuning_local reads such a
# line back.
set -u
tune=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }
num='[0-9][0-9.e+-]*'

"$tune" --iters 1 --out "$tmp/f" 2>"$tmp/err" || die "exit status $? ($(cat "$tmp/err"))"
grep -Eq "^threads $num $num $num\$" "$tmp/f" || die "no entry of three numbers: $(cat "$tmp/f")"
echo "tcp 3e-05 1e-09 2.5e-10" >>"$tmp/f"
"$tune" --iters 1 --ranks-per-host 2 --out "$tmp/f" 2>"$tmp/err" || die "exit status $? ($(cat "$tmp/err"))"
[ "$(grep -c '^threads ' "$tmp/f")" -eq 1 ] || die "not one threads line: $(cat "$tmp/f")"
grep -Eq "^threads $num $num $num $num $num\$" "$tmp/f" || die "no entry of five numbers: $(cat "$tmp/f")"
grep -q '^tcp 3e-05 1e-09 2.5e-10$' "$tmp/f" || die "the tcp line was lost"
grep -q 'between hosts (ranks 0 and 2)' "$tmp/err" || die "pair between hosts: $(cat "$tmp/err")"
grep -q 'inside a host (ranks 0 and 1)' "$tmp/err" || die "pair inside a host: $(cat "$tmp/err")"
"$tune" --ranks-per-host -1 2>/dev/null && die "--ranks-per-host -1 accepted"
exit $fail
