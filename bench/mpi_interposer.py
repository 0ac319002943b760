#!/usr/bin/env python3
"""MPI_Allreduce through the interposer (libredcoll-mpi.so) against Open MPI's own.

    bench/mpi_interposer.py [--build DIR] [--out DIR] [--ps 2,4,7] [--sizes 8:1M]
                            [--factor 8] [--btls tcp,vader] [--rounds 3] [--iters 30]
                            [--warmup 5]

For every number of processes p and every BTL (Open MPI's transport between
the processes: tcp or vader, its shared memory), the same unchanged program,
bench/peers/mpi_bench.c (float32 SUM, out of place, an iteration's time is
the slowest rank's, the first result checked), runs twice under mpirun:
as is (impl ompi-BTL) and with the interposer preloaded and taking
MPI_Allreduce alone (REDCOLL_MPI_COLLS=allreduce; impl redcoll-BTL, whose
messages then go over the same BTL through the MPI transport).  The two
alternate, in an order rotated from round to round, --rounds times; a point's
value is the median over rounds of each run's median.  Ranks are bound to
cores (--bind-to core:overload-allowed), oversubscribed when p exceeds them.

Prints one line per (p, bytes) with the medians in microseconds and the
ratio redcoll / ompi per BTL (below 1: the interposer is faster), and
writes every run's CSV lines to OUT/raw.csv.  Needs mpicc and mpirun, and
the build directory's src/interpose/libredcoll-mpi.so (run ninja first).
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, env):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        sys.exit(f"failed: {' '.join(cmd)}")
    return [line for line in r.stdout.splitlines() if line and not line.startswith("impl,")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default="/tmp/redcoll-mpi-bench")
    ap.add_argument("--ps", default="2,4,7")
    ap.add_argument("--sizes", default="8:1M")
    ap.add_argument("--factor", default="8")
    ap.add_argument("--btls", default="tcp,vader")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", default="30")
    ap.add_argument("--warmup", default="5")
    a = ap.parse_args()
    lib = os.path.join(os.path.abspath(a.build), "src", "interpose", "libredcoll-mpi.so")
    if not os.path.exists(lib):
        sys.exit(f"{lib} is missing: configure with MPI and run ninja -C {a.build}")
    os.makedirs(a.out, exist_ok=True)
    exe = os.path.join(a.out, "mpi_bench")
    subprocess.run(["mpicc", "-O2", "-o", exe, os.path.join(HERE, "peers", "mpi_bench.c"), "-lm"],
                   check=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    results = {}  # (impl, p, bytes) -> [median of each round]
    raw = []
    for rnd in range(a.rounds):
        for p in a.ps.split(","):
            runs = []
            for btl in a.btls.split(","):
                base = ["mpirun", "-np", p, "--oversubscribe", "--bind-to", "core:overload-allowed",
                        "--map-by", "core", "--mca", "btl", f"{btl},self"]
                args = ["--sizes", a.sizes, "--factor", a.factor, "--iters", a.iters,
                        "--warmup", a.warmup, "--no-header"]
                runs.append(base + [exe, "--impl", f"ompi-{btl}"] + args)
                runs.append(base + ["-x", f"LD_PRELOAD={lib}", "-x", "REDCOLL_MPI_COLLS=allreduce",
                                    exe, "--impl", f"redcoll-{btl}"] + args)
            k = rnd % len(runs)
            for cmd in runs[k:] + runs[:k]:
                for line in run(cmd, env):
                    raw.append(line)
                    f = line.split(",")
                    results.setdefault((f[0], int(f[2]), int(f[3])), []).append(float(f[4]))
    with open(os.path.join(a.out, "raw.csv"), "w") as fh:
        fh.write("impl,coll,p,bytes,median_us,p99_us,algbw_GBps,busbw_GBps,algo\n")
        fh.write("\n".join(raw) + "\n")
    btls = a.btls.split(",")
    head = f"{'p':>3} {'bytes':>8}"
    for b in btls:
        head += f" {'ompi-' + b:>11} {'redcoll-' + b:>11} {'ratio':>6}"
    print("MPI_Allreduce float32 sum, median microseconds (median of "
          f"{a.rounds} rounds); ratio = redcoll / ompi")
    print(head)
    ratios = {b: [] for b in btls}
    for p, n in sorted({(k[1], k[2]) for k in results}):
        line = f"{p:>3} {n:>8}"
        for b in btls:
            o = statistics.median(results[(f"ompi-{b}", p, n)])
            r = statistics.median(results[(f"redcoll-{b}", p, n)])
            ratios[b].append(r / o)
            line += f" {o:>11.1f} {r:>11.1f} {r / o:>6.2f}"
        print(line)
    for b in btls:
        v = ratios[b]
        print(f"{b}: median ratio {statistics.median(v):.2f}, best {min(v):.2f}, worst {max(v):.2f}, "
              f"redcoll faster at {sum(x < 1 for x in v)} of {len(v)} points")


if __name__ == "__main__":
    main()
