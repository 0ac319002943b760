#!/usr/bin/env python3
"""The simulator at scale, for docs/simulator.md ("At scale"):

  table [--p LIST] [--algo LIST] [--timeout S] [--csv FILE]
        a small allreduce (8 float64) under each algorithm at each p (default
        1024,4096,16384,65535,65536): rounds, the largest volume a rank sends,
        the time under MODEL beside the cost formula's, and the simulator's
        own wall time and peak memory (one redcoll-sim process per run).
  growth [--p LIST] [--sim-max P] [--timeout S] [--csv FILE]
        a 1 MiB allreduce (131072 float64) vs p: AUTO's choice simulated up
        to --sim-max ranks (default 512: every rank holds its input, its
        result, a copy for the oracle and the algorithm's scratch, about
        5 MiB a rank), and the cost formula of AUTO's choice (redcoll-tune
        predict) at every p up to 65536.

  doc --table CSV[,CSV...] --growth CSV
        rewrites the two generated blocks of docs/simulator.md from the CSVs.

MODEL is alpha 2 us, beta 0.4 ns/B (2.5 GB/s), gamma 0.1 ns/B.  Standard
library only.
"""
import json
import os
import subprocess
import sys
import time

import simlib

MODEL = ('2e-6', '4e-10', '1e-10')
MODEL_ARGS = ['--alpha', MODEL[0], '--beta', MODEL[1], '--gamma', MODEL[2]]
DOC = os.path.join(simlib.ROOT, 'docs', 'simulator.md')
DEFAULT_P = '1024,4096,16384,65535,65536'
GROWTH_P = [2 ** k for k in range(1, 17)]


def run_one(args, timeout):
    """redcoll-sim with args: (its JSON lines, wall seconds, peak RSS in MiB
    and CPU seconds (user + system) from wait4, exit status or 'timeout')."""
    cmd = [simlib.SIM] + [str(a) for a in args]
    t0 = time.monotonic()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        try:
            os.execv(cmd[0], cmd)
        finally:
            os._exit(127)
    os.close(w)
    chunks, deadline = [], t0 + timeout
    os.set_blocking(r, False)
    status = None
    while True:
        try:
            b = os.read(r, 65536)
            if b:
                chunks.append(b)
                continue
            if b == b'':
                break
        except BlockingIOError:
            pass
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            status = 'timeout'
            break
        time.sleep(0.05)
    os.close(r)
    _, st, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if status is None:
        status = os.waitstatus_to_exitcode(st)
    out = b''.join(chunks).decode()
    lines = [json.loads(l) for l in out.splitlines() if l.startswith('{')]
    return lines, wall, (ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime), status


def us(x):
    return '%.1f' % (float(x) * 1e6) if x not in (None, 'null') else '—'


def table(argv):
    import argparse
    ap = argparse.ArgumentParser(prog='sim_scale.py table')
    ap.add_argument('--p', default=DEFAULT_P)
    ap.add_argument('--algo', default=None, help='default: every allreduce algorithm')
    ap.add_argument('--timeout', type=float, default=300)
    ap.add_argument('--csv', default=None)
    a = ap.parse_args(argv)
    algos = a.algo.split(',') if a.algo else simlib.algorithms('allreduce')
    keys = ['p', 'algo', 'ok', 'rounds', 'max_bytes_sent', 'msgs', 'time', 'model_time',
            'wall_s', 'rss_mib', 'status', 'cpu_s']
    csv = simlib.Csv(a.csv, keys)
    rows = []
    for p in simlib.parse_list(a.p):
        for algo in algos:
            lines, wall, (rss, cpu), status = run_one(
                ['--coll', 'allreduce', '--algo', algo, '--p', p, '--count', 8] + MODEL_ARGS,
                a.timeout)
            d = lines[0] if lines else {}
            row = [p, algo, d.get('ok', False), d.get('rounds', ''), d.get('max_bytes_sent', ''),
                   d.get('msgs', ''), d.get('time', ''), d.get('model_time', ''),
                   '%.1f' % wall, '%.0f' % rss, status if d.get('ok') or not d else
                   d.get('error', status), '%.1f' % cpu]
            csv.row(row)
            rows.append(dict(zip(keys, row)))
            print(' '.join(map(str, row)), flush=True)


