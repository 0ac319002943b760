#!/usr/bin/env bash
# Redraws the communication graphs of docs/algorithms/graphs/ with
# `redcoll-sim --dot` and Graphviz: every allreduce algorithm for p = 5, 6, 7,
# 11 and 13, every other collective's algorithms for p = 7.  Each graph has
# the ranks as nodes and every message as an edge labelled with its round and
# its bytes (count 8 doubles per rank block, so labels stay short).
#   usage: scripts/render_graphs.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sim=$build/tools/redcoll-sim
[ -x "$sim" ] || { echo "build first: $sim is missing" >&2; exit 1; }
if ! command -v dot >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq graphviz >/dev/null
  else
    echo "needs Graphviz: apt-get install graphviz" >&2; exit 1
  fi
fi
out=docs/algorithms/graphs
mkdir -p "$out"
algos="linear binary_tree recursive_doubling halving_doubling binary_blocks ring elimination
       elimination_nonoverlap elimination_2to1 elimination_rings allgather_reduce ring_sequential
       circulant circulant_rsag dissemination"
draw() { # coll algo p count
  local f=$out/$1-$2-p$3
  if "$sim" --coll "$1" --algo "$2" --p "$3" --count "$4" --op sum --dot "$f.dot" >/dev/null 2>&1; then
    dot -Tsvg "$f.dot" -o "$f.svg"
    rm -f "$f.dot"
    echo "$f.svg"
  else
    rm -f "$f.dot"   # the collective does not implement this algorithm
  fi
}
for a in $algos; do
  for p in 5 6 7 11 13; do draw allreduce "$a" "$p" 8; done
done
for c in reduce reduce_scatter_block allgather bcast gather scatter barrier; do
  for a in $algos; do draw "$c" "$a" 7 8; done
done
