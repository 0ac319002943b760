#!/usr/bin/env python3
"""Rabenseifner's reduction family under the simulator: the sweeps behind
docs/algorithms/rabenseifner.md.

usage: scripts/rabenseifner_sweep.py [--sim PATH] COMMAND [ARGS]
  costs [A-B] [ALGO...]
        rounds (alpha=1), volume (beta=1) and reduction work (gamma=1) of
        every algorithm against the paper's T_all / T_red (f_alpha = f_beta =
        1) for p in A..B (default 2-130), count = 2 lcm(p, 128) float64 (n
        divisible by p and by the power of two in use); reduce at root 0, at
        the last rank and, for p not a power of two, at the removed rank
        2r - 1 (the root swap).  One line per difference, then a summary per
        algorithm; exits 1 if the simulation is ever above the formula.
  correct [A-B] [--all-roots-upto=N] [ALGO...]
        correctness (default p = 1-130) with eager limit 0 (every send waits
        for its receive), --op noncomm where accepted and --op sum on
        float64: allreduce with count 7 (below p from p = 8 on, never
        divisible by a power of two > 1), and with sum also counts 0 and 1000
        (in place); reduce at every root for p <= N (default 130) with count
        7, and at sampled roots (ends, middle, the removed rank 2r-1 and its
        partner, 2r, the edges of the first binary block) with count 7 for
        p > N, and with sum also 1000 (in place) and 0 (p <= 16).
        ALGO may be a name or name:collective.  Where noncomm is not accepted
        (ring) it must end in REDCOLL_ENOTSUP, never in a result.  Every
        successful run must have run the requested algorithm.

Only the Python standard library is used; scripts/rabenseifner_table.py
imports the formulas from here.
"""
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.path.join(HERE, '..', 'build', 'tools', 'redcoll-sim')

ALGOS = [  # (algo, collective)
    ('binary_tree', 'allreduce'), ('binary_tree', 'reduce'),
    ('recursive_doubling', 'allreduce'),
    ('halving_doubling', 'allreduce'), ('halving_doubling', 'reduce'),
    ('binary_blocks', 'allreduce'), ('binary_blocks', 'reduce'),
    ('ring', 'allreduce'), ('ring', 'reduce'),
]
# Algorithms that accept non-commutative operators (canonical rank order).
NONCOMM = {'binary_tree', 'recursive_doubling', 'halving_doubling', 'binary_blocks'}


def set_sim(path):
    global SIM
    SIM = path


def sim(args):
    out = subprocess.run([SIM] + [str(a) for a in args], capture_output=True, text=True)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if not lines:
        sys.exit('redcoll-sim failed: %s %s' % (' '.join(map(str, args)), out.stderr))
    return lines


# ---- the paper's formulas --------------------------------------------------

def pof2(p):
    q = 1
    while q * 2 <= p:
        q *= 2
    return q


def lg(x):
    return x.bit_length() - 1


def ceil_lg(p):
    return (p - 1).bit_length()


def blocks(p):
    """Exponents of the binary blocks of p, largest first."""
    return [e for e in range(30, -1, -1) if p >> e & 1]


def paper_formula(algo, coll, p, n, root=0):
    """(rounds, volume, reduced): the coefficients of alpha, beta and gamma in
    the paper's T_all / T_red with f_alpha = f_beta = 1, n bytes."""
    L = ceil_lg(p)
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


def measure(algo, coll, p, count, root=0):
    """(rounds, volume, reduced) of one run: three simulations."""
    out = []
    for cost in (('--alpha', 1), ('--alpha', 0, '--beta', 1), ('--alpha', 0, '--gamma', 1)):
        d = sim(['--coll', coll, '--algo', algo, '--p', p, '--count', count, '--root', root]
                + list(cost))[0]
        if not d['ok'] or d['algo'] != algo:
            sys.exit('not ok: %s' % d)
        out.append(d['time'])
    return tuple(out)


def parse_range(s, default):
    s = s or default
    a, _, b = s.partition('-')
    return int(a), int(b or a)


def cost_roots(coll, p):
    if coll != 'reduce':
        return [0]
    roots = [0, p - 1]
    r = p - pof2(p)
    if r:
        roots.append(2 * r - 1)
    return sorted(set(roots))


