#!/usr/bin/env python3
"""Rabenseifner's reduction family: the table and the graphs of
docs/algorithms/rabenseifner.md.

usage: scripts/rabenseifner_table.py [--sim PATH] COMMAND
  table         the markdown table of formula versus simulated cost
                (p = 13, 24, 33, 100; root 0 for reduce)
  doc [FILE]    writes that table into FILE (default the doc) between its
                "table begin" and "table end" markers
  graphs [DIR]  DIR/rabenseifner-<algo>-p13.{dot,svg}: the communication
                graph of an allreduce of 64 float64 on 13 ranks from
                `redcoll-sim --dot`, rendered with `dot -Tsvg`; and
                DIR/rabenseifner-<algo>-p13-rounds.{dot,svg}: the same
                messages laid out by rank (columns) and round (rows), as the
                paper's figures (neato -n); needs graphviz

The formulas and the simulator runs come from scripts/rabenseifner_sweep.py
(the paper's T_all / T_red at f_alpha = f_beta = 1; binary_blocks has no
formula in the paper, its derived cost is bb_formula() there).  The sweeps
over p = 2..130 and the correctness sweep are in that script.  Only the
Python standard library is used.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rabenseifner_sweep as sw  # noqa: E402

ALGOS = sw.ALGOS


def fmt(v):
    return ('%d' % v) if abs(v - round(v)) < 1e-9 else ('%.4g' % v)


def table_rows(p):
    """(algo, coll, root): every algorithm at root 0, and for reduce also the
    last rank and (p not a power of two) the removed rank 2r - 1, which
    halving_doubling serves by the root swap."""
    rows = []
    r = p - sw.pof2(p)
    for algo, coll in ALGOS:
        roots = [0]
        if coll == 'reduce' and algo != 'ring':
            roots += [p - 1] + ([2 * r - 1] if algo == 'halving_doubling' and r else [])
        rows += [(algo, coll, root) for root in roots]
    return rows


def cmd_table(out=print):
    out('| p | algorithm | collective | root | rounds formula / sim '
        '| volume formula / sim (n) | reduced formula / sim (n) |')
    out('|---|---|---|---|---|---|---|')
    for p in (13, 24, 33, 100):
        count = sw.big_count(p)
        n = count * 8
        for algo, coll, root in table_rows(p):
            f = sw.paper_formula(algo, coll, p, n, root)
            s = sw.measure(algo, coll, p, count, root)
            name = algo + (' (derived)' if algo == 'binary_blocks' else '')
            out('| %d | %s | %s | %s | %s / %s | %s / %s | %s / %s |' % (
                p, name, coll, root if coll == 'reduce' else '-', fmt(f[0]), fmt(s[0]),
                fmt(f[1] / n), fmt(s[1] / n), fmt(f[2] / n), fmt(s[2] / n)))
    return 0


def cmd_doc(path):
    rows = []
    cmd_table(rows.append)
    with open(path) as f:
        text = f.read()
    head, sep, rest = text.partition('<!-- table begin')
    if not sep:
        sys.exit('%s: no table begin marker' % path)
    line_end = rest.index('\n') + 1
    _, sep2, tail = rest[line_end:].partition('<!-- table end -->')
    if not sep2:
        sys.exit('%s: no table end marker' % path)
    with open(path, 'w') as f:
        f.write(head + sep + rest[:line_end] + '\n'.join(rows) + '\n' + sep2 + tail)
    print('wrote', path)
    return 0


def cmd_graphs(outdir):
    os.makedirs(outdir, exist_ok=True)
    for algo in ('halving_doubling', 'binary_blocks'):
        base = os.path.join(outdir, 'rabenseifner-%s-p13' % algo)
        run = ['--coll', 'allreduce', '--algo', algo, '--p', 13, '--count', 64]
        # 1. the simulator's own graph: an edge per message, "r<round> <bytes>"
        sw.sim(run + ['--dot', base + '.dot'])
        subprocess.run(['dot', '-Tsvg', base + '.dot', '-o', base + '.svg'], check=True)
        print('wrote', base + '.svg')
        # 2. the same messages by rank and round, from the trace
        tr = base + '.trace'
        if os.path.exists(tr):
            os.unlink(tr)
        sw.sim(run + ['--trace', tr])
        msgs = []
        with open(tr) as f:
            for line in f:
                kv = dict(x.split('=', 1) for x in line.split())
                msgs.append((int(kv['src']), int(kv['dst']), int(kv['bytes']),
                             int(float(kv['start'])), int(float(kv['end']))))
        os.unlink(tr)
        rounds = max(m[4] for m in msgs)
        lines = ['digraph "%s p13" {' % algo,
                 '  node [shape=point, width=0.07]; edge [arrowsize=0.4, fontsize=7];',
                 '  label="%s allreduce, p = 13, 64 float64 (512 B): columns are ranks, '
                 'rows rounds (time 0 at the top); edge labels are bytes"; labelloc=t;'
                 % algo]
        for r in range(13):
            lines.append('  h%d [shape=plaintext, label="P%d", pos="%d,%d"];'
                         % (r, r, 70 * r, 40))
            for t in range(rounds + 1):
                lines.append('  n%d_%d [pos="%d,%d"];' % (r, t, 70 * r, -45 * t))
        for t in range(rounds + 1):
            lines.append('  t%d [shape=plaintext, label="%d", pos="%d,%d"];'
                         % (t, t, -50, -45 * t))
        for src, dst, nb, st, en in msgs:
            lines.append('  n%d_%d -> n%d_%d [label="%d"];' % (src, st, dst, en, nb))
        lines.append('}')
        with open(base + '-rounds.dot', 'w') as f:
            f.write('\n'.join(lines) + '\n')
        subprocess.run(['dot', '-Kneato', '-n2', '-Tsvg', base + '-rounds.dot', '-o',
                        base + '-rounds.svg'], check=True)
        print('wrote', base + '-rounds.svg')
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == '--sim':
        sw.set_sim(argv[1])
        argv = argv[2:]
    if not argv:
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    docdir = os.path.join(HERE, '..', 'docs', 'algorithms')
    if cmd == 'table':
        return cmd_table()
    if cmd == 'doc':
        return cmd_doc(rest[0] if rest else os.path.join(docdir, 'rabenseifner.md'))
    if cmd == 'graphs':
        return cmd_graphs(rest[0] if rest else docdir)
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
