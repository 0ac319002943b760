#!/usr/bin/env bash
# The redcoll-sim command-line contract: one verified JSON line per p, the
# exit status, identical traces for one seed, and a dot graph that renders;
# lists and ranges of p and count, --algo all and lists, --format csv.
set -u
sim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }

"$sim" --coll allreduce --algo linear --p 1-64 --count 37 --op noncomm >"$tmp/out" || die "exit status $?"
[ "$(wc -l <"$tmp/out")" -eq 64 ] || die "expected 64 lines, got $(wc -l <"$tmp/out")"
[ "$(grep -c '"ok":true' "$tmp/out")" -eq 64 ] || die "not every line ok"
for key in coll algo p count bytes ok time max_bytes_sent max_bytes_recv max_bytes_reduced msgs; do
  grep -q "\"$key\":" "$tmp/out" || die "missing key $key"
done

"$sim" --coll allreduce --algo linear --p 13 --count 37 --seed 5 --trace "$tmp/t1" >/dev/null || die "trace run 1"
"$sim" --coll allreduce --algo linear --p 13 --count 37 --seed 5 --trace "$tmp/t2" >/dev/null || die "trace run 2"
[ -s "$tmp/t1" ] || die "empty trace"
cmp -s "$tmp/t1" "$tmp/t2" || die "traces of one seed differ"
[ "$(wc -l <"$tmp/t1")" -eq 24 ] || die "linear allreduce on 13 ranks sends 24 messages, trace has $(wc -l <"$tmp/t1") lines"

# gather and scatter through the public API, in place at the root and not
for coll in gather scatter; do
  "$sim" --coll $coll --algo circulant --p 2-64 --root 1 --count 5 >"$tmp/g" || die "$coll exit status $?"
  "$sim" --coll $coll --algo circulant --p 2-64 --root 1 --count 5 --in-place >>"$tmp/g" || die "$coll in place"
  "$sim" --coll $coll --algo linear --p 1-9 --root all --count 3 --in-place >>"$tmp/g" || die "$coll linear"
  [ "$(grep -c '"ok":true' "$tmp/g")" -eq 171 ] || die "$coll: expected 171 ok lines, got $(grep -c '"ok":true' "$tmp/g")"
done

# Lists: a line for each p, then each count, then each algorithm; CSV has a
# header and the same keys, the error column empty when ok.
"$sim" --coll allreduce --algo linear,ring --p 3,5 --count 1-2 --format csv >"$tmp/csv" || die "csv exit status $?"
cat >"$tmp/csv.want" <<'EOF'
coll,algo,requested,p,count,dtype,op,root,in_place,bytes,ok,status,time,rounds,max_bytes_sent,max_bytes_recv,max_bytes_reduced,msgs,max_host_bytes_out,model_time,error
allreduce,linear,linear,3,1,float64,sum,0,false,8,true,REDCOLL_OK,4,4,16,16,16,4,16,4,
allreduce,ring,ring,3,1,float64,sum,0,false,8,true,REDCOLL_OK,4,4,16,16,16,12,16,4,
allreduce,linear,linear,3,2,float64,sum,0,false,16,true,REDCOLL_OK,4,4,32,32,32,4,32,4,
allreduce,ring,ring,3,2,float64,sum,0,false,16,true,REDCOLL_OK,4,4,24,24,16,12,24,4,
allreduce,linear,linear,5,1,float64,sum,0,false,8,true,REDCOLL_OK,8,8,32,32,32,8,32,8,
allreduce,ring,ring,5,1,float64,sum,0,false,8,true,REDCOLL_OK,8,8,16,32,32,40,16,8,
allreduce,linear,linear,5,2,float64,sum,0,false,16,true,REDCOLL_OK,8,8,64,64,64,8,64,8,
allreduce,ring,ring,5,2,float64,sum,0,false,16,true,REDCOLL_OK,8,8,32,40,32,40,32,8,
EOF
diff "$tmp/csv.want" "$tmp/csv" >&2 || die "--format csv with lists of p, count and algo"
[ "$("$sim" --coll allreduce --algo linear --p 5 --count 2)" = '{"coll":"allreduce","algo":"linear","requested":"linear","p":5,"count":2,"dtype":"float64","op":"sum","root":0,"in_place":false,"bytes":16,"ok":true,"status":"REDCOLL_OK","time":8,"rounds":8,"max_bytes_sent":64,"max_bytes_recv":64,"max_bytes_reduced":64,"msgs":8,"max_host_bytes_out":64,"model_time":8}' ] \
  || die "the JSON line of a run differs from its CSV row"
# Two hosts of two ranks: linear allreduce, root 0 takes from 1 (inside its
# host, local alpha 0.5), 2 and 3 (alpha 1), then sends back: 5; each host
# sends 16 bytes to the other while rank 0 sends 24.
h=$("$sim" --coll allreduce --algo linear --p 4 --count 1 --ranks-per-host 2 --local-alpha 0.5 | grep -o '"time.*')
[ "$h" = '"time":5,"rounds":6,"max_bytes_sent":24,"max_bytes_recv":24,"max_bytes_reduced":24,"msgs":6,"max_host_bytes_out":16,"model_time":6}' ] \
  || die "--ranks-per-host 2 --local-alpha 0.5: $h"
