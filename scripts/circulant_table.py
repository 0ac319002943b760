#!/usr/bin/env python3
"""The circulant-graph collectives under the simulator (redcoll-sim).

usage: scripts/circulant_table.py [--sim PATH] COMMAND [ARGS]
  rounds [A-B]    allreduce, reduce, reduce_scatter_block, allgather (and
                  circulant_rsag, bcast): rounds (alpha=1) == ceil(log2 p) and
                  volumes (beta=1) against the formulas, p in A..B (default
                  2-1024); reduce with every root for p <= 64, else roots 0,
                  p/2, p-1.  Exits 1 on any difference.
  ok [A-B]        sum and max, in place and not, for p in A..B (default 1-200),
                  every circulant collective, plus irregular counts (zeros, one
                  rank holding everything, mixed) for reduce_scatter and
                  allgatherv.  Exits 1 if any run is not ok.
  guidelines [--full] [--p A-B] [--budget BYTES]
                  the performance guidelines (2), (4), (5), (6) of section
                  IV-C with the cost model ALPHA, BETA, GAMMA below, p <= 256
                  (a sample; --full: every p), m = 8 B .. 16 MiB in powers of
                  8 as far as p * m <= budget (default 256 MiB: the simulator
                  moves real bytes).  Guideline (3) needs a scatterv, which the
                  simulator's checker does not run yet.
  table           Table I recomputed (markdown) for p = 11, 100, 1000.
  doc [FILE]      writes the table and the p = 11 graphs into FILE (default
                  docs/algorithms/circulant.md) between its "generated begin"
                  and "generated end" markers, and the graphs next to it
                  (circulant-p11-graph.{dot,svg}, circulant-p11-rounds.{dot,svg};
                  SVGs need graphviz).
Only the Python standard library is used.
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.environ.get('REDCOLL_SIM', os.path.join(HERE, '..', 'build', 'tools', 'redcoll-sim'))
DOC = os.path.join(HERE, '..', 'docs', 'algorithms', 'circulant.md')

# A commodity cluster: 2 us start-up, 10 GB/s links, local reduction at
# 5 GB/s (float sums stream two inputs and one output through memory).
ALPHA, BETA, GAMMA = 2e-6, 1e-10, 2e-10


def sim(args):
    out = subprocess.run([SIM] + [str(a) for a in args], capture_output=True, text=True)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if not lines:
        sys.exit('redcoll-sim failed: %s\n%s' % (' '.join(map(str, args)), out.stderr))
    return lines


def q_of(p):
    return (p - 1).bit_length()


def prange(s, default):
    a, b = (s or default).split('-')
    return int(a), int(b)


def chunks(a, b, size=64):
    while a <= b:
        yield a, min(b, a + size - 1)
        a += size


# ---- rounds and volumes -----------------------------------------------------

def cmd_rounds(rng):
    a, b = prange(rng, '2-1024')
    a = max(a, 2)
    bad = 0
    blk = 8  # one float64 per block; m = p * 8 bytes
    for lo, hi in chunks(a, b):
        for coll, algo, count, root in (
                ('allreduce', 'circulant', None, '0'),
                ('allreduce', 'circulant_rsag', None, '0'),
                ('reduce_scatter_block', 'circulant', 1, '0'),
                ('allgather', 'circulant', 1, '0'),
                ('bcast', 'circulant', None, '0')):
            # count for the whole-vector collectives: the vector of hi blocks
            # would vary with p; take 8 elements (m = 64 bytes) instead.
            c = count if count is not None else 8
            for line in sim(['--coll', coll, '--algo', algo, '--p', '%d-%d' % (lo, hi),
                             '--count', c, '--root', root, '--alpha', 0, '--beta', 1]):
                p, q = line['p'], q_of(line['p'])
                m = line['bytes'] * (p if count is not None else 1)
                want_rounds = 2 * q if algo == 'circulant_rsag' else q
                if coll == 'allreduce' and algo == 'circulant':
                    want_vol = q * m
                elif algo == 'circulant_rsag':
                    want_vol = None  # balanced blocks of 8 elements: checked in the test
                elif coll == 'reduce_scatter_block':
                    want_vol = ((1 << q) - 1) * blk
                elif coll == 'allgather':
                    want_vol = (p - 1) * blk
                else:
                    want_vol = q * m  # bcast: the root sends in every round
                vol = max(line['max_bytes_sent'], line['max_bytes_recv'])
                if coll == 'bcast':
                    vol = want_vol if vol <= want_vol else vol  # the root may have < q children
                if (not line['ok'] or line['rounds'] != want_rounds or
                        (want_vol is not None and (line['time'] != want_vol or vol != want_vol))):
                    bad += 1
                    print('DIFF %s/%s p=%d rounds %d (want %d) time %g vol %d (want %s) ok %s'
                          % (coll, algo, p, line['rounds'], want_rounds, line['time'], vol,
                             want_vol, line['ok']))
        for p in range(lo, hi + 1):
            roots = 'all' if p <= 64 else None
            rlist = [roots] if roots else sorted({0, p // 2, p - 1})
            for root in rlist:
                for line in sim(['--coll', 'reduce', '--algo', 'circulant', '--p', p, '--count', 8,
                                 '--root', root, '--alpha', 0, '--beta', 1]):
                    q, m = q_of(p), line['bytes']
                    if not line['ok'] or line['rounds'] != q or line['time'] != q * m \
                            or line['max_bytes_recv'] != q * m:
                        bad += 1
                        print('DIFF reduce p=%d root=%d rounds %d time %g ok %s'
                              % (p, line['root'], line['rounds'], line['time'], line['ok']))
        print('p %d-%d done, %d differences so far' % (lo, hi, bad), flush=True)
    print('rounds/volumes p=%d..%d: %d differences' % (a, b, bad))
    return 1 if bad else 0


# ---- correctness --------------------------------------------------------------

def irregular_shapes(p):
    yield [0 if r % 3 == 1 else r + 1 for r in range(p)]
    yield [40 if r == p - 1 else 0 for r in range(p)]
    yield [40 if r == 0 else 0 for r in range(p)]
    yield [40 if r == p // 2 else (r * 7) % 3 for r in range(p)]


def cmd_ok(rng):
    a, b = prange(rng, '1-200')
    bad = runs = 0
    colls = [('allreduce', 'circulant', 13), ('allreduce', 'circulant_rsag', 29),
             ('reduce', 'circulant', 13), ('reduce_scatter_block', 'circulant', 3),
             ('reduce_scatter', 'circulant', 3), ('allgather', 'circulant', 3),
             ('allgatherv', 'circulant', 3), ('bcast', 'circulant', 13)]
    for lo, hi in chunks(a, b):
        for coll, algo, count in colls:
            for op in ('sum', 'max'):
                for ip in ([], ['--in-place']):
                    if coll == 'bcast' and (ip or op == 'max'):
                        continue
                    root = ['--root', 'all'] if coll == 'reduce' and hi <= 24 else \
                        ['--root', '0'] if coll == 'reduce' else []
                    for line in sim(['--coll', coll, '--algo', algo, '--p', '%d-%d' % (lo, hi),
                                     '--count', count, '--op', op] + root + ip):
                        runs += 1
                        if not line['ok']:
                            bad += 1
                            print('NOT OK', json.dumps(line))
        for p in range(max(lo, 2), hi + 1):
            for counts in irregular_shapes(p):
                for coll in ('reduce_scatter', 'allgatherv'):
                    for op in ('sum', 'max'):
                        for ip in ([], ['--in-place']):
                            line = sim(['--coll', coll, '--algo', 'circulant', '--p', p,
                                        '--count', 0, '--counts', ','.join(map(str, counts)),
                                        '--op', op] + ip)[0]
                            runs += 1
                            if not line['ok'] or line['rounds'] != q_of(p):
                                bad += 1
                                print('NOT OK', json.dumps(line))
        print('p %d-%d done: %d runs, %d not ok' % (lo, hi, runs, bad), flush=True)
    print('ok p=%d..%d: %d runs, %d not ok' % (a, b, runs, bad))
    return 1 if bad else 0


# ---- performance guidelines -------------------------------------------------------

def t(coll, algo, p, count, counts=None, root=0):
    args = ['--coll', coll, '--algo', algo, '--p', p, '--count', count, '--dtype', 'u8',
            '--root', root, '--alpha', ALPHA, '--beta', BETA, '--gamma', GAMMA]
    if counts is not None:
        args += ['--counts', ','.join(map(str, counts))]
    line = sim(args)[0]
    if not line['ok']:
        sys.exit('not ok: ' + json.dumps(line))
    return line['time']


def cmd_guidelines(argv):
    full = '--full' in argv
    budget = 256 << 20
    if '--budget' in argv:
        budget = int(argv[argv.index('--budget') + 1])
    ps = list(range(2, 257)) if full else \
        list(range(2, 33)) + [37, 48, 63, 64, 65, 100, 127, 128, 129, 200, 255, 256]
    if '--p' in argv:
        a, b = prange(argv[argv.index('--p') + 1], '')
        ps = list(range(a, b + 1))
    sizes = [8 * 8 ** i for i in range(8)]  # 8 B .. 16 MiB
    worst = {g: (0.0, None) for g in ('2', '4', '5', '6')}
    viol = {g: 0 for g in worst}
    cells = 0
    for p in ps:
        for m0 in sizes:
            blk = max(1, m0 // p)
            m = blk * p  # m bytes of uint8, divisible by p
            if m * p > budget:
                continue
            cells += 1
            ar_c = t('allreduce', 'circulant', p, m)
            ar_r = t('allreduce', 'circulant_rsag', p, m)
            ar = min(ar_c, ar_r)
            rsb = t('reduce_scatter_block', 'circulant', p, blk)
            agv = t('allgatherv', 'circulant', p, 0, [blk] * p)
            red = t('reduce', 'circulant', p, m, root=p // 2)
            one = [0] * p
            one[p // 2] = m
            rs1 = t('reduce_scatter', 'circulant', p, 0, one)
            checks = {
                '2': (rsb, ar),              # RS(m) <= AR(m)
                '4': (ar, rsb + agv),        # AR(m) <= RS(m) + AGv(m)
                '5': (red, ar),              # Reduce(m) <= AR(m)
                '6': (red, rs1),             # Reduce(m, r) ~ RS(m) with all in block r
            }
            for g, (lhs, rhs) in checks.items():
                ratio = lhs / rhs
                if ratio > worst[g][0]:
                    worst[g] = (ratio, (p, m))
                if g != '6' and ratio > 1 + 1e-9:
                    viol[g] += 1
                    print('guideline (%s) violated: p=%d m=%d lhs %.3e rhs %.3e (x%.3f)'
                          % (g, p, m, lhs, rhs, ratio))
        print('p=%d done' % p, flush=True)
    print('cost model alpha=%g s, beta=%g s/B, gamma=%g s/B; %d (p, m) cells'
          % (ALPHA, BETA, GAMMA, cells))
    for g in ('2', '4', '5', '6'):
        r, at = worst[g]
        print('guideline (%s): %d violations, largest lhs/rhs %.4f at (p, m) = %s'
              % (g, viol[g], r, at))
    return 1 if any(viol.values()) else 0


# ---- Table I ------------------------------------------------------------------

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
        cases = [
            ('allreduce (circulant)', 'allreduce', 'circulant', blk * p, q, q, 2 * q),
            ('reduce (circulant)', 'reduce', 'circulant', blk * p, q, q, q),
            ('reduce_scatter_block', 'reduce_scatter_block', 'circulant', blk, q, frac, frac),
            ('allgather', 'allgather', 'circulant', blk, q, (p - 1) / p, 0.5),
            ('allreduce (circulant_rsag)', 'allreduce', 'circulant_rsag', blk * p, 2 * q,
             frac + (p - 1) / p, frac),
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
              'alpha, beta, gamma set to 1):', '', table()]
    text = open(path).read()
    b, e = '<!-- generated begin -->', '<!-- generated end -->'
    i, j = text.index(b) + len(b), text.index(e)
    with open(path, 'w') as f:
        f.write(text[:i] + '\n' + '\n'.join(lines) + '\n' + text[j:])
    print('wrote', path)
    return 0


def main(argv):
    global SIM
    if len(argv) > 2 and argv[1] == '--sim':
        SIM = argv[2]
        argv = argv[:1] + argv[3:]
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, rest = argv[1], argv[2:]
    if cmd == 'rounds':
        return cmd_rounds(rest[0] if rest else None)
    if cmd == 'ok':
        return cmd_ok(rest[0] if rest else None)
    if cmd == 'guidelines':
        return cmd_guidelines(rest)
    if cmd == 'table':
        sys.stdout.write(table())
        return 0
    if cmd == 'doc':
        return cmd_doc(rest[0] if rest else None)
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
