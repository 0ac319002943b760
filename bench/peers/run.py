#!/usr/bin/env python3
"""Side-by-side benchmark of redcoll against Open MPI and Gloo on one machine.

    bench/peers/run.py [--build DIR] [--out DIR] [--ps 2-8] [--sizes 8:16M] [--factor 8]
                       [--colls allreduce,reduce] [--impls LIST] [--rounds 3]
                       [--iters 20] [--iters-large 6] [--large 1M] [--warmup 3]
                       [--chunk N] [--no-bind] [--quick] [--no-install] [--no-plots]
                       [--from-raw CSV]

Implementations (the impl column):
  redcoll-tcp      tools/redcoll-bench under tools/redcoll-run (processes, TCP on loopback,
                   REDCOLL_SHM=0)
  redcoll-threads  tools/redcoll-bench --transport threads (ranks as threads, single copy)
  redcoll-shm      tools/redcoll-bench --transport shm under tools/redcoll-run (processes,
                   shared memory with cross-memory attach; held against ompi-vader and
                   redcoll-threads)
  ompi-tcp         Open MPI 4.1 (Debian openmpi-bin), mpi_bench.c, --mca btl tcp,self
  ompi-vader       the same over shared memory, --mca btl vader,self
  gloo-ring        Gloo (Debian libgloo-dev) AllreduceRing over its TCP transport
  gloo-hd          Gloo AllreduceHalvingDoubling over its TCP transport
Binding: every process-based implementation pins rank r to the (r mod n)-th
CPU, n the CPUs the script may use: redcoll-run --bind, mpirun --bind-to
core:overload-allowed --map-by core, and the Gloo ranks through
sched_setaffinity.  (Unbound ranks that poll while they wait can share one
core for many milliseconds while another idles.)  --no-bind leaves placement
to the kernel.  The threads implementation is one process and is not bound.
All of them time float32 SUM the same way: every iteration after a barrier, an
iteration's time is the slowest rank's, median and p99 over the iterations,
the first result checked.  Gloo has only allreduce here (the issue compares
its two allreduce algorithms); reduce compares redcoll with MPI_Reduce, scan
(--colls scan) with MPI_Scan.

The script installs the Debian packages it needs when they are missing
(apt-get, as root), builds the peer programs with mpicc and g++ into OUT (they
are not part of the Meson build, so CI needs no MPI), and expects redcoll's
tools in the Meson build directory (it runs ninja for them if they are
missing).

Interleaving: the work is cut into runs of one implementation, one p, one
collective and a chunk of sizes (--chunk sizes per run; default: the small
sizes in one run and each large size alone).  For every (p, collective,
chunk) all implementations run back to back, in an order rotated from
round to round, and the whole sweep is repeated --rounds times.  The value of
a point is the median over rounds of each run's median, so a burst of load
from other users of the machine lands on all implementations alike rather
than on one.  --chunk 1 alternates the implementations at every single
point (slower: one process start-up per point and implementation).

Output, in OUT (default BUILD/peers):
  peers.csv     merged CSV, impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo
                (also printed on stdout)
  raw.csv       every run's row, with its round
  ratios.csv    per point: redcoll time / best peer time
  summary.md    the tables for docs/performance.md
  *.png         plots (gnuplot)
"""

