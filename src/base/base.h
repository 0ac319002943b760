/*
 * What the core and the transports share, and all a transport sees of
 * redcoll besides the public headers: logging, the environment parser, the
 * spin-then-sleep policy of a waiting rank, and the accessor that finds a
 * transport's state behind a communicator.  Transports are compiled with
 * include/ and this folder alone on their include path, so they cannot
 * reach the core's internals (src/core/internal.h).
 */
#ifndef REDCOLL_BASE_H
#define REDCOLL_BASE_H

#include <stdint.h>
#include <string.h>

#include "env.h"
#include "redcoll/redcoll.h"
#include "redcoll/transport.h"

#define REDCOLL__HIDDEN __attribute__((visibility("hidden")))

/* A 64-bit mixer (splitmix64's finaliser): tags and channel bases. */
static inline uint64_t redcoll__mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* ---- logging (log.c) ----------------------------------------------------- */

/* Diagnostics on stderr at REDCOLL_LOG_LEVEL none|error|warn|info|debug
 * (or -1..3); errors (level 0) by default. */
int redcoll__log_level(void);
void redcoll__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- waiting (log.c) ----------------------------------------------------- */

/* How long (ns) a transport waiting for a peer polls before it sleeps in
 * the kernel: REDCOLL_SPIN_US, default REDCOLL__SPIN_US_DEFAULT.  A process
 * or thread that sleeps leaves its CPU idle, and on a virtual machine
 * waking an idle CPU costs tens of microseconds, more than a small
 * message's transfer. */
#define REDCOLL__SPIN_US_DEFAULT 100
uint64_t redcoll__spin_ns(void);
/* How much of that poll (ns) spins on the CPU's pause hint before the rest
 * yields the CPU between looks: REDCOLL_PAUSE_US, default REDCOLL__PAUSE_US_DEFAULT (at most the whole poll)
 * where ranks_per_cpu <= 1, none where the transport's ranks on the host
 * outnumber its CPUs.  A peer that runs on a CPU of its own answers within
 * microseconds, and a yield would hand this CPU to whatever other process
 * is runnable for the rest of that one's time slice (milliseconds); a
 * peer that waits for a CPU, this one's perhaps, needs the yields, and
 * without them a rank sharing its CPU with a busy process costs its peer
 * 230 us per call instead of 18 (measured: docs/performance.md). */
#define REDCOLL__PAUSE_US_DEFAULT 1
uint64_t redcoll__spin_pause_ns(double ranks_per_cpu);
/* One look of a poll: the pause hint if pause, else sched_yield. */
void redcoll__spin_relax(int pause);

/* ---- CPUs (base/cpus.c) --------------------------------------------------- */

/* Words of a CPU mask the transports exchange: CPUs 0..255. */
#define REDCOLL__CPU_MASK_WORDS 4
/* The CPUs this process may run on (sched_getaffinity) as a bit mask of
 * nwords 64-bit words: 1, or 0 with the words all zero if the mask is not
 * known or holds a CPU beyond them. */
int redcoll__cpu_mask(uint64_t *words, int nwords);
/* Adds mask (nwords words, as redcoll__cpu_mask fills them) to the union
 * acc: 1, or 0 if mask is empty (not known), which leaves acc as it was. */
int redcoll__cpu_mask_add(uint64_t *acc, const uint64_t *mask, int nwords);
/* Ranks per CPU of `ranks` ranks that together may run on the CPUs of
 * mask (the union of theirs); the online CPUs if mask is NULL or empty.
 * At least 1. */
double redcoll__ranks_per_cpu(int ranks, const uint64_t *mask, int nwords);

/* ---- the accessor (core: api/comm.c) ------------------------------------- */

/* The transport state (impl) of communicator c if c runs over ops, else
 * NULL: for a transport's own public functions that take a communicator. */
void *redcoll__comm_transport(const redcoll_comm *c, const redcoll_transport_ops *ops);

/* What a transport layered on another communicator's transport needs of
 * it (the hier transport): its vtable and state, its channel base, its map
 * of ranks to transport ranks (NULL: the same) and the transport's
 * REDCOLL_TRANSPORT_CAP_* bits.  REDCOLL_EINVAL for a NULL c. */
int redcoll__comm_endpoint(const redcoll_comm *c, const redcoll_transport_ops **ops, void **impl,
                           uint64_t *channel, const int **map, unsigned *caps);

/* ---- the shared-memory path of a network transport (shm/host.c) ---------- */

/* For a transport whose ranks may share hosts (TCP): learns which ranks
 * share which host (an allgather over ops on a channel group of its own),
 * and if any two do, creates in *out, on every rank, a communicator over a
 * transport that reaches the ranks of this host through shared memory (if
 * it has any) and the others through ops, and tells the core the hosts.
 * Returns REDCOLL__ENV_UNSET when there is no such path (REDCOLL_SHM=0,
 * every rank alone on its host, one rank): the caller makes its plain
 * communicator;
 * REDCOLL_OK (the new transport owns impl from then on); or an error
 * (impl is still the caller's).  Linux only (REDCOLL_HAVE_SHM).  Once the
 * identities are known, before any communicator is made, *ranks_per_cpu
 * is set to the ranks per CPU on the busiest kernel (ranks that share a
 * boot id share CPUs, also from hosts of their own: containers, network
 * namespaces), the same on every rank; untouched if the exchange failed. */
int redcoll__shm_host_split(const redcoll_transport_ops *ops, void *impl, int rank, int size,
                            uint64_t job, uint64_t timeout_ms, double *ranks_per_cpu,
                            redcoll_comm **out);
/* The impl of ops inside communicator c made by redcoll__shm_host_split,
 * or NULL. */
void *redcoll__shm_host_inner(const redcoll_comm *c, const redcoll_transport_ops *ops);

#endif /* REDCOLL_BASE_H */
