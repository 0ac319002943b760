#!/usr/bin/env python3
"""Measures every allreduce algorithm in the simulator and rewrites the table
between the markers of docs/algorithms/README.md: rounds for a small vector
(alpha = 1), and for a large vector m the volume the busiest rank sends
(beta = 1) and reduces (gamma = 1), in units of m, for p = 7, 13 and 16.

    python3 scripts/overview_table.py [BUILD_DIR]
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SIM = ROOT / (sys.argv[1] if len(sys.argv) > 1 else "build") / "tools" / "redcoll-sim"
DOC = ROOT / "docs" / "algorithms" / "README.md"
PS = [7, 13, 16]
ALGOS = ["linear", "binary_tree", "recursive_doubling", "halving_doubling", "binary_blocks",
         "ring", "elimination", "elimination_nonoverlap", "elimination_2to1", "elimination_rings",
         "allgather_reduce", "ring_sequential", "circulant", "circulant_rsag"]


def sim(algo, p, count):
    r = subprocess.run([str(SIM), "--coll", "allreduce", "--algo", algo, "--p", str(p),
                        "--count", str(count)], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        return None
    d = json.loads(r.stdout.splitlines()[0])
    return d if d.get("ok") else None


def main():
    large = 3 * 5 * 7 * 11 * 13 * 16  # float64 elements: divisible by every p here
    rows = ["| algorithm | rounds, small m (p = 7 / 13 / 16) | sent, large m | reduced, large m |",
            "|---|---|---|---|"]
    for a in ALGOS:
        small, sent, red = [], [], []
        for p in PS:
            s, l = sim(a, p, 1), sim(a, p, large)
            if s is None or l is None:
                small.append("—"); sent.append("—"); red.append("—")
                continue
            small.append(str(s["rounds"]))
            sent.append(f"{l['max_bytes_sent'] / l['bytes']:.2f}")
            red.append(f"{l['max_bytes_reduced'] / l['bytes']:.2f}")
        rows.append(f"| `{a}` | {' / '.join(small)} | {' / '.join(sent)} m | {' / '.join(red)} m |")
    text = DOC.read_text()
    begin, end = "<!-- overview-table begin -->", "<!-- overview-table end -->"
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    DOC.write_text(head + begin + "\n" + "\n".join(rows) + "\n" + end + tail)


if __name__ == "__main__":
    main()