# Geometric ranges with K suffixes, steps, and --algo all with its skips.
pc=$("$sim" --coll allreduce --algo recursive_doubling --p 2-8:x2,11-17:+6 --count 8-1K:x8 |
  grep -o '"p":[0-9]*,"count":[0-9]*' | tr '\n' ' ')
[ "$pc" = '"p":2,"count":8 "p":2,"count":64 "p":2,"count":512 "p":4,"count":8 "p":4,"count":64 "p":4,"count":512 "p":8,"count":8 "p":8,"count":64 "p":8,"count":512 "p":11,"count":8 "p":11,"count":64 "p":11,"count":512 "p":17,"count":8 "p":17,"count":64 "p":17,"count":512 ' ] \
  || die "ranges of p and count: $pc"
algos() { "$sim" "$@" | grep -o '"requested":"[a-z0-9_]*"' | cut -d'"' -f4 | tr '\n' ' '; }
a=$(algos --coll bcast --algo all --p 4 --count 2 --root 1)
[ "$a" = "linear binary_tree circulant two_level " ] || die "bcast --algo all: $a"
a=$(algos --coll allreduce --algo auto,all,linear --p 5 --count 3 --op noncomm)
[ "$a" = "auto linear binary_tree recursive_doubling halving_doubling binary_blocks elimination elimination_nonoverlap elimination_2to1 elimination_rings allgather_reduce ring_sequential two_level " ] \
  || die "--algo auto,all with noncomm skips the commutative-only ones, once each: $a"
a=$(algos --coll allreduce --algo all --p 5 --count 3 --op sumrandom)
case " $a" in *" circulant "*) die "--algo all with sumrandom keeps circulant (its ranks may differ)";; esac
for bad in 3-2 1,,2 0-8:x2 1-8:+0 1-8:y2 5Q 2-; do
  "$sim" --coll allreduce --algo linear --p 2 --count "$bad" >/dev/null 2>&1
  [ $? -eq 2 ] || die "--count $bad must exit 2"
done
"$sim" --coll allreduce --algo linear --p 2 --count 1 --format xml >/dev/null 2>&1
[ $? -eq 2 ] || die "--format xml must exit 2"
"$sim" --coll allreduce --algo linear,ring --p 4 --count 1 --dot "$tmp/x.dot" >/dev/null 2>&1
[ $? -eq 2 ] || die "--dot with two algorithms must exit 2"

"$sim" --coll allreduce --algo nonexistent --p 4 --count 1 >/dev/null 2>&1
[ $? -eq 2 ] || die "unknown algorithm must exit 2"
"$sim" --coll reduce --algo binary_tree --p 5 --count 3 --root 9 >/dev/null 2>&1
[ $? -ne 0 ] || die "root out of range must fail"

"$sim" --coll reduce --algo binary_tree --p 7 --count 10 --dot "$tmp/g.dot" >/dev/null || die "dot run"
grep -q digraph "$tmp/g.dot" || die "no digraph in dot output"
# The rank x round picture: recursive doubling on 4 ranks is 2 rounds of 4
# messages: 8 arrows, 3 columns (start, round 1, round 2) of 4 rank nodes.
"$sim" --coll allreduce --algo recursive_doubling --p 4 --count 8 --dot-rounds "$tmp/r.dot" \
  >/dev/null || die "dot-rounds run"
[ "$(grep -c -- ' -> ' "$tmp/r.dot")" -eq 8 ] || die "dot-rounds: expected 8 arrows"
[ "$(grep -c '^  n[0-9]*_[0-9]* \[' "$tmp/r.dot")" -eq 12 ] || die "dot-rounds: expected 12 rank nodes"
grep -q 'label="round 2"' "$tmp/r.dot" || die "dot-rounds: no round 2 column"
grep -q 'n0_1 -> n2_2' "$tmp/r.dot" || die "dot-rounds: rank 0 does not send to rank 2 in round 2"
"$sim" --coll allreduce --algo linear --p 2-3 --count 8 --dot-rounds "$tmp/r2.dot" >/dev/null 2>&1 \
  && die "dot-rounds accepted a range of p"
if command -v neato >/dev/null 2>&1; then
  neato -n2 -Tsvg "$tmp/r.dot" -o "$tmp/r.svg" 2>"$tmp/neato.err" || die "neato -n2 failed"
  [ -s "$tmp/neato.err" ] && die "neato warned: $(cat "$tmp/neato.err")"
fi
if command -v dot >/dev/null 2>&1; then
  dot -Tsvg "$tmp/g.dot" >"$tmp/g.svg" || die "dot -Tsvg failed"
  grep -q "<svg" "$tmp/g.svg" || die "no svg produced"
else
  echo "graphviz not installed: the dot graph was checked for 'digraph' only"
fi
[ $fail -eq 0 ] && echo "sim_cli: all checks passed"
exit $fail
