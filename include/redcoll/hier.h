/*
 * Hosts x threads: every thread of every process a rank of one world
 * (docs/hier.md).
 *
 * redcoll_hier_run(procs, T, fn, arg), called by every rank of the
 * process-level communicator procs (H processes: TCP, shared memory, a
 * user's transport), starts T threads in each process and runs fn on each
 * with its own communicator of the world: H * T ranks, host-major, so
 * thread t of process i is rank i * T + t and canonical (rank) order is
 * preserved: a non-commutative reduction over the world combines process
 * 0's threads in order, then process 1's, and so on.
 *
 * The world's transport tells the core which ranks share a process
 * (redcoll_transport_info.hosts), so AUTO runs the two-level algorithms
 * where the model predicts them faster: the threads of a process combine
 * their vectors in memory, and one collective per slice crosses the
 * network.  Every collective, dup, split and create_group works on the
 * world.  Messages between threads of one process are copied once, from
 * the sender's buffer to the receiver's; messages between processes travel
 * through procs' transport, on channels of their own (one per ordered pair
 * of threads and world communicator), so the world's traffic never meets
 * procs' own.
 *
 * Needs, when procs has more than one rank, a transport with channels and
 * threads (REDCOLL_TRANSPORT_CAP_CHANNELS | REDCOLL_TRANSPORT_CAP_THREADS):
 * TCP, shared memory, threads.  The world's nonblocking collectives run to
 * their end inside the call that starts them (its transport has no posted
 * exchanges of its own).
 *
 * Errors: a collective whose peer process dies returns an error on every
 * thread of every other process (the transport's failure, then the core's
 * cancel); a rank whose fn returns an error cancels the world's
 * communicators it used, so that no thread waits for it.
 */
#ifndef REDCOLL_HIER_H
#define REDCOLL_HIER_H

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many threads per process. */
#define REDCOLL_HIER_MAX_THREADS 1024

/* Runs fn(world, arg) on threads threads in each process of procs (a
 * collective over procs: every rank calls it with the same threads) and
 * returns when all of this process's threads have returned; the world
 * communicators are made and destroyed by the runner (fn must not destroy
 * its own).  procs stays the caller's and must not be used by the caller
 * while this runs.  Returns REDCOLL_OK if every fn of this process returned
 * REDCOLL_OK; otherwise the status of its lowest thread that failed with
 * something other than REDCOLL_EABORTED, or REDCOLL_EABORTED.
 * REDCOLL_EINVAL for a NULL procs or fn, threads outside 1 ..
 * REDCOLL_HIER_MAX_THREADS, or a world of more than 65536 ranks;
 * REDCOLL_ENOTSUP when procs has more than one rank and its transport lacks
 * channels or threads (logged); REDCOLL_ENOMEM; or the
 * status of the dup of procs the world's channels are agreed on. */
REDCOLL_API int redcoll_hier_run(redcoll_comm *procs, int threads, redcoll_rank_main fn,
                                 void *arg);

/* As redcoll_hier_run; statuses, if not NULL, has threads entries and
 * receives what each of this process's threads returned. */
REDCOLL_API int redcoll_hier_run_statuses(redcoll_comm *procs, int threads, redcoll_rank_main fn,
                                          void *arg, int *statuses);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_HIER_H */
