#!/usr/bin/env python3
"""The tables and graphs of docs/algorithms/, made with redcoll-sim.

usage: scripts/sim_tables.py [--sim PATH] [--jobs N] COMMAND [ARGS]
  circulant table|doc [FILE]      Table I of Traeff et al. recomputed for
                  p = 11, 100, 1000; doc writes it and the p = 11 graphs
                  (circulant-p11-graph, circulant-p11-rounds: .dot, .svg)
                  into FILE (default docs/algorithms/circulant.md)
  elimination table|doc [FILE]|graphs [DIR]|all
                  Table 1 of Rabenseifner & Traeff 2004 beside the paper's
                  numbers (see below); graphs:
                  DIR/elimination-<algo>-p<P>.{dot,svg} (default docs/algorithms)
  rabenseifner table|doc [FILE]|graphs [DIR]
                  formula against simulated cost (p = 13, 24, 33, 100; root 0
                  for reduce); graphs: DIR/rabenseifner-<algo>-p13.{dot,svg}
                  (redcoll-sim --dot) and -p13-rounds.{dot,svg} (rank x round)
  overview table|doc              every allreduce algorithm: rounds for a
                  small vector (alpha = 1), and for a large vector m the volume
                  the busiest rank sends (beta = 1) and reduces (gamma = 1), in
                  units of m, p = 7, 13, 16 (docs/algorithms/README.md)
  graphs [DIR]    docs/algorithms/graphs/: the communication graph of every
                  allreduce algorithm for p = 5, 6, 7, 11, 13 and of every other
                  collective's algorithms for p = 7 (count 8)
  colls [DIR]     the same graphs (p = 7, count 8; --irregular 1 for the
                  v-collectives, root 2 for gatherv and scatterv) for scan,
                  exscan, exscan_total, alltoall, alltoallv, gatherv, scatterv
                  and allgatherv_displs (docs/algorithms/scan.md, alltoall.md,
                  rooted_v.md)
doc writes between the page's markers; graphs need Graphviz (apt-get install
graphviz).  The sweeps that check these pages are scripts/sim_sweep.py.
"""
import math
import os
import sys

import simlib
from simlib import ceil_log2
import sim_sweep

DOCS = simlib.ALGO_DOCS


def family(argv, cmds, default):
    """Runs the command argv[0] (default table) of a family with argv[1:]
    or its default path."""
    cmd = argv[0] if argv else 'table'
    if cmd not in cmds:
        sys.exit('commands: ' + ', '.join(cmds))
    return cmds[cmd](argv[1] if len(argv) > 1 else default.get(cmd))


def fmt4(x):
    """An integer as such, else 4 significant digits."""
    return ('%.4g' % x) if abs(x - round(x)) > 1e-9 else '%d' % round(x)


# ---- circulant ---------------------------------------------------------------------

def circulant_table():
    rows = ['| operation | p | q | paper alpha | sim alpha | paper beta (x m) | sim beta (x m) '
            '| paper gamma (x m) | sim gamma (x m) |',
            '|---|---|---|---|---|---|---|---|---|']
    for p in (11, 100, 1000):
        q = ceil_log2(p)
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
            ('reduce (circulant_rsag)\\*', 'reduce', 'circulant_rsag', blk * p, 2 * q,
             frac + (p - 1) / p, frac),
            ('gather\\*', 'gather', 'circulant', blk, q, (p - 1) / p, 0),
            ('scatter\\*', 'scatter', 'circulant', blk, q, (p - 1) / p, 0),
            ('bcast\\*', 'bcast', 'circulant', blk * p, q, q, 0),
        ]
        got = simlib.pmap(lambda c: simlib.terms(['--coll', c[1], '--algo', c[2], '--p', p,
                                                  '--count', c[3]]), cases)
        for (name, _, _, _, fa, fb, fg), (a, b, g) in zip(cases, got):
            rows.append('| %s | %d | %d | %s | %s | %s | %s | %s | %s |'
                        % (name, p, q, fmt4(fa), fmt4(a), fmt4(fb), fmt4(b / m), fmt4(fg),
                           fmt4(g / m)))
    return '\n'.join(rows) + '\n'


