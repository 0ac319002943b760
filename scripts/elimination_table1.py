#!/usr/bin/env python3
"""Table 1 of Rabenseifner & Traeff 2004 (papers/rabenseifner-traeff-2004-
nonpow2-reduction.md) recomputed by the simulator, beside the paper's numbers,
and the communication graphs of docs/algorithms/elimination.md.

usage: scripts/elimination_table1.py [--sim PATH] COMMAND
  table         print the markdown tables (stdout)
  doc [FILE]    write them into FILE (default docs/algorithms/elimination.md)
                between the markers "<!-- table1 begin -->" and
                "<!-- table1 end -->"
  graphs [DIR]  DIR/elimination-<algo>-p<P>.{dot,svg} (default docs/algorithms)
                for the graphs listed in GRAPHS; needs graphviz `dot`.  Each is
                redcoll-sim --coll allreduce --algo A --p P --count C --dot F
                followed by dot -Tsvg F -o F.svg (C = 1, p for the rings)
  all           doc and graphs

Only the Python standard library is used.  Times are in units of alpha, as
in the paper: the simulator runs with alpha = 1, beta = (beta m) / m and
gamma = (gamma m) / m for the four sizes S, M, L, XL, m being the vector in
bytes.  The four protocol columns of the paper are these algorithms:
  Ring, latency-opt.      allgather_reduce
  Elimination, lat-opt.   elimination with threshold b = infinity (no halving)
  Ring, bandwidth-opt.    ring_sequential
  Elimination, bw-opt.    elimination with threshold b = 1 byte (halving at
                          every level)
An algorithm that is not registered when the script runs (redcoll-sim exits
2 with "has no algorithm") shows as "n/a".
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..'))
SIM = os.path.join(ROOT, 'build', 'tools', 'redcoll-sim')
DOC = os.path.join(ROOT, 'docs', 'algorithms', 'elimination.md')

NO_HALVING = 1 << 62  # threshold b larger than any vector: latency-optimal
HALVING = 1           # threshold b of one byte: halve at every level

# Table 1's parameters: (beta m, gamma m) in units of alpha.
SIZES = [('S', 0.1, 0.01), ('M', 1.0, 0.1), ('L', 10.0, 1.0), ('XL', 100.0, 10.0)]
PS = [3, 5, 7, 13, 15, 23, 63]

# The four protocols: (column title, algorithm, threshold or None).
PROTOCOLS = [
    ('Ring, lat-opt.', 'allgather_reduce', None),
    ('Elimination, lat-opt.', 'elimination', NO_HALVING),
    ('Ring, bw-opt.', 'ring_sequential', None),
    ('Elimination, bw-opt.', 'elimination', HALVING),
]

# The other elimination variants of the paper, run with the same parameters
# when they are registered (extra table).
VARIANTS = [
    ('elimination_nonoverlap', NO_HALVING), ('elimination_nonoverlap', HALVING),
    ('elimination_2to1', NO_HALVING), ('elimination_2to1', HALVING),
    ('elimination_rings', NO_HALVING), ('elimination_rings', HALVING),
]

# (algorithm, p, count): count 1 shows the latency-optimal schedules; the
# ring protocols get count p so that every block is non-empty.
GRAPHS = [('elimination', 6, 1), ('elimination', 7, 1), ('elimination', 13, 1),
          ('elimination', 15, 1), ('elimination_nonoverlap', 13, 1),
          ('elimination_nonoverlap', 15, 1), ('elimination_rings', 6, 1),
          ('elimination_rings', 12, 1),
          ('allgather_reduce', 6, 1), ('ring_sequential', 6, 6)]

# Table 1 as printed: PAPER[(p, size)] = four cells, one per protocol, each
# (alpha term, beta term, gamma term, total, marked fastest), strings exactly
# as in the paper.  The XL rows exist only for p = 23 and 63.
PAPER = {
    (3, 'S'): [('2', '0.2', '0.02', '2.22', 1), ('3', '0.3', '0.02', '3.32', 0),
               ('4', '0.13', '0.01', '4.14', 0), ('4', '0.20', '0.01', '4.21', 0)],
    (3, 'M'): [('2', '2.0', '0.20', '4.20', 1), ('3', '3.0', '0.20', '6.20', 0),
               ('4', '1.33', '0.07', '5.40', 0), ('4', '2.00', '0.10', '6.10', 0)],
    (3, 'L'): [('2', '20.', '2.00', '24.0', 0), ('3', '30.', '2.00', '35.0', 0),
               ('4', '13.3', '0.67', '18.0', 1), ('4', '20.0', '1.00', '25.0', 0)],
    (5, 'S'): [('3', '0.4', '0.04', '3.44', 1), ('4', '0.4', '0.03', '4.43', 0),
               ('7', '0.18', '0.01', '7.17', 0), ('6', '0.25', '0.01', '6.26', 0)],
    (5, 'M'): [('3', '4.0', '0.40', '7.40', 1), ('4', '4.0', '0.30', '8.30', 0),
               ('7', '1.60', '0.08', '8.68', 0), ('6', '2.50', '0.13', '8.63', 0)],
    (5, 'L'): [('3', '40.', '4.00', '47.0', 0), ('4', '40.', '3.00', '47.0', 0),
               ('7', '16.0', '0.80', '23.8', 1), ('6', '25.0', '1.25', '32.3', 0)],
    (7, 'S'): [('3', '0.6', '0.06', '3.66', 1), ('4', '0.4', '0.03', '4.43', 0),
               ('9', '0.17', '0.01', '9.18', 0), ('8', '0.25', '0.01', '6.26', 0)],
    (7, 'M'): [('3', '6.0', '0.60', '9.60', 0), ('4', '4.0', '0.30', '8.30', 1),
               ('9', '1.71', '0.09', '10.8', 0), ('8', '2.50', '0.13', '8.63', 0)],
    (7, 'L'): [('3', '60.', '6.00', '69.0', 0), ('4', '40.', '3.00', '47.0', 0),
               ('9', '17.1', '0.86', '27.0', 1), ('8', '25.0', '1.25', '32.3', 0)],
    (13, 'S'): [('4', '1.2', '0.12', '5.32', 1), ('5', '0.5', '0.04', '5.54', 0),
                ('16', '0.19', '0.01', '16.2', 0), ('8', '0.28', '0.01', '8.29', 0)],
    (13, 'M'): [('4', '12.', '1.20', '17.2', 0), ('5', '5.0', '0.40', '10.4', 1),
                ('16', '1.85', '0.09', '18.0', 0), ('8', '2.75', '0.14', '10.9', 0)],
    (13, 'L'): [('4', '120.', '12.0', '136.', 0), ('5', '50.', '4.00', '59.0', 0),
                ('16', '18.5', '0.92', '35.4', 1), ('8', '27.5', '1.38', '36.9', 0)],
    (15, 'S'): [('4', '1.4', '0.14', '5.54', 1), ('5', '0.5', '0.04', '5.54', 1),
                ('18', '0.19', '0.01', '18.2', 0), ('8', '0.28', '0.01', '8.29', 0)],
    (15, 'M'): [('4', '14.', '1.40', '19.4', 0), ('5', '5.0', '0.40', '10.4', 1),
                ('18', '1.87', '0.09', '20.0', 0), ('8', '2.75', '0.14', '10.9', 0)],
    (15, 'L'): [('4', '140.', '14.0', '158.', 0), ('5', '50.', '4.00', '59.0', 0),
                ('18', '18.7', '0.93', '37.6', 0), ('8', '27.5', '1.38', '36.9', 1)],
    (23, 'S'): [('5', '2.2', '0.22', '7.42', 0), ('6', '0.6', '0.05', '6.65', 1),
                ('27', '0.19', '0.01', '27.2', 0), ('10', '0.29', '0.01', '10.3', 0)],
    (23, 'M'): [('5', '22.', '2.20', '29.2', 0), ('6', '6.0', '0.50', '12.5', 1),
                ('27', '1.91', '0.10', '29.0', 0), ('10', '2.88', '0.14', '13.0', 0)],
    (23, 'L'): [('5', '220.', '22.0', '247.', 0), ('6', '60.', '5.00', '71.0', 0),
                ('27', '19.1', '0.96', '47.1', 0), ('10', '28.8', '1.44', '40.2', 1)],
    (23, 'XL'): [('5', '2200', '220.', '2425', 0), ('6', '600', '50.0', '656.', 0),
                 ('27', '191.', '9.60', '228.', 1), ('10', '288.', '14.4', '312.', 0)],
    (63, 'S'): [('6', '6.2', '0.62', '12.8', 0), ('7', '0.6', '0.06', '7.66', 1),
                ('68', '0.19', '0.01', '68.2', 0), ('12', '0.29', '0.01', '12.3', 0)],
    (63, 'M'): [('6', '62.', '6.20', '74.2', 0), ('7', '6.0', '0.60', '13.6', 1),
                ('68', '1.97', '0.10', '70.1', 0), ('12', '2.94', '0.15', '15.1', 0)],
    (63, 'L'): [('6', '620.', '62.0', '688.', 0), ('7', '60.', '6.00', '73.0', 0),
                ('68', '19.7', '0.98', '88.7', 0), ('12', '29.4', '1.47', '42.9', 0)],
    (63, 'XL'): [('6', '6200', '620.', '6826', 0), ('7', '600', '60.0', '667.', 0),
                 ('68', '197.', '9.80', '275.', 1), ('12', '294.', '14.7', '321.', 0)],
}


def ceil_log2(p):
    return (p - 1).bit_length()


def floor_pow2(p):
    return 1 << (p.bit_length() - 1)


def formula(proto, p):
    """Coefficients (alpha, beta m, gamma m) of section 3.5, with p' the
    largest power of two below p (as in section 3.3 and in the table)."""
    L = ceil_log2(p)
    pp = floor_pow2(p)
    return [(L, p - 1, p - 1),
            (L + 1, L + 1, L),
            (L + p - 1, 2 * (1 - 1 / p), 1 - 1 / p),
            (2 * L, 2 * (1.5 - 1 / pp), 1.5 - 1 / pp)][proto]


def count_for(p):
    """Bytes per vector (uint8 SUM): divisible by p (ring blocks) and by the
    power of two of the halving levels, four times over."""
    q = 1 << ceil_log2(p)
    return 4 * p * q // math.gcd(p, q)


def run_sim(algo, p, count, threshold, alpha, beta, gamma):
    args = [SIM, '--coll', 'allreduce', '--algo', algo, '--p', str(p), '--count', str(count),
            '--dtype', 'u8', '--op', 'sum', '--alpha', repr(alpha), '--beta', repr(beta),
            '--gamma', repr(gamma)]
    if threshold is not None:
        args += ['--threshold', str(threshold)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode == 2 and 'no algorithm' in out.stderr:
        return None
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if not lines:
        sys.exit('redcoll-sim failed: %s\n%s' % (' '.join(args), out.stderr))
    d = lines[0]
    if not d['ok']:
        sys.exit('result not ok: %s\n%s' % (' '.join(args), out.stderr))
    return d


_registered = {}


def registered(algo):
    if algo not in _registered:
        _registered[algo] = run_sim(algo, 2, 1, None, 1, 0, 0) is not None
    return _registered[algo]


def measure(algo, threshold, p):
    """{'terms': (rounds, beta m coefficient, gamma m coefficient) measured
    alone, size: total time} or None if algo is not registered."""
    if not registered(algo):
        return None
    m = count_for(p)
    res = {}
    a = run_sim(algo, p, m, threshold, 1, 0, 0)['time']
    b = run_sim(algo, p, m, threshold, 0, 1, 0)['time'] / m
    g = run_sim(algo, p, m, threshold, 0, 0, 1)['time'] / m
    res['terms'] = (a, b, g)
    for name, bm, gm in SIZES:
        res[name] = run_sim(algo, p, m, threshold, 1, bm / m, gm / m)['time']
    return res


def decimals(s):
    return len(s.split('.')[1]) if '.' in s else 0


def agrees(printed, value):
    """Whether a printed number is value rounded to its printed precision."""
    return abs(float(printed) - value) <= 0.5 * 10 ** -decimals(printed) + 1e-9


def round_half_up(v, dec):
    return math.floor(v * 10 ** dec + 0.5) / 10 ** dec


def check_cell(p, size, i, bm, gm, total):
    """The paper's numbers of one cell that are not the formula rounded to
    the printed digits, each with its most likely cause."""
    names = [n for n, _, _ in SIZES]
    k = names.index(size)
    pa, pb, pg, pt, _ = PAPER[(p, size)][i]
    ca, cb, cg = formula(i, p)
    found, term_typo = [], False
    for what, j, printed, val in (('alpha', 0, pa, ca), ('beta', 1, pb, cb * bm),
                                  ('gamma', 2, pg, cg * gm)):
        if agrees(printed, val):
            continue
        why = 'typo'
        for kk, factor in ((k - 1, 10.0), (k + 1, 0.1)):
            other = PAPER.get((p, names[kk])) if 0 <= kk < len(names) else None
            # only a correct neighbour, rounded, then scaled, explains it
            if other and agrees(other[i][j], (ca, cb * bm / factor, cg * gm / factor)[j]) and abs(float(printed) - round_half_up(float(other[i][j]) * factor,
                                                            decimals(printed))) < 1e-9:
                why = 'rounding: the %s row\'s rounded %s scaled by %g' % (names[kk], other[i][j],
                                                                        factor)
        term_typo |= why == 'typo'
        found.append('[%s] p = %d, %s, %s: %s term printed %s, formula gives %.4g'
                     % (why, p, size, PROTOCOLS[i][0], what, printed, val))
    if not agrees(pt, total):
        s = float(pa) + float(pb) + float(pg)
        if agrees(pt, s):
            why = ('follows from the term above' if term_typo
                   else 'rounding: the sum of the rounded terms, %.4g' % s)
        else:
            why = 'typo'
        found.append('[%s] p = %d, %s, %s: total printed %s, formula gives %.4g'
                     % (why, p, size, PROTOCOLS[i][0], pt, total))
    return found


def fmt(v):
    if v >= 1000:
        return '%.0f' % v
    if v >= 100:
        return '%.1f' % v
    return '%.2f' % v


def tables(out):
    data = {}
    for p in PS:
        for i, (_, algo, thr) in enumerate(PROTOCOLS):
            data[(p, i)] = measure(algo, thr, p)
    typos = []

    out('**Totals** (units of alpha). Each cell: the paper\'s number / the formula of '
        'section 3.5 / the simulator. `*` marks the fastest protocol of the row (by the '
        'paper, by the formula, by the simulator); `!` marks a paper total that is not the '
        'formula rounded to its printed digits; wrong terms under right totals are only in '
        'the list of differences below.')
    out('')
    out('| p | size | ' + ' | '.join(t + ' (' + a + ')' for t, a, _ in PROTOCOLS) + ' |')
    out('|---|---|' + '---|' * len(PROTOCOLS))
    for p in PS:
        for name, bm, gm in SIZES:
            paper = PAPER.get((p, name))
            form = []
            for i in range(4):
                ca, cb, cg = formula(i, p)
                form.append(ca + cb * bm + cg * gm)
            sims = [data[(p, i)][name] if data[(p, i)] else None for i in range(4)]
            fbest = min(form)
            valid = [s for s in sims if s is not None]
            sbest = min(valid) if valid else None
            cells = []
            for i in range(4):
                if paper:
                    pa, pb, pg, pt, mark = paper[i]
                    bad = not agrees(pt, form[i])
                    ptxt = pt + ('*' if mark else '') + ('!' if bad else '')
                    typos += check_cell(p, name, i, bm, gm, form[i])
                    fastest = min(range(4), key=lambda j: form[j])
                    if mark and abs(form[i] - fbest) > 1e-9:
                        typos.append('p = %d, %s: %s is marked fastest but is not'
                                     % (p, name, PROTOCOLS[i][0]))
                    if not mark and abs(form[i] - fbest) <= 1e-9:
                        typos.append('p = %d, %s: %s is the fastest (%s) but not marked'
                                     % (p, name, PROTOCOLS[i][0], fmt(form[fastest])))
                else:
                    ptxt = '—'
                ftxt = fmt(form[i]) + ('*' if abs(form[i] - fbest) <= 1e-9 else '')
                if sims[i] is None:
                    stxt = 'n/a'
                else:
                    stxt = fmt(sims[i]) + ('*' if abs(sims[i] - sbest) <= 1e-9 else '')
                cells.append('%s / %s / %s' % (ptxt, ftxt, stxt))
            out('| %d | %s | %s |' % (p, name, ' | '.join(cells)))
    out('')
    out('**Terms** measured alone: rounds (alpha = 1, beta = gamma = 0), and the volume '
        '(beta = 1) and the reduction work (gamma = 1) on the critical path divided by m. '
        'Each cell: formula / simulator.')
    out('')
    out('| p | m (bytes) | ' + ' | '.join(t for t, _, _ in PROTOCOLS) + ' |')
    out('|---|---|' + '---|' * len(PROTOCOLS))
    diffs = []
    for p in PS:
        cells = []
        for i in range(4):
            f = formula(i, p)
            d = data[(p, i)]
            if d is None:
                cells.append('%s, %s, %s / n/a' % tuple('%.4g' % x for x in f))
                continue
            s = d['terms']
            cells.append('%s, %s, %s / %s, %s, %s' % tuple('%.4g' % x for x in f + s))
            for what, fv, sv in zip(('rounds', 'beta', 'gamma'), f, s):
                if abs(fv - sv) > 1e-9:
                    diffs.append('p = %d, %s: %s formula %.6g, simulator %.6g'
                                 % (p, PROTOCOLS[i][0], what, fv, sv))
            for name, bm, gm in SIZES:
                tot = f[0] + f[1] * bm + f[2] * gm
                if abs(d[name] - tot) > 1e-9 * tot:
                    diffs.append('p = %d, %s, %s: total formula %.6g, simulator %.6g'
                                 % (p, PROTOCOLS[i][0], name, tot, d[name]))
        out('| %d | %d | %s |' % (p, count_for(p), ' | '.join(cells)))
    out('')
    out('**Differences found by the script** (explained below the table):')
    out('')
    for t in typos:
        out('- paper: ' + t)
    for t in diffs:
        out('- simulator: ' + t)
    if not diffs:
        out('- simulator: none — every registered protocol matches the formula of '
            'section 3.5 exactly, term by term and in total.')
    missing = sorted({a for (_, a, _) in PROTOCOLS if not registered(a)})
    if missing:
        out('- not registered when the table was made: ' + ', '.join(missing))

    extra = [(a, t) for a, t in VARIANTS if registered(a)]
    if extra:
        out('')
        out('**The other elimination variants** under the same parameters (simulator, units '
            'of alpha; "lat" = threshold infinity, "bw" = threshold 1 byte):')
        out('')
        out('| p | ' + ' | '.join('%s %s' % (a, 'lat' if t == NO_HALVING else 'bw')
                                  for a, t in extra) + ' |')
        out('|---|' + '---|' * len(extra))
        for p in PS:
            cells = []
            for a, t in extra:
                d = measure(a, t, p)
                cells.append(' '.join('%s %s' % (n, fmt(d[n])) for n, _, _ in SIZES))
            out('| %d | %s |' % (p, ' | '.join(cells)))


def cmd_doc(path):
    lines = []
    tables(lines.append)
    text = open(path).read()
    begin, end = '<!-- table1 begin -->', '<!-- table1 end -->'
    a, b = text.index(begin) + len(begin), text.index(end)
    text = text[:a] + '\n' + '\n'.join(lines) + '\n' + text[b:]
    with open(path, 'w') as f:
        f.write(text)
    print('wrote the tables into %s' % path)


def cmd_graphs(outdir):
    os.makedirs(outdir, exist_ok=True)
    for algo, p, count in GRAPHS:
        if not registered(algo):
            print('skipped %s p=%d: not registered' % (algo, p))
            continue
        base = os.path.join(outdir, 'elimination-%s-p%d' % (algo, p))
        cmd = [SIM, '--coll', 'allreduce', '--algo', algo, '--p', str(p), '--count',
               str(count), '--dot', base + '.dot']
        subprocess.run(cmd, check=True, capture_output=True)
        subprocess.run(['dot', '-Tsvg', base + '.dot', '-o', base + '.svg'], check=True)
        print('wrote %s.svg' % base)


def main(argv):
    global SIM
    if len(argv) >= 2 and argv[0] == '--sim':
        SIM = os.path.abspath(argv[1])
        argv = argv[2:]
    if not argv or argv[0] in ('-h', '--help'):
        print(__doc__)
        return 0 if argv else 2
    if not os.access(SIM, os.X_OK):
        sys.exit('no simulator at %s (build first, or pass --sim PATH)' % SIM)
    cmd, rest = argv[0], argv[1:]
    if cmd == 'table':
        tables(print)
    elif cmd == 'doc':
        cmd_doc(rest[0] if rest else DOC)
    elif cmd == 'graphs':
        cmd_graphs(rest[0] if rest else os.path.dirname(DOC))
    elif cmd == 'all':
        cmd_doc(DOC)
        cmd_graphs(os.path.dirname(DOC))
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
