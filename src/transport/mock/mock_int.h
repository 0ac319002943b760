/*
 * The simulator transport (include/redcoll/mock.h, docs/simulator.md): the
 * state its files share and the functions they call in one another.
 *
 * Every rank is a coroutine (ucontext) on its own stack, all of them on the
 * thread that called redcoll_mock_run: only one runs at a time.  A rank
 * gives way only when it blocks in a call or returns from fn; it switches to
 * the scheduler, which picks the next rank from the runnable set with a
 * generator seeded by cfg->seed and switches to it, so one seed gives one
 * interleaving.  No lock is needed, and a switch costs a few hundred
 * nanoseconds where a hand-off between threads costs a wake-up by the
 * kernel (tens of microseconds, milliseconds on a loaded machine).
 * Completion times are a dataflow computation over post times and do not
 * depend on the interleaving at all.  Under AddressSanitizer and
 * ThreadSanitizer the switches are announced to the sanitizer.
 *
 * Messages wait in FIFO queues, one per ordered pair (src, dst) that has a
 * message in flight, found through a hash table: memory is proportional to
 * the messages in flight, not to p^2.  A rendezvous message lives in its
 * blocked sender's rank record and points at the sender's buffer; an eager
 * message is a heap copy.
 *
 * Calls are ops (mock_op): a send half and/or a receive half, its channel,
 * tag, deadline and end.  A rank's blocking exchange is one op on its own
 * stack, and the rank blocks until the op ends; a posted exchange (post,
 * transport.h version 4) is a heap op, and a rank may have many at once on
 * any channels.  Every op of a rank not yet finished and told is on the
 * rank's list in post order; matching scans it for the first open receive
 * from a source on a channel.  A posted op that finishes stays on the list
 * until the rank's own progress calls its done, which happens only when no
 * rank can run and the rank's next event (an op's end, its progress bound)
 * is the earliest of all: so the ends are told in virtual-time order
 * whatever the interleaving.  Transfers occupy the sender's outgoing link
 * and the receiver's incoming link for len * beta (the alpha is latency,
 * not occupancy): a rank's concurrent transfers in one direction queue in
 * the order they matched.  With hosts (cfg.ranks_per_host, cfg.hosts) a
 * transfer between hosts also occupies its sending host's outgoing and its
 * receiving host's incoming link, shared by the host's ranks, and is timed
 * only when no rank can run, in ready-time order (mock_xfer); one inside a
 * host costs local_alpha and local_beta and leaves the host links alone.
 *
 * A world made by redcoll_mock_world_create has no coroutines: its ranks
 * are the program's own threads, and a baton under one mutex takes the
 * scheduler's place.  Every transport call is a gate where the rank waits,
 * ready; once no rank runs (all wait at a gate, are blocked or are done)
 * the thread that stopped last picks the next rank with the same seeded
 * generator and wakes it.  So one rank runs at a time there too, and one
 * seed gives one interleaving however the threads are scheduled.
 *
 * The files, each calling only files after it in this list:
 *   mock.c     the vtable, a rank's coroutine, redcoll_mock_run,
 *              redcoll_mock_world_create, redcoll_mock_comm_stats;
 *   sched.c    coroutine stacks and switches, picking the next rank,
 *              blocking, the threaded world's baton;
 *   deliver.c  posting sends and receives, delivery, the end of a half
 *              and of an op, cancellation, the next event when no rank
 *              can run (deadlines, releases from progress), fault
 *              injection, mismatches among blocked ranks, the deadlock
 *              report;
 *   queue.c    the per-pair message queues;
 *   report.c   the error report, the trace, the dot graph.
 * sched.c reaches mock.c's rank_main only through mock_run.rank_main.
 */
#ifndef REDCOLL_MOCK_INT_H
#define REDCOLL_MOCK_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "base.h"
#include "redcoll/mock.h"
#include "redcoll/transport.h"

enum rank_state { ST_READY, ST_RUNNING, ST_BLOCKED, ST_DONE };

typedef struct mock_msg {
  struct mock_msg *next; /* next message of the same (src, dst, channel) */
  int src, dst;
  uint64_t chan;
  uint64_t tag;
  size_t len;
  const void *data;      /* the sender's buffer, or the eager copy after the header */
  int eager;
  double post;           /* send post time */
  uint64_t rpost;        /* same on the round clock */
  double start;          /* eager only: when the transfer started (its link was free) */
  double end;            /* eager only: when the transfer ended */
  uint64_t rend;
  struct mock_op *op;    /* rendezvous: the sender's op, which holds the message */
} mock_msg;

typedef struct mock_pair {
  uint64_t key;          /* src << 32 | dst */
  uint64_t chan;
  mock_msg *head, *tail;
  struct mock_pair *next; /* hash chain, or free list */
} mock_pair;

typedef struct mock_edge {
  int src, dst;
  uint64_t round;
  size_t bytes;
} mock_edge;

