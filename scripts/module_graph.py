#!/usr/bin/env python3
"""Prints the graph of which object files of the library call which (from nm
on the objects of a build: the core's, in the internal library, and each
transport's) and every cycle in it; exits 1 if there is a cycle, 2 if no
object was found.

    python3 scripts/module_graph.py build
"""
import glob, os, subprocess, sys, collections
build = sys.argv[1] if len(sys.argv) > 1 else 'build'
objs = [o for o in glob.glob(os.path.join(build, '**', '*.o'), recursive=True)
        if 'redcoll_internal.a.p' in o or 'redcoll_mock.a.p' in o or 'redcoll_threads.a.p' in o or 'redcoll_tcp.a.p' in o]
defs, undefs = {}, collections.defaultdict(set)
def name(o):
    b = os.path.basename(o)[:-2]
    return b.replace('src_', '').replace('core_', '').replace('transport_', '')
for o in objs:
    out = subprocess.run(['nm', o], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDBR':
            defs[parts[2]] = name(o)
        elif len(parts) == 2 and parts[0] == 'U':
            undefs[name(o)].add(parts[1])
edges = collections.defaultdict(set)
for m, syms in undefs.items():
    for s in syms:
        if s in defs and defs[s] != m:
            edges[m].add(defs[s])
mods = sorted(set(defs.values()) | set(undefs))
if not mods:
    sys.exit('module_graph: no object files of the library under ' + build)
for m in mods:
    print(m, '->', ' '.join(sorted(edges[m])))
# Tarjan's strongly connected components
index, low, stack, on, sccs, i = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = i[0]; i[0] += 1; stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v: break
        if len(c) > 1: sccs.append(sorted(c))
for v in mods:
    if v not in index: visit(v)
for c in sccs: print('cycle:', ' '.join(c))
sys.exit(1 if sccs else 0)