COLORS = ['#1b9e77', '#d95f02', '#7570b3', '#e7298a', '#66a61e', '#e6ab02']


def trace(args, path):
    """The messages of one run: a dict of the trace line's fields each."""
    if os.path.exists(path):
        os.remove(path)
    simlib.run(list(args) + ['--trace', path])
    with open(path) as f:
        msgs = [dict(x.split('=', 1) for x in line.split()) for line in f]
    os.remove(path)
    return msgs


def circle(i, p, radius, cx=0.0, cy=0.0):
    ang = math.pi / 2 - 2 * math.pi * i / p
    return cx + radius * math.cos(ang), cy + radius * math.sin(ang)


def circulant_graphs(outdir, p=11):
    msgs = trace(['--coll', 'allreduce', '--algo', 'circulant', '--p', p, '--count', 1],
                 '/tmp/circulant-trace-%d.txt' % os.getpid())
    edges = sorted({(int(m['src']), int(m['dst']), int(m['round']) - 1) for m in msgs},
                   key=lambda e: (e[2], e[0]))
    # Fig. 1: the whole circulant graph, rank 0's edges drawn thick.
    g = ['digraph circulant {', '  layout=neato; node [shape=circle, fontsize=10, width=0.4, fixedsize=true];',
         '  label="circulant graph, p = %d: round k edges r -> r - d_k"; labelloc=t;' % p]
    for i in range(p):
        g.append('  r%d [label="%d", pos="%.3f,%.3f!"];' % ((i, i) + circle(i, p, 2.2)))
    for s, d, k in edges:
        thick = ', penwidth=2.5' if 0 in (s, d) else ''
        lab = ', label="%d", fontsize=9' % k if 0 in (s, d) else ''
        g.append('  r%d -> r%d [color="%s"%s%s];' % (s, d, COLORS[k % len(COLORS)], thick, lab))
    g.append('}')
    # Fig. 2: one panel per round.
    h = ['digraph rounds {', '  layout=neato; node [shape=circle, fontsize=9, width=0.35, fixedsize=true];',
         '  label="allreduce rounds, p = %d"; labelloc=t;' % p]
    for k in range(ceil_log2(p)):
        cx = k * 5.2
        h.append('  t%d [shape=plaintext, fixedsize=false, label="round %d", pos="%.3f,2.7!"];' % (k, k, cx))
        for i in range(p):
            h.append('  k%dr%d [label="%d", pos="%.3f,%.3f!"];' % ((k, i, i) + circle(i, p, 2.0, cx, 0)))
        for s, d, kk in edges:
            if kk == k:
                h.append('  k%dr%d -> k%dr%d [color="%s"];' % (k, s, k, d, COLORS[k % len(COLORS)]))
    h.append('}')
    names = []
    for name, text in (('circulant-p%d-graph' % p, g), ('circulant-p%d-rounds' % p, h)):
        dot = os.path.join(outdir, name + '.dot')
        with open(dot, 'w') as f:
            f.write('\n'.join(text) + '\n')
        try:
            simlib.render(dot, os.path.join(outdir, name + '.svg'), '-Kneato')
        except (OSError, simlib.subprocess.CalledProcessError) as e:
            print('graphviz failed (%s): %s.svg not written' % (e, name))
        names.append(name)
    return names, edges