struct mock_run;

/* One exchange of a rank: its blocking call (on the rank's stack) or a
 * posted one (on the heap, until its done has been called). */
typedef struct mock_op {
  struct mock_op *prev, *next; /* the rank's ops, in post order */
  struct mock_rank *r;
  redcoll_transport_op *top; /* the core's op; NULL for a blocking exchange */
  uint64_t seq;          /* per rank, in post order */
  uint64_t chan;         /* its channel */
  uint64_t ctag;         /* its tag (the send's if it has one) */
  int in_coll;           /* it belongs to a collective */
  double deadline;       /* INFINITY: none */
  double post_t;         /* when it was posted */
  uint64_t post_r;
  int send_active, recv_active; /* halves not finished yet */
  int pend;              /* send_active + recv_active */
  int finished;          /* both halves over (or it failed): err, cend, crend are final */
  int err;
  double cend;           /* latest end among finished halves; a failed op: when it failed */
  uint64_t crend;
  mock_msg rv;           /* the rendezvous message of the send half */
  int sdst;
  uint64_t stag;
  size_t slen;
  int rsrc;
  uint64_t rtag;
  void *rbuf;
  size_t rlen;
  double rpost_t;        /* receive post time */
  uint64_t rpost_r;
  int deferred;          /* its halves in run->xfers (transfers between hosts) */
  int rmatched;          /* its receive has its message, timed later (a
                          * transfer between hosts): no other may match it */
} mock_op;

/* A matched rendezvous transfer between hosts whose times are not known
 * yet: it is timed once no rank can run, in the order of its ready time
 * (deliver.c, redcoll__mock_xfer_step). */
typedef struct mock_xfer {
  struct mock_xfer *next;
  mock_op *sop, *rop;    /* the sender's and the receiver's op */
  int src, dst;
  uint64_t chan, tag;
  size_t len;
  double ready;          /* max(send post, receive post) */
  uint64_t rready;       /* same on the round clock */
} mock_xfer;

typedef struct mock_rank {
  struct mock_run *run;
  int id;
  int state;
  ucontext_t ctx;        /* where the rank resumes */
  void *fiber;           /* ThreadSanitizer's fiber of the rank */
  double clock;
  uint64_t rclock;
  int started;           /* its coroutine was made */
  int dead;              /* fault injection fired on this rank */
  uint64_t ncalls;
  redcoll_mock_stats st;
  mock_op *ops, *ops_tail; /* open ops and finished posted ones not yet told */
  uint64_t nops;         /* ops posted so far (their seq) */
  double out_free, in_free; /* when its outgoing and incoming links are free */
  /* progress: */
  int in_progress;       /* blocked in progress */
  double wake;           /* ... until this time at most (INFINITY: no bound) */
  double release;        /* the time it was released at */
  int idle;              /* its last progress told nothing, at run epoch idle_epoch */
  uint64_t idle_epoch;
} mock_rank;

typedef struct mock_run {
  ucontext_t sched;      /* the scheduler, on the caller's stack */
  void *sched_fiber;     /* ThreadSanitizer's fiber of the caller */
  const void *sched_stack; /* the caller's stack, for AddressSanitizer */
  size_t sched_stack_len;
  int p;
  redcoll_mock_config cfg;
  redcoll_rank_main fn;
  void *arg;
  void (*rank_main)(unsigned lo, unsigned hi); /* a rank's coroutine (mock.c) */
  mock_rank *ranks;
  unsigned char *stacks; /* one mapping holding every rank's stack */
  size_t stacks_len;
  size_t slot;           /* guard page + stack */
  size_t page;
  int *runnable;         /* ranks in state ST_READY, in no particular order */
  int nrunnable;
  int nblocked;
  uint64_t rng;
  int aborted;
  uint64_t *cancelled;   /* channel groups cancelled (REDCOLL_TRANSPORT_CAP_CHANNELS) */
  size_t ncancelled;
  /* A world of the program's threads (redcoll_mock_world_create). */
  int threaded;
  pthread_mutex_t mu;    /* guards everything above while threaded */
  pthread_cond_t *cvs;   /* one per rank: its turn has come */
  int nrunning;          /* ranks running outside a gate */
  int nalive;            /* communicators not yet destroyed */
  int deadlocked;
  uint64_t nmsgs;        /* completed messages */
  uint64_t epoch;        /* counts the transport calls that changed something */
  mock_pair **buckets;
  size_t nbuckets;
  size_t npairs;
  mock_pair *free_pairs;
  mock_edge *edges;
  size_t nedges, edges_cap;
  int edges_failed;
  char *report;          /* error events, one per line */
  size_t report_len, report_cap;
  /* Hosts (cfg.ranks_per_host, cfg.hosts); all NULL when every rank is
   * its own host. */
  uint32_t *hosts;       /* p entries: the host of each rank, for info */
  uint32_t *host_idx;    /* p entries: the host's index, 0 .. nhosts - 1 */
  uint32_t nhosts;
  double *host_out_free, *host_in_free; /* nhosts entries: when the host's links are free */
  mock_xfer *xfers;      /* matched transfers between hosts not yet timed */
} mock_run;