import argparse
import csv
import io
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEADER = ["impl", "coll", "p", "bytes", "median_us", "p99_us", "algbw_GBps", "busbw_GBps", "algo"]
ALL_IMPLS = ["redcoll-tcp", "redcoll-threads", "redcoll-shm", "ompi-tcp", "ompi-vader", "gloo-ring", "gloo-hd"]
REDCOLL = ["redcoll-tcp", "redcoll-threads", "redcoll-shm"]
# The peers each redcoll transport is held against (the criteria):
# TCP against the TCP peers, threads against MPI over shared memory.
CLASS_PEERS = {
    "redcoll-tcp": ["ompi-tcp", "gloo-ring", "gloo-hd"],
    "redcoll-threads": ["ompi-vader"],
    "redcoll-shm": ["ompi-vader", "redcoll-threads"],
}
PACKAGES = {
    "mpi": ["openmpi-bin", "libopenmpi-dev"],
    "gloo": ["libgloo-dev", "g++"],
    "plots": ["gnuplot-nox"],
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def parse_size(s):
    s = s.strip()
    mul = 1
    if s[-1:].upper() == "B":
        s = s[:-1]
    if s[-1:].upper() in "KMG" and s[-1:].isalpha():
        mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[s[-1].upper()]
        s = s[:-1]
    return int(s) * mul


def parse_ps(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def human(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return "%d %s" % (n // k, unit)
    return "%d B" % n


# ---- set-up -------------------------------------------------------------------


def ensure_packages(groups, install):
    missing = []
    for g in groups:
        for pkg in PACKAGES[g]:
            r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                               capture_output=True, text=True)
            if r.returncode != 0 or "install ok installed" not in r.stdout:
                missing.append(pkg)
    if not missing:
        return True
    if not install:
        log("missing Debian packages: %s (run without --no-install)" % " ".join(missing))
        return False
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    install_cmd = sudo + ["apt-get", "install", "-y", "--no-install-recommends"] + missing
    log("installing: %s" % " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(install_cmd, env=env)
    if r.returncode != 0:  # perhaps stale package lists
        subprocess.run(sudo + ["apt-get", "update"], env=env)
        r = subprocess.run(install_cmd, env=env)
    return r.returncode == 0


def newer(target, *sources):
    return os.path.exists(target) and all(
        os.path.getmtime(target) >= os.path.getmtime(s) for s in sources)


def build_peers(out, need_mpi, need_gloo):
    os.makedirs(out, exist_ok=True)
    if need_mpi:
        src, exe = os.path.join(HERE, "mpi_bench.c"), os.path.join(out, "mpi_bench")
        if not newer(exe, src):
            subprocess.run(["mpicc", "-O2", "-std=c11", "-Wall", "-Wextra", "-o", exe, src, "-lm"],
                           check=True)
    if need_gloo:
        src, exe = os.path.join(HERE, "gloo_bench.cc"), os.path.join(out, "gloo_bench")
        if not newer(exe, src):
            subprocess.run(["g++", "-O2", "-std=c++17", "-Wall", "-Wextra", "-o", exe, src,
                            "-lgloo", "-pthread"], check=True)


def ensure_redcoll(build):
    tools = [os.path.join(build, "tools", t) for t in ("redcoll-bench", "redcoll-run")]
    if all(os.path.exists(t) for t in tools):
        return tools
    if os.path.isdir(build):
        subprocess.run(["ninja", "-C", build, "tools/redcoll-bench", "tools/redcoll-run"])
    if not all(os.path.exists(t) for t in tools):
        sys.exit("redcoll-bench and redcoll-run not found in %s: run "
                 "`meson setup %s && ninja -C %s` first" % (build, build, build))
    return tools


# ---- one run --------------------------------------------------------------------


def bind_cpu(r):
    """Pins this process to the (r mod n)-th of its n allowed CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[r % len(cpus)]})


class Runner:
    def __init__(self, args, bench, run, out):
        self.a = args
        self.bench, self.run = bench, run
        self.mpi = os.path.join(out, "mpi_bench")
        self.gloo = os.path.join(out, "gloo_bench")
        self.failures = []

    def sweep_args(self, sizes, iters):
        lo, hi = sizes[0], sizes[-1]
        return ["--sizes", "%d:%d" % (lo, hi), "--factor", str(self.a.factor),
                "--iters", str(iters), "--warmup", str(self.a.warmup), "--no-header"]

    def command(self, impl, coll, p, sizes, iters):
        sw = self.sweep_args(sizes, iters)
        if impl == "redcoll-threads":
            return [self.bench, "--transport", "threads", "--np", str(p), "--coll", coll] + sw, None
        if impl in ("redcoll-tcp", "redcoll-shm"):
            bind = [] if self.a.no_bind else ["--bind"]
            # redcoll-tcp is TCP between all ranks: without REDCOLL_SHM=0 the
            # ranks of this host would talk through shared memory.
            env = ["env", "REDCOLL_SHM=0"] if impl == "redcoll-tcp" else []
            return env + [self.run, "-n", str(p)] + bind + ["--", self.bench, "--transport",
                                                            impl[8:], "--coll", coll] + sw, None
        if impl.startswith("ompi-"):
            btl = "tcp,self" if impl == "ompi-tcp" else "vader,self"
            cmd = ["mpirun"]
            if os.geteuid() == 0:
                cmd.append("--allow-run-as-root")
            if self.a.no_bind:
                cmd += ["--bind-to", "none"]
            else:
                cmd += ["--bind-to", "core:overload-allowed", "--map-by", "core"]
            cmd += ["--oversubscribe", "-n", str(p),
                    "--mca", "pml", "ob1", "--mca", "btl", btl,
                    # Open MPI busy-polls unless it knows it is oversubscribed;
                    # on a machine shared with other work (and for p equal to
                    # the cores) polling costs it milliseconds per call, so
                    # it is told to yield, as for p above the cores.
                    "--mca", "mpi_yield_when_idle", "1"]
            if impl == "ompi-tcp":
                cmd += ["--mca", "btl_tcp_if_include", "lo"]
            return cmd + [self.mpi, "--coll", coll, "--impl", impl] + sw, None
        if impl.startswith("gloo-"):
            return [self.gloo, "--algo", "ring" if impl == "gloo-ring" else "hd"] + sw, "gloo"
        raise ValueError(impl)

    def once(self, impl, coll, p, sizes, iters):
        cmd, kind = self.command(impl, coll, p, sizes, iters)
        t0 = time.time()
        try:
            if kind == "gloo":
                text, ok, err = self.run_gloo(cmd, p)
            else:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.a.timeout)
                text, ok, err = r.stdout, r.returncode == 0, r.stderr
        except subprocess.TimeoutExpired:
            text, ok, err = "", False, "timeout after %d s" % self.a.timeout
        rows = []
        for line in text.splitlines():
            if line.startswith("["):  # redcoll-run's "[rank] " prefix
                line = line.split("] ", 1)[-1]
            f = line.strip().split(",")
            if len(f) != len(HEADER) or f[0] == "impl":
                continue
            row = dict(zip(HEADER, f))
            row["impl"] = impl
            rows.append(row)
        if not ok or len(rows) != len(sizes):
            msg = "%s %s p=%d %s..%s: %s" % (impl, coll, p, human(sizes[0]), human(sizes[-1]),
                                              (err.strip().splitlines() or ["failed"])[-1])
            self.failures.append(msg)
            log("  FAILED " + msg)
        log("  %-15s %-9s p=%d %8s..%-8s %5.1fs" % (impl, coll, p, human(sizes[0]),
                                                     human(sizes[-1]), time.time() - t0))
        return rows

    def run_gloo(self, cmd, p):
        store = tempfile.mkdtemp(prefix="gloo-store-")
        procs = []
        try:
            for r in range(p):
                env = dict(os.environ, GLOO_RANK=str(r), GLOO_SIZE=str(p), GLOO_STORE=store)
                pin = None if self.a.no_bind else (lambda r=r: bind_cpu(r))
                procs.append(subprocess.Popen(cmd, env=env, preexec_fn=pin, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True))
            outs, ok, err = [], True, ""
            deadline = time.time() + self.a.timeout
            for pr in procs:
                try:
                    o, e = pr.communicate(timeout=max(1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    for q in procs:
                        q.kill()
                    return "", False, "timeout after %d s" % self.a.timeout
                outs.append(o)
                if pr.returncode != 0:
                    ok, err = False, e
            return outs[0], ok, err
        finally:
            for pr in procs:
                if pr.poll() is None:
                    pr.kill()
            shutil.rmtree(store, ignore_errors=True)


# ---- results ----------------------------------------------------------------------


def combine(raw):
    """Median over rounds of every point's median (and p99)."""
    groups = {}
    for r in raw:
        groups.setdefault((r["impl"], r["coll"], int(r["p"]), int(r["bytes"])), []).append(r)
    merged = []
    for (impl, coll, p, nbytes), rs in sorted(groups.items(),
                                              key=lambda kv: (kv[0][1], kv[0][2], kv[0][3],
                                                              ALL_IMPLS.index(kv[0][0]))):
        med = statistics.median(float(r["median_us"]) for r in rs)
        p99 = statistics.median(float(r["p99_us"]) for r in rs)
        algbw = nbytes / (med * 1e-6) * 1e-9 if med > 0 else 0.0
        bus = 2.0 * (p - 1) / p if coll == "allreduce" else 1.0
        algos = [r["algo"] for r in rs]
        merged.append({"impl": impl, "coll": coll, "p": p, "bytes": nbytes,
                       "median_us": med, "p99_us": p99, "algbw_GBps": algbw,
                       "busbw_GBps": algbw * bus, "algo": max(set(algos), key=algos.count),
                       "rounds": len(rs)})
    return merged


def write_csv(path, rows, header):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            w.writerow([fmt(r[h]) for h in header])


def fmt(v):
    if isinstance(v, float):
        return "%.4f" % v if v < 10 else "%.2f" % v
    return str(v)


def ratios(merged):
    """Per (coll, p, bytes) and redcoll impl: time / best peer time."""
    t = {(m["impl"], m["coll"], m["p"], m["bytes"]): m["median_us"] for m in merged}
    points = sorted({(m["coll"], m["p"], m["bytes"]) for m in merged})
    out = []
    for coll, p, nbytes in points:
        for rc in REDCOLL:
            mine = t.get((rc, coll, p, nbytes))
            if mine is None:
                continue
            peers = {q: t[(q, coll, p, nbytes)] for q in CLASS_PEERS[rc] if (q, coll, p, nbytes) in t}
            allpeers = {q: v for (q, c, pp, b), v in t.items()
                        if c == coll and pp == p and b == nbytes and q not in REDCOLL}
            if not peers:
                continue
            best = min(peers, key=peers.get)
            if not allpeers:  # only redcoll transports measured this point
                allpeers = peers
            bestall = min(allpeers, key=allpeers.get)
            row = {"coll": coll, "p": p, "bytes": nbytes, "impl": rc, "us": mine,
                   "best_peer": best, "best_peer_us": peers[best],
                   "ratio": mine / peers[best],
                   "best_any": bestall, "ratio_any": mine / allpeers[bestall]}
            for q, v in peers.items():
                row["vs_" + q] = mine / v
            out.append(row)
    return out


def summarize(rat, impls_present):
    lines = []
    for rc in REDCOLL:
        for coll in sorted({r["coll"] for r in rat}):
            rs = [r for r in rat if r["impl"] == rc and r["coll"] == coll]
            if not rs:
                continue
            for q in CLASS_PEERS[rc] + ["best"]:
                key = "ratio" if q == "best" else "vs_" + q
                vals = [r[key] for r in rs if key in r]
                if not vals:
                    continue
                faster = sum(v < 1.0 for v in vals)
                worst = max(vals)
                wr = max((r for r in rs if key in r), key=lambda r: r[key])
                lines.append("| %s | %s | %s | %d/%d (%.0f%%) | %.2f (p=%d, %s) | %.2f |" % (
                    rc, coll, q if q != "best" else "best of " + "/".join(
                        x for x in CLASS_PEERS[rc] if x in impls_present),
                    faster, len(vals), 100.0 * faster / len(vals), worst, wr["p"],
                    human(wr["bytes"]), statistics.median(vals)))
    head = ["| redcoll | coll | against | redcoll faster at | worst ratio (where) | median ratio |",
            "|---|---|---|---:|---:|---:|"]
    return head + lines


def table_md(merged, rat, coll, impls):
    """One markdown table per collective: rows (p, bytes), columns impls + ratios."""
    t = {(m["impl"], m["p"], m["bytes"]): m for m in merged if m["coll"] == coll}
    rr = {(r["impl"], r["p"], r["bytes"]): r for r in rat if r["coll"] == coll}
    cols = [i for i in impls if any(k[0] == i for k in t)]
    if not cols:
        return []
    head = "| p | bytes | " + " | ".join(cols) + " | tcp ratio | threads ratio | shm ratio |"
    lines = [head, "|---:|---:|" + "---:|" * (len(cols) + 3)]
    for p, nbytes in sorted({(k[1], k[2]) for k in t}):
        cells = []
        for i in cols:
            m = t.get((i, p, nbytes))
            cells.append("%.0f" % m["median_us"] if m else "-")
        rt = rr.get(("redcoll-tcp", p, nbytes))
        rh = rr.get(("redcoll-threads", p, nbytes))
        rs = rr.get(("redcoll-shm", p, nbytes))
        cells.append("%.2f" % rt["ratio"] if rt else "-")
        cells.append("%.2f" % rh["ratio"] if rh else "-")
        cells.append("%.2f" % rs["vs_ompi-vader"] if rs and "vs_ompi-vader" in rs else "-")
        lines.append("| %d | %s | %s |" % (p, human(nbytes), " | ".join(cells)))
    return lines


# ---- plots --------------------------------------------------------------------


def write_series(path, rows, coll, impls, ps, key):
    """gnuplot data: one index (block) per (impl, p), impl-major, of "bytes value"."""
    with open(path, "w") as f:
        for impl in impls:
            for p in ps:
                f.write("# %s p=%d\n" % (impl, p))
                for r in rows:
                    if r["impl"] == impl and r["coll"] == coll and r["p"] == p:
                        f.write("%d %g\n" % (r["bytes"], r[key]))
                f.write("\n\n")


def plots(out, merged, rat, ps):
    if shutil.which("gnuplot") is None:
        log("gnuplot not found: no plots")
        return []
    made = []
    colls = sorted({m["coll"] for m in merged})
    for coll in colls:
        impls = [i for i in ALL_IMPLS if any(m["impl"] == i and m["coll"] == coll for m in merged)]
        data = os.path.join(out, "plot-%s.dat" % coll)
        write_series(data, merged, coll, impls, ps, "median_us")
        png = os.path.join(out, "time-%s.png" % coll)
        rows = int(math.ceil(len(ps) / 4.0))
        g = ['set terminal pngcairo size 1600,%d font ",9"' % (380 * rows),
             'set output "%s"' % png,
             "set logscale xy", "set format x '%.0s%cB'", "set grid",
             "set xlabel 'bytes'", "set ylabel 'median time (us)'",
             "set key top left", 'set multiplot layout %d,4 title "%s: median time, float32 SUM"'
             % (rows, coll)]
        for pi, p in enumerate(ps):
            parts = []
            for ii, impl in enumerate(impls):
                parts.append("'%s' index %d with linespoints lw 1.5 title '%s'"
                             % (data, ii * len(ps) + pi, impl))
            g.append("set title 'p = %d'" % p)
            g.append("plot " + ", ".join(parts))
        g.append("unset multiplot")
        subprocess.run(["gnuplot"], input="\n".join(g), text=True, check=False)
        made.append(png)
        # ratios
        rdata = os.path.join(out, "plot-ratio-%s.dat" % coll)
        write_series(rdata, rat, coll, REDCOLL, ps, "ratio")
        png = os.path.join(out, "ratio-%s.png" % coll)
        g = ['set terminal pngcairo size 1400,500 font ",10"', 'set output "%s"' % png,
             "set logscale x", "set logscale y", "set format x '%.0s%cB'", "set grid",
             "set xlabel 'bytes'", "set ylabel 'redcoll time / best peer time'",
             "set key outside right", "set multiplot layout 1,2 title '%s: below 1 = redcoll faster'"
             % coll]
        for ri, rc in enumerate(REDCOLL):
            peers = "/".join(CLASS_PEERS[rc])
            g.append("set title '%s vs best of %s'" % (rc, peers))
            parts = ["'%s' index %d with linespoints title 'p=%d'" % (rdata, ri * len(ps) + pi, p)
                     for pi, p in enumerate(ps)]
            parts.append("1 with lines lw 2 lc 'black' notitle")
            g.append("plot " + ", ".join(parts))
        g.append("unset multiplot")
        subprocess.run(["gnuplot"], input="\n".join(g), text=True, check=False)
        made.append(png)
    return made


# ---- main -------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="Meson build directory with tools/redcoll-bench (default: build)")
    ap.add_argument("--out", help="output directory (default: BUILD/peers)")
    ap.add_argument("--ps", default="2-8")
    ap.add_argument("--sizes", default="8:16M", help="MIN:MAX bytes")
    ap.add_argument("--factor", type=int, default=8)
    ap.add_argument("--colls", default="allreduce,reduce")
    ap.add_argument("--impls", default=",".join(ALL_IMPLS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20, help="timed iterations below --large")
    ap.add_argument("--iters-large", type=int, default=6, help="timed iterations from --large up")
    ap.add_argument("--large", default="1M")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=0,
                    help="sizes per run (0: small sizes together, large ones alone)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run")
    ap.add_argument("--no-bind", action="store_true",
                    help="do not pin ranks to CPUs (see Binding above)")
    ap.add_argument("--quick", action="store_true",
                    help="p in {2,3,5,8}, 2 rounds, 10/4 iterations")
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--from-raw", metavar="CSV", action="append",
                    help="run nothing: rebuild the outputs from raw.csv files of earlier runs")
    a = ap.parse_args()
    if a.quick:
        a.ps, a.rounds, a.iters, a.iters_large = "2,3,5,8", 2, 10, 4
    ps = parse_ps(a.ps)
    lo, hi = (parse_size(x) for x in a.sizes.split(":"))
    sizes = []
    s = lo
    while s <= hi:
        sizes.append(s)
        s *= a.factor
    large = parse_size(a.large)
    colls = a.colls.split(",")
    impls = [i for i in a.impls.split(",") if i]
    for i in impls:
        if i not in ALL_IMPLS:
            sys.exit("unknown impl %s (known: %s)" % (i, ", ".join(ALL_IMPLS)))
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, "peers"))
    os.makedirs(out, exist_ok=True)

    if a.from_raw:
        raw = []
        for path in a.from_raw:
            with open(path, newline="") as f:
                raw.extend(csv.DictReader(f))
        colls = sorted({r["coll"] for r in raw})
        return report(a, out, raw, sizes, large, colls, ps, [])

    need_mpi = any(i.startswith("ompi") for i in impls)
    need_gloo = any(i.startswith("gloo") for i in impls) and "allreduce" in colls
    groups = (["mpi"] if need_mpi else []) + (["gloo"] if need_gloo else []) + \
        ([] if a.no_plots else ["plots"])
    if not ensure_packages(groups, not a.no_install):
        sys.exit("required packages are missing")
    build_peers(out, need_mpi, need_gloo)
    bench = run = None
    if any(i in REDCOLL for i in impls):
        bench, run = ensure_redcoll(build)
    runner = Runner(a, bench, run, out)

    # chunks of sizes: consecutive sizes (one --sizes MIN:MAX --factor F run each)
    if a.chunk > 0:
        chunks = [sizes[i:i + a.chunk] for i in range(0, len(sizes), a.chunk)]
    else:
        small = [x for x in sizes if x < large]
        chunks = ([small] if small else []) + [[x] for x in sizes if x >= large]

    raw = []
    t0 = time.time()
    for rnd in range(a.rounds):
        log("round %d/%d (%.0f s so far)" % (rnd + 1, a.rounds, time.time() - t0))
        k = 0
        for p in ps:
            for coll in colls:
                todo = [i for i in impls if coll == "allreduce" or not i.startswith("gloo")]
                for ch in chunks:
                    iters = a.iters if ch[-1] < large else a.iters_large
                    # rotate the order, and reverse it every other time, so
                    # that no implementation always runs first or last
                    order = todo[k % len(todo):] + todo[:k % len(todo)]
                    if (k // len(todo)) % 2:
                        order.reverse()
                    k += 1
                    for impl in order:
                        for row in runner.once(impl, coll, p, ch, iters):
                            row["round"] = rnd
                            raw.append(row)
        write_csv(os.path.join(out, "raw.csv"), raw, HEADER + ["round"])

    return report(a, out, raw, sizes, large, colls, ps, runner.failures)


def report(a, out, raw, sizes, large, colls, ps, failures):
    """Writes and prints the merged CSV, the ratios, the summary and the plots."""
    merged = combine(raw)
    write_csv(os.path.join(out, "peers.csv"), merged, HEADER)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(HEADER)
    for m in merged:
        w.writerow([fmt(m[h]) for h in HEADER])
    sys.stdout.write(buf.getvalue())

    rat = ratios(merged)
    rhead = ["coll", "p", "bytes", "impl", "us", "best_peer", "best_peer_us", "ratio",
             "best_any", "ratio_any"]
    write_csv(os.path.join(out, "ratios.csv"), rat, rhead)
    present = {m["impl"] for m in merged}
    summ = summarize(rat, present)
    print()
    print("ratio = redcoll median time / best peer median time (below 1: redcoll faster)")
    print("%-6s %3s %9s  %-16s %-10s %6s  %-10s %6s" % ("coll", "p", "bytes", "impl", "best peer",
                                                      "ratio", "best any", "ratio"))
    for r in rat:
        print("%-6s %3d %9s  %-16s %-10s %6.2f  %-10s %6.2f" % (
            r["coll"][:6], r["p"], human(r["bytes"]), r["impl"], r["best_peer"], r["ratio"],
            r["best_any"], r["ratio_any"]))
    print()
    print("\n".join(summ))

    md = ["# redcoll vs peers: %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
          "", "p = %s, sizes %s, rounds %d, iterations %d (%d from %s), warm-up %d" % (
              a.ps, ", ".join(human(x) for x in sizes), a.rounds, a.iters, a.iters_large,
              human(large), a.warmup), "", "## Summary", ""] + summ
    for coll in colls:
        md += ["", "## %s: median time (us) and ratios" % coll, ""]
        md += table_md(merged, rat, coll, ALL_IMPLS)
    if failures:
        md += ["", "## Failed runs", ""] + ["- " + f for f in failures]
    if not a.no_plots:
        made = plots(out, merged, rat, ps)
        md += ["", "## Plots", ""] + ["- %s" % os.path.basename(x) for x in made]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    log("wrote %s" % out)
    if failures:
        log("%d runs failed:" % len(failures))
        for f in failures:
            log("  " + f)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
