#!/usr/bin/env python3
"""Checks REDCOLL_ALGO_AUTO against every forced algorithm in the simulator.

usage: scripts/select_sweep.py [--sim PATH] [--coll allreduce,reduce]
           [--p LIST] [--sizes LIST] [--op sum|noncomm] [--jobs N]
           [--alpha A --beta B --gamma G] [--threshold B] [--cap BYTES]
           [--large-div D] [--csv FILE] [--limit R]

For every p and vector size (bytes) it runs `redcoll-sim --algo auto` and
`redcoll-sim --algo X` for every algorithm X the collective has (those
that refuse the operator are skipped), all under the same alpha-beta-gamma
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
neighbours and some odd and composite values).  Commands are niced.
Only the Python standard library is used.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))

ALGOS = {
    'allreduce': ['linear', 'binary_tree', 'recursive_doubling', 'halving_doubling',
                  'binary_blocks', 'ring', 'elimination', 'elimination_nonoverlap',
                  'elimination_2to1', 'elimination_rings', 'allgather_reduce',
                  'ring_sequential', 'circulant', 'circulant_rsag'],
    'reduce': ['linear', 'binary_tree', 'halving_doubling', 'binary_blocks', 'ring',
               'elimination', 'elimination_nonoverlap', 'elimination_2to1',
               'elimination_rings', 'allgather_reduce', 'ring_sequential', 'circulant'],
    'reduce_scatter_block': ['linear', 'circulant'],
    'allgather': ['linear', 'circulant'],
    'bcast': ['linear', 'binary_tree', 'circulant'],
    'gather': ['linear', 'circulant'],
    'scatter': ['linear', 'circulant'],
}

DEFAULT_P = (list(range(2, 17)) + [17, 20, 23, 24, 31, 32, 33, 40, 48, 63, 64, 65, 96, 100,
                                   127, 128, 129, 160, 192, 255, 256])
DEFAULT_SIZES = [8 ** i for i in range(1, 9)] + [64 << 20]


def find_sim():
    for b in ('build', 'build-sel'):
        path = os.path.join(ROOT, b, 'tools', 'redcoll-sim')
        if os.path.exists(path):
            return path
    return os.path.join(ROOT, 'build', 'tools', 'redcoll-sim')


def parse_list(s):
    out = []
    for part in s.split(','):
        if '-' in part:
            a, b = part.split('-')
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def scaled(p, size, esize, args, algo=None):
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
    count = max(1, size // k // esize)
    return count, max(1, args.threshold // k), args.beta * k, args.gamma * k


def run(args, coll, algo, p, size, esize):
    count, thr, beta, gamma = scaled(p, size, esize, args, algo)
    cmd = ['nice', '-n', '10', args.sim, '--coll', coll, '--algo', algo, '--p', str(p),
           '--count', str(count), '--op', args.op, '--threshold', str(thr),
           '--alpha', repr(args.alpha), '--beta', repr(beta), '--gamma', repr(gamma)]
    if args.op == 'sum':
        cmd += ['--dtype', 'f64']
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 2:
        return None  # the collective has no such algorithm
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith('{')]
    if not lines:
        return {'ok': False, 'status': 'no output', 'error': r.stderr.strip()[:200]}
    j = json.loads(lines[-1])
    if j.get('status') == 'REDCOLL_ENOTSUP':
        return None  # needs a commutative operator
    return j


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--sim', default=find_sim())
    ap.add_argument('--coll', default='allreduce')
    ap.add_argument('--p', default=None)
    ap.add_argument('--sizes', default=None)
    ap.add_argument('--op', default='sum', choices=['sum', 'noncomm'])
    ap.add_argument('--jobs', type=int, default=4)
    ap.add_argument('--alpha', type=float, default=1e-5)
    ap.add_argument('--beta', type=float, default=1e-9)
    ap.add_argument('--gamma', type=float, default=2.5e-10)
    ap.add_argument('--threshold', type=int, default=8192)
    ap.add_argument('--cap', type=int, default=1 << 20)
    ap.add_argument('--large-div', type=int, default=4,
                    help='for p > 128 the cap is --cap divided by this (default 4)')
    ap.add_argument('--csv', default=None)
    ap.add_argument('--limit', type=float, default=1.10)
    args = ap.parse_args(argv)
    ps = parse_list(args.p) if args.p else DEFAULT_P
    sizes = parse_list(args.sizes) if args.sizes else DEFAULT_SIZES
    # Element size: 8 (float64) for sum; the tool's custom element otherwise.
    esize = 8
    if args.op != 'sum':
        j = run(args, 'allreduce', 'linear', 2, 1 << 10, 1)
        esize = max(1, j['bytes'] // j['count'])

    worst = (0.0, None)
    csv = open(args.csv, 'w') if args.csv else None
    if csv:
        csv.write('coll,p,bytes,auto_algo,auto_time,best_algo,best_time,ratio\n')
    failures = []
    with cf.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for coll in args.coll.split(','):
            for p in ps:
                futs = {}
                for size in sizes:
                    for algo in ['auto'] + ALGOS[coll]:
                        futs[(size, algo)] = ex.submit(run, args, coll, algo, p, size, esize)
                for size in sizes:
                    res = {a: futs[(size, a)].result() for a in ['auto'] + ALGOS[coll]}
                    res = {a: r for a, r in res.items() if r is not None}
                    bad = [a for a, r in res.items() if not r.get('ok')]
                    for a in bad:
                        failures.append('%s p=%d %dB %s: %s %s' % (
                            coll, p, size, a, res[a].get('status'), res[a].get('error', '')))
                    forced = {a: r['time'] for a, r in res.items() if a != 'auto' and r.get('ok')}
                    if 'auto' not in res or not res['auto'].get('ok') or not forced:
                        continue
                    best = min(forced, key=lambda a: forced[a])
                    t_auto = res['auto']['time']
                    ratio = t_auto / forced[best] if forced[best] > 0 else 1.0
                    chosen = res['auto']['algo']
                    mark = ' <-- over %.2f' % args.limit if ratio > args.limit else ''
                    print('%-9s p=%-4d %9d B  auto=%-22s best=%-22s ratio %.4f%s' % (
                        coll, p, size, chosen, best, ratio, mark), flush=True)
                    if csv:
                        csv.write('%s,%d,%d,%s,%.9g,%s,%.9g,%.6f\n' % (
                            coll, p, size, chosen, t_auto, best, forced[best], ratio))
                        csv.flush()  # a long sweep stopped early keeps its rows
                    if ratio > worst[0]:
                        worst = (ratio, (coll, p, size, chosen, best))
    if csv:
        csv.close()
    for f in failures:
        print('FAILED RUN: ' + f)
    if worst[1] is None:
        print('no points')
        return 1
    coll, p, size, chosen, best = worst[1]
    print('worst AUTO/best ratio %.4f at %s p=%d %d B (auto %s, best %s)' % (
        worst[0], coll, p, size, chosen, best))
    return 0 if worst[0] <= args.limit else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
