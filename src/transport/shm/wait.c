/* The doorbell (wait.h).  A sleeper counts itself in sleepers, then sleeps
 * in FUTEX_WAIT only if the count still is the value it read before it
 * looked for work: a ring after that read either changed the count (the
 * kernel then refuses to sleep) or happened before it (the sleeper then saw
 * the work).  Both sides use sequentially consistent operations, so a
 * ringer that reads sleepers == 0 rang before the sleeper counted itself.
 * The futex is not private: the bell is in memory shared between
 * processes. */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "wait.h"

uint64_t redcoll__shm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t redcoll__shm_bell_read(redcoll__shm_bell *b) {
  return __atomic_load_n(&b->count, __ATOMIC_SEQ_CST);
}

void redcoll__shm_bell_ring(redcoll__shm_bell *b) {
  __atomic_add_fetch(&b->count, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&b->sleepers, __ATOMIC_SEQ_CST) != 0)
    syscall(SYS_futex, &b->count, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

int redcoll__shm_bell_wait(redcoll__shm_bell *b, uint32_t seen, uint64_t pause_until_ns,
                           uint64_t spin_until_ns, uint64_t until_ns) {
  for (;;) {
    if (__atomic_load_n(&b->count, __ATOMIC_SEQ_CST) != seen) return 1;
    uint64_t now = redcoll__shm_now();
    if (now >= until_ns) return 0;
    if (now < spin_until_ns) {
      redcoll__spin_relax(now < pause_until_ns);
      continue;
    }
    uint64_t left = until_ns - now;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    __atomic_add_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
    long rc = syscall(SYS_futex, &b->count, FUTEX_WAIT, seen, until_ns == UINT64_MAX ? NULL : &ts,
                      NULL, 0);
    int err = rc == 0 ? 0 : errno;
    __atomic_sub_fetch(&b->sleepers, 1, __ATOMIC_SEQ_CST);
    if (err == ETIMEDOUT) return __atomic_load_n(&b->count, __ATOMIC_SEQ_CST) != seen;
  }
}