#if defined(__SANITIZE_ADDRESS__)
#define MOCK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOCK_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define MOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOCK_TSAN 1
#endif
#endif

#ifdef MOCK_ASAN
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif
#ifdef MOCK_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* report.c */

/* Appends one formatted line to the run's report (and to stderr when
 * verbose).  Memory shortage only loses report text. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void redcoll__mock_report_add(mock_run *run, const char *fmt, ...);
/* Counts a completed message m and writes its trace line and dot edge. */
void redcoll__mock_record(mock_run *run, const mock_msg *m, double start, double end,
                          uint64_t rend);
/* Writes the graph of the run's messages to cfg->dot. */
void redcoll__mock_write_dot(const mock_run *run);
/* What a run leaves when it ends: the report, into cfg->report. */
void redcoll__mock_run_finish(mock_run *run);

/* queue.c */

/* The queue of (src, dst, chan), or NULL if it holds no message. */
mock_pair *redcoll__mock_pair_find(mock_run *run, int src, int dst, uint64_t chan);
/* Appends m to its queue; REDCOLL_ENOMEM if a new queue cannot be made. */
int redcoll__mock_pair_push(mock_run *run, mock_msg *m);
/* Unlinks m from its pair queue; drops the queue when it empties. */
void redcoll__mock_pair_remove(mock_run *run, mock_msg *m);

/* deliver.c */

/* r becomes ready (a blocked r is no longer counted as blocked). */
void redcoll__mock_make_runnable(mock_run *run, mock_rank *r);
/* Ends op with err (if it has not failed already), withdrawing its open
 * halves; a blocking op's rank becomes runnable.  A posted op waits on its
 * rank's list for progress. */
void redcoll__mock_cancel_op(mock_run *run, mock_op *op, int err);
/* Ends every open op of every rank for which keep(op, arg) is 1 with err. */
void redcoll__mock_cancel_where(mock_run *run, int (*keep)(const mock_op *op, const void *arg),
                                const void *arg, int err);
/* No rank can run: the earliest event happens (a deadline expires, or the
 * rank blocked in progress with the earliest end or bound is released); 0
 * if there is none. */
int redcoll__mock_next_event(mock_run *run);
/* No rank can run: the matched transfer between hosts with the earliest
 * ready time (then the lowest source, destination, channel) is timed on
 * its links and ends its halves; 0 if there is none. */
int redcoll__mock_xfer_step(mock_run *run);
/* Blocked ranks waiting for each other in different collectives fail with
 * REDCOLL_EMISMATCH; 0 if there are none. */
int redcoll__mock_blocked_mismatch(mock_run *run);
/* Reports the deadlock and fails every open op with REDCOLL_EDEADLOCK. */
void redcoll__mock_deadlock(mock_run *run);
/* Appends op (posted by its rank at its clock) to its rank's list. */
void redcoll__mock_op_link(mock_op *op);
/* Takes op off its rank's list. */
void redcoll__mock_op_unlink(mock_op *op);
/* Post the send half and the receive half of op. */
void redcoll__mock_post_send(mock_run *run, mock_op *op, int dst, uint64_t tag, const void *buf,
                             size_t len);
void redcoll__mock_post_recv(mock_run *run, mock_op *op, int src, uint64_t tag, void *buf,
                             size_t len);
/* Rank f dies: its own open ops and those waiting on it fail with
 * REDCOLL_ETRANSPORT. */
void redcoll__mock_kill_rank(mock_run *run, mock_rank *f);

/* sched.c */

/* A mapping for the stacks, of at least *len bytes in slots of `slot`
 * (*len is set to its size), or NULL; and its return, maybe to a cache. */
unsigned char *redcoll__mock_stacks_get(size_t slot, size_t page, size_t *len);
void redcoll__mock_stacks_put(unsigned char *m, size_t len, size_t slot);
/* From the scheduler into r, until r blocks or returns. */
void redcoll__mock_run_rank(mock_run *run, mock_rank *r);
/* From rank r back to the scheduler; returns when r is picked again. */
void redcoll__mock_to_scheduler(mock_run *run, mock_rank *r);
/* The next rank to run, or NULL when every rank has returned. */
mock_rank *redcoll__mock_pick_next(mock_run *run);
/* Threaded world, mutex held: r stops running and waits until picked. */
void redcoll__mock_thread_give_way(mock_run *run, mock_rank *r);
/* The caller gives way until its call has ended (or, in progress, until
 * the scheduler releases it). */
void redcoll__mock_block(mock_run *run, mock_rank *r);

#endif
