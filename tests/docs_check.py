#!/usr/bin/env python3
"""The documentation check of `meson test`.

1. Every function a public header declares with REDCOLL_API has a section in
   docs/api.md: a heading line that names it as `name(`; and docs/api.md is
   what scripts/gen_api.py writes from the headers today.
2. Every fenced code block in README.md and docs/**/*.md whose info string
   carries the word `runnable` works:
     ```c runnable   compiled and linked against the library just built; run
                     when it has a main() (exit status 0 required)
     ```cpp runnable as c, in C++17 by the compiler named in DOCS_CXX (the
                     build's C++ compiler, set by tests/meson.build); skipped,
                     and said so, when the build has none
     ```sh runnable  run by bash -e in a directory that looks like the source
                     tree with `build/` pointing at the build directory

usage: docs_check.py SOURCE_ROOT BUILD_ROOT LIBDIR CC [EXTRA_CFLAGS...]
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

src, build, libdir, cc = (pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]),
                          pathlib.Path(sys.argv[3]), sys.argv[4])
extra = sys.argv[5:]
cxx = os.environ.get("DOCS_CXX", "")
failures = []
skipped = 0


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


# 1. every public function documented -------------------------------------
api_doc = src / "docs" / "api.md"
documented = set()
if api_doc.exists():
    for line in api_doc.read_text().splitlines():
        if line.startswith("#"):
            documented.update(re.findall(r"`(redcoll_\w+)\(", line))
else:
    fail("docs/api.md is missing")
declared = {}
for h in sorted((src / "include" / "redcoll").glob("*.h")):
    text = re.sub(r"/\*.*?\*/", "", h.read_text(), flags=re.S)
    for name in re.findall(r"REDCOLL_API\b[^;{(]*?\b(redcoll_\w+)\s*\(", text):
        declared[name] = h.name
for name, header in sorted(declared.items()):
    if name not in documented:
        fail(f"{name} ({header}) has no heading in docs/api.md")
for name in sorted(documented - set(declared)):
    fail(f"docs/api.md documents {name}, which no public header declares")
print(f"{len(declared)} public functions, {len(documented & set(declared))} documented")
r = subprocess.run([sys.executable, str(src / "scripts" / "gen_api.py"), "--check"],
                   capture_output=True, text=True)
if r.returncode != 0:
    fail(r.stdout.strip() or r.stderr.strip())

# 2. runnable code blocks -------------------------------------------------
docs = [src / "README.md"] + sorted((src / "docs").rglob("*.md"))
fence = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)
blocks = 0
with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    tree = tmp / "tree"
    tree.mkdir()
    for entry in src.iterdir():
        if not entry.name.startswith("build") and entry.name != ".git":
            (tree / entry.name).symlink_to(entry)
    (tree / "build").symlink_to(build)
    for doc in docs:
        for m in fence.finditer(doc.read_text()):
            lang, info, body = m.group(1), m.group(2), m.group(3)
            if "runnable" not in info.split():
                continue
            blocks += 1
            where = f"{doc.relative_to(src)} block {blocks} ({lang})"
            if lang in ("c", "cpp"):
                if lang == "cpp" and not cxx:
                    skipped += 1
                    print(f"{where}: skipped, no C++ compiler in this build")
                    continue
                csrc = tmp / f"block{blocks}.{lang}"
                csrc.write_text(body)
                exe = tmp / f"block{blocks}"
                has_main = re.search(r"\bint\s+main\s*\(", body) is not None
                cmd = ([cc, "-std=c11"] if lang == "c" else [cxx, "-std=c++17", "-pedantic"])
                cmd += ["-Wall", "-Wextra", "-Werror", "-I", str(src / "include"), *extra,
                        str(csrc)]
                cmd += (["-o", str(exe), "-L", str(libdir), "-lredcoll", "-Wl,-rpath," + str(libdir),
                         "-pthread"] if has_main else ["-c", "-o", str(exe) + ".o"])
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    fail(f"{where} does not compile:\n{r.stderr}")
                    continue
                if has_main:
                    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
                    if r.returncode != 0:
                        fail(f"{where} exits with {r.returncode}:\n{r.stdout}{r.stderr}")
            elif lang in ("sh", "bash"):
                r = subprocess.run(["bash", "-e", "-c", body], cwd=tree, capture_output=True,
                                   text=True, timeout=300)
                if r.returncode != 0:
                    fail(f"{where} exits with {r.returncode}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
            else:
                fail(f"{where}: do not know how to run {lang}")
print(f"{blocks - skipped} runnable code blocks checked" +
      (f", {skipped} skipped (no C++ compiler)" if skipped else ""))
if failures:
    print(f"{len(failures)} failures")
    sys.exit(1)
