#!/usr/bin/env python3
"""redcoll's TCP point-to-point path against plain sockets, in one run.

Runs, for --rounds rounds, bench/raw_p2p (plain sockets over one loopback
connection, every socket-buffer setting of --sockbuf, blocking and then
non-blocking with redcoll's way of waiting, --nonblock) and
`redcoll-bench --coll sendrecv` (or `--coll send` with --oneway) under
`redcoll-run -n 2 --bind` with REDCOLL_SHM=0 (TCP, not the shared-memory
path), the order alternating from round to round so that a burst of load
on the machine hits both.  --before DIR adds a second build of redcoll
(another build directory, e.g. of the previous commit) as "redcoll-before",
for a before-and-after table from the same run.  --mpi PATH adds Open MPI
over TCP (bench/peers/mpi_bench.c built with mpicc, `--coll send` or
`sendrecv`, under mpirun with ob1 and the tcp BTL on loopback, bound one
rank per core as bench/peers/run.py does) as "ompi".

A point's value is the median over the rounds of each run's median.  The
plain program's value per size is its best setting's (the smallest median
over the socket-buffer settings and both ways of waiting), and the ratio
printed is redcoll / that best: below 1 redcoll is faster.
The load average before and after the run is printed too.

    bench/bench_p2p.py --build build [--oneway] [--rounds 5] [--iters 20]
                       [--sizes 256K:16M] [--factor 8] [--before OTHER_BUILD]
                       [--mpi PATH_TO_MPI_BENCH]
"""
import argparse
import os
import statistics
import subprocess
import sys


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        sys.exit(f"bench_p2p.py: {' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()}")
    rows = []
    for line in out.stdout.splitlines():
        f = line.split(",")
        if len(f) == 9 and f[0] != "impl":
            rows.append((f[0], int(f[3]), float(f[4]), f[8]))
    return rows


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--before", help="a second build directory, shown as redcoll-before")
    ap.add_argument("--mpi", help="mpi_bench built with mpicc: Open MPI over TCP, shown as ompi")
    ap.add_argument("--oneway", action="store_true", help="one way (--coll send) instead of both")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--sizes", default="256K:16M")
    ap.add_argument("--factor", type=int, default=8)
    ap.add_argument("--sockbuf", default="0,262144,1048576,4194304,s524288")
    a = ap.parse_args()
    env = dict(os.environ, REDCOLL_SHM="0")
    coll = "send" if a.oneway else "sendrecv"
    common = ["--sizes", a.sizes, "--factor", str(a.factor), "--iters", str(a.iters), "--no-header"]
    raw = [os.path.join(a.build, "bench", "raw_p2p"), "--bind", "--sockbuf", a.sockbuf] + common
    if a.oneway:
        raw.append("--oneway")

    def redcoll(build):
        return [os.path.join(build, "tools", "redcoll-run"), "-n", "2", "--bind", "--no-prefix",
                os.path.join(build, "tools", "redcoll-bench"), "--coll", coll, "--warmup", "2"] + common

    impls = [("raw", raw), ("raw", raw + ["--nonblock"]), ("redcoll", redcoll(a.build))]
    if a.before:
        impls.append(("redcoll-before", redcoll(a.before)))
    if a.mpi:
        mpirun = ["mpirun"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        mpirun += ["--bind-to", "core:overload-allowed", "--map-by", "core", "--oversubscribe",
                   "-n", "2", "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                   "--mca", "mpi_yield_when_idle", "1", "--mca", "btl_tcp_if_include", "lo"]
        impls.append(("ompi", mpirun + [a.mpi, "--coll", coll, "--impl", "ompi",
                                         "--warmup", "2"] + common))
    print(f"# load average before: {load()}")
    vals = {}  # (impl, bytes, setting) -> [median per round]
    for r in range(a.rounds):
        k = r % len(impls)
        for name, cmd in impls[k:] + impls[:k]:
            for _, m, med, setting in run(cmd, env):
                key = (name, m, setting if name == "raw" else "-")
                vals.setdefault(key, []).append(med)
    print(f"# load average after: {load()}")
    sizes = sorted({k[1] for k in vals})
    head = "bytes,raw_best_us,raw_setting,redcoll_us,ratio,raw_GBps,redcoll_GBps"
    if a.before:
        head += ",before_us,before_ratio,after_over_before"
    if a.mpi:
        head += ",ompi_us,redcoll_over_ompi,ompi_GBps"
    print(f"# {coll}, {a.rounds} rounds of {a.iters} iterations; medians over rounds")
    print(head)
    for m in sizes:
        raws = {k[2]: statistics.median(v) for k, v in vals.items() if k[0] == "raw" and k[1] == m}
        best = min(raws, key=raws.get)
        rb = raws[best]
        rc = statistics.median(vals[("redcoll", m, "-")])
        line = f"{m},{rb:.1f},{best},{rc:.1f},{rc / rb:.3f},{m / rb / 1e3:.3f},{m / rc / 1e3:.3f}"
        if a.before:
            bf = statistics.median(vals[("redcoll-before", m, "-")])
            line += f",{bf:.1f},{bf / rb:.3f},{rc / bf:.3f}"
        if a.mpi:
            om = statistics.median(vals[("ompi", m, "-")])
            line += f",{om:.1f},{rc / om:.3f},{m / om / 1e3:.3f}"
        print(line)
    for (name, m, setting), v in sorted(vals.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        print(f"# {name},{m},{setting}: " + " ".join(f"{x:.1f}" for x in v))


if __name__ == "__main__":
    main()
