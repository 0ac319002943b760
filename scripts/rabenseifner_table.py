#!/usr/bin/env python3
"""Rabenseifner's reduction family under the simulator: cost formulas versus
simulated cost, correctness sweeps, and the p = 13 communication graphs.

usage: scripts/rabenseifner_table.py [--sim PATH] COMMAND
  check [A-B]   rounds (alpha=1), volume (beta=1) and reduction work (gamma=1)
                of every algorithm against its formula for p in A..B
                (default 2-130); prints one line per difference and a summary;
                exits 1 if the simulation is ever worse than the formula
  table         the markdown table of docs/algorithms/rabenseifner.md
                (p = 13, 24, 33, 100)
  doc [FILE]    writes that table into FILE (default the doc) between its
                "table begin" and "table end" markers
  sweep [A-B [ALGO...]]  correctness (default 1-130, all algorithms): every algorithm, every root,
                sum and noncomm (where accepted), in place and not, several
                counts, eager limit 0
  graphs DIR    DIR/rabenseifner-<algo>-p13.{dot,svg} (needs graphviz dot)

Formulas are the paper's (rabenseifner-2004, f_alpha = f_beta = 1) in bytes
n = count * 8; binary_blocks has none in the paper, its formula is derived in
the docs and computed by bb_formula() below.  Only the Python standard
library is used.
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.join(HERE, '..', 'build', 'tools', 'redcoll-sim')

ALGOS = [  # (algo, collective)
    ('binary_tree', 'allreduce'), ('binary_tree', 'reduce'),
    ('recursive_doubling', 'allreduce'),
    ('halving_doubling', 'allreduce'), ('halving_doubling', 'reduce'),
    ('binary_blocks', 'allreduce'), ('binary_blocks', 'reduce'),
    ('ring', 'allreduce'), ('ring', 'reduce'),
]
NONCOMM = {'binary_tree', 'recursive_doubling', 'halving_doubling', 'binary_blocks'}


def sim(args):
    out = subprocess.run([SIM] + [str(a) for a in args], capture_output=True, text=True)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if not lines:
        sys.exit('redcoll-sim failed: %s %s' % (' '.join(map(str, args)), out.stderr))
    return lines


def lg(x):
    return int(math.log2(x))


def pof2(p):
    q = 1
    while q * 2 <= p:
        q *= 2
    return q


def is_pow2(p):
    return p & (p - 1) == 0


def paper_formula(algo, coll, p, n):
    """(alpha, beta, gamma) coefficients: rounds, bytes moved, bytes reduced on
    the critical path, as the paper's T_all / T_red with f_alpha = f_beta = 1."""
    L = math.ceil(math.log2(p))
    if algo == 'binary_tree':
        if coll == 'reduce':
            return (L, L * n, L * n)
        return (2 * L, 2 * L * n, L * n)
    if algo == 'recursive_doubling':
        if is_pow2(p):
            return (L, L * n, L * n)
        return (L + 1, (L + 1) * n, L * n)
    if algo == 'halving_doubling':
        if is_pow2(p):
            return (2 * lg(p), 2 * n - 2 * n / p, n - n / p)
        q = pof2(p)
        if coll == 'allreduce':
            return (2 * lg(q) + 3, 4 * n - 2 * n / q, 1.5 * n - n / q)
        return (2 * lg(q) + 2, 3 * n - 2 * n / q, 1.5 * n - n / q)
    if algo == 'ring':
        return (2 * (p - 1), 2 * n - 2 * n / p, n - n / p)
    if algo == 'binary_blocks':
        return bb_formula(coll, p, n)
    raise ValueError(algo)


def blocks(p):
    return [e for e in range(30, -1, -1) if p >> e & 1]