def predict(p, count):
    """AUTO's choice for an allreduce of count float64 on p ranks under
    MODEL and its formula's time, from redcoll-tune predict."""
    tune = os.path.join(os.path.dirname(simlib.SIM), 'redcoll-tune')
    out = subprocess.run([tune, 'predict', '--coll', 'allreduce', '--p', str(p), '--count',
                          str(count)] + MODEL_ARGS, capture_output=True, text=True).stdout
    lines = [json.loads(l) for l in out.splitlines() if l.startswith('{')]
    chosen = [d['chosen'] for d in lines if d.get('algo') == 'auto'][0]
    t = [d['predicted'] for d in lines if d.get('algo') == chosen][0]
    return chosen, t


def growth(argv):
    import argparse
    ap = argparse.ArgumentParser(prog='sim_scale.py growth')
    ap.add_argument('--p', default=','.join(map(str, GROWTH_P)))
    ap.add_argument('--sim-max', type=int, default=512)
    ap.add_argument('--timeout', type=float, default=300)
    ap.add_argument('--csv', default=None)
    a = ap.parse_args(argv)
    count = 131072
    keys = ['p', 'algo', 'formula_us', 'sim_us', 'bandwidth_bound_us', 'rounds', 'max_bytes_sent',
            'wall_s', 'rss_mib', 'cpu_s']
    csv = simlib.Csv(a.csv, keys)
    rows = []
    for p in simlib.parse_list(a.p):
        chosen, t = predict(p, count)
        sim, rounds, vol, wall, rss, cpu = '', '', '', '', '', ''
        if p <= a.sim_max:
            lines, w, (r, c), status = run_one(['--coll', 'allreduce', '--algo', chosen, '--p', p,
                                           '--count', count] + MODEL_ARGS, a.timeout)
            if lines and lines[0]['ok']:
                d = lines[0]
                sim, rounds, vol = '%.1f' % (d['time'] * 1e6), d['rounds'], d['max_bytes_sent']
                wall, rss, cpu = '%.1f' % w, '%.0f' % r, '%.1f' % c
        bound = 2.0 * (p - 1) / p * count * 8 * float(MODEL[1]) * 1e6
        row = [p, chosen, '%.1f' % (t * 1e6), sim, '%.1f' % bound, rounds, vol, wall, rss, cpu]
        csv.row(row)
        rows.append(row)
        print(' '.join(map(str, row)), flush=True)


def read_csv(path):
    import csv
    with open(path) as f:
        return list(csv.DictReader(f))


def doc(argv):
    """doc --table CSV[,CSV...] --growth CSV: the two blocks of
    docs/simulator.md from the CSVs of table and growth."""
    import argparse
    ap = argparse.ArgumentParser(prog='sim_scale.py doc')
    ap.add_argument('--table', required=True)
    ap.add_argument('--growth', required=True)
    a = ap.parse_args(argv)
    out = ['| p | algorithm | rounds | max bytes sent | messages | time (µs) | formula (µs) |'
           ' wall (s) | CPU (s) | peak RSS (MiB) |',
           '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for path in a.table.split(','):
        for r in read_csv(path):
            if r['ok'] == 'True':
                out.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    r['p'], r['algo'], r['rounds'], r['max_bytes_sent'], r['msgs'], us(r['time']),
                    us(r['model_time']), r['wall_s'], r.get('cpu_s') or '—', r['rss_mib']))
            else:
                why = 'stopped after %s s' % r['wall_s'] if r['status'] == 'timeout' else r['status']
                out.append('| %s | %s | — | — | — | — | — | %s | %s | %s |' % (
                    r['p'], r['algo'], why, r.get('cpu_s') or '—', r['rss_mib']))
    simlib.replace_block(DOC, '<!-- scale table begin: scripts/sim_scale.py doc -->',
                         '<!-- scale table end -->', '\n'.join(out))
    out = ['| p | AUTO chooses | simulated (µs) | formula (µs) | 2(p−1)/p·m·β (µs) | rounds |'
           ' max bytes sent | wall (s) | CPU (s) | peak RSS (MiB) |',
           '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in read_csv(a.growth):
        out.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            r['p'], r['algo'], r['sim_us'] or '—', r['formula_us'], r['bandwidth_bound_us'],
            r['rounds'] or '—', r['max_bytes_sent'] or '—', r['wall_s'] or '—',
            r.get('cpu_s') or '—', r['rss_mib'] or '—'))
    simlib.replace_block(DOC, '<!-- growth table begin: scripts/sim_scale.py doc -->',
                         '<!-- growth table end -->', '\n'.join(out))


if __name__ == '__main__':
    sys.exit(simlib.main(__doc__, {'table': table, 'growth': growth, 'doc': doc}))
