#!/usr/bin/env python3
"""The simulator sweeps: what docs/algorithms/ and docs/tuning.md claim,
checked with redcoll-sim over ranges of p.  Exit status 1 if anything
differs or fails.  `sim_sweep.py COMMAND --help` describes each check.

usage: scripts/sim_sweep.py [--sim PATH] [--jobs N] COMMAND [ARGS]
  circulant rounds [A-B] [--sample N] [--extras]   rounds and volumes
  circulant ok [A-B]                               correctness
  circulant guidelines [--full] [--p A-B] [--doc]  guidelines (2)-(6)
  rabenseifner costs [A-B] [ALGO...]               the paper's formulas
  rabenseifner correct [A-B] [--all-roots-upto N] [ALGO...]
  elimination [--p A-B] [--count N] [--roots all|few] [--only ...] [--algos ...]
  select [--coll C,...] [--p LIST] [--sizes LIST] ...   AUTO against the best
  colls [A-B]                                      scan, alltoall, rooted-v rounds
                                                   and volumes (docs/algorithms/
                                                   scan.md, alltoall.md, rooted_v.md)
"""
import argparse
import json
import math
import sys
import time

import simlib
from simlib import ceil_log2, prange

RAW = argparse.RawDescriptionHelpFormatter

# ---- circulant (docs/algorithms/circulant.md) ------------------------------------

CIRCULANT = """The must-shows of the circulant collectives.
  rounds [A-B]    p in A..B (default 2-1024): allreduce, reduce,
                  reduce_scatter_block and allgather take exactly
                  q = ceil(log2 p) rounds (alpha = 1), and their volumes
                  (beta = 1, m the whole vector in bytes) are allreduce q*m,
                  reduce q*m, reduce_scatter_block (2^q - 1)/p*m (which is
                  the bound), allgather (p-1)/p*m, each on the critical path
                  (the time) and as max bytes sent or received by one rank.
                  reduce: root 0 for every p, every root for p <= 64, roots
                  p/2 and p-1 for every 8th p above.  --sample N: above
                  p = 256 only every N-th p and 2^k-1, 2^k, 2^k+1.  --extras adds
                  circulant_rsag (allreduce, reduce: 2q rounds), bcast, gather
                  and scatter (q rounds, root 0).
  ok [A-B]        p in A..B (default 1-200): every circulant collective with
                  --op sum and --op max (data movement once), in place and
                  not; reduce and gather/scatter with every root for p <= 24;
                  irregular counts for reduce_scatter and allgatherv: zeros
                  in between, the last rank holding everything, rank 0 holding
                  everything, one rank holding most with 0-2 elsewhere.
  guidelines [--full] [--p A-B] [--doc]
                  guidelines (2)-(6) of section IV-C under the cost model
                  ALPHA, BETA, GAMMA below, m = 8 B .. 16 MiB (powers of two),
                  p <= 256 sampled (all p <= 64, every 7th above, 128, 255,
                  256; --full: every p).  See guideline_cell() for what each
                  side is and docs/algorithms/circulant.md for the results;
                  --doc writes the summary there."""

# A commodity cluster: 2 us start-up, 10 GB/s per link (beta = 1e-10 s/B),
# local reduction at 40 GB/s (gamma = 2.5e-11 s/B, vectorised, in cache).
ALPHA, BETA, GAMMA = 2e-6, 1e-10, 2.5e-11


def circulant(argv):
    ap = argparse.ArgumentParser(prog='sim_sweep.py circulant', description=CIRCULANT,
                                 formatter_class=RAW)
    ap.add_argument('what', choices=['rounds', 'ok', 'guidelines'])
    ap.add_argument('range', nargs='?')
    ap.add_argument('--sample', type=int, default=1)
    ap.add_argument('--extras', action='store_true')
    ap.add_argument('--full', action='store_true')
    ap.add_argument('--p')
    ap.add_argument('--doc', action='store_true')
    a = ap.parse_intermixed_args(argv)
    return {'rounds': circ_rounds, 'ok': circ_ok, 'guidelines': circ_guidelines}[a.what](a)


def rounds_expect(coll, algo, p, line):
    """(rounds, volume) wanted for one line of a run with alpha=0, beta=1;
    volume None: not checked."""
    q = ceil_log2(p)
    if algo == 'circulant_rsag':
        return 2 * q, None
    if coll in ('allreduce', 'reduce'):
        return q, q * line['bytes']
    if coll == 'reduce_scatter_block':
        return q, ((1 << q) - 1) * line['bytes']  # = (2^q-1)/p * m, m = p * block
    if coll in ('allgather', 'gather', 'scatter'):
        return q, (p - 1) * line['bytes']         # = (p-1)/p * m
    return q, None                                # bcast


def check_rounds_line(coll, algo, line):
    p = line['p']
    want_r, want_v = rounds_expect(coll, algo, p, line)
    vol = max(line['max_bytes_sent'], line['max_bytes_recv'])
    bad = not line['ok'] or line['rounds'] != want_r
    if want_v is not None:
        bad = bad or line['time'] != want_v
        if coll == 'reduce':
            bad = bad or line['max_bytes_recv'] != want_v  # the root receives q vectors
        else:
            bad = bad or vol != want_v
    if bad:
        print('DIFF %s/%s p=%d root=%d: rounds %d (want %d), time %g, max sent/recv %d '
              '(want %s), ok %s %s' % (coll, algo, p, line['root'], line['rounds'], want_r,
                                       line['time'], vol, want_v, line['ok'],
                                       line.get('error', '')), flush=True)
    return 1 if bad else 0


