#!/usr/bin/env bash
# Quick start: install what is missing (scripts/deps.sh), build, and run the
# demo: 7 processes on this machine run an allreduce and a reduce over TCP
# with every algorithm, verify the results and print a timing table.
# Without libuv (a build with -Dtcp=disabled) it runs the simulator demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# gcc without libc6-dev (apt's --no-install-recommends) cannot compile.
if ! printf '#include <stdio.h>\nint main(void) { return 0; }\n' |
    cc -x c - -o /dev/null 2>/dev/null; then
  echo "the C compiler cannot build a program: install libc6-dev (sudo apt-get install libc6-dev)" >&2
  exit 1
fi
[ -d build ] || meson setup build
ninja -C build
if [ -x build/examples/tcp_demo ]; then
  exec build/examples/tcp_demo
fi
echo "(built without the TCP transport: running the simulator demo instead)"
exec build/examples/demo
