#!/usr/bin/env python3
"""The circulant-graph collectives under the simulator (redcoll-sim).

usage: scripts/circulant_table.py [--sim PATH] COMMAND [ARGS]
  table           Table I recomputed (markdown) for p = 11, 100, 1000.
  doc [FILE]      writes the table and the p = 11 graphs into FILE (default
                  docs/algorithms/circulant.md) between its "generated begin"
                  and "generated end" markers, and the graphs next to it
                  (circulant-p11-graph.{dot,svg}, circulant-p11-rounds.{dot,svg};
                  SVGs need graphviz).
The sweeps of the must-shows (rounds, volumes, ok, the performance
guidelines) are in scripts/circulant_sweep.py.
Only the Python standard library is used.
"""
import math
import os
import subprocess
import sys

import circulant_sweep
from circulant_sweep import DOC, q_of, sim


def coeffs(coll, algo, p, count, counts=None):
    """(alpha, beta, gamma) coefficients: rounds, bytes on the critical path
    with beta = 1 and reduced bytes with gamma = 1."""
    res = []
    for a, b, g in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
        args = ['--coll', coll, '--algo', algo, '--p', p, '--count', count,
                '--alpha', a, '--beta', b, '--gamma', g]
        if counts:
            args += ['--counts', ','.join(map(str, counts))]
        res.append(sim(args)[0]['time'])
    return res


def fmt(x):
    return ('%.4g' % x) if abs(x - round(x)) > 1e-9 else '%d' % round(x)


def table():
    rows = ['| operation | p | q | paper alpha | sim alpha | paper beta (x m) | sim beta (x m) '
            '| paper gamma (x m) | sim gamma (x m) |',
            '|---|---|---|---|---|---|---|---|---|']
    for p in (11, 100, 1000):
        q = q_of(p)
        blk = 4  # float64 elements per block
        m = blk * p * 8
        frac = ((1 << q) - 1) / p
        # paper: Table I and the text of III-F/III-G (gather, scatter, bcast
        # and the rsag reduce are not in Table I; their rows give the
        # costs the text implies)
        cases = [
            ('allreduce (circulant)', 'allreduce', 'circulant', blk * p, q, q, 2 * q),
            ('reduce (circulant)', 'reduce', 'circulant', blk * p, q, q, q),
            ('reduce_scatter_block', 'reduce_scatter_block', 'circulant', blk, q, frac, frac),
            ('allgather', 'allgather', 'circulant', blk, q, (p - 1) / p, 0.5),
            ('allreduce (circulant_rsag)', 'allreduce', 'circulant_rsag', blk * p, 2 * q,
             frac + (p - 1) / p, frac),
            ('reduce (circulant_rsag)\*', 'reduce', 'circulant_rsag', blk * p, 2 * q,
             frac + (p - 1) / p, frac),
            ('gather\*', 'gather', 'circulant', blk, q, (p - 1) / p, 0),
            ('scatter\*', 'scatter', 'circulant', blk, q, (p - 1) / p, 0),
            ('bcast\*', 'bcast', 'circulant', blk * p, q, q, 0),
        ]
        for name, coll, algo, count, fa, fb, fg in cases:
            a, b, g = coeffs(coll, algo, p, count)
            rows.append('| %s | %d | %d | %s | %s | %s | %s | %s | %s |'
                        % (name, p, q, fmt(fa), fmt(a), fmt(fb), fmt(b / m), fmt(fg), fmt(g / m)))
    return '\n'.join(rows) + '\n'


# ---- graphs --------------------------------------------------------------------

COLORS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02']


def trace_edges(p):
    path = '/tmp/circulant-trace-%d.txt' % os.getpid()
    if os.path.exists(path):
        os.remove(path)
    sim(['--coll', 'allreduce', '--algo', 'circulant', '--p', p, '--count', 1, '--trace', path])
    edges = []
    with open(path) as f:
        for line in f:
            kv = dict(x.split('=', 1) for x in line.split())
            edges.append((int(kv['src']), int(kv['dst']), int(kv['round']) - 1))
    os.remove(path)
    return sorted(set(edges), key=lambda e: (e[2], e[0]))


def pos(i, p, radius, cx=0.0, cy=0.0):
    ang = math.pi / 2 - 2 * math.pi * i / p
    return cx + radius * math.cos(ang), cy + radius * math.sin(ang)