def circ_rounds(a):
    lo, hi = prange(a.range, '2-1024')
    lo = max(lo, 2)
    runs = [('allreduce', 'circulant', 8), ('reduce', 'circulant', 8),
            ('reduce_scatter_block', 'circulant', 1), ('allgather', 'circulant', 1)]
    if a.extras:
        runs += [('allreduce', 'circulant_rsag', 8), ('reduce', 'circulant_rsag', 8),
                 ('bcast', 'circulant', 8), ('gather', 'circulant', 1),
                 ('scatter', 'circulant', 1)]
    # --sample N: above p = 256 only every N-th p and 2^k - 1, 2^k, 2^k + 1
    # (p near 1024 takes seconds per run).
    ps = [p for p in range(lo, hi + 1) if p <= 256 or p % a.sample == 0 or
          any(abs(p - (1 << k)) <= 1 for k in range(8, 11))]
    tasks = []
    for p in ps:
        for root in ['all'] if p <= 64 else [p // 2, p - 1] if p % 8 == 0 else []:
            tasks.append(('reduce', 'circulant', ['--p', p, '--count', 8, '--root', root]))
    for i in range(0, len(ps), 32):  # at most 32 values of p per process
        for coll, algo, count in runs:
            tasks.append((coll, algo, ['--p', simlib.compact(ps[i:i + 32]), '--count', count,
                                       '--root', 0]))

    def run(t):
        coll, algo, args = t
        lines = simlib.run(['--coll', coll, '--algo', algo, '--alpha', 0, '--beta', 1] + args)
        bad = sum(check_rounds_line(coll, algo, l) for l in lines)
        print('  %s/%s %s: %d runs, %d differences' % (coll, algo, ' '.join(map(str, args)),
                                                      len(lines), bad), flush=True)
        return len(lines), bad

    res = list(simlib.pmap(run, tasks))
    n, bad = sum(r[0] for r in res), sum(r[1] for r in res)
    print('rounds/volumes p=%d..%d (%d values of p%s): %d runs, %d differences'
          % (lo, hi, len(ps), ', sampled above 256 every %d-th' % a.sample if a.sample > 1
             else '', n, bad))
    return 1 if bad else 0


def irregular_shapes(p):
    yield 'zeros', [0 if r % 3 == 1 else r + 1 for r in range(p)]
    yield 'last-all', [40 if r == p - 1 else 0 for r in range(p)]
    yield 'first-all', [40 if r == 0 else 0 for r in range(p)]
    yield 'one-most', [40 if r == p // 2 else (r * 7) % 3 for r in range(p)]


def circ_ok(a):
    lo, hi = prange(a.range, '1-200')
    colls = [('allreduce', 'circulant', 13, 1), ('allreduce', 'circulant_rsag', 29, 1),
             ('reduce', 'circulant', 13, 1), ('reduce', 'circulant_rsag', 29, 1),
             ('reduce_scatter_block', 'circulant', 3, 1), ('reduce_scatter', 'circulant', 3, 1),
             ('allgather', 'circulant', 3, 0), ('allgatherv', 'circulant', 3, 0),
             ('bcast', 'circulant', 13, 0), ('gather', 'circulant', 3, 0),
             ('scatter', 'circulant', 3, 0)]
    rooted = ('reduce', 'bcast', 'gather', 'scatter')
    tasks = []
    for c0 in range(lo, hi + 1, 24):
        c1 = min(hi, c0 + 23)
        for coll, algo, count, reduces in colls:
            for op in ('sum', 'max') if reduces else ('sum',):
                for ip in ([], ['--in-place']):
                    if coll == 'bcast' and ip:
                        continue  # bcast has no in-place form
                    base = ['--coll', coll, '--algo', algo, '--count', count, '--op', op] + ip
                    if coll not in rooted:
                        tasks.append(base + ['--p', '%d-%d' % (c0, c1)])
                        continue
                    tasks.append(base + ['--p', '%d-%d' % (c0, c1),
                                         '--root', 'all' if c1 <= 24 else 0])
                    if c1 > 24:  # and the last rank as root
                        tasks += [base + ['--p', p, '--root', p - 1]
                                  for p in range(c0, c1 + 1, 5)]
    for p in range(max(lo, 2), hi + 1):
        for _, counts in irregular_shapes(p):
            for coll in ('reduce_scatter', 'allgatherv'):
                for op in ('sum', 'max') if coll == 'reduce_scatter' else ('sum',):
                    for ip in ([], ['--in-place']):
                        tasks.append(['--coll', coll, '--algo', 'circulant', '--p', p,
                                      '--count', 0, '--counts', ','.join(map(str, counts)),
                                      '--op', op] + ip)

    def run(args):
        lines = simlib.run(args)
        bad = 0
        for l in lines:
            if not l['ok'] or ('--counts' in args and l['rounds'] != ceil_log2(l['p'])):
                bad += 1
                print('NOT OK', ' '.join(map(str, args)), json.dumps(l), flush=True)
        return len(lines), bad

    res = list(simlib.pmap(run, tasks))
    n, bad = sum(r[0] for r in res), sum(r[1] for r in res)
    print('ok p=%d..%d: %d runs, %d not ok' % (lo, hi, n, bad))
    return 1 if bad else 0


EXACT_BUDGET = 4 << 20  # p * m bytes simulated with real data up to this


def balanced(m, p):
    """The library's balanced split (redcoll__block_start): the first m % p
    blocks one element larger.  RS + AGv must use the layout circulant_rsag
    uses, or guideline (4) compares different problems."""
    return [m // p + (1 if i < m % p else 0) for i in range(p)]


def t(coll, algo, p, count, counts=None, root=0, scale=1):
    """Simulated time of a run (uint8 data, so count = bytes); a list of
    times for a list of algorithms 'a,b'."""
    args = ['--coll', coll, '--algo', algo, '--p', p, '--count', count, '--dtype', 'u8',
            '--root', root, '--alpha', ALPHA, '--beta', BETA * scale, '--gamma', GAMMA * scale]
    if counts is not None:
        args += ['--counts', ','.join(map(str, counts))]
    lines = simlib.run(args)
    for line in lines:
        if not line['ok']:
            sys.exit('not ok: %s %s' % (' '.join(map(str, args)), json.dumps(line)))
    return [l['time'] for l in lines] if ',' in algo else lines[0]['time']


def guideline_cell(cell):
    """All times of one (p, m0) cell.

    Exact: m = m0 bytes of uint8 in p balanced blocks (some empty when
    m0 < p), when p * m0 <= EXACT_BUDGET.  Otherwise scaled: m = p *
    floor(m0 / p) is simulated with one byte per block and beta, gamma
    multiplied by the block size, which gives the same time because every
    message and every reduction of these algorithms is a whole number of
    blocks (checked against real runs by the 'scaling' lines).

    RS = reduce_scatter (balanced blocks); RSB = reduce_scatter_block (p | m);
    AR = allreduce, Red = reduce (root p/2), each the faster of circulant and
    circulant_rsag (what a selector would pick); AGv = allgatherv; Sc = scatter
    of floor(m/p) per rank (MPI_Scatterv's lower bound); RS1 = reduce_scatter
    with all m in the root's block."""
    p, m0 = cell
    r = p // 2
    if p * m0 <= EXACT_BUDGET:
        m, s, unit = m0, 1, 1
    else:
        blk = m0 // p
        m, s, unit = blk * p, blk, blk
    n = m // unit                     # simulated bytes of the whole vector
    bal = balanced(n, p)
    one = [n if i == r else 0 for i in range(p)]
    both = 'circulant,circulant_rsag'
    x = {'p': p, 'm': m, 'scaled': s > 1}
    x['ar_c'], x['ar_r'] = t('allreduce', both, p, n, scale=s)
    x['red_c'], x['red_r'] = t('reduce', both, p, n, root=r, scale=s)
    x['rs'] = t('reduce_scatter', 'circulant', p, 0, bal, scale=s)
    x['rsb'] = t('reduce_scatter_block', 'circulant', p, n // p, scale=s) if n % p == 0 else None
    x['agv'] = t('allgatherv', 'circulant', p, 0, bal, scale=s)
    x['sc'] = t('scatter', 'circulant', p, n // p, root=r, scale=s) if n >= p else 0.0
    x['rs1'] = t('reduce_scatter', 'circulant', p, 0, one, scale=s)
    return x


GUIDELINES = [
    ('2', 'RS(m) <= AR(m)'),
    ('2b', 'RSB(m) <= AR(m)  (p | m)'),
    ('3', 'RS(m) <= Red(m) + Sc(m)'),
    ('4', 'AR(m) <= RS(m) + AGv(m)'),
    ('5', 'Red(m) <= AR(m)'),
    ('6', 'Red(m, r) <= RS1(m, r)'),
]


def sides(x, ar, red):
    return {
        '2': (x['rs'], ar),
        '2b': (x['rsb'], ar) if x['rsb'] is not None else None,
        '3': (x['rs'], red + x['sc']),
        '4': (ar, x['rs'] + x['agv']),
        '5': (red, ar),
        '6': (red, x['rs1']),
    }


def circ_guidelines(a):
    ps = list(range(2, 257)) if a.full else \
        sorted(set(list(range(2, 65)) + list(range(65, 257, 7)) + [128, 255, 256]))
    if a.p:
        lo, hi = prange(a.p)
        ps = list(range(lo, hi + 1))
    sizes = [1 << i for i in range(3, 25)]  # 8 B .. 16 MiB
    xs = list(simlib.pmap(guideline_cell, [(p, m0) for p in ps for m0 in sizes]))

    # The scaling argument, checked: real data against the scaled run.
    scal = []
    for p, m0 in ((7, 1 << 20), (64, 1 << 20), (100, 1 << 19)):
        blk = m0 // p
        real = t('allreduce', 'circulant_rsag', p, blk * p)
        scaled = t('allreduce', 'circulant_rsag', p, p, scale=blk)
        real_r = t('reduce', 'circulant', p, blk * p, root=p // 2)
        scaled_r = t('reduce', 'circulant', p, p, root=p // 2, scale=blk)
        scal.append((p, blk * p, real, scaled, real_r, scaled_r))

    viol = {g: [] for g, _ in GUIDELINES}
    worst = {g: (0.0, None) for g, _ in GUIDELINES}
    ratio6 = [float('inf'), 0.0]
    single = {'4 (AR = circulant only)': [], '5 (Red = circulant, AR = best)': [],
              '5 (Red = circulant_rsag, AR = best)': []}
    for x in xs:
        ar, red = min(x['ar_c'], x['ar_r']), min(x['red_c'], x['red_r'])
        for g, lr in sides(x, ar, red).items():
            if lr is None:
                continue
            lhs, rhs = lr
            q = lhs / rhs
            if q > worst[g][0]:
                worst[g] = (q, (x['p'], x['m']))
            if lhs > rhs * (1 + 1e-9):
                viol[g].append((x['p'], x['m'], q))
        ratio6 = [min(ratio6[0], red / x['rs1']), max(ratio6[1], red / x['rs1'])]
        if x['ar_c'] > (x['rs'] + x['agv']) * (1 + 1e-9):
            single['4 (AR = circulant only)'].append((x['p'], x['m']))
        if x['red_c'] > ar * (1 + 1e-9):
            single['5 (Red = circulant, AR = best)'].append((x['p'], x['m']))
        if x['red_r'] > ar * (1 + 1e-9):
            single['5 (Red = circulant_rsag, AR = best)'].append((x['p'], x['m']))

    out = ['Cost model: alpha = %g s, beta = %g s/B (10 GB/s), gamma = %g s/B (40 GB/s). '
           '%d cells: p in %s, m = 8 B .. 16 MiB in powers of two (m rounded down to a '
           'multiple of p where p * m > %d MiB; %d cells simulated with real data, %d '
           'scaled).' % (ALPHA, BETA, GAMMA, len(xs),
                         'every p 2..256' if a.full and not a.p else simlib.compact(ps, ', '),
                         EXACT_BUDGET >> 20, sum(not x['scaled'] for x in xs),
                         sum(x['scaled'] for x in xs)),
           '', '| guideline | violations | largest lhs/rhs | at (p, m bytes) |', '|---|---|---|---|']
    for g, text in GUIDELINES:
        r, at = worst[g]
        out.append('| (%s) %s | %d | %.4f | %s |' % (g, text, len(viol[g]), r,
                                                     '%d, %d' % at if at else '-'))
    out += ['', 'Guideline (6) as an approximation: Red(m, r) / RS1(m, r) ranges over '
            '[%.3f, %.3f] (1 where the tree reduce is the faster variant: the same '
            'messages and reductions).' % tuple(ratio6),
            '', 'Single variants instead of the faster of the two:', '']
    for k, v in single.items():
        out.append('- guideline %s: %d of %d cells fail%s' % (k, len(v), len(xs), crossover(v, xs)))
    out += ['', 'Scaling check (time of a real run against the scaled run, alpha/beta/gamma '
            'as above):', '']
    for p, m, real, scaled, real_r, scaled_r in scal:
        out.append('- p = %d, m = %d: allreduce circulant_rsag %.6e s real, %.6e s scaled; '
                   'reduce circulant %.6e s real, %.6e s scaled' % (p, m, real, scaled, real_r,
                                                                   scaled_r))
    text = '\n'.join(out) + '\n'
    sys.stdout.write(text)
    for g, _ in GUIDELINES:
        for p, m, q in viol[g][:10]:
            print('violation (%s): p=%d m=%d lhs/rhs %.4f' % (g, p, m, q))
    if a.doc:
        simlib.replace_block(
            simlib.ALGO_DOCS + '/circulant.md', '<!-- sweep begin -->', '<!-- sweep end -->',
            '<!-- generated by scripts/sim_sweep.py circulant guidelines --doc -->\n\n' + text)
    bad = any(viol[g] for g, _ in GUIDELINES) or \
        any(abs(a - b) > 1e-9 * b or abs(c - d) > 1e-9 * d for _, _, a, b, c, d in scal)
    return 1 if bad else 0


def crossover(fails, xs):
    """Where a list of failing (p, m) cells starts, and whether every larger
    m of the same p fails too."""
    if not fails:
        return ''
    first = {}
    for p, m in fails:
        first[p] = min(first.get(p, m), m)
    failing = set(fails)
    upward = all((x['p'], x['m']) in failing for x in xs
                 if x['p'] in first and x['m'] >= first[x['p']])
    lo = min(first.items(), key=lambda kv: (kv[1], kv[0]))
    hi = max(first.items(), key=lambda kv: (kv[1], -kv[0]))
    return ': from m = %d B (p = %d) to m = %d B (p = %d) on%s' % (
        lo[1], lo[0], hi[1], hi[0], ', and at every larger m of each such p' if upward
        else ' (not monotone in m)')


# ---- Rabenseifner (docs/algorithms/rabenseifner.md) ----------------------------

RABENSEIFNER = """Rabenseifner's reduction family: the sweeps behind
docs/algorithms/rabenseifner.md.
  costs [A-B] [ALGO...]
        rounds (alpha=1), volume (beta=1) and reduction work (gamma=1) of
        every algorithm against the paper's T_all / T_red (f_alpha = f_beta =
        1) for p in A..B (default 2-130), count = 2 lcm(p, 128) float64 (n
        divisible by p and by the power of two in use); reduce at root 0, at
        the last rank and, for p not a power of two, at the removed rank
        2r - 1 (the root swap).  One line per difference, then a summary per
        algorithm; exits 1 if the simulation is ever above the formula.
  correct [A-B] [--all-roots-upto N] [ALGO...]
        correctness (default p = 1-130) with eager limit 0 (every send waits
        for its receive), --op noncomm where accepted and --op sum on
        float64: allreduce with count 7 (below p from p = 8 on, never
        divisible by a power of two > 1), and with sum also counts 0 and 1000
        (in place); reduce at every root for p <= N (default 130) with count
        7, and at sampled roots (ends, middle, the removed rank 2r-1 and its
        partner, 2r, the edges of the first binary block) with count 7 for
        p > N, and with sum also 1000 (in place) and 0 (p <= 16).
        ALGO may be a name or name:collective.  Where noncomm is not accepted
        (ring) it must end in REDCOLL_ENOTSUP, never in a result, one rank included.  Every
        successful run must have run the requested algorithm."""

RAB_ALGOS = [  # (algo, collective)
    ('binary_tree', 'allreduce'), ('binary_tree', 'reduce'),
    ('recursive_doubling', 'allreduce'),
    ('halving_doubling', 'allreduce'), ('halving_doubling', 'reduce'),
    ('binary_blocks', 'allreduce'), ('binary_blocks', 'reduce'),
    ('ring', 'allreduce'), ('ring', 'reduce'),
]
# Algorithms that accept non-commutative operators (canonical rank order).
NONCOMM = {'binary_tree', 'recursive_doubling', 'halving_doubling', 'binary_blocks'}


def rabenseifner(argv):
    ap = argparse.ArgumentParser(prog='sim_sweep.py rabenseifner', description=RABENSEIFNER,
                                 formatter_class=RAW)
    ap.add_argument('what', choices=['costs', 'correct'])
    ap.add_argument('args', nargs='*', metavar='[A-B] ALGO')
    ap.add_argument('--all-roots-upto', type=int, default=130)
    a = ap.parse_intermixed_args(argv)
    rng = a.args[0] if a.args and a.args[0][:1].isdigit() else None
    a.range, a.algos = rng, a.args[1:] if rng else a.args
    if a.what == 'costs':
        return rab_costs(a.range, a.algos)
    return rab_correct(a.range, a.algos, a.all_roots_upto)


def pof2(p):
    return 1 << (p.bit_length() - 1)


def blocks(p):
    """Exponents of the binary blocks of p, largest first."""
    return [e for e in range(30, -1, -1) if p >> e & 1]


def paper_formula(algo, coll, p, n, root=0):
    """(rounds, volume, reduced): the coefficients of alpha, beta and gamma in
    the paper's T_all / T_red with f_alpha = f_beta = 1, n bytes."""
    L = ceil_log2(p)
    lg = lambda x: x.bit_length() - 1  # noqa: E731
    if algo == 'binary_tree':  # section 2.3
        if coll == 'reduce':
            return (L, L * n, L * n)
        return (2 * L, 2 * L * n, L * n)
    if algo == 'recursive_doubling':  # section 2.4, + alpha_uni + n beta_uni if not 2^k
        if p == pof2(p):
            return (L, L * n, L * n)
        return (L + 1, (L + 1) * n, L * n)
    if algo == 'halving_doubling':  # section 2.5
        if p == pof2(p):
            return (2 * lg(p), 2 * n - 2 * n / p, n - n / p)
        q = pof2(p)
        if coll == 'allreduce':
            return (2 * lg(q) + 3, 4 * n - 2 * n / q, 1.5 * n - n / q)
        return (2 * lg(q) + 2, 3 * n - 2 * n / q, 1.5 * n - n / q)
    if algo == 'ring':  # section 2.7
        return (2 * (p - 1), 2 * n - 2 * n / p, n - n / p)
    if algo == 'binary_blocks':
        f = bb_formula(coll, p, n)
        if coll == 'reduce' and root >= 2 ** blocks(p)[0]:
            # a root outside block 0 first receives rank 0's piece
            f = (f[0] + 1, f[1] + n / 2 ** blocks(p)[0], f[2])
        return f
    raise ValueError(algo)


def bb_formula(coll, p, n):
    """binary_blocks (section 2.6, extended 3.6): the paper gives no closed
    formula; this is the schedule's cost derived in
    docs/algorithms/rabenseifner.md under the assumption that every rank of a
    block starts each phase at the same time.  Each term alone."""
    ex = blocks(p)
    res = []
    for a, b, g in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
        def rs(e):  # reduce-scatter inside a block of 2^e ranks
            return a * e + (b + g) * (n - n / 2 ** e)
        A = rs(ex[-1])
        for k in range(len(ex) - 1, 0, -1):
            q = 2 ** (ex[k - 1] - ex[k])
            piece = n / 2 ** ex[k - 1]
            A = max(A, rs(ex[k - 1])) + q * (a + b * piece) + g * piece
        if coll == 'reduce':
            res.append(A + sum(a + b * n / 2 ** (s + 1) for s in range(ex[0])))
            continue
        B, end = A, 0.0
        for k, e in enumerate(ex):
            steps = [a + b * n / 2 ** (s + 1) for s in range(e)]  # distance 2^s
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


def big_count(p):
    """A large count divisible by p and by 128 (so by any power of two <= p)."""
    return p * 128 // math.gcd(p, 128) * 2


def measure(algos, coll, p, count, root=0):
    """{algo: (rounds, volume, reduced)} of the algorithms (a list), each
    three simulations; every run must be ok and run the algorithm asked for."""
    res = {}
    for cost in (('--alpha', 1), ('--alpha', 0, '--beta', 1), ('--alpha', 0, '--gamma', 1)):
        for d in simlib.run(['--coll', coll, '--algo', ','.join(algos), '--p', p,
                             '--count', count, '--root', root] + list(cost)):
            if not d['ok'] or d['algo'] != d['requested']:
                sys.exit('not ok: %s' % d)
            res.setdefault(d['algo'], []).append(d['time'])
    return {k: tuple(v) for k, v in res.items()}


def cost_roots(coll, p):
    if coll != 'reduce':
        return [0]
    r = p - pof2(p)
    return sorted({0, p - 1} | ({2 * r - 1} if r else set()))


def rab_costs(rng, only):
    a, b = prange(rng, '2-130')
    todo = [(algo, coll) for algo, coll in RAB_ALGOS if not only or algo in only]

    def one_p(p):  # {(algo, coll, root): measured}, a run per collective and root
        out = {}
        for coll in ('allreduce', 'reduce'):
            algos = [x for x, c in todo if c == coll]
            for root in cost_roots(coll, p) if algos else []:
                for algo, m in measure(algos, coll, p, big_count(p), root).items():
                    out[(algo, coll, root)] = m
        return out

    stats = {}
    for p, got in zip(range(a, b + 1), simlib.pmap(one_p, range(a, b + 1))):
        n = big_count(p) * 8
        for algo, coll in todo:
            for root in cost_roots(coll, p):
                f = paper_formula(algo, coll, p, n, root)
                st = stats.setdefault((algo, coll), [0, 0, 0])
                for what, fv, sv in zip(('rounds', 'volume', 'reduced'), f,
                                        got[(algo, coll, root)]):
                    if abs(fv - sv) < 1e-6 * max(1, fv):
                        st[0] += 1
                        continue
                    st[1 if sv < fv else 2] += 1
                    print('%s p=%3d %-18s %-9s root=%-3d %-7s formula %.6g sim %.6g '
                          '(%.4g n / %.4g n)' % ('BELOW' if sv < fv else 'ABOVE', p, algo, coll,
                                                 root, what, fv, sv, fv / n, sv / n), flush=True)
    for (algo, coll), (eq, below, above) in stats.items():
        print('summary %-18s %-9s equal %5d below %4d above %4d' % (algo, coll, eq, below, above))
    return 1 if any(s[2] for s in stats.values()) else 0


def sample_roots(p):
    """Roots that exercise every special case: the ends, the middle, the
    removed rank 2r - 1 and its partner (root swap), the first rank after the
    pairs, and the edges of the first binary block."""
    r, e0 = p - pof2(p), 2 ** blocks(p)[0]
    c = {0, 1, p // 2, p - 1, 2 * r - 1, 2 * r - 2, 2 * r, e0 - 1, e0}
    return sorted(x for x in c if 0 <= x < p)


def rab_correct(rng, only, all_roots_upto):
    a, b = prange(rng, '1-130')
    bad = runs = 0
    t0 = time.time()
    for algo, coll in RAB_ALGOS:
        if only and algo not in only and '%s:%s' % (algo, coll) not in only:
            continue
        tasks = []  # (arguments, must be refused)
        for op in ('noncomm', 'sum'):
            refuse = op == 'noncomm' and algo not in NONCOMM
            base = ['--coll', coll, '--algo', algo, '--op', op, '--eager', 0]
            if refuse:  # must be refused (count > 0, one rank too), whatever the root
                tasks.append((base + ['--p', '%d-%d' % (a, b), '--count', 7], True))
                if coll == 'reduce' and a <= 16:
                    tasks.append((base + ['--p', '%d-%d' % (a, min(b, 16)), '--count', 7,
                                          '--root', 'all'], True))
                continue
            if coll == 'allreduce':
                for count in (7,) if op == 'noncomm' else (0, 7, 1000):
                    tasks.append((base + ['--p', '%d-%d' % (a, b), '--count', count]
                                  + (['--in-place'] if count == 1000 else []), False))
                continue
            # reduce: every root up to all_roots_upto (count 7: below p from
            # p = 8 on, never divisible by a power of two > 1), sampled roots
            # beyond; count 1000 (in place) and 0 at sampled roots.  The
            # every-root pass runs with noncomm (or sum where refused).
            hi = min(b, all_roots_upto)
            if a <= hi and (op == 'noncomm' or algo not in NONCOMM):
                tasks.append((base + ['--p', '%d-%d' % (a, hi), '--count', 7, '--root', 'all'],
                              False))
            for p in range(a, b + 1):
                for root in sample_roots(p):
                    counts = [7] if p > hi else []
                    if op == 'sum':
                        counts += [1000] + ([0] if p <= 16 else [])
                    for count in counts:
                        tasks.append((base + ['--p', p, '--count', count, '--root', root]
                                      + (['--in-place'] if count == 1000 else []), False))
        for (_, refuse), lines in zip(tasks, simlib.run_many([t for t, _ in tasks])):
            for d in lines:
                runs += 1
                trivial = d['p'] == 1 or d['count'] == 0
                if refuse and d['count'] > 0:
                    # a forced algorithm that needs commutativity refuses on one rank as on many
                    good = d['status'] == 'REDCOLL_ENOTSUP'
                else:
                    good = d['ok'] and d['status'] == 'REDCOLL_OK' and (trivial or d['algo'] == algo)
                if not good:
                    bad += 1
                    print('NOT OK', json.dumps(d), flush=True)
        print('%-18s %-9s done: %d runs so far, %d not ok (%.0f s)'
              % (algo, coll, runs, bad, time.time() - t0), flush=True)
    print('correct: %d runs, %d not ok' % (runs, bad))
    return 1 if bad else 0


# ---- elimination (docs/algorithms/elimination.md) -----------------------------

ELIMINATION = """The must-shows of the elimination algorithms (issue 3).
Checks (all by default, or those named with --only):
  rounds  elimination, alpha=1, count 1, p in P: ceil(log2 p) + 1 rounds, or
          log2 p for a power of two;
  volume  elimination, threshold 1 byte, count COUNT (m bytes), p = q 2^n:
          beta=1 time <= (1 + 1/2^(n+1)) 2m, gamma=1 time <= (1 + 1/2^(n+1)) m,
          plus one block of rounding;
  rings   elimination_rings, count 1: ceil(log2 p) rounds for p = 3 2^n and
          9 2^n (n while p <= 3 * P_LAST), and never more rounds than
          elimination for any p in P;
  ok      every algorithm of the issue, p in P (default 1..130): allreduce
          and reduce with --op noncomm and with random float64 sums
          (sumrandom, bitwise-equal on all ranks), each with halving
          everywhere (threshold 1) and with none (default threshold); reduce
          with root 0, and every root (--roots all; 8515 runs for p 1..130,
          about six minutes of the simulator per algorithm, op and
          threshold) or every root up to p = 20 and roots p/2 and p-1 above
          (--roots few, the default); in place with count 5.
P is --p (default 1..300, and 1..130 for ok)."""

ELIM_ALGOS = ['elimination', 'elimination_nonoverlap', 'elimination_2to1', 'elimination_rings',
              'allgather_reduce', 'ring_sequential']


def elimination(argv):
    ap = argparse.ArgumentParser(prog='sim_sweep.py elimination', description=ELIMINATION,
                                 formatter_class=RAW)
    ap.add_argument('--p', default=None)
    ap.add_argument('--count', type=int, default=8192)
    ap.add_argument('--roots', choices=['all', 'few'], default='few')
    ap.add_argument('--only', default='rounds,volume,rings,ok')
    ap.add_argument('--algos', default=','.join(ELIM_ALGOS))
    args = ap.parse_intermixed_args(argv)
    only = args.only.split(',')
    a, b = prange(args.p, '1-300')
    bad = 0
    if 'rounds' in only:
        bad += elim_rounds_check(a, b)
    if 'volume' in only:
        bad += elim_volume(a, b, args.count)
    if 'rings' in only:
        bad += elim_rings(a, b)
    if 'ok' in only:
        bad += elim_ok(a, min(b, 130) if not args.p else b, args.roots, args.algos.split(','))
    print('sweep: %s' % ('all within bounds' if not bad else '%d failures' % bad))
    return 1 if bad else 0


def esim(algo, p, count, extra=(), coll='allreduce'):
    return ['--coll', coll, '--algo', algo, '--p', p, '--count', count] + list(extra)


def elim_rounds(p):
    k = ceil_log2(p)
    return k if p & (p - 1) == 0 else k + 1


def elim_rounds_check(a, b):
    bad = 0
    for r in simlib.run(esim('elimination', '%d-%d' % (a, b), 1), must=False):
        p = r['p']
        if not r['ok'] or r['rounds'] != elim_rounds(p):
            print('rounds p=%d: %s, want %d' % (p, r['rounds'], elim_rounds(p)))
            bad += 1
    print('rounds elimination p=%d..%d: %s' % (a, b, 'ok' if not bad else '%d failures' % bad))
    return bad


def elim_volume(a, b, count):
    bad = 0
    for key, model, factor in (('volume', ['--alpha', '0', '--beta', '1'], 2.0),
                               ('work', ['--alpha', '0', '--gamma', '1'], 1.0)):
        worst = 0.0
        for r in simlib.run(esim('elimination', '%d-%d' % (a, b), count,
                                 ['--threshold', '1'] + model), must=False):
            p, m = r['p'], r['bytes']
            n = (p & -p).bit_length() - 1
            block = 8 * (-(-count // max(1, 1 << (p.bit_length() - 1))))
            limit = (1 + 1 / 2 ** (n + 1)) * factor * m + block
            worst = max(worst, r['time'] / limit)
            if not r['ok'] or r['time'] > limit:
                print('%s p=%d: time %s > %.0f' % (key, p, r['time'], limit))
                bad += 1
        print('%s elimination p=%d..%d count %d: %s (largest time/bound %.3f)'
              % (key, a, b, count, 'ok' if not bad else '%d failures' % bad, worst))
    return bad


def elim_rings(a, b):
    bad = 0
    for r in simlib.run(esim('elimination_rings', '%d-%d' % (a, b), 1), must=False):
        p = r['p']
        if not r['ok'] or r['rounds'] > elim_rounds(p):
            print('rings p=%d: ok %s rounds %s > elimination %d' % (p, r['ok'], r['rounds'],
                                                                    elim_rounds(p)))
            bad += 1
    special = [q << k for q in (3, 9) for k in range(20) if q << k <= max(3 * b, 96)]
    for r in simlib.run(esim('elimination_rings', ','.join(map(str, sorted(special))), 1)):
        if not r['ok'] or r['rounds'] != ceil_log2(r['p']):
            print('rings p=%d: %s rounds, want %d' % (r['p'], r['rounds'], ceil_log2(r['p'])))
            bad += 1
    print('rings: p=%d..%d never above elimination; p=3*2^n, 9*2^n in %s at ceil(log2 p): %s'
          % (a, b, special, 'ok' if not bad else '%d failures' % bad))
    return bad


def elim_ok(a, b, roots, algos):
    bad = 0
    rng = '%d-%d' % (a, b)
    for algo in algos:
        tasks = []  # (arguments, op, the options in the report)
        for op in ('noncomm', 'sumrandom'):
            for th in (['--threshold', '1'], []):
                for count, inplace in ((37, []), (5, ['--in-place'])):
                    x = ['--op', op] + th + inplace
                    tasks += [(esim(algo, rng, count, x), op, x),
                              (esim(algo, rng, count, x, 'reduce'), op, x)]
                    if roots == 'all' and not inplace:
                        tasks.append((esim(algo, rng, count, x + ['--root', 'all'], 'reduce'),
                                      op, x))
                    elif roots == 'few':
                        if a <= 20:
                            tasks.append((esim(algo, '%d-%d' % (a, min(b, 20)), count,
                                               x + ['--root', 'all'], 'reduce'), op, x))
                        for p in range(max(a, 21), b + 1):
                            tasks += [(esim(algo, p, count, x + ['--root', root], 'reduce'), op, x)
                                      for root in (p // 2, p - 1)]
        runs = fails = 0
        for (_, op, x), rows in zip(tasks, simlib.run_many([t[0] for t in tasks], must=False)):
            for r in rows:
                runs += 1
                if not r['ok']:
                    fails += 1
                    print('FAIL %s %s p=%d root=%d op=%s %s' % (
                        r['coll'], algo, r['p'], r['root'], op, ' '.join(x)))
        print('ok %s p=%s roots %s: %d runs, %s' % (algo, rng, roots, runs,
                                                    'all ok' if not fails else '%d FAILED' % fails))
        sys.stdout.flush()
        bad += fails
    return bad


# ---- AUTO against every forced algorithm (docs/tuning.md) -----------------------

SELECT = """Checks REDCOLL_ALGO_AUTO against every forced algorithm in the simulator.

For every p and vector size (bytes) it runs `redcoll-sim --algo auto` and
every algorithm the collective has (redcoll-sim --algo all: those that refuse
the operator are left out), all under the same alpha-beta-gamma
profile, which redcoll-sim also hands to the selector (REDCOLL_COST_MODEL).
It prints, per point, AUTO's choice and AUTO's time over the best forced
time, and at the end the worst ratio and where it is.  Exits 1 if the
worst ratio is above --limit (default 1.10).

Large vectors are simulated scaled: the simulator's time is invariant under
(count / k, threshold / k, beta k, gamma k) as long as blocks stay whole,
so a point of S bytes above --cap (default 1 MiB, 256 KiB for p > 64) runs
with S / k bytes, k a power of two, threshold / k and beta, gamma times k.
The selector sees the same scaled values, and its cost model is invariant
the same way, so it chooses as it would for the real size.  Both the
forced runs and AUTO are scaled alike; the ratio is what is compared.
For p > 128 the cap is --cap / --large-div (default 4: 256 KiB).
allgather_reduce, where every rank holds all p vectors, is scaled further,
to at most max(cap / 16, 1 MiB / p) bytes a vector: its time is sums of
whole vectors and does not depend on the threshold, so any k leaves it
unchanged.

Defaults: the commodity-cluster profile alpha = 1e-5 s, beta = 1e-9 s/B,
gamma = 2.5e-10 s/B, threshold 8192 B, sizes 8 B .. 64 MiB in powers of 8
plus 64 MiB, p = 2..16 and a sample of 17..256 (powers of two, their
neighbours and some odd and composite values).  Commands are niced; the
points of one p run --jobs at a time."""

DEFAULT_P = (list(range(2, 17)) + [17, 20, 23, 24, 31, 32, 33, 40, 48, 63, 64, 65, 96, 100,
                                   127, 128, 129, 160, 192, 255, 256])
DEFAULT_SIZES = [8 ** i for i in range(1, 9)] + [64 << 20]


def scaled(args, p, size, esize, algo=None):
    """(count, threshold, beta, gamma) of the run that stands for `size`."""
    cap = args.cap if p <= 64 else max(args.cap // (4 if p <= 128 else args.large_div), 4096)
    k = 1
    if algo == 'allgather_reduce':
        # Every rank holds all p vectors: at most max(cap / 16, 1 MiB / p)
        # bytes a vector.  Its time is sums of whole vectors and the
        # threshold does not enter, so any k leaves it unchanged.
        while size // k > max(cap // 16, (1 << 20) // p) and size // (2 * k) >= esize:
            k *= 2
    else:
        while (size // k > cap and args.threshold // (2 * k) >= esize
               and size // (2 * k) >= esize * p):
            k *= 2
    return max(1, size // k // esize), max(1, args.threshold // k), args.beta * k, args.gamma * k


def select_point(args, coll, p, size, esize):
    """{algo: line} of AUTO and every forced algorithm at one point; a run
    without output is a line with ok false."""
    algos = simlib.algorithms(coll, args.op)
    groups = [['auto'] + [a for a in algos if a != 'allgather_reduce']]
    groups += [['allgather_reduce']] if 'allgather_reduce' in algos else []
    got = {}
    for group in groups:
        count, thr, beta, gamma = scaled(args, p, size, esize, group[0])
        lines = simlib.run(['--coll', coll, '--algo', ','.join(group), '--p', p, '--count', count,
                            '--op', args.op, '--threshold', thr, '--alpha', repr(args.alpha),
                            '--beta', repr(beta), '--gamma', repr(gamma)], must=False, nice=True)
        got.update((d['requested'], d) for d in lines)
    return {a: got.get(a, {'ok': False, 'status': 'no output', 'error': ''})
            for a in ['auto'] + algos if got.get(a, {}).get('status') != 'REDCOLL_ENOTSUP'}


def select(argv):
    ap = argparse.ArgumentParser(prog='sim_sweep.py select', description=SELECT,
                                 formatter_class=RAW)
    ap.add_argument('--coll', default='allreduce')
    ap.add_argument('--p', default=None)
    ap.add_argument('--sizes', default=None)
    ap.add_argument('--op', default='sum', choices=['sum', 'noncomm'])
    ap.add_argument('--alpha', type=float, default=1e-5)
    ap.add_argument('--beta', type=float, default=1e-9)
    ap.add_argument('--gamma', type=float, default=2.5e-10)
    ap.add_argument('--threshold', type=int, default=8192)
    ap.add_argument('--cap', type=int, default=1 << 20)
    ap.add_argument('--large-div', type=int, default=4,
                    help='for p > 128 the cap is --cap divided by this (default 4)')
    ap.add_argument('--csv', default=None)
    ap.add_argument('--limit', type=float, default=1.10)
    args = ap.parse_intermixed_args(argv)
    ps = simlib.parse_list(args.p) if args.p else DEFAULT_P
    sizes = simlib.parse_list(args.sizes) if args.sizes else DEFAULT_SIZES
    # Element size: 8 (float64) for sum; the tool's custom element otherwise.
    j = simlib.run(['--coll', 'allreduce', '--algo', 'linear', '--p', 2, '--count', 1,
                    '--op', args.op])[0]
    esize = max(1, j['bytes'] // j['count'])

    worst = (0.0, None)
    csv = simlib.Csv(args.csv, ['coll', 'p', 'bytes', 'auto_algo', 'auto_time', 'best_algo',
                                'best_time', 'ratio'])
    failures = []
    for coll in args.coll.split(','):
        for p in ps:
            points = simlib.pmap(lambda size: select_point(args, coll, p, size, esize), sizes)
            for size, res in zip(sizes, points):
                for a, r in res.items():
                    if not r.get('ok'):
                        failures.append('%s p=%d %dB %s: %s %s' % (
                            coll, p, size, a, r.get('status'), r.get('error', '')))
                forced = {a: r['time'] for a, r in res.items() if a != 'auto' and r.get('ok')}
                if not res['auto'].get('ok') or not forced:
                    continue
                best = min(forced, key=lambda a: forced[a])
                t_auto = res['auto']['time']
                ratio = t_auto / forced[best] if forced[best] > 0 else 1.0
                chosen = res['auto']['algo']
                mark = ' <-- over %.2f' % args.limit if ratio > args.limit else ''
                print('%-9s p=%-4d %9d B  auto=%-22s best=%-22s ratio %.4f%s' % (
                    coll, p, size, chosen, best, ratio, mark), flush=True)
                csv.row([coll, p, size, chosen, '%.9g' % t_auto, best, '%.9g' % forced[best],
                         '%.6f' % ratio])
                if ratio > worst[0]:
                    worst = (ratio, (coll, p, size, chosen, best))
    for f in failures:
        print('FAILED RUN: ' + f)
    if worst[1] is None:
        print('no points')
        return 1
    coll, p, size, chosen, best = worst[1]
    print('worst AUTO/best ratio %.4f at %s p=%d %d B (auto %s, best %s)' % (
        worst[0], coll, p, size, chosen, best))
    return 0 if worst[0] <= args.limit else 1


# ---- scan, alltoall, gatherv / scatterv / allgatherv_displs -------------------------

COLLS = """Rounds and volumes of the prefix, personalised-exchange and irregular
rooted collectives, for every p in A..B (default 1-300), against the
formulas of docs/algorithms/scan.md, alltoall.md and rooted_v.md: every
line must be ok (results verified), its rounds (alpha = 1) exact, and the
most bytes any rank sends and receives exact.  float64 sum; scan count
1000 (blocks of the transposition uneven for most p), alltoall count 3,
alltoallv, gatherv, scatterv and allgatherv_displs count 5 with blocks end
to end and (rounds at most the formula) the uneven layouts of
tests/oracle (--irregular 1, 2), gatherv and scatterv with root p/3."""

SCAN_N, A2A_N, V_N, E = 1000, 3, 5, 8


def binom_children(p, root, r):
    """Children of rank r in the binomial tree rooted at root (ranks)."""
    v = (r - root) % p
    low = v & -v if v else 1 << ceil_log2(p)
    out, m = [], 1
    while m < low and v + m < p:
        out.append((v + m + root) % p)
        m <<= 1
    return out


def scan_expect(coll, algo, p):
    """(rounds, max bytes sent, max bytes received) of docs/algorithms/scan.md."""
    q, m = ceil_log2(p), SCAN_N * E
    total, incl = coll == 'exscan_total', coll == 'scan'
    if p == 1:
        return 0, 0, 0
    if algo == 'linear':
        return ((2 if total else 1) * (p - 1), (p - 1) * m if total else m,
                2 * m if total and p > 2 else m)
    if algo == 'hillis_steele':
        # rank r sends at the distances d with r + d < p, receives at d <= r;
        # exscan_total: a binomial broadcast from rank p-1 after that
        sent = [sum(1 for k in range(q) if r + (1 << k) < p) for r in range(p)]
        recv = [sum(1 for k in range(q) if (1 << k) <= r) for r in range(p)]
        if total:
            for r in range(p):
                sent[r] += len(binom_children(p, p - 1, r))
                recv[r] += r != p - 1
        return (2 if total else 1) * q, max(sent) * m, max(recv) * m
    # transpose: phase 1 sends the other blocks, receives p-1 pieces of the
    # own block; phase 3 sends the own block's prefix (and total) pieces,
    # receives the prefix (and total) blocks of the others
    L = [x * E for x in balanced(SCAN_N, p)]
    sent, recv = [], []
    for r in range(p):
        k3 = p - 1 if incl else (p - 1 if r == 0 else p - 2)  # prefix pieces sent
        sent.append(m - L[r] + k3 * L[r] + (total and (p - 1) * L[r]))
        back = 0 if (not incl and r == 0) else m - L[r]
        recv.append((p - 1) * L[r] + back + (total and m - L[r]))
    return 2 * (p - 1), max(sent), max(recv)


def base_count(irr, p, i, j, n):
    """tests/oracle/check.c base_count: rank i's block for rank j."""
    if irr == 0:
        return n
    if irr == 1:
        return 0 if (i + j) % 3 == 0 else (i * 7 + j * 13) % (n + 1)
    return 4 * n if j == (i * i + 1) % p else (0 if (i ^ j) & 3 else 1)


def blocks_expect(coll, algo, p, irr):
    """(rounds, max sent, max received, rounds exact) of alltoall.md and rooted_v.md."""
    q = ceil_log2(p)
    if p == 1:
        return 0, 0, 0, True
    if coll == 'alltoall':
        B = A2A_N * E
        if algo == 'bruck':
            moving = [sum(1 for i in range(p) if (i >> k) & 1) for k in range(q)]
            return q, sum(moving) * B, sum(moving) * B, True
        return p - 1, (p - 1) * B, (p - 1) * B, True
    if coll == 'alltoallv':
        c = [[base_count(irr, p, i, j, V_N) for j in range(p)] for i in range(p)]
        sent = max(sum(c[i][j] for j in range(p) if j != i) for i in range(p))
        recv = max(sum(c[i][j] for i in range(p) if i != j) for j in range(p))
        return p - 1, sent * E, recv * E, irr == 0
    n = [base_count(irr, p, 0, k, V_N) for k in range(p)]
    if coll == 'allgatherv_displs':
        # rank r sends every block but that of r + 1, receives all but its own
        return (p - 1, max(sum(n) - n[(r + 1) % p] for r in range(p)) * E,
                max(sum(n) - n[r] for r in range(p)) * E, irr == 0)
    root = p // 3
    vol = (sum(n) - n[root]) * E
    rounds = q if algo == 'binary_tree' else p - 1
    # The most a non-root rank moves: its subtree's blocks (binary_tree) or
    # its own block (linear); gatherv sends it, scatterv receives it.
    sub = 0
    if algo == 'binary_tree':
        for r in range(p):
            if r != root:
                v = (r - root) % p
                end = min(v + (v & -v), p)
                sub = max(sub, sum(n[(u + root) % p] for u in range(v, end)))
    else:
        sub = max(n[r] for r in range(p) if r != root)
    if coll == 'gatherv':
        return rounds, sub * E, vol, irr == 0
    return rounds, vol, sub * E, irr == 0


def colls(argv):
    ap = argparse.ArgumentParser(prog='sim_sweep.py colls', description=COLLS, formatter_class=RAW)
    ap.add_argument('range', nargs='?')
    a = ap.parse_args(argv)
    lo, hi = prange(a.range, '1-300')
    ps = list(range(lo, hi + 1))
    runs = [(c, al, ['--count', SCAN_N], 0) for c in ('scan', 'exscan', 'exscan_total')
            for al in ('linear', 'hillis_steele', 'transpose')]
    runs += [('alltoall', al, ['--count', A2A_N], 0) for al in ('bruck', 'pairwise')]
    for irr in (0, 1, 2):
        runs += [('alltoallv', 'pairwise', ['--count', V_N, '--irregular', irr], irr),
                 ('allgatherv_displs', 'ring', ['--count', V_N, '--irregular', irr], irr)]
        runs += [(c, al, ['--count', V_N, '--irregular', irr], irr)
                 for c in ('gatherv', 'scatterv') for al in ('binary_tree', 'linear')]
    tasks = [(c, al, args, irr, ps[i:i + 50]) for c, al, args, irr in runs
             for i in range(0, len(ps), 50)]

    def run(t):
        coll, algo, args, irr, chunk = t
        if coll in ('gatherv', 'scatterv'):
            lines = []
            for p in chunk:  # root p/3 differs per p
                lines += simlib.run(['--coll', coll, '--algo', algo, '--p', p, '--root', p // 3]
                                    + args)
        else:
            lines = simlib.run(['--coll', coll, '--algo', algo, '--p', simlib.compact(chunk)] + args)
        bad = 0
        for l in lines:
            p = l['p']
            if coll.startswith(('scan', 'exscan')):
                want = scan_expect(coll, algo, p) + (True,)
            else:
                want = blocks_expect(coll, algo, p, irr)
            r_ok = l['rounds'] == want[0] if want[3] else l['rounds'] <= want[0]
            if not (l['ok'] and r_ok and l['max_bytes_sent'] == want[1]
                    and l['max_bytes_recv'] == want[2]):
                bad += 1
                print('DIFF %s/%s p=%d irregular=%d: rounds %d sent %d recv %d, want %s %s'
                      % (coll, algo, p, irr, l['rounds'], l['max_bytes_sent'],
                         l['max_bytes_recv'], want[:3], l.get('error', '')), flush=True)
        return len(lines), bad

    res = list(simlib.pmap(run, tasks))
    n, bad = sum(r[0] for r in res), sum(r[1] for r in res)
    print('colls p=%d..%d: %d runs (%d collective/algorithm/layout), %d differences'
          % (lo, hi, n, len(runs), bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(simlib.main(__doc__, {'circulant': circulant, 'rabenseifner': rabenseifner,
                                   'elimination': elimination, 'select': select,
                                   'colls': colls}))