def cmd_costs(rng, only):
    a, b = parse_range(rng, '2-130')
    stats = {}
    worse = 0
    for p in range(a, b + 1):
        count = big_count(p)
        n = count * 8
        for algo, coll in ALGOS:
            if only and algo not in only:
                continue
            for root in cost_roots(coll, p):
                f = paper_formula(algo, coll, p, n, root)
                s = measure(algo, coll, p, count, root)
                st = stats.setdefault((algo, coll), [0, 0, 0])
                for what, fv, sv in zip(('rounds', 'volume', 'reduced'), f, s):
                    if abs(fv - sv) < 1e-6 * max(1, fv):
                        st[0] += 1
                        continue
                    tag = 'BELOW' if sv < fv else 'ABOVE'
                    st[1 if sv < fv else 2] += 1
                    print('%s p=%3d %-18s %-9s root=%-3d %-7s formula %.6g sim %.6g '
                          '(%.4g n / %.4g n)' % (tag, p, algo, coll, root, what, fv, sv,
                                                 fv / n, sv / n), flush=True)
    for (algo, coll), (eq, below, above) in stats.items():
        worse += above
        print('summary %-18s %-9s equal %5d below %4d above %4d' % (algo, coll, eq, below, above))
    return 1 if worse else 0


def sample_roots(p):
    """Roots that exercise every special case: the ends, the middle, the
    removed rank 2r - 1 and its partner (root swap), the first rank after the
    pairs, and the edges of the first binary block."""
    r, e0 = p - pof2(p), 2 ** blocks(p)[0]
    c = {0, 1, p // 2, p - 1, 2 * r - 1, 2 * r - 2, 2 * r, e0 - 1, e0}
    return sorted(x for x in c if 0 <= x < p)


def cmd_correct(rng, only, all_roots_upto):
    a, b = parse_range(rng, '1-130')
    bad = runs = 0
    t0 = time.time()

    def go(args, algo, expect_enotsup=False):
        nonlocal bad, runs
        for d in sim(args + ['--eager', 0]):
            runs += 1
            trivial = d['p'] == 1 or d['count'] == 0
            if expect_enotsup and not trivial:
                good = d['status'] == 'REDCOLL_ENOTSUP'
            else:
                good = d['ok'] and d['status'] == 'REDCOLL_OK' and (trivial or d['algo'] == algo)
            if not good:
                bad += 1
                print('NOT OK', json.dumps(d), flush=True)

    for algo, coll in ALGOS:
        if only and algo not in only and '%s:%s' % (algo, coll) not in only:
            continue
        for op in ('noncomm', 'sum'):
            refuse = op == 'noncomm' and algo not in NONCOMM
            base = ['--coll', coll, '--algo', algo, '--op', op]
            if refuse:  # must be refused (count > 0, p > 1), whatever the root
                go(base + ['--p', '%d-%d' % (a, b), '--count', 7], algo, True)
                if coll == 'reduce' and a <= 16:
                    go(base + ['--p', '%d-%d' % (a, min(b, 16)), '--count', 7, '--root', 'all'],
                       algo, True)
                continue
            if coll == 'allreduce':
                counts = (7,) if op == 'noncomm' else (0, 7, 1000)
                for count in counts:
                    go(base + ['--p', '%d-%d' % (a, b), '--count', count]
                       + (['--in-place'] if count == 1000 else []), algo)
                continue
            # reduce: every root up to all_roots_upto (count 7: below p from
            # p = 8 on, never divisible by a power of two > 1), sampled roots
            # beyond; count 1000 (in place) and 0 at sampled roots.  The
            # every-root pass runs with noncomm (or sum where refused).
            hi = min(b, all_roots_upto)
            if a <= hi and (op == 'noncomm' or algo not in NONCOMM):
                go(base + ['--p', '%d-%d' % (a, hi), '--count', 7, '--root', 'all'], algo)
            for p in range(a, b + 1):
                for root in sample_roots(p):
                    counts = [7] if p > hi else []
                    if op == 'sum':
                        counts += [1000] + ([0] if p <= 16 else [])
                    for count in counts:
                        go(base + ['--p', p, '--count', count, '--root', root]
                           + (['--in-place'] if count == 1000 else []), algo)
        print('%-18s %-9s done: %d runs so far, %d not ok (%.0f s)'
              % (algo, coll, runs, bad, time.time() - t0), flush=True)
    print('correct: %d runs, %d not ok' % (runs, bad))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == '--sim':
        set_sim(argv[1])
        argv = argv[2:]
    if not argv or argv[0] not in ('costs', 'correct'):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    rng = rest[0] if rest and rest[0][:1].isdigit() else None
    only = rest[1:] if rng else rest
    if cmd == 'costs':
        return cmd_costs(rng, only)
    upto = 130
    for x in list(only):
        if x.startswith('--all-roots-upto='):
            upto = int(x.split('=', 1)[1])
            only.remove(x)
    return cmd_correct(rng, only, upto)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