def bb_formula(coll, p, n):
    """binary_blocks, derived from section 3.6 of the extended paper (the
    paper gives no closed formula); see docs/algorithms/rabenseifner.md.
    Returns the (alpha, beta, gamma) terms, each computed alone."""
    ex = blocks(p)
    res = []
    for a, b, g in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
        # phases 1 and 2: A = time the partial of block k is complete
        def rs(e):
            return a * e + (b + g) * (n - n / 2 ** e)
        A = rs(ex[-1])
        for k in range(len(ex) - 1, 0, -1):
            q = 2 ** (ex[k - 1] - ex[k])
            piece = n / 2 ** ex[k - 1]
            A = max(A, rs(ex[k - 1])) + q * (a + b * piece) + g * piece
        if coll == 'reduce':
            e0 = ex[0]
            t = A + sum(a + b * n / 2 ** (s + 1) for s in range(e0))
            res.append(t)
            continue
        # phase 3: allgathers; a block's pair of sends before its step at
        # distance 2^e(k+1)
        B, end = A, 0.0
        for k, e in enumerate(ex):
            steps = [a + b * n / 2 ** (s + 1) for s in range(e)]  # step s: distance 2^s
            if k + 1 < len(ex):
                nx = ex[k + 1]
                before = sum(steps[nx + 1:])
                send = 2 * (a + b * n / 2 ** (nx + 1))
                end = max(end, B + before + send + sum(steps[:nx + 1]))
                B = B + before + send
            else:
                end = max(end, B + sum(steps))
        res.append(end)
    return tuple(res)


def bb_reduce_root_extra(p, root, n):
    """A reduce root outside block 0 first receives rank 0's piece."""
    e0 = blocks(p)[0]
    return (1, n / 2 ** e0, 0) if root >= 2 ** e0 else (0, 0, 0)


def measure(algo, coll, p, count, root=0):
    out = []
    for cost in (('--alpha', 1), ('--alpha', 0, '--beta', 1), ('--alpha', 0, '--gamma', 1)):
        d = sim(['--coll', coll, '--algo', algo, '--p', p, '--count', count, '--root', root]
                + list(cost))[0]
        if not d['ok']:
            sys.exit('not ok: %s' % d)
        out.append(d['time'])
    return tuple(out)


def big_count(p):
    """A large count divisible by p and by the largest power of two <= p."""
    return p * 128 // math.gcd(p, 128) * 2


def parse_range(s, default):
    s = s or default
    a, _, b = s.partition('-')
    return int(a), int(b or a)


def cmd_check(rng):
    a, b = parse_range(rng, '2-130')
    worse = better = same = 0
    for p in range(a, b + 1):
        count = big_count(p)
        n = count * 8
        for algo, coll in ALGOS:
            f = paper_formula(algo, coll, p, n)
            s = measure(algo, coll, p, count)
            for what, fv, sv in zip(('rounds', 'volume', 'reduced'), f, s):
                if abs(fv - sv) < 1e-6:
                    same += 1
                    continue
                tag = 'BETTER' if sv < fv else 'WORSE'
                if sv < fv:
                    better += 1
                else:
                    worse += 1
                print('%-6s p=%3d %-18s %-9s %-7s formula %.6g sim %.6g (%s)'
                      % (tag, p, algo, coll, what, fv, sv, 'n=%d' % n))
    print('summary: %d equal, %d better than the formula, %d worse' % (same, better, worse))
    return 1 if worse else 0


def fmt(v):
    return ('%d' % v) if abs(v - round(v)) < 1e-9 else ('%.4g' % v)


def cmd_table(out=print):
    out('| p | algorithm | collective | rounds formula / sim | volume formula / sim (n) '
          '| reduced formula / sim (n) |')
    out('|---|---|---|---|---|---|')
    for p in (13, 24, 33, 100):
        count = big_count(p)
        n = count * 8
        for algo, coll in ALGOS:
            f = paper_formula(algo, coll, p, n)
            s = measure(algo, coll, p, count)
            out('| %d | %s | %s | %s / %s | %s / %s | %s / %s |' % (
                p, algo, coll, fmt(f[0]), fmt(s[0]), fmt(f[1] / n), fmt(s[1] / n),
                fmt(f[2] / n), fmt(s[2] / n)))
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


