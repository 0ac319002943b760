/*
 * The simulator: p ranks under one deterministic scheduler, on a one-ported,
 * full-duplex alpha-beta-gamma network.
 *
 * Each rank runs fn(comm, arg) as a coroutine with a stack of its own, all on
 * the calling thread: only one rank runs at a time and the scheduler picks
 * the next one from a seeded generator, so the same seed gives the same trace
 * byte for byte.  fn must not block on anything but the communicator (a rank
 * waiting on a lock held by another rank would stop the whole run).
 *
 * Cost model.  A transfer of n bytes starts when its sender and its receiver
 * have both posted it and takes alpha + n * beta.  A sendrecv ends when both
 * of its transfers have ended.  A rank's clock moves to the end of each call.
 * A local reduction of n bytes adds n * gamma.  Messages shorter than
 * eager_limit bytes are eager: the transfer starts when sent, the sender's
 * clock moves past it, and the receive completes at the later of its posting
 * and the transfer's end.  With alpha = 1 and beta = gamma = 0 a rank's time
 * is the number of rounds on its critical path.
 *
 * A run in which no rank can move is a deadlock: every blocked call returns
 * REDCOLL_EDEADLOCK, the report (which ranks wait for what) goes to
 * cfg->report and, when cfg->verbose, to stderr.  Never a hang.
 *
 * Deadlines (redcoll_comm_set_deadline) run on the virtual clock, one time
 * unit per millisecond, from the rank's first transport call of each
 * collective.  A call times out when what it waits for would end after the
 * deadline, or when no rank can move any more and it has the earliest
 * deadline of the blocked ranks: it returns REDCOLL_ETIMEDOUT and the
 * report names the peer it was waiting for.  A message between ranks
 * whose tags differ is a mismatch (REDCOLL_EMISMATCH on the receiver and a
 * rendezvous sender); the report gives both ranks' tags.  Abort
 * (redcoll_comm_abort, or any error in the core) makes every pending and
 * later call of every rank return REDCOLL_EABORTED.  docs/reliability.md.
 */
#ifndef REDCOLL_MOCK_H
#define REDCOLL_MOCK_H

#include <stdio.h>

#include "redcoll.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct redcoll_mock_config {
  double alpha;        /* start-up time of a message */
  double beta;         /* time per byte transferred */
  double gamma;        /* time per byte reduced */
  uint64_t seed;       /* scheduler seed: same seed, same trace */
  size_t eager_limit;  /* messages with len < eager_limit are eager; 0: none */
  FILE *trace;         /* if not NULL: one line per completed message
                        * (format in docs/simulator.md) */
  FILE *dot;           /* if not NULL: the communication graph in Graphviz dot,
                        * written when the run ends */
  char *report;        /* if not NULL: the run's error events, first first, one
                        * per line (a deadlock lists every blocked rank);
                        * always NUL-terminated, "" if none */
  size_t report_len;   /* size of report in bytes */
  int verbose;         /* print errors and deadlock reports to stderr */
  /* Fault injection: rank fail_rank (if >= 0) fails its fail_after-th
   * transport call (0-based count of its send, recv and sendrecv calls)
   * with REDCOLL_ETRANSPORT and stops taking part, as if its process had
   * died: peers waiting on it, sending to it or receiving from it get
   * REDCOLL_ETRANSPORT. */
  int fail_rank;
  uint64_t fail_after;
  size_t stack_size;   /* per-rank stack; 0: 256 KiB (at least 64 KiB) */
  /* Stall injection, the simulator's SIGSTOP: before its stall_after-th
   * transport call (counted as for fail_after) rank stall_rank (if >= 0)
   * stands still for stall_time units of virtual time; peers that wait for
   * it longer than their communicator's deadline (redcoll_comm_set_deadline)
   * get REDCOLL_ETIMEDOUT. */
  int stall_rank;
  uint64_t stall_after;
  double stall_time;
  /* Two levels (docs/simulator.md, "Hosts"): ranks_per_host T > 1 puts
   * ranks 0..T-1 on host 0, T..2T-1 on host 1 and so on (the last host may
   * have fewer); 0 or 1: every rank is its own host, the one-level model.
   * hosts, if not NULL, has p entries and overrides ranks_per_host: ranks
   * with equal values share a host, in any order (uneven hosts, ranks of
   * one host not consecutive); the run copies it.  A message between two
   * ranks of one host costs local_alpha + n * local_beta on the ranks' own
   * links; one between hosts costs alpha + n * beta and also occupies the
   * sending host's outgoing and the receiving host's incoming link, which
   * the host's ranks share, in the order the transfers are ready (the same
   * clocks for every seed).  The communicators' transport info gives the
   * hosts (NULL when every rank is its own host) and local_alpha and
   * local_beta as they are here. */
  uint32_t ranks_per_host;
  const uint32_t *hosts;
  double local_alpha, local_beta;
  /* The transport info's segment (redcoll/transport.h): the pieces of a
   * linear reduce's root when the communicator sets no segment; 0: whole
   * messages. */
  size_t segment;
} redcoll_mock_config;

