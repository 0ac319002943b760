"""What the simulator scripts (sim_sweep.py, sim_tables.py) share: finding
and running redcoll-sim, running many invocations on N jobs, ranges,
CSV files and the generated blocks of the doc pages.  Standard library only.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
ALGO_DOCS = os.path.join(ROOT, 'docs', 'algorithms')
SIM = None   # set by options(); REDCOLL_SIM or build/tools/redcoll-sim by default
JOBS = 2


def find_sim():
    if os.environ.get('REDCOLL_SIM'):
        return os.environ['REDCOLL_SIM']
    for b in ('build', 'build-sel'):
        path = os.path.join(ROOT, b, 'tools', 'redcoll-sim')
        if os.path.exists(path):
            return path
    return os.path.join(ROOT, 'build', 'tools', 'redcoll-sim')


def run(args, must=True, nice=False):
    """redcoll-sim with args (any values, turned into strings): the list of
    its JSON lines.  No line at all: exits if must, else warns and gives []."""
    cmd = (['nice', '-n', '10'] if nice else []) + [SIM] + [str(a) for a in args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{')]
    if not lines:
        msg = 'redcoll-sim failed: %s\n%s' % (' '.join(cmd), out.stderr.strip())
        if must:
            sys.exit(msg)
        print(msg, flush=True)
    return lines


def pmap(fn, items, jobs=None):
    """fn(x) for x in items, jobs at a time (default --jobs): the results in
    order, each as soon as it and those before it are done."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or JOBS) as ex:
        yield from ex.map(fn, items)


def run_many(arglists, **kw):
    """run() of every argument list, --jobs at a time: the list of results."""
    return list(pmap(lambda a: run(a, **kw), arglists))


def one(args):
    """The single line of a run that must be ok."""
    d = run(args)[0]
    if not d['ok']:
        sys.exit('not ok: %s %s' % (' '.join(map(str, args)), json.dumps(d)))
    return d


def terms(args):
    """(alpha, beta, gamma) coefficients of one run: its time with one of
    them 1 and the others 0 (rounds, critical-path bytes, reduced bytes)."""
    return tuple(one(list(args) + ['--alpha', a, '--beta', b, '--gamma', g])['time']
                 for a, b, g in ((1, 0, 0), (0, 1, 0), (0, 0, 1)))


_algos = {}


def algorithms(coll, op='sum'):
    """Every algorithm of coll that accepts op, as redcoll-sim --algo all has them."""
    if (coll, op) not in _algos:
        lines = run(['--coll', coll, '--algo', 'all', '--p', 2, '--count', 1, '--op', op],
                    must=False)
        _algos[(coll, op)] = [d['requested'] for d in lines]
    return _algos[(coll, op)]


def ceil_log2(p):
    return (p - 1).bit_length()


def prange(s, default=None):
    """'A-B' or 'A' (or default when s is empty) as (A, B)."""
    a, _, b = (s or default).partition('-')
    return int(a), int(b or a)


def compact(ps, sep=','):
    """A sorted list of numbers with runs as A-B: [2, 3, 4, 7] -> '2-4,7'."""
    runs, i = [], 0
    while i < len(ps):
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[j] + 1:
            j += 1
        runs.append('%d-%d' % (ps[i], ps[j]) if j > i else '%d' % ps[i])
        i = j + 1
    return sep.join(runs)


def parse_list(s):
    """'2-16,32,64' as [2, ..., 16, 32, 64]."""
    out = []
    for part in filter(None, s.split(',')):
        a, b = prange(part)
        out.extend(range(a, b + 1))
    return out


class Csv:
    """A CSV file written row by row and flushed, so that a long sweep
    stopped early keeps its rows."""

    def __init__(self, path, keys):
        self.f = open(path, 'w') if path else None
        self.row(keys)

    def row(self, values):
        if self.f:
            self.f.write(','.join(map(str, values)) + '\n')
            self.f.flush()


def replace_block(path, begin, end, body, prefix=None):
    """Rewrites the part of the page at path from the line that starts with
    prefix (default begin) to the end marker: begin, body, end."""
    with open(path) as f:
        text = f.read()
    i = text.index(prefix or begin)
    j = text.index(end, i)
    with open(path, 'w') as f:
        f.write(text[:i] + begin + '\n' + body + '\n' + text[j:])
    print('wrote', path)


def render(dot, svg, *opts):
    """Graphviz: dot with opts from the file dot to the file svg."""
    subprocess.run(['dot'] + list(opts) + ['-Tsvg', dot, '-o', svg], check=True)


def main(doc, commands, argv=None):
    """Parses [--sim PATH] [--jobs N] COMMAND ARGS: commands maps a command
    to (function of its argument list, help line); returns its exit status."""
    global SIM, JOBS
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sim', default=find_sim(), help='redcoll-sim (default: build/tools/redcoll-sim)')
    ap.add_argument('--jobs', type=int, default=JOBS, help='simulator processes at a time')
    ap.add_argument('command', choices=sorted(commands))
    ap.add_argument('args', nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    SIM, JOBS = os.path.abspath(a.sim), a.jobs
    if not os.access(SIM, os.X_OK):
        sys.exit('no simulator at %s (build first, or pass --sim PATH)' % SIM)
    return commands[a.command](a.args) or 0