def circulant_doc(path):
    names, edges = circulant_graphs(os.path.dirname(os.path.abspath(path)))
    lines = ['<!-- generated by scripts/sim_tables.py circulant doc; do not edit by hand -->', '',
             '![circulant graph p = 11](%s.svg)' % names[0], '',
             '![allreduce rounds p = 11](%s.svg)' % names[1], '',
             'Messages of the p = 11 allreduce, as the simulator traced them '
             '(round: sender -> receiver):', '']
    for k in range(ceil_log2(11)):
        lines.append('- round %d: ' % k + ', '.join('%d->%d' % (s, d) for s, d, kk in edges if kk == k))
    lines += ['', 'Table I recomputed (coefficients of alpha, of beta * m and of gamma * m, '
              'm the whole vector in bytes; "sim" from three runs of redcoll-sim with one of '
              'alpha, beta, gamma set to 1):', '', circulant_table(),
              '\\* not in the paper\'s Table I: the cost its text gives (III-F for gather '
              'and scatter, III-G for the reduce-scatter-first reduce, the reversed reduce tree '
              'for bcast, whose beta term is the root sending q times).']
    simlib.replace_block(path, '<!-- generated begin -->', '<!-- generated end -->',
                         '\n'.join(lines))


def circulant(argv):
    return family(argv, {'table': lambda _: sys.stdout.write(circulant_table()) and 0,
                         'doc': circulant_doc}, {'doc': os.path.join(DOCS, 'circulant.md')})


# ---- elimination: Table 1 of Rabenseifner & Traeff 2004 --------------------------------

ELIMINATION = """
Table 1 of Rabenseifner & Traeff 2004 (papers/rabenseifner-traeff-2004-
nonpow2-reduction.md) recomputed by the simulator, beside the paper's numbers.
Times are in units of alpha, as in the paper: the simulator runs with
alpha = 1, beta = (beta m) / m and gamma = (gamma m) / m for the four sizes
S, M, L, XL, m being the vector in bytes.  The four protocol columns of the
paper are these algorithms:
  Ring, latency-opt.      allgather_reduce
  Elimination, lat-opt.   elimination with threshold b = infinity (no halving)
  Ring, bandwidth-opt.    ring_sequential
  Elimination, bw-opt.    elimination with threshold b = 1 byte (halving at
                          every level)
An algorithm that is not registered shows as "n/a".  The graphs are
redcoll-sim --coll allreduce --algo A --p P --count C --dot F for the
(A, P, C) of GRAPHS, rendered with dot -Tsvg.
"""

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


def formula(proto, p):
    """Coefficients (alpha, beta m, gamma m) of section 3.5, with p' the
    largest power of two below p (as in section 3.3 and in the table)."""
    L = ceil_log2(p)
    pp = sim_sweep.pof2(p)
    return [(L, p - 1, p - 1),
            (L + 1, L + 1, L),
            (L + p - 1, 2 * (1 - 1 / p), 1 - 1 / p),
            (2 * L, 2 * (1.5 - 1 / pp), 1.5 - 1 / pp)][proto]


def count_for(p):
    """Bytes per vector (uint8 SUM): divisible by p (ring blocks) and by the
    power of two of the halving levels, four times over."""
    q = 1 << ceil_log2(p)
    return 4 * p * q // math.gcd(p, q)


def registered(algo):
    return algo in simlib.algorithms('allreduce')


def measure(key):
    """{'terms': (rounds, beta m coefficient, gamma m coefficient) measured
    alone, size: total time} of (algo, threshold, p), or None if algo is not
    registered."""
    algo, threshold, p = key
    if not registered(algo):
        return None
    m = count_for(p)
    args = ['--coll', 'allreduce', '--algo', algo, '--p', p, '--count', m, '--dtype', 'u8']
    args += ['--threshold', threshold] if threshold is not None else []
    a, b, g = simlib.terms(args)
    res = {'terms': (a, b / m, g / m)}
    for name, bm, gm in SIZES:
        res[name] = simlib.one(args + ['--alpha', 1.0, '--beta', repr(bm / m),
                                       '--gamma', repr(gm / m)])['time']
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


