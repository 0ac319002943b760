/*
 * The threads transport: p ranks as threads of one process.
 *
 * A message is copied exactly once, from the sender's buffer straight into
 * the receiver's buffer, when both the send and the matching receive have
 * been posted (rendezvous): whichever of the two threads arrives second
 * does the copy, the first one waits until it is done.  Nothing is queued.
 * A waiting thread first checks again for at most REDCOLL_SPIN_US
 * microseconds (default 100, 0 turns it off), the first REDCOLL_PAUSE_US
 * (default 1) with the CPU's pause hint unless the world's ranks outnumber
 * the CPUs the process's affinity mask allows, the rest giving its CPU
 * away (sched_yield) between checks; then it sleeps on a condition
 * variable: a thread that sleeps leaves its CPU idle, and waking it again
 * costs tens of microseconds on a virtual machine, several times a small
 * message's copy.
 *
 * Two ways to use it:
 *   - redcoll_threads_run() starts p threads, gives each its communicator,
 *     runs fn on every rank and waits for all of them;
 *   - redcoll_threads_world_create() makes the p communicators of one world
 *     for threads the program owns.
 *
 * Errors of the blocking calls: REDCOLL_EMISMATCH on both sides when the
 * next message between a pair carries another tag or length (nothing is
 * written); REDCOLL_EABORTED once any rank has aborted the world (the core
 * does so after its first error); REDCOLL_ETRANSPORT when the peer's
 * communicator has been destroyed (its thread is gone, nothing can come);
 * REDCOLL_ETIMEDOUT when one call waits longer than the world's timeout.
 */
#ifndef REDCOLL_THREADS_H
#define REDCOLL_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default bound on one wait: 5 minutes. */
#define REDCOLL_THREADS_DEFAULT_WAIT_TIMEOUT_MS ((uint64_t)300000)

typedef struct redcoll_threads_config {
  /* Bound on one wait in milliseconds (redcoll.h, REDCOLL_WAIT_FOREVER).
   * 0: REDCOLL_TIMEOUT_MS if set (0 there: no bound), else
   * REDCOLL_THREADS_DEFAULT_WAIT_TIMEOUT_MS.  REDCOLL_WAIT_FOREVER, or
   * more than about 31 years: no bound. */
  uint64_t wait_timeout_ms;
  /* redcoll_threads_run only: the stack size of each rank thread in bytes;
   * 0: the system default. */
  size_t stack_size;
  /* Hosts to pretend, for the two-level algorithms (docs/hier.md): ranks
   * 0 .. ranks_per_host - 1 share host 0, the next ranks_per_host host 1,
   * and so on (the last host may have fewer); 0 or 1: the transport
   * declares no hosts and the core runs flat algorithms.  hosts, if not
   * NULL, overrides it: p entries, the host of each rank (any values;
   * equal values share a host), copied at creation. */
  int ranks_per_host;
  const uint32_t *hosts;
} redcoll_threads_config;

/* All fields zero: the defaults described above. */
REDCOLL_API void redcoll_threads_config_init(redcoll_threads_config *cfg);

/* Runs fn(comm, arg) on p ranks (1 <= p <= 65536), each on a thread of its
 * own with its own communicator, and returns when all have returned.  The
 * communicators are destroyed by the runner when fn returns; fn must not
 * destroy it.  A rank whose fn returns an error aborts the world, so that
 * its peers are not left waiting.
 * Returns REDCOLL_OK if every fn returned REDCOLL_OK; otherwise the status
 * of the lowest rank that failed with something other than
 * REDCOLL_EABORTED (the cause rather than its echo), or REDCOLL_EABORTED if
 * that is all there is.  REDCOLL_EINVAL for p out of range or a NULL fn;
 * REDCOLL_ENOMEM if the world or a thread could not be created (ranks
 * already started are aborted and joined first). */
REDCOLL_API int redcoll_threads_run(int p, redcoll_rank_main fn, void *arg);

/* As redcoll_threads_run with a configuration (NULL: defaults); statuses,
 * if not NULL, has p entries and receives what each rank's fn returned
 * (left untouched when the run could not start every rank).  REDCOLL_EINVAL also for an
 * REDCOLL_TIMEOUT_MS that is not a number of milliseconds. */
REDCOLL_API int redcoll_threads_run_config(int p, const redcoll_threads_config *cfg,
                                           redcoll_rank_main fn, void *arg, int *statuses);

/* Creates the p communicators of one world (comms[i] is rank i) for threads
 * the program owns.  cfg may be NULL (defaults).  Each communicator is then
 * used by one thread at a time, like any communicator.  Every one of them
 * must be destroyed with redcoll_comm_destroy(), from any thread, once its
 * rank has finished communicating; a peer still waiting for a destroyed
 * rank gets REDCOLL_ETRANSPORT.  The world they share is freed with the
 * last of them.  All or nothing: on failure comms is left filled with NULL.
 * Returns REDCOLL_EINVAL for p out of range, a NULL comms or an unparsable
 * REDCOLL_TIMEOUT_MS; REDCOLL_ENOMEM. */
REDCOLL_API int redcoll_threads_world_create(int p, const redcoll_threads_config *cfg,
                                             redcoll_comm **comms);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_THREADS_H */
