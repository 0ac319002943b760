#!/usr/bin/env bash
# ThreadSanitizer run of what several threads touch: builds build-tsan (or
# $BUILD) with -Db_sanitize=thread and runs the tests that drive threads
# (test_threads, test_comms (communicators of one world used from several
# threads at once), test_push (nonblocking collectives resumed on
# delivering threads), test_tcp_comms (the same over TCP: threads taking turns
# with each process's event loop, an abort from another thread), the
# threaded cases of test_tcp_nb (posted exchanges progressed and waited for
# from several threads at once, and the program's own loop), test_mock with its coroutines and its worlds of the
# program's threads, test_nonblocking_sim (posted exchanges, also in a world
# of threads), test_conformance, and test_soak with a smaller number
# of collectives and no TCP part), test_shm_queue (the shared-memory
# transport's queue and futex bell with threads standing in for processes)
# and test_shm (its processes, each with two threads on two
# communicators), and the threaded cases of test_shm_nb (posted exchanges
# over shared memory moved on by the progress thread, and TCP's mixed
# transport with its pump thread), and test_hier (hosts x threads: the
# mailbox of a process's threads, the partner threads, worlds over a threads
# world and over TCP, two-level views on threads worlds), and test_pipeline
# (piped steps: segments posted and finished on other threads).  Exits non-zero if a test fails or ThreadSanitizer
# reports anything; the reports are kept in $BUILD/tsan-logs/.
#
#   scripts/tsan.sh                      # gcc, else clang, whichever runs TSan here
#   CC=clang scripts/tsan.sh             # a given compiler
#   TSAN_SOAK_ITERS=5000 scripts/tsan.sh # a longer soak (default 1000)
#   TSAN_TESTS="soak" scripts/tsan.sh    # only some of the tests
#   TSAN_TESTS="tcp_nb:raw_threads"      # NAME:CASE,...: only those cases
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD:-build-tsan}
tests=${TSAN_TESTS:-threads comms tcp_comms push mock nonblocking_sim conformance soak shm_queue shm tcp_nb:raw_threads,threads_nb,raw_uv shm_nb:thread_shm,thread_tcp_hosts,mixed_tcp_hosts,raw_tcp_hosts hier pipeline:results,nonblocking,dies_midway,tcp}
soak_iters=${TSAN_SOAK_ITERS:-1000}

# A compiler whose TSan builds and runs a threaded program on this machine
# (some kernel/compiler pairs cannot map TSan's shadow memory).
works() {
  local cc=$1 tmp
  command -v "$cc" > /dev/null || return 1
  tmp=$(mktemp -d) || return 1
  cat > "$tmp/t.c" <<'EOF'
#include <pthread.h>
static int x;
static void *f(void *a) { (void)a; __atomic_fetch_add(&x, 1, __ATOMIC_SEQ_CST); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, f, 0); f(0); pthread_join(t, 0); return x != 2; }
EOF
  local ok=1
  "$cc" -fsanitize=thread -g -O1 "$tmp/t.c" -o "$tmp/t" -pthread 2> /dev/null && "$tmp/t" > /dev/null 2>&1 && ok=0
  rm -rf "$tmp"
  return $ok
}

if [ ! -d "$dir" ]; then
  cc=${CC:-}
  if [ -z "$cc" ]; then
    for c in gcc clang; do
      if works "$c"; then cc=$c; break; fi
    done
  fi
  if [ -z "$cc" ] || ! works "$cc"; then
    echo "tsan.sh: no compiler here can build and run a ThreadSanitizer program" >&2
    exit 2
  fi
  echo "== meson setup $dir with CC=$cc"
  # REDCOLL_NO_CLONES: no target_clones kernels.  Their ifunc resolvers
  # run while the dynamic loader relocates the program, before the TSan
  # runtime is up, and being instrumented they crash it there.
  CC=$cc meson setup "$dir" -Db_sanitize=thread -Dbuildtype=debugoptimized -Db_lundef=false \
    -Dexamples=false -Dbench=false -Dc_args=-DREDCOLL_NO_CLONES || exit 2
fi

targets=()
# An entry NAME:CASE,CASE runs only those cases of test_NAME.
for t in $tests; do targets+=("tests/test_${t%%:*}"); done
ninja -C "$dir" "${targets[@]}" || exit 2

logs=$dir/tsan-logs
rm -rf "$logs"
mkdir -p "$logs"
# Reports go to files named after the test (with the pid appended), so that
# forked or concurrent processes do not mix them; halt_on_error=0 lets a run
# show every race, exitcode makes it fail all the same.
rc=0
for entry in $tests; do
  t=${entry%%:*}
  cases=()
  [ "$entry" != "$t" ] && IFS=, read -r -a cases <<< "${entry#*:}"
  echo "== test_$t ${cases[*]:-} under ThreadSanitizer"
  start=$(date +%s)
  REDCOLL_SOAK_ITERS=$soak_iters REDCOLL_SOAK_TCP_ITERS=0 \
    TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 log_path=$logs/$t ${TSAN_OPTIONS:-}" \
    "$dir/tests/test_$t" "${cases[@]}" > "$logs/$t.out" 2>&1
  st=$?
  tail -n 3 "$logs/$t.out"
  reports=$(cat "$logs/$t".[0-9]* 2> /dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
  echo "test_$t: exit $st, $reports ThreadSanitizer report(s), $(($(date +%s) - start)) s"
  if [ "$reports" -gt 0 ]; then
    cat "$logs/$t".[0-9]* | grep -A12 '^WARNING: ThreadSanitizer' | head -n 60
  fi
  if [ "$st" -ne 0 ] || [ "$reports" -gt 0 ]; then rc=1; fi
done
[ "$rc" -eq 0 ] && echo "tsan.sh: no reports" || echo "tsan.sh: FAILED (logs in $logs)"
exit $rc
