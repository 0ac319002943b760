#!/usr/bin/env bash
# Sends one 4.5 GiB message over the TCP transport (2 local ranks) and checks
# every word.  Needs 9 GiB of free memory; takes a minute or more.
#   usage: scripts/huge_message.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" tests/huge_message tools/redcoll-run >/dev/null
"$build/tools/redcoll-run" -n 2 "$build/tests/huge_message"
