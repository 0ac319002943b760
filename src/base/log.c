/* Diagnostics on stderr (redcoll__log and its level, REDCOLL_LOG_LEVEL) and
 * how long transports spin before they sleep (REDCOLL_SPIN_US, of which
 * REDCOLL_PAUSE_US on the pause hint). */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base.h"

/* -2: not read yet.  Read once; every thread computes the same value, so
 * relaxed atomics are enough (threads call this on every collective). */
static int log_level = -2;

int redcoll__log_level(void) {
  int v = __atomic_load_n(&log_level, __ATOMIC_RELAXED);
  if (v != -2) return v;
  /* Errors are printed unless the environment says otherwise: a failure
   * nobody sees is a failure nobody can fix. */
  v = 0;
  const char *s = getenv("REDCOLL_LOG_LEVEL");
  if (s != NULL && *s != '\0') {
    if (strcmp(s, "none") == 0 || strcmp(s, "off") == 0) v = -1;
    else if (strcmp(s, "error") == 0) v = 0;
    else if (strcmp(s, "warn") == 0) v = 1;
    else if (strcmp(s, "info") == 0) v = 2;
    else if (strcmp(s, "debug") == 0) v = 3;
    else v = atoi(s);
  }
  if (v < -1) v = -1;
  __atomic_store_n(&log_level, v, __ATOMIC_RELAXED);
  return v;
}

/* A time in microseconds from the environment, as nanoseconds, read once
 * into *cache (UINT64_MAX: not read yet); every thread computes the same. */
static uint64_t env_us(const char *name, int def_us, uint64_t *cache) {
  uint64_t v = __atomic_load_n(cache, __ATOMIC_RELAXED);
  if (v != UINT64_MAX) return v;
  v = (uint64_t)def_us * 1000;
  uint64_t us;
  int rc = redcoll__env_u64(name, 1000000, &us);
  if (rc == REDCOLL_OK) v = us * 1000;
  else if (rc != REDCOLL__ENV_UNSET)
    redcoll__log(1, "%s=%s is not a number of microseconds up to 1000000; using %d", name,
                 redcoll__env(name), def_us);
  __atomic_store_n(cache, v, __ATOMIC_RELAXED);
  return v;
}

static uint64_t spin_ns = UINT64_MAX, pause_ns = UINT64_MAX;

uint64_t redcoll__spin_ns(void) {
  return env_us("REDCOLL_SPIN_US", REDCOLL__SPIN_US_DEFAULT, &spin_ns);
}

uint64_t redcoll__spin_pause_ns(double ranks_per_cpu) {
  uint64_t spin = redcoll__spin_ns();
  uint64_t pause = env_us("REDCOLL_PAUSE_US", REDCOLL__PAUSE_US_DEFAULT, &pause_ns);
  if (ranks_per_cpu > 1) return 0;
  return pause < spin ? pause : spin;
}

void redcoll__spin_relax(int pause) {
  if (!pause) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

void redcoll__log(int level, const char *fmt, ...) {
  if (level > redcoll__log_level()) return;
  static const char *const names[] = {"error", "warn", "info", "debug"};
  /* The whole line in one write, so that lines of other threads and of
   * other processes on the same stream do not cut into it. */
  char line[4096];
  const char *name = names[level < 0 ? 0 : level > 3 ? 3 : level];
  int k = snprintf(line, sizeof line - 1, "redcoll %s: ", name);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + k, sizeof line - 1 - (size_t)k, fmt, ap);
  va_end(ap);
  size_t n = (size_t)k + (m < 0 ? 0 : (size_t)m);
  if (n > sizeof line - 2) n = sizeof line - 2; /* cut: the newline still ends it */
  line[n++] = '\n';
  fwrite(line, 1, n, stderr);
}
