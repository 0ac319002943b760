#!/usr/bin/env bash
# Quick start: install what is missing, build, run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
[ -d build ] || meson setup build
ninja -C build
build/examples/demo