/* alpha = 1, beta = gamma = 0, seed 1, eager 0, fail_rank and stall_rank
 * -1, rest zero (every rank its own host). */
REDCOLL_API void redcoll_mock_config_init(redcoll_mock_config *cfg);

typedef struct redcoll_mock_stats {
  double time;             /* the rank's clock when fn returned */
  uint64_t rounds;         /* its clock under alpha = 1, beta = gamma = 0 */
  uint64_t msgs_sent, bytes_sent;
  uint64_t msgs_recv, bytes_recv;
  uint64_t bytes_reduced;
  int status;              /* what fn returned */
  uint64_t calls;          /* transport calls (send, recv, sendrecv) made */
  uint64_t bytes_sent_host; /* of bytes_sent, those to ranks of other hosts
                             * (all of them when every rank is its own host) */
} redcoll_mock_stats;

/* Runs fn on p simulated ranks (1 <= p <= 65536) and waits for all of them.
 * cfg may be NULL (defaults).  stats, if not NULL, has p entries.  Returns
 * REDCOLL_OK if every fn returned REDCOLL_OK; otherwise REDCOLL_EDEADLOCK
 * if the run deadlocked, else the status of the lowest failing rank. */
REDCOLL_API int redcoll_mock_run(int p, const redcoll_mock_config *cfg, redcoll_rank_main fn,
                                 void *arg, redcoll_mock_stats *stats);

/* Creates the p communicators of one simulated world (comms[i] is rank i)
 * for threads the program owns, the simulator's counterpart of
 * redcoll_threads_world_create.  cfg may be NULL (defaults); its FILE
 * pointers and report buffer must stay valid until the last communicator
 * is destroyed, which writes the graph and the report.  Each communicator
 * is used by one thread at a time and destroyed with redcoll_comm_destroy()
 * once its rank has finished communicating; the world is freed with the
 * last of them.  One rank runs at a time: every call of a rank is a point
 * where it waits until the seeded scheduler picks it, and that happens only
 * once every other rank waits in a call, is blocked, or is destroyed.  So
 * the same seed gives the same trace run after run, and the statistics and
 * the messages (not their order in the trace) are those of
 * redcoll_mock_run with the same calls.  The program's threads must not wait for one
 * another outside redcoll while their communicators live (that would hang
 * where a simulated deadlock cannot be seen).  All or nothing: on failure
 * comms is left filled with NULL.  REDCOLL_EINVAL for p out of range or a
 * NULL comms; REDCOLL_ENOMEM. */
REDCOLL_API int redcoll_mock_world_create(int p, const redcoll_mock_config *cfg,
                                          redcoll_comm **comms);

/* The statistics of a simulated rank so far (time and rounds: its clock
 * now), from a communicator of redcoll_mock_run or of a world; status is
 * REDCOLL_OK until fn has returned.  REDCOLL_EINVAL if c is not a simulator
 * communicator or out is NULL. */
REDCOLL_API int redcoll_mock_comm_stats(const redcoll_comm *c, redcoll_mock_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* REDCOLL_MOCK_H */