def graphs(outdir, p=11):
    edges = trace_edges(p)
    q = q_of(p)
    # Fig. 1: the whole circulant graph, rank 0's edges drawn thick.
    g = ['digraph circulant {', '  layout=neato; node [shape=circle, fontsize=10, width=0.4, fixedsize=true];',
         '  label="circulant graph, p = %d: round k edges r -> r - d_k"; labelloc=t;' % p]
    for i in range(p):
        x, y = pos(i, p, 2.2)
        g.append('  r%d [label="%d", pos="%.3f,%.3f!"];' % (i, i, x, y))
    for s, d, k in edges:
        thick = ', penwidth=2.5' if 0 in (s, d) else ''
        lab = ', label="%d", fontsize=9' % k if 0 in (s, d) else ''
        g.append('  r%d -> r%d [color="%s"%s%s];' % (s, d, COLORS[k % len(COLORS)], thick, lab))
    g.append('}')
    # Fig. 2: one panel per round.
    h = ['digraph rounds {', '  layout=neato; node [shape=circle, fontsize=9, width=0.35, fixedsize=true];',
         '  label="allreduce rounds, p = %d"; labelloc=t;' % p]
    for k in range(q):
        cx = k * 5.2
        h.append('  t%d [shape=plaintext, fixedsize=false, label="round %d", pos="%.3f,2.7!"];' % (k, k, cx))
        for i in range(p):
            x, y = pos(i, p, 2.0, cx, 0)
            h.append('  k%dr%d [label="%d", pos="%.3f,%.3f!"];' % (k, i, i, x, y))
        for s, d, kk in edges:
            if kk == k:
                h.append('  k%dr%d -> k%dr%d [color="%s"];' % (k, s, k, d, COLORS[k % len(COLORS)]))
    h.append('}')
    out = []
    for name, text in (('circulant-p%d-graph' % p, g), ('circulant-p%d-rounds' % p, h)):
        dot = os.path.join(outdir, name + '.dot')
        with open(dot, 'w') as f:
            f.write('\n'.join(text) + '\n')
        try:
            subprocess.run(['dot', '-Kneato', '-Tsvg', dot, '-o',
                            os.path.join(outdir, name + '.svg')], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print('graphviz failed (%s): %s.svg not written' % (e, name))
        out.append(name)
    return out, edges


def cmd_doc(path):
    path = path or DOC
    names, edges = graphs(os.path.dirname(os.path.abspath(path)))
    q = q_of(11)
    lines = ['<!-- generated by scripts/circulant_table.py doc; do not edit by hand -->', '',
             '![circulant graph p = 11](%s.svg)' % names[0], '',
             '![allreduce rounds p = 11](%s.svg)' % names[1], '',
             'Messages of the p = 11 allreduce, as the simulator traced them '
             '(round: sender -> receiver):', '']
    for k in range(q):
        lines.append('- round %d: ' % k + ', '.join('%d->%d' % (s, d) for s, d, kk in edges if kk == k))
    lines += ['', 'Table I recomputed (coefficients of alpha, of beta * m and of gamma * m, '
              'm the whole vector in bytes; "sim" from three runs of redcoll-sim with one of '
              'alpha, beta, gamma set to 1):', '', table(),
              '\\* not in the paper\'s Table I: the cost its text gives (III-F for gather '
              'and scatter, III-G for the reduce-scatter-first reduce, the reversed reduce tree '
              'for bcast, whose beta term is the root sending q times).']
    text = open(path).read()
    b, e = '<!-- generated begin -->', '<!-- generated end -->'
    i, j = text.index(b) + len(b), text.index(e)
    with open(path, 'w') as f:
        f.write(text[:i] + '\n' + '\n'.join(lines) + '\n' + text[j:])
    print('wrote', path)
    return 0


def main(argv):
    if len(argv) > 2 and argv[1] == '--sim':
        circulant_sweep.SIM = argv[2]
        argv = argv[:1] + argv[3:]
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, rest = argv[1], argv[2:]
    if cmd == 'table':
        sys.stdout.write(table())
        return 0
    if cmd == 'doc':
        return cmd_doc(rest[0] if rest else None)
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
