#!/usr/bin/env python3
"""The must-shows of the circulant collectives (issue 6), re-runnable.

usage: scripts/circulant_sweep.py [--sim PATH] [--jobs N] COMMAND [ARGS]
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
                  --doc writes the summary there.
Exit status 1 if anything differs or fails.  Only the standard library.
"""
import concurrent.futures
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SIM = os.environ.get('REDCOLL_SIM', os.path.join(HERE, '..', 'build', 'tools', 'redcoll-sim'))
DOC = os.path.join(HERE, '..', 'docs', 'algorithms', 'circulant.md')
JOBS = 2

# A commodity cluster: 2 us start-up, 10 GB/s per link (beta = 1e-10 s/B),
# local reduction at 40 GB/s (gamma = 2.5e-11 s/B, vectorised, in cache).
ALPHA, BETA, GAMMA = 2e-6, 1e-10, 2.5e-11


def sim(args):
    """Runs redcoll-sim; returns its JSON lines (exits on a usage error)."""
    out = subprocess.run([SIM] + [str(a) for a in args], capture_output=True, text=True)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if not lines:
        sys.exit('redcoll-sim failed: %s\n%s' % (' '.join(map(str, args)), out.stderr))
    return lines


def pmap(fn, items):
    """fn over items, JOBS at a time (each runs redcoll-sim processes)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
        return list(ex.map(fn, items))


def q_of(p):
    return (p - 1).bit_length()


def prange(s, default):
    a, b = (s or default).split('-')
    return int(a), int(b)


def chunks(a, b, size):
    out = []
    while a <= b:
        out.append((a, min(b, a + size - 1)))
        a += size
    return out


# ---- rounds and volumes -------------------------------------------------------

ELEM = 8  # float64


def rounds_expect(coll, algo, p, line):
    """(rounds, volume) wanted for one line of a run with alpha=0, beta=1;
    volume None: not checked."""
    q = q_of(p)
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


def cmd_rounds(argv):
    rng = next((a for a in argv if not a.startswith('--')), None)
    a, b = prange(rng, '2-1024')
    a = max(a, 2)
    runs = [('allreduce', 'circulant', 8), ('reduce', 'circulant', 8),
            ('reduce_scatter_block', 'circulant', 1), ('allgather', 'circulant', 1)]
    if '--extras' in argv:
        runs += [('allreduce', 'circulant_rsag', 8), ('reduce', 'circulant_rsag', 8),
                 ('bcast', 'circulant', 8), ('gather', 'circulant', 1),
                 ('scatter', 'circulant', 1)]
    # --sample N: above p = 256 only every N-th p and 2^k - 1, 2^k, 2^k + 1
    # (the simulator runs p threads; p near 1024 takes seconds per run).
    sample = int(argv[argv.index('--sample') + 1]) if '--sample' in argv else 1
    ps = [p for p in range(a, b + 1) if p <= 256 or p % sample == 0 or
          any(abs(p - (1 << k)) <= 1 for k in range(8, 11))]
    tasks = []
    for p in ps:
        roots = ['all'] if p <= 64 else [p // 2, p - 1] if p % 8 == 0 else []
        for root in roots:
            tasks.append(('reduce', 'circulant', ['--p', p, '--count', 8, '--root', root]))
    i = 0
    while i < len(ps):  # runs of consecutive p, at most 32 per process
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1 and j + 1 - i < 32:
            j += 1
        for coll, algo, count in runs:
            tasks.append((coll, algo, ['--p', '%d-%d' % (ps[i], ps[j]), '--count', count,
                                       '--root', 0]))
        i = j + 1

    def run(t):
        coll, algo, args = t
        lines = sim(['--coll', coll, '--algo', algo, '--alpha', 0, '--beta', 1] + args)
        bad = sum(check_rounds_line(coll, algo, l) for l in lines)
        print('  %s/%s %s: %d runs, %d differences' % (coll, algo, ' '.join(map(str, args)),
                                                      len(lines), bad), flush=True)
        return len(lines), bad

    res = pmap(run, tasks)
    n, bad = sum(r[0] for r in res), sum(r[1] for r in res)
    print('rounds/volumes p=%d..%d (%d values of p%s): %d runs, %d differences'
          % (a, b, len(ps), ', sampled above 256 every %d-th' % sample if sample > 1 else '',
             n, bad))
    return 1 if bad else 0


# ---- correctness -----------------------------------------------------------------

def irregular_shapes(p):
    yield 'zeros', [0 if r % 3 == 1 else r + 1 for r in range(p)]
    yield 'last-all', [40 if r == p - 1 else 0 for r in range(p)]
    yield 'first-all', [40 if r == 0 else 0 for r in range(p)]
    yield 'one-most', [40 if r == p // 2 else (r * 7) % 3 for r in range(p)]


def cmd_ok(argv):
    rng = next((a for a in argv if not a.startswith('--')), None)
    a, b = prange(rng, '1-200')
    colls = [('allreduce', 'circulant', 13, 1), ('allreduce', 'circulant_rsag', 29, 1),
             ('reduce', 'circulant', 13, 1), ('reduce', 'circulant_rsag', 29, 1),
             ('reduce_scatter_block', 'circulant', 3, 1), ('reduce_scatter', 'circulant', 3, 1),
             ('allgather', 'circulant', 3, 0), ('allgatherv', 'circulant', 3, 0),
             ('bcast', 'circulant', 13, 0), ('gather', 'circulant', 3, 0),
             ('scatter', 'circulant', 3, 0)]
    rooted = ('reduce', 'bcast', 'gather', 'scatter')
    tasks = []
    for lo, hi in chunks(a, b, 24):
        for coll, algo, count, reduces in colls:
            for op in ('sum', 'max') if reduces else ('sum',):
                for ip in ([], ['--in-place']):
                    if coll == 'bcast' and ip:
                        continue  # bcast has no in-place form
                    args = ['--coll', coll, '--algo', algo, '--p', '%d-%d' % (lo, hi),
                            '--count', count, '--op', op] + ip
                    if coll in rooted:
                        args += ['--root', 'all' if hi <= 24 else 0]
                    tasks.append(args)
                    if coll in rooted and hi > 24:  # and the last rank as root
                        for p in range(lo, hi + 1, 5):
                            args = ['--coll', coll, '--algo', algo, '--p', p, '--count', count,
                                    '--op', op, '--root', p - 1] + ip
                            tasks.append(args)
    for p in range(max(a, 2), b + 1):
        for name, counts in irregular_shapes(p):
            for coll in ('reduce_scatter', 'allgatherv'):
                for op in ('sum', 'max') if coll == 'reduce_scatter' else ('sum',):
                    for ip in ([], ['--in-place']):
                        tasks.append(['--coll', coll, '--algo', 'circulant', '--p', p,
                                      '--count', 0, '--counts', ','.join(map(str, counts)),
                                      '--op', op] + ip)

    def run(args):
        lines = sim(args)
        bad = 0
        for l in lines:
            irregular = '--counts' in args
            if not l['ok'] or (irregular and l['rounds'] != q_of(l['p'])):
                bad += 1
                print('NOT OK', ' '.join(map(str, args)), json.dumps(l), flush=True)
        return len(lines), bad

    res = pmap(run, tasks)
    n, bad = sum(r[0] for r in res), sum(r[1] for r in res)
    print('ok p=%d..%d: %d runs, %d not ok' % (a, b, n, bad))
    return 1 if bad else 0


# ---- performance guidelines ---------------------------------------------------------

EXACT_BUDGET = 4 << 20  # p * m bytes simulated with real data up to this


def balanced(m, p):
    """The library's balanced split (redcoll__block_start): the first m % p
    blocks one element larger.  RS + AGv must use the layout circulant_rsag
    uses, or guideline (4) compares different problems."""
    return [m // p + (1 if i < m % p else 0) for i in range(p)]


def t(coll, algo, p, count, counts=None, root=0, scale=1):
    """Simulated time of one run (uint8 data, so count = bytes)."""
    args = ['--coll', coll, '--algo', algo, '--p', p, '--count', count, '--dtype', 'u8',
            '--root', root, '--alpha', ALPHA, '--beta', BETA * scale, '--gamma', GAMMA * scale]
    if counts is not None:
        args += ['--counts', ','.join(map(str, counts))]
    line = sim(args)[0]
    if not line['ok']:
        sys.exit('not ok: %s %s' % (' '.join(map(str, args)), json.dumps(line)))
    return line['time']


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
    x = {'p': p, 'm': m, 'scaled': s > 1}
    x['ar_c'] = t('allreduce', 'circulant', p, n, scale=s)
    x['ar_r'] = t('allreduce', 'circulant_rsag', p, n, scale=s)
    x['red_c'] = t('reduce', 'circulant', p, n, root=r, scale=s)
    x['red_r'] = t('reduce', 'circulant_rsag', p, n, root=r, scale=s)
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


def cmd_guidelines(argv):
    full = '--full' in argv
    ps = list(range(2, 257)) if full else \
        sorted(set(list(range(2, 65)) + list(range(65, 257, 7)) + [128, 255, 256]))
    if '--p' in argv:
        a, b = prange(argv[argv.index('--p') + 1], '')
        ps = list(range(a, b + 1))
    sizes = [1 << i for i in range(3, 25)]  # 8 B .. 16 MiB
    cells = [(p, m0) for p in ps for m0 in sizes]
    xs = pmap(guideline_cell, cells)

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

    out = []
    out.append('Cost model: alpha = %g s, beta = %g s/B (10 GB/s), gamma = %g s/B (40 GB/s). '
               '%d cells: p in %s, m = 8 B .. 16 MiB in powers of two (m rounded down to a '
               'multiple of p where p * m > %d MiB; %d cells simulated with real data, %d '
               'scaled).' % (ALPHA, BETA, GAMMA, len(xs),
                             'every p 2..256' if full and '--p' not in argv else
                             describe(ps), EXACT_BUDGET >> 20,
                             sum(not x['scaled'] for x in xs), sum(x['scaled'] for x in xs)))
    out.append('')
    out.append('| guideline | violations | largest lhs/rhs | at (p, m bytes) |')
    out.append('|---|---|---|---|')
    for g, text in GUIDELINES:
        r, at = worst[g]
        out.append('| (%s) %s | %d | %.4f | %s |' % (g, text, len(viol[g]), r,
                                                     '%d, %d' % at if at else '-'))
    out.append('')
    out.append('Guideline (6) as an approximation: Red(m, r) / RS1(m, r) ranges over '
               '[%.3f, %.3f] (1 where the tree reduce is the faster variant: the same '
               'messages and reductions).' % tuple(ratio6))
    out.append('')
    out.append('Single variants instead of the faster of the two:')
    out.append('')
    for k, v in single.items():
        out.append('- guideline %s: %d of %d cells fail%s' % (k, len(v), len(xs), crossover(v, xs)))
    out.append('')
    out.append('Scaling check (time of a real run against the scaled run, alpha/beta/gamma '
               'as above):')
    out.append('')
    for p, m, real, scaled, real_r, scaled_r in scal:
        out.append('- p = %d, m = %d: allreduce circulant_rsag %.6e s real, %.6e s scaled; '
                   'reduce circulant %.6e s real, %.6e s scaled' % (p, m, real, scaled, real_r,
                                                                   scaled_r))
    text = '\n'.join(out) + '\n'
    sys.stdout.write(text)
    for g, _ in GUIDELINES:
        for p, m, q in viol[g][:10]:
            print('violation (%s): p=%d m=%d lhs/rhs %.4f' % (g, p, m, q))
    if '--doc' in argv:
        write_doc('sweep', text)
    bad = any(viol[g] for g, _ in GUIDELINES) or \
        any(abs(a - b) > 1e-9 * b or abs(c - d) > 1e-9 * d for _, _, a, b, c, d in scal)
    return 1 if bad else 0


def describe(ps):
    """Short text for a sorted list of p."""
    runs, i = [], 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        runs.append('%d-%d' % (ps[i], ps[j]) if j > i else '%d' % ps[i])
        i = j + 1
    return ', '.join(runs)


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


def write_doc(name, text):
    b, e = '<!-- %s begin -->' % name, '<!-- %s end -->' % name
    doc = open(DOC).read()
    i, j = doc.index(b) + len(b), doc.index(e)
    with open(DOC, 'w') as f:
        f.write(doc[:i] + '\n<!-- generated by scripts/circulant_sweep.py guidelines --doc -->\n\n'
                + text + '\n' + doc[j:])
    print('wrote', DOC)


def main(argv):
    global SIM, JOBS
    argv = list(argv)
    while len(argv) > 2 and argv[1] in ('--sim', '--jobs'):
        if argv[1] == '--sim':
            SIM = argv[2]
        else:
            JOBS = int(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, rest = argv[1], argv[2:]
    if cmd == 'rounds':
        return cmd_rounds(rest)
    if cmd == 'ok':
        return cmd_ok(rest)
    if cmd == 'guidelines':
        return cmd_guidelines(rest)
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
