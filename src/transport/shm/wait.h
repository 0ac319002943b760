/* Waiting for a peer (wait.c): every rank has a doorbell, a 32-bit counter
 * in the shared segment that anybody who may have given it work bumps;
 * a rank with nothing to do polls its bell for redcoll__spin_ns()
 * (REDCOLL_SPIN_US), then sleeps on it with a futex
 * until it changes or a timeout passes.  A ringer makes the futex system
 * call only while somebody sleeps on the bell. */
#ifndef REDCOLL_SHM_WAIT_H
#define REDCOLL_SHM_WAIT_H

#include <stdint.h>

typedef struct redcoll__shm_bell {
  uint32_t count;    /* bumped by every ring */
  uint32_t sleepers; /* threads in futex_wait on count */
} redcoll__shm_bell;

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t redcoll__shm_now(void);
/* The bell's count, to pass to wait: read it before looking for work. */
uint32_t redcoll__shm_bell_read(redcoll__shm_bell *b);
/* Bumps the count and wakes the sleepers, if any. */
void redcoll__shm_bell_ring(redcoll__shm_bell *b);
/* Returns once the count differs from seen, or at the monotonic time
 * until_ns (UINT64_MAX: none) at the latest: polls with the CPU's pause
 * hint until pause_until_ns, then yielding the CPU until spin_until_ns
 * (redcoll__spin_relax), then sleeps.  Returns 1 if the count changed,
 * else 0. */
int redcoll__shm_bell_wait(redcoll__shm_bell *b, uint32_t seen, uint64_t pause_until_ns,
                           uint64_t spin_until_ns, uint64_t until_ns);

#endif /* REDCOLL_SHM_WAIT_H */