def elimination_tables(out):
    keys = [(algo, thr, p) for p in PS for _, algo, thr in PROTOCOLS]
    keys += [(a, t, p) for p in PS for a, t in VARIANTS]
    measured = dict(zip(keys, simlib.pmap(measure, keys)))
    data = {(p, i): measured[(algo, thr, p)] for p in PS for i, (_, algo, thr) in enumerate(PROTOCOLS)}
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
            cells = [' '.join('%s %s' % (n, fmt(measured[(a, t, p)][n])) for n, _, _ in SIZES)
                     for a, t in extra]
            out('| %d | %s |' % (p, ' | '.join(cells)))


def elimination_doc(path):
    lines = []
    elimination_tables(lines.append)
    simlib.replace_block(path, '<!-- table1 begin -->', '<!-- table1 end -->', '\n'.join(lines))


def elimination_graphs(outdir):
    os.makedirs(outdir, exist_ok=True)
    for algo, p, count in GRAPHS:
        if not registered(algo):
            print('skipped %s p=%d: not registered' % (algo, p))
            continue
        base = os.path.join(outdir, 'elimination-%s-p%d' % (algo, p))
        simlib.run(['--coll', 'allreduce', '--algo', algo, '--p', p, '--count', count,
                    '--dot', base + '.dot'])
        simlib.render(base + '.dot', base + '.svg')
        print('wrote %s.svg' % base)


def elimination(argv):
    doc = os.path.join(DOCS, 'elimination.md')
    return family(argv, {'table': lambda _: elimination_tables(print), 'doc': elimination_doc,
                         'graphs': elimination_graphs,
                         'all': lambda _: elimination_doc(doc) or elimination_graphs(DOCS)},
                  {'doc': doc, 'graphs': DOCS})


# ---- Rabenseifner: formula against simulation ----------------------------------------

def rab_table(out=print):
    out('| p | algorithm | collective | root | rounds formula / sim '
        '| volume formula / sim (n) | reduced formula / sim (n) |')
    out('|---|---|---|---|---|---|---|')
    for p in (13, 24, 33, 100):
        count = sim_sweep.big_count(p)
        n = count * 8
        # every algorithm at root 0, and for reduce also the last rank and
        # (p not a power of two) the removed rank 2r - 1, which
        # halving_doubling serves by the root swap
        r = p - sim_sweep.pof2(p)
        for algo, coll in sim_sweep.RAB_ALGOS:
            roots = [0]
            if coll == 'reduce' and algo != 'ring':
                roots += [p - 1] + ([2 * r - 1] if algo == 'halving_doubling' and r else [])
            for root in roots:
                f = sim_sweep.paper_formula(algo, coll, p, n, root)
                s = sim_sweep.measure([algo], coll, p, count, root)[algo]
                name = algo + (' (derived)' if algo == 'binary_blocks' else '')
                out('| %d | %s | %s | %s | %s / %s | %s / %s | %s / %s |' % (
                    p, name, coll, root if coll == 'reduce' else '-', fmt4(f[0]), fmt4(s[0]),
                    fmt4(f[1] / n), fmt4(s[1] / n), fmt4(f[2] / n), fmt4(s[2] / n)))


def rab_doc(path):
    rows = []
    rab_table(rows.append)
    simlib.replace_block(path, '<!-- table begin: scripts/sim_tables.py rabenseifner doc -->',
                         '<!-- table end -->', '\n'.join(rows), prefix='<!-- table begin')


def rab_graphs(outdir):
    os.makedirs(outdir, exist_ok=True)
    for algo in ('halving_doubling', 'binary_blocks'):
        base = os.path.join(outdir, 'rabenseifner-%s-p13' % algo)
        run = ['--coll', 'allreduce', '--algo', algo, '--p', 13, '--count', 64]
        # 1. the simulator's own graph: an edge per message, "r<round> <bytes>"
        simlib.run(run + ['--dot', base + '.dot'])
        simlib.render(base + '.dot', base + '.svg')
        print('wrote', base + '.svg')
        # 2. the same messages by rank and round, from the trace
        msgs = [(int(m['src']), int(m['dst']), int(m['bytes']), int(float(m['start'])),
                 int(float(m['end']))) for m in trace(run, base + '.trace')]
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
        simlib.render(base + '-rounds.dot', base + '-rounds.svg', '-Kneato', '-n2')
        print('wrote', base + '-rounds.svg')


