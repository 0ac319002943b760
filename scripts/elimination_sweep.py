#!/usr/bin/env python3
"""Full sweep of the elimination bounds of issue 3 through redcoll-sim.

For every p in the range (default 1..300):
  rounds  (alpha=1, count 1): ceil(log2 p) + 1, or log2 p for a power of two;
  volume  (beta=1, threshold 1 byte, large m): time <= (1 + 1/2^(n+1)) 2m + one
          block of rounding, p = q 2^n with q odd, m in bytes;
  work    (gamma=1, same): time <= (1 + 1/2^(n+1)) m + one block.
Usage: scripts/elimination_sweep.py BUILD_DIR [P_FIRST P_LAST [COUNT]]
"""
import json
import subprocess
import sys


def sim(build, p_range, count, extra):
    cmd = [build + "/tools/redcoll-sim", "--coll", "allreduce", "--algo", "elimination",
           "--p", p_range, "--count", str(count)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    a, b = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (1, 300)
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
    rng = "%d-%d" % (a, b)
    bad = 0
    for r in sim(build, rng, 1, []):
        p = r["p"]
        k = (p - 1).bit_length()
        want = k if p & (p - 1) == 0 else k + 1
        if not r["ok"] or r["rounds"] != want:
            print("rounds p=%d: %s, want %d" % (p, r["rounds"], want))
            bad += 1
    for key, model, factor in (("volume", ["--alpha", "0", "--beta", "1"], 2.0),
                               ("work", ["--alpha", "0", "--gamma", "1"], 1.0)):
        for r in sim(build, rng, count, ["--threshold", "1"] + model):
            p, m = r["p"], r["bytes"]
            n = (p & -p).bit_length() - 1
            block = 8 * (-(-count // max(1, 1 << ((p).bit_length() - 1))))
            limit = (1 + 1 / 2 ** (n + 1)) * factor * m + block
            if not r["ok"] or r["time"] > limit:
                print("%s p=%d: time %s > %.0f" % (key, p, r["time"], limit))
                bad += 1
    print("sweep %s: %s" % (rng, "all within bounds" if bad == 0 else "%d failures" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
