#!/usr/bin/env python3
"""The must-shows of issue 3, through redcoll-sim.

Checks (all by default, or those named with --only):
  rounds  elimination, alpha=1, count 1, p in P: ceil(log2 p) + 1 rounds, or
          log2 p for a power of two;
  volume  elimination, threshold 1 byte, count COUNT (m bytes), p = q 2^n:
          beta=1 time <= (1 + 1/2^(n+1)) 2m, gamma=1 time <= (1 + 1/2^(n+1)) m,
          plus one block of rounding;
  rings   elimination_rings, count 1: ceil(log2 p) rounds for p = 3 2^n and
          9 2^n (n while p <= 3 * P_LAST), and never more rounds than
          elimination for any p in P;
  ok      every algorithm of the issue, p in P (default 1..130): allreduce
          and reduce with --op noncomm and with random float64 sums
          (sumrandom, bitwise-equal on all ranks), each with halving
          everywhere (threshold 1) and with none (default threshold); reduce
          with root 0, and every root (--roots all; 8515 runs for p 1..130,
          about six minutes of the simulator per algorithm, op and
          threshold) or every root up to p = 20 and roots p/2 and p-1 above
          (--roots few, the default); in place with count 5.
Usage: scripts/elimination_sweep.py [BUILD_DIR] [--p A-B] [--count N]
          [--roots all|few] [--only rounds,volume,rings,ok] [--algos a,b,...]
The old form BUILD_DIR P_FIRST P_LAST [COUNT] still works.  Exit status 1 if
anything failed.
"""
import argparse
import json
import subprocess
import sys

ALGOS = ["elimination", "elimination_nonoverlap", "elimination_2to1", "elimination_rings",
         "allgather_reduce", "ring_sequential"]


def sim(build, algo, p_range, count, extra, coll="allreduce"):
    cmd = [build + "/tools/redcoll-sim", "--coll", coll, "--algo", algo, "--p", p_range,
           "--count", str(count)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    if not rows:
        print("no output from %s: %s" % (" ".join(cmd), out.stderr.strip()))
    return rows


def ceil_log2(p):
    return (p - 1).bit_length()


def elim_rounds(p):
    k = ceil_log2(p)
    return k if p & (p - 1) == 0 else k + 1


def check_rounds(build, a, b):
    bad = 0
    for r in sim(build, "elimination", "%d-%d" % (a, b), 1, []):
        p = r["p"]
        if not r["ok"] or r["rounds"] != elim_rounds(p):
            print("rounds p=%d: %s, want %d" % (p, r["rounds"], elim_rounds(p)))
            bad += 1
    print("rounds elimination p=%d..%d: %s" % (a, b, "ok" if not bad else "%d failures" % bad))
    return bad


def check_volume(build, a, b, count):
    bad = 0
    for key, model, factor in (("volume", ["--alpha", "0", "--beta", "1"], 2.0),
                               ("work", ["--alpha", "0", "--gamma", "1"], 1.0)):
        worst = 0.0
        for r in sim(build, "elimination", "%d-%d" % (a, b), count, ["--threshold", "1"] + model):
            p, m = r["p"], r["bytes"]
            n = (p & -p).bit_length() - 1
            block = 8 * (-(-count // max(1, 1 << (p.bit_length() - 1))))
            limit = (1 + 1 / 2 ** (n + 1)) * factor * m + block
            worst = max(worst, r["time"] / limit)
            if not r["ok"] or r["time"] > limit:
                print("%s p=%d: time %s > %.0f" % (key, p, r["time"], limit))
                bad += 1
        print("%s elimination p=%d..%d count %d: %s (largest time/bound %.3f)"
              % (key, a, b, count, "ok" if not bad else "%d failures" % bad, worst))
    return bad


def check_rings(build, a, b):
    bad = 0
    rings = {r["p"]: r for r in sim(build, "elimination_rings", "%d-%d" % (a, b), 1, [])}
    for p, r in sorted(rings.items()):
        if not r["ok"] or r["rounds"] > elim_rounds(p):
            print("rings p=%d: ok %s rounds %s > elimination %d" % (p, r["ok"], r["rounds"],
                                                                    elim_rounds(p)))
            bad += 1
    special = []
    for q in (3, 9):
        p = q
        while p <= max(3 * b, 96):
            special.append(p)
            p *= 2
    for p in sorted(special):
        r = sim(build, "elimination_rings", str(p), 1, [])[0]
        if not r["ok"] or r["rounds"] != ceil_log2(p):
            print("rings p=%d: %s rounds, want %d" % (p, r["rounds"], ceil_log2(p)))
            bad += 1
    print("rings: p=%d..%d never above elimination; p=3*2^n, 9*2^n in %s at ceil(log2 p): %s"
          % (a, b, special, "ok" if not bad else "%d failures" % bad))
    return bad


def check_ok(build, a, b, roots, algos):
    bad = 0
    rng = "%d-%d" % (a, b)
    for algo in algos:
        runs = fails = 0
        for op in ("noncomm", "sumrandom"):
            for th in (["--threshold", "1"], []):
                for count, inplace in ((37, []), (5, ["--in-place"])):
                    x = ["--op", op] + th + inplace
                    rows = sim(build, algo, rng, count, x)
                    rows += sim(build, algo, rng, count, x, "reduce")
                    if roots == "all" and not inplace:
                        rows += sim(build, algo, rng, count, x + ["--root", "all"], "reduce")
                    elif roots == "few":
                        if a <= 20:
                            rows += sim(build, algo, "%d-%d" % (a, min(b, 20)), count,
                                        x + ["--root", "all"], "reduce")
                        for p in range(max(a, 21), b + 1):
                            for root in (p // 2, p - 1):
                                rows += sim(build, algo, str(p), count, x + ["--root", str(root)],
                                            "reduce")
                    for r in rows:
                        runs += 1
                        if not r["ok"]:
                            fails += 1
                            print("FAIL %s %s p=%d root=%d op=%s %s" % (
                                r["coll"], algo, r["p"], r["root"], op, " ".join(x)))
        print("ok %s p=%s roots %s: %d runs, %s" % (algo, rng, roots, runs,
                                                    "all ok" if not fails else "%d FAILED" % fails))
        sys.stdout.flush()
        bad += fails
    return bad


def main():
    ap = argparse.ArgumentParser(description="issue 3 sweeps")
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("legacy", nargs="*", type=int)
    ap.add_argument("--p", default=None)
    ap.add_argument("--count", type=int, default=8192)
    ap.add_argument("--roots", choices=["all", "few"], default="few")
    ap.add_argument("--only", default="rounds,volume,rings,ok")
    ap.add_argument("--algos", default=",".join(ALGOS))
    args = ap.parse_args()
    only = args.only.split(",")
    if len(args.legacy) >= 2:
        a, b = args.legacy[0], args.legacy[1]
        if len(args.legacy) > 2:
            args.count = args.legacy[2]
        only = [o for o in only if o != "ok"] if "--only" not in sys.argv else only
    elif args.p:
        a, b = (int(x) for x in args.p.split("-")) if "-" in args.p else (int(args.p),) * 2
    else:
        a, b = 1, 300
    bad = 0
    if "rounds" in only:
        bad += check_rounds(args.build, a, b)
    if "volume" in only:
        bad += check_volume(args.build, a, b, args.count)
    if "rings" in only:
        bad += check_rings(args.build, a, b)
    if "ok" in only:
        bad += check_ok(args.build, a, min(b, 130) if not args.p else b, args.roots,
                        args.algos.split(","))
    print("sweep: %s" % ("all within bounds" if not bad else "%d failures" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