def cmd_sweep(rng, only=None):
    """allreduce: p in A..B, counts 1, 7, 130, 1000, in place and not.
    reduce: every root for p in A..B with count 7 (below p from p = 8 on, not
    divisible), and every root with counts 1 and 1000 (in place) up to p = 40.
    Each with sum on float64 and noncomm where accepted, eager limit 0."""
    a, b = parse_range(rng, '1-130')
    bad = runs = 0

    def go(args):
        nonlocal bad, runs
        for d in sim(args + ['--eager', 0]):
            runs += 1
            if not d['ok']:
                bad += 1
                print('NOT OK', json.dumps(d), flush=True)

    for algo, coll in ALGOS:
        if only and algo not in only:
            continue
        ops = ['sum'] + (['noncomm'] if algo in NONCOMM else [])
        for op in ops:
            base = ['--coll', coll, '--algo', algo, '--op', op]
            if coll == 'allreduce':
                for count in (1, 7, 130, 1000):
                    for inplace in ([], ['--in-place']):
                        go(base + ['--p', '%d-%d' % (a, b), '--count', count] + inplace)
                continue
            go(base + ['--p', '%d-%d' % (a, b), '--count', 7, '--root', 'all'])
            for count in (1, 1000):
                go(base + ['--p', '%d-%d' % (a, min(b, 40)), '--count', count, '--root', 'all',
                           '--in-place'])
        print('%s %s done: %d runs, %d not ok' % (algo, coll, runs, bad), flush=True)
        # a non-commutative operator must be refused, never reduced wrongly
        if algo not in NONCOMM:
            for d in sim(['--coll', coll, '--algo', algo, '--p', '2-9', '--count', 10,
                          '--op', 'noncomm']):
                runs += 1
                if d['status'] != 'REDCOLL_ENOTSUP':
                    bad += 1
                    print('NOT REFUSED', json.dumps(d))
    print('sweep: %d runs, %d not ok' % (runs, bad))
    return 1 if bad else 0


def cmd_graphs(outdir):
    """A layered graph per algorithm: one column per rank, one row per round;
    an edge per message from (sender, its start round) to (receiver, the
    round it ends), labelled with the bytes."""
    os.makedirs(outdir, exist_ok=True)
    for algo in ('halving_doubling', 'binary_blocks'):
        tr = os.path.join(outdir, '.trace')
        if os.path.exists(tr):
            os.unlink(tr)
        sim(['--coll', 'allreduce', '--algo', algo, '--p', 13, '--count', 64, '--trace', tr])
        msgs = []
        with open(tr) as f:
            for line in f:
                kv = dict(x.split('=', 1) for x in line.split())
                msgs.append((int(kv['src']), int(kv['dst']), int(kv['bytes']),
                             int(float(kv['start'])), int(float(kv['end']))))
        os.unlink(tr)
        rounds = max(m[4] for m in msgs)
        # fixed positions (neato -n): column = rank, row = round
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
        for src, dst, nb, s, e in msgs:
            lines.append('  n%d_%d -> n%d_%d [label="%d"];' % (src, s, dst, e, nb))
        lines.append('}')
        base = os.path.join(outdir, 'rabenseifner-%s-p13' % algo)
        with open(base + '.dot', 'w') as f:
            f.write('\n'.join(lines) + '\n')
        subprocess.run(['dot', '-Kneato', '-n2', '-Tsvg', base + '.dot', '-o', base + '.svg'], check=True)
        print('wrote', base + '.svg')
    return 0


def main(argv):
    global SIM
    if len(argv) >= 2 and argv[0] == '--sim':
        SIM = argv[1]
        argv = argv[2:]
    if not argv:
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == 'check':
        return cmd_check(rest[0] if rest else None)
    if cmd == 'table':
        return cmd_table()
    if cmd == 'doc':
        return cmd_doc(rest[0] if rest else os.path.join(HERE, '..', 'docs', 'algorithms',
                                                        'rabenseifner.md'))
    if cmd == 'sweep':
        return cmd_sweep(rest[0] if rest else None, rest[1:])
    if cmd == 'graphs':
        return cmd_graphs(rest[0] if rest else os.path.join(HERE, '..', 'docs', 'algorithms'))
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
