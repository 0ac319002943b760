#!/usr/bin/env bash
# redcoll-bench: REDCOLL_ALGO_<COLL> from the environment is what runs when
# --algo is not given (it used to be overridden by AUTO), --algo wins over
# it, the half-precision dtypes run with their results checked, and scan,
# exscan, exscan_total and alltoall run with every algorithm,
# --settle-ms is parsed and honoured, and --slow-op reduces with its user
# operator, results checked, with every algorithm of every reduction.
set -u
bench=$1
fail=0
die() { echo "FAIL: $*"; fail=1; }
run() { "$bench" --np 3 --sizes 8:4K --factor 8 --iters 2 --warmup 1 --no-header "$@"; }

out=$(REDCOLL_ALGO_ALLREDUCE=ring run) || die "env run: exit $?"
[ "$(echo "$out" | cut -d, -f9 | sort -u)" = "ring" ] || die "REDCOLL_ALGO_ALLREDUCE=ring ran: $out"
out=$(REDCOLL_ALGO_ALLREDUCE=ring run --algo linear) || die "--algo run: exit $?"
[ "$(echo "$out" | cut -d, -f9 | sort -u)" = "linear" ] || die "--algo linear ran: $out"
for dt in f16 bf16; do
  out=$(run --dtype "$dt" --algo all) || die "$dt: exit $?"
  [ "$(echo "$out" | wc -l)" -ge 40 ] || die "$dt: too few lines: $out"
  out=$(run --dtype "$dt" --coll reduce_scatter_block) || die "$dt reduce_scatter_block: exit $?"
done
# the prefix collectives and alltoall, every algorithm, results checked
for coll in scan exscan exscan_total alltoall; do
  out=$(run --coll "$coll" --algo all) || die "$coll: exit $?"
  [ "$(echo "$out" | grep -c "^redcoll,$coll,3,")" -ge 8 ] || die "$coll: too few lines: $out"
done
out=$(REDCOLL_ALGO_SCAN=transpose run --coll scan) || die "REDCOLL_ALGO_SCAN: exit $?"
[ "$(echo "$out" | cut -d, -f9 | sort -u)" = "transpose" ] || die "REDCOLL_ALGO_SCAN=transpose ran: $out"
# the point-to-point path: pairs exchange (or send one way), results checked
for coll in sendrecv send; do
  out=$(run --coll "$coll") || die "$coll: exit $?"
  [ "$(echo "$out" | grep -c "^redcoll,$coll,3,.*,-$")" -eq 4 ] || die "$coll: $out"
done
run --dtype f8 > /dev/null 2>&1 && die "an unknown dtype was accepted"
# the first point's settling warm-up: a duration in ms, 0 turns it off; it
# takes as long as asked (at least 300 ms here), and the ranks agree on it
run --settle-ms x > /dev/null 2>&1 && die "--settle-ms x was accepted"
t0=$(date +%s%N)
out=$(run --settle-ms 300 --sizes 8:8) || die "--settle-ms 300: exit $?"
t1=$(date +%s%N)
[ $(( (t1 - t0) / 1000000 )) -ge 300 ] || die "--settle-ms 300 took $(( (t1 - t0) / 1000000 )) ms"
[ "$(echo "$out" | wc -l)" -eq 1 ] || die "--settle-ms 300: $out"
out=$(run --settle-ms 0) || die "--settle-ms 0: exit $?"
# the slow user operator (float32 only): exact sums, every reduction
for coll in allreduce reduce reduce_scatter_block scan exscan exscan_total; do
  out=$(run --slow-op 3 --coll "$coll" --algo all) || die "--slow-op $coll: exit $?"
  [ "$(echo "$out" | grep -c "^redcoll,$coll,3,")" -ge 4 ] || die "--slow-op $coll: $out"
done
run --slow-op 0 > /dev/null 2>&1 && die "--slow-op 0 was accepted"
run --slow-op 2 --dtype f64 > /dev/null 2>&1 && die "--slow-op with f64 was accepted"
[ $fail -eq 0 ] && echo "bench_cli: ok"
exit $fail