def rabenseifner(argv):
    return family(argv, {'table': lambda _: rab_table(), 'doc': rab_doc, 'graphs': rab_graphs},
                  {'doc': os.path.join(DOCS, 'rabenseifner.md'), 'graphs': DOCS})


# ---- overview and the graphs of every algorithm --------------------------------------

def overview_table():
    ps = '7,13,16'
    large = 3 * 5 * 7 * 11 * 13 * 16  # float64 elements: divisible by every p here
    small, big = [simlib.run(['--coll', 'allreduce', '--algo', 'all', '--p', ps, '--count', c],
                             must=False) for c in (1, large)]
    rows = ['| algorithm | rounds, small m (p = 7 / 13 / 16) | sent, large m | reduced, large m |',
            '|---|---|---|---|']
    for a in simlib.algorithms('allreduce'):
        cols = [[], [], []]
        for p in map(int, ps.split(',')):
            s, l = ([d for d in lines if d['requested'] == a and d['p'] == p and d['ok']]
                    for lines in (small, big))
            if not s or not l:
                for c in cols:
                    c.append('—')
                continue
            l = l[0]
            cols[0].append(str(s[0]['rounds']))
            cols[1].append(f"{l['max_bytes_sent'] / l['bytes']:.2f}")
            cols[2].append(f"{l['max_bytes_reduced'] / l['bytes']:.2f}")
        rows.append(f"| `{a}` | {' / '.join(cols[0])} | {' / '.join(cols[1])} m "
                    f"| {' / '.join(cols[2])} m |")
    return '\n'.join(rows)


def overview(argv):
    return family(argv, {'table': lambda _: print(overview_table()),
                         'doc': lambda path: simlib.replace_block(
                             path, '<!-- overview-table begin -->', '<!-- overview-table end -->',
                             overview_table())},
                  {'doc': os.path.join(DOCS, 'README.md')})


def graphs(argv, draws=None, extra=lambda coll: []):
    out = argv[0] if argv else os.path.join(DOCS, 'graphs')
    os.makedirs(out, exist_ok=True)
    if draws is None:
        draws = [('allreduce', a, p) for a in simlib.algorithms('allreduce')
                 for p in (5, 6, 7, 11, 13)]
        draws += [(c, a, 7) for c in ('reduce', 'reduce_scatter_block', 'allgather', 'bcast',
                                      'gather', 'scatter', 'barrier') for a in simlib.algorithms(c)]
    for coll, algo, p in draws:
        f = os.path.join(out, '%s-%s-p%d' % (coll, algo, p))
        lines = simlib.run(['--coll', coll, '--algo', algo, '--p', p, '--count', 8,
                            '--op', 'sum', '--dot', f + '.dot'] + extra(coll), must=False)
        if lines and lines[0]['ok']:
            simlib.render(f + '.dot', f + '.svg')
            print(f + '.svg')
        if os.path.exists(f + '.dot'):
            os.remove(f + '.dot')


def colls_graphs(argv):
    new = ('scan', 'exscan', 'exscan_total', 'alltoall', 'alltoallv', 'gatherv', 'scatterv',
           'allgatherv_displs')
    draws = [(c, a, 7) for c in new for a in simlib.algorithms(c)]

    def extra(coll):
        irr = ['--irregular', 1] if coll in new[4:] else []
        return irr + (['--root', 2] if coll in ('gatherv', 'scatterv') else [])
    return graphs(argv, draws, extra)


if __name__ == '__main__':
    sys.exit(simlib.main(__doc__ + ELIMINATION, {
        'circulant': circulant, 'elimination': elimination, 'rabenseifner': rabenseifner,
        'overview': overview, 'graphs': graphs, 'colls': colls_graphs}))
