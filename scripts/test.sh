#!/usr/bin/env bash
# Builds and runs the whole test suite.  Extra arguments go to meson setup
# (for example: BUILD=build-asan scripts/test.sh -Db_sanitize=address,undefined).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
dir=${BUILD:-build}
[ -d "$dir" ] || meson setup "$dir" "$@"
ninja -C "$dir"
set +e
meson test -C "$dir" --print-errorlogs --num-processes 2 ${MESON_TEST_ARGS:-}
rc=$?
set -e
python3 - "$dir" <<'PY' || true
import json, sys
passed = failed = skipped = 0
try:
    for line in open(sys.argv[1] + "/meson-logs/testlog.json"):
        r = json.loads(line).get("result")
        if r == "OK": passed += 1
        elif r == "SKIP": skipped += 1
        else: failed += 1
except OSError:
    pass
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
